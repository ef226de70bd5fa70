package merge

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync/atomic"

	"github.com/apache/iceberg-go"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
	"github.com/parquet-go/parquet-go"
	"golang.org/x/sync/semaphore"

	"github.com/icekeeper/icekeeper/internal/objects"
)

// openedFile is one input, read ahead.
type openedFile struct {
	task table.FileScanTask // lineage needs its first_row_id and sequence number
	df   iceberg.DataFile
	pf   *parquet.File
	src  copySource
	// body reads the file as parquet-go's page reads do: through the
	// read-ahead when there is one, whatever the size of the read.
	body  io.ReaderAt
	close func()
	err   error
}

// copySource is an input's bytes as storage holds them, for ranges the
// storage copies itself (S3 part copies, copy_file_range) and for the
// few bytes read around them: r reads the file directly, not through
// parquet-go's buffers or a read-ahead.
type copySource struct {
	r    io.ReaderAt
	path string
	// whole is the file when it was read whole; pin keeps that buffer
	// from being recycled when the file is closed, for pages that refer
	// to it (ownChunk).
	whole []byte
	pin   func()
}

// tailBytes is how much of the end of a file read in ranges is read at
// once when it is opened: the footer, and the page indexes writers place
// before it, in one request rather than one for the footer's length, one
// for the footer and one per index.
const tailBytes = 64 << 10

// defaultWholeFileBytes is the size up to which an input is read in one
// request: small files are the merge's business, and one read per file
// (one GET on object storage) beats many ranged reads. Larger files are
// read through 4 MiB buffers, not parquet-go's 4 KiB default, which would
// mean a GET per 4 KiB on object storage.
const (
	defaultWholeFileBytes = 16 << 20
	readBufferBytes       = 4 << 20
)

// Read-ahead of one group: up to readAheadFiles inputs are read at once,
// and at most readAheadBytes of whole-file reads are held ahead of the
// encoder. On object storage every input costs a round trip; reading one
// at a time left the encoder waiting on latency (20 ms a request made a
// 200-file group wait seconds), while the bytes bound keeps memory close
// to what one group needs. 32 files, not 8: an S3 gateway that answers a
// small GET in tens of milliseconds (SeaweedFS's, BENCHMARKS.md) serves
// more of them at once, and with 8 the encoder still waited.
const (
	readAheadFiles = 32
	readAheadBytes = 32 << 20
)

// prefetch opens the tasks' files in order, several at once ahead of the
// encoder, and delivers them in order until ctx is done. A file's
// read-ahead budget is given back when the encoder closes it, and the
// buffers of whole-file reads are recycled. Reads the encoder never took
// are closed when delivery stops.
//
// An input with a row group of rangesFrom bytes or more by its split
// offsets (0: none) is read in ranges whatever its size: the storage
// copies such a row group (copySource), and reading the file whole would
// pass the bytes through anyway.
func prefetch(ctx context.Context, fsys icebergio.IO, location string, tasks []table.FileScanTask, wholeFileBytes, rangesFrom int64) <-chan openedFile {
	out := make(chan openedFile)
	results := make([]chan openedFile, len(tasks))
	for i := range results {
		results[i] = make(chan openedFile, 1)
	}
	files := make(chan struct{}, readAheadFiles)
	budget := semaphore.NewWeighted(readAheadBytes)
	free := make(chan []byte, readAheadFiles)
	started := 0
	dispatched := make(chan struct{})
	go func() { // start reads, within the budget
		defer close(dispatched)
		for i, t := range tasks {
			n := t.File.FileSizeBytes()
			whole := wholeFileBytes
			if rangesFrom > 0 && largestRowGroup(t.File) >= rangesFrom {
				whole = 0
			}
			if n > whole {
				n = readBufferBytes // read through one buffer, not whole
			}
			n = min(n, readAheadBytes)
			if budget.Acquire(ctx, n) != nil {
				return
			}
			select {
			case files <- struct{}{}:
			case <-ctx.Done():
				budget.Release(n)
				return
			}
			started++
			go func() {
				f := openInput(ctx, fsys, location, t.File, whole, free, 0)
				f.task = t
				inner := f.close
				f.close = func() {
					inner()
					<-files
					budget.Release(n)
				}
				results[i] <- f
			}()
		}
	}()
	go func() { // deliver in order
		next := 0
		defer func() {
			close(out)
			<-dispatched
			for ; next < started; next++ {
				(<-results[next]).close()
			}
		}()
		for ; next < len(tasks); next++ {
			var f openedFile
			select {
			case f = <-results[next]:
			case <-ctx.Done():
				return
			}
			select {
			case out <- f:
			case <-ctx.Done():
				f.close()
				next++
				return
			}
			if f.err != nil {
				next++
				return
			}
		}
	}()
	return out
}

// largestRowGroup is the size of df's largest row group as its split
// offsets (the row groups' starts) give it: the last runs to the file's
// end, footer included, which only overstates it by the footer (0: no
// offsets recorded).
func largestRowGroup(df iceberg.DataFile) int64 {
	offs := df.SplitOffsets()
	var most int64
	for i, off := range offs {
		end := df.FileSizeBytes()
		if i+1 < len(offs) {
			end = offs[i+1]
		}
		most = max(most, end-off)
	}
	return most
}

