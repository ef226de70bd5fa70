package merge

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/apache/iceberg-go"
	icebergio "github.com/apache/iceberg-go/io"

	"github.com/icekeeper/icekeeper/internal/objects"
)

// sentCopy keeps the bytes of an output that icekeeper uploads itself, in
// a temporary file, so that its proof can decode them from there instead
// of reading the object back through the store. That is sound only when
// the store acknowledged every byte with its own digest of what it took,
// equal to theirs (s3write's Acknowledged: CRC32 checksums, or ETags that
// are MD5s); the proof then decodes the very bytes the store holds, and
// the store does not serve the output a second time (134 MB on the
// small-files benchmark, 33 ranged GETs).
//
// Ranges the storage copied itself (part copies) pass through neither
// side and are not kept: the proof reads its samples of them from the
// store, as it did before.
type sentCopy struct {
	f *os.File
	// name is set when the file could not be unlinked while open (a
	// system that refuses to remove an open file), to remove it on close.
	name   string
	stored []byteRange // copied by the storage, in order
	err    error       // the first failure: the copy is then not used
}

// byteRange is [start, end) of a file.
type byteRange struct{ start, end int64 }

// acknowledger is a writer that can say whether its store acknowledged
// what it uploaded (s3write's writer).
type acknowledger interface{ Acknowledged() bool }

// newSentCopy starts a copy of what an output sends to a store that can
// acknowledge it; nil for any other writer (local files are read back from
// the disk, as cheap as the copy would be).
func newSentCopy(w io.Writer) *sentCopy {
	if _, ok := w.(acknowledger); !ok {
		return nil
	}
	f, err := os.CreateTemp("", "icekeeper-output-*")
	if err != nil {
		return &sentCopy{err: err}
	}
	s := &sentCopy{f: f}
	// Unlinked at once, the file goes with its descriptor however the
	// process ends.
	if os.Remove(f.Name()) != nil {
		s.name = f.Name()
	}
	return s
}

// write keeps p, written at off of the output.
func (s *sentCopy) write(p []byte, off int64) {
	if s != nil && s.err == nil {
		_, s.err = s.f.WriteAt(p, off)
	}
}

// copied records that the storage appended [off, off+n) itself.
func (s *sentCopy) copied(off, n int64) {
	if s != nil {
		s.stored = append(s.stored, byteRange{off, off + n})
	}
}

func (s *sentCopy) close() {
	if s == nil || s.f == nil {
		return
	}
	s.f.Close()
	if s.name != "" {
		os.Remove(s.name)
	}
	s.f = nil
}

// openOutput opens the output df, written through w, for its proof: from
// the bytes sent when the store acknowledged them all (sentCopy), else
// from storage, as the merge reads its inputs (openInput). It closes sent.
func openOutput(ctx context.Context, fsys icebergio.IO, location string, df iceberg.DataFile, w icebergio.FileWriter, sent *sentCopy, wholeFileBytes int64) (openedFile, bool) {
	if a, ok := w.(acknowledger); ok && sent != nil && sent.err == nil && a.Acknowledged() {
		var store io.ReaderAt
		if len(sent.stored) > 0 {
			if rr, ok := objects.Ranged(ctx, fsys, location, df.FilePath(), df.FileSizeBytes()); ok {
				store = rr
			}
		}
		if len(sent.stored) == 0 || store != nil {
			r := &sentReader{sent: sent, store: store}
			o := openedFile{df: df, src: copySource{r: r, path: df.FilePath()}, body: r, close: sent.close}
			return o.parse(r, df.FileSizeBytes(), 0), true
		}
	}
	sent.close()
	return openInput(ctx, fsys, location, df, wholeFileBytes, nil, copyAhead), false
}

// sentReader reads an output from its sentCopy, and the ranges the
// storage copied from the store.
type sentReader struct {
	sent  *sentCopy
	store io.ReaderAt
}

func (r *sentReader) ReadAt(p []byte, off int64) (int, error) {
	n := 0
	for len(p) > 0 {
		var src io.ReaderAt = r.sent.f
		end := off + int64(len(p))
		for _, s := range r.sent.stored {
			if off >= s.start && off < s.end {
				src, end = r.store, min(end, s.end)
				break
			}
			if s.start > off {
				end = min(end, s.start)
				break
			}
		}
		k, err := src.ReadAt(p[:end-off], off)
		n += k
		if err != nil && !(errors.Is(err, io.EOF) && int64(k) == end-off) {
			if errors.Is(err, io.EOF) {
				return n, err
			}
			return n, fmt.Errorf("read the output at %d: %w", off, err)
		}
		p, off = p[k:], off+int64(k)
	}
	return n, nil
}
