package merge

import (
	"io"
)

// readAhead is an io.ReaderAt over src for a reader that moves forward
// through the file, as the proof's decoding does column after column: a
// read starts the fetch of the pieces that follow it, up to ahead of them
// at once, so that on object storage the reads overlap rather than each
// waiting for its own round trip. A read behind the window fetches again.
// It holds at most ahead+2 pieces. Not safe for concurrent use.
type readAhead struct {
	src         io.ReaderAt
	size, piece int64
	ahead       int
	pieces      map[int64]*fetch // by index
	free        [][]byte         // buffers of pieces done with
}

// fetch is one piece being read, or read.
type fetch struct {
	done chan struct{}
	buf  []byte
	err  error
}

func newReadAhead(src io.ReaderAt, size, piece int64, ahead int) *readAhead {
	return &readAhead{src: src, size: size, piece: piece, ahead: ahead, pieces: map[int64]*fetch{}}
}

// start fetches piece i unless it is fetched or past the end.
func (r *readAhead) start(i int64) {
	if _, ok := r.pieces[i]; ok || i*r.piece >= r.size {
		return
	}
	n := min(r.piece, r.size-i*r.piece)
	var buf []byte
	if k := len(r.free); k > 0 {
		buf, r.free = r.free[k-1], r.free[:k-1]
	} else {
		buf = make([]byte, min(r.piece, r.size))
	}
	f := &fetch{done: make(chan struct{}), buf: buf[:n]}
	r.pieces[i] = f
	go func() {
		defer close(f.done)
		f.err = readFull(r.src, f.buf, i*r.piece)
	}()
}

func (r *readAhead) ReadAt(p []byte, off int64) (int, error) {
	n := 0
	for n < len(p) {
		at := off + int64(n)
		if at >= r.size {
			return n, io.EOF
		}
		i := at / r.piece
		// Pieces behind this one are done with, but for the one just
		// behind; those ahead are wanted, and one more: a reader that
		// steps back a few bytes across a piece's start (parquet-go
		// reads a page's header, then the page from the same offset)
		// must find the piece it left, and not drop the farthest one
		// fetched, to fetch it again.
		for j, f := range r.pieces {
			if j < i-1 || j > i+int64(r.ahead) {
				<-f.done
				delete(r.pieces, j)
				r.free = append(r.free, f.buf[:cap(f.buf)])
			}
		}
		for j := i; j < i+int64(r.ahead); j++ {
			r.start(j)
		}
		f := r.pieces[i]
		<-f.done
		if f.err != nil {
			return n, f.err
		}
		n += copy(p[n:], f.buf[at-i*r.piece:])
	}
	return n, nil
}

// holds reports whether the n bytes at off are in pieces fetched or being
// fetched.
func (r *readAhead) holds(off, n int64) bool {
	for i := off / r.piece; i*r.piece < off+n; i++ {
		if _, ok := r.pieces[i]; !ok {
			return false
		}
	}
	return true
}

// wait lets every fetch in flight finish, so that src may be closed.
func (r *readAhead) wait() {
	for _, f := range r.pieces {
		<-f.done
	}
}
