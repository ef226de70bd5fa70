package merge

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/apache/iceberg-go"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
	"github.com/parquet-go/parquet-go"
	"golang.org/x/sync/semaphore"
)

// openedFile is one input, read ahead.
type openedFile struct {
	task  table.FileScanTask // lineage needs its first_row_id and sequence number
	df    iceberg.DataFile
	pf    *parquet.File
	close func()
	err   error
}

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
func prefetch(ctx context.Context, fsys icebergio.IO, tasks []table.FileScanTask, wholeFileBytes int64) <-chan openedFile {
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
			if n > wholeFileBytes {
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
				f := openInput(fsys, t.File, wholeFileBytes, free, 0)
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

// errRowCount is a file that holds other than the rows its manifest entry
// records.
var errRowCount = errors.New("row count differs")

// openInput opens df for the merge: read whole into a buffer from free when
// it is at most wholeFileBytes, else read in ranges of readBufferBytes;
// with ahead > 0, that many ranges at once ahead of the reader (readAhead).
func openInput(fsys icebergio.IO, df iceberg.DataFile, wholeFileBytes int64, free chan []byte, ahead int) openedFile {
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
		o.close = func() {
			select {
			case free <- buf:
			default:
			}
		}
		_, err = io.ReadFull(f, buf)
		f.Close()
		if err != nil {
			return fail(err)
		}
		r = bytes.NewReader(buf)
	} else if ahead > 0 {
		ra := newReadAhead(f, size, readBufferBytes, ahead)
		r = ra
		o.close = func() {
			ra.wait()
			f.Close()
		}
	} else {
		o.close = func() { f.Close() }
	}
	opts := []parquet.FileOption{parquet.SkipBloomFilters(true), parquet.SkipPageIndex(true)}
	if size > wholeFileBytes {
		opts = append(opts, parquet.ReadBufferSize(readBufferBytes))
	}
	if o.pf, err = parquet.OpenFile(r, size, opts...); err != nil {
		return fail(err)
	}
	if o.pf.NumRows() != df.Count() {
		return fail(fmt.Errorf("%w: the file holds %d rows, its manifest entry %d", errRowCount, o.pf.NumRows(), df.Count()))
	}
	return o
}
