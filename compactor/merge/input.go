package merge

import (
	"bytes"
	"context"
	"fmt"
	"io"

	"github.com/apache/iceberg-go"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
	"github.com/parquet-go/parquet-go"
)

// openedFile is one input, read ahead.
type openedFile struct {
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

// prefetch opens the tasks' files in order on another goroutine, reading
// up to two ahead of the writer, so that reading overlaps encoding. The
// buffers of whole-file reads are recycled once the writer closes a file.
func prefetch(ctx context.Context, fsys icebergio.IO, tasks []table.FileScanTask, wholeFileBytes int64) <-chan openedFile {
	ch := make(chan openedFile, 2)
	free := make(chan []byte, 4)
	go func() {
		defer close(ch)
		for _, t := range tasks {
			f := openInput(fsys, t.File, wholeFileBytes, free)
			select {
			case ch <- f:
				if f.err != nil {
					return
				}
			case <-ctx.Done():
				f.close()
				return
			}
		}
	}()
	return ch
}

func openInput(fsys icebergio.IO, df iceberg.DataFile, wholeFileBytes int64, free chan []byte) openedFile {
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
		return fail(fmt.Errorf("the file holds %d rows, its manifest entry %d", o.pf.NumRows(), df.Count()))
	}
	return o
}