// errRowCount is a file that holds other than the rows its manifest entry
// records.
var errRowCount = errors.New("row count differs")

// openInput opens df for the merge: read whole into a buffer from free when
// it is at most wholeFileBytes, else read in ranges of readBufferBytes;
// with ahead > 0, that many ranges at once ahead of the reader (readAhead)
// unless it is a local file.
// On S3 a file read in ranges is read with ranged GETs alone, its end
// first (tailBytes), never with a GET of the whole object.
func openInput(ctx context.Context, fsys icebergio.IO, location string, df iceberg.DataFile, wholeFileBytes int64, free chan []byte, ahead int) openedFile {
	if size := df.FileSizeBytes(); size > wholeFileBytes {
		if rr, ok := objects.Ranged(ctx, fsys, location, df.FilePath(), size); ok {
			return openRanged(df, rr, size, ahead)
		}
	}
	o := openedFile{df: df, close: func() {}}
	fail := func(err error) openedFile {
		o.close()
		o.err = fmt.Errorf("read %s: %w", df.FilePath(), err)
		return o
	}
	f, err := fsys.Open(df.FilePath())
	if err != nil {
		return fail(err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return fail(err)
	}
	size := st.Size()
	var r io.ReaderAt = f
	o.src = copySource{r: f, path: df.FilePath()}
	if size <= wholeFileBytes {
		var buf []byte
		select {
		case buf = <-free:
		default:
		}
		if int64(cap(buf)) < size {
			buf = make([]byte, size)
		}
		buf = buf[:size]
		var pinned atomic.Bool // by the lanes of columns at once
		o.close = func() {
			if pinned.Load() {
				return
			}
			select {
			case free <- buf:
			default:
			}
		}
		o.src.whole, o.src.pin = buf, func() { pinned.Store(true) }
		_, err = io.ReadFull(f, buf)
		f.Close()
		if err != nil {
			return fail(err)
		}
		r = bytes.NewReader(buf)
		o.src.r = r
	} else if _, local := f.(*os.File); ahead > 0 && !local {
		// A file on local disk is read as it is asked for: the page
		// cache reads ahead, and a read-ahead here would only copy the
		// bytes once more (the proof's read-back of a just-written
		// output cost 6% more CPU with it).
		ra := newReadAhead(f, size, readBufferBytes, ahead)
		r = ra
		o.close = func() {
			ra.wait()
			f.Close()
		}
	} else {
		o.close = func() { f.Close() }
	}
	o.body = r
	return o.parse(r, size, wholeFileBytes)
}

// openRanged opens df on S3 through ranged GETs of rr: the file's end in
// one, then the ranges parquet-go asks for (ahead of it with ahead > 0).
func openRanged(df iceberg.DataFile, rr *objects.RangeReader, size int64, ahead int) openedFile {
	o := openedFile{df: df, close: func() {}, src: copySource{r: rr, path: df.FilePath()}}
	o.body = rr
	if ahead > 0 {
		ra := newReadAhead(rr, size, readBufferBytes, ahead)
		o.body = ra
		o.close = ra.wait
	}
	n := min(size, tailBytes)
	tail := make([]byte, n)
	if err := readFull(rr, tail, size-n); err != nil {
		o.err = fmt.Errorf("read %s: %w", df.FilePath(), err)
		return o
	}
	return o.parse(&withTail{ReaderAt: o.body, direct: rr, tail: tail, at: size - n}, size, 0)
}

// withTail serves reads that fall in the file's end from tail, which was
// read at at; other small reads (the magic at the file's start) from
// direct, so that they set no read-ahead going, unless the read-ahead
// holds their bytes already (a small column chunk); the rest from the
// ReaderAt.
type withTail struct {
	io.ReaderAt
	direct io.ReaderAt
	tail   []byte
	at     int64
}

// smallRead is the largest read withTail sends to direct.
const smallRead = 4 << 10

func (w *withTail) ReadAt(p []byte, off int64) (int, error) {
	if off >= w.at && off+int64(len(p)) <= w.at+int64(len(w.tail)) {
		return copy(p, w.tail[off-w.at:]), nil
	}
	if len(p) <= smallRead {
		if ra, ok := w.ReaderAt.(*readAhead); !ok || !ra.holds(off, int64(len(p))) {
			return w.direct.ReadAt(p, off)
		}
	}
	return w.ReaderAt.ReadAt(p, off)
}

// parse opens the Parquet file r of size bytes, buffered for ranged reads
// when it is larger than wholeFileBytes, and checks its row count.
func (o openedFile) parse(r io.ReaderAt, size, wholeFileBytes int64) openedFile {
	opts := []parquet.FileOption{parquet.SkipBloomFilters(true), parquet.SkipPageIndex(true)}
	if size > wholeFileBytes {
		opts = append(opts, parquet.ReadBufferSize(readBufferBytes))
	}
	var err error
	if o.pf, err = parquet.OpenFile(r, size, opts...); err != nil {
		o.close()
		o.err = fmt.Errorf("read %s: %w", o.df.FilePath(), err)
		return o
	}
	if o.pf.NumRows() != o.df.Count() {
		o.close()
		o.err = fmt.Errorf("read %s: %w: the file holds %d rows, its manifest entry %d", o.df.FilePath(), errRowCount, o.pf.NumRows(), o.df.Count())
		return o
	}
	return o
}
