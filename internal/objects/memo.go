package objects

import (
	"bytes"
	"fmt"
	"io"
	"io/fs"
	"path"
	"sync"
	"time"

	icebergio "github.com/apache/iceberg-go/io"
)

// Memo returns fsys, except that a file keep accepts is read whole on its
// first Open and served from memory after that, up to maxBytes held: past
// them a file is read whole and served, not kept. It is for one pass that
// reads the same small files twice through readers it does not drive: a
// compaction scan hands iceberg-go's planner the manifests, then reads
// them again for the age of each file, and its commit reads those holding
// the files it replaces; on object storage every second read is a round
// trip the storage server serves for nothing.
func Memo(fsys icebergio.IO, keep func(name string) bool, maxBytes int64) icebergio.IO {
	return &memo{IO: fsys, keep: keep, max: maxBytes, files: map[string][]byte{}}
}

type memo struct {
	icebergio.IO
	keep  func(string) bool
	max   int64
	mu    sync.Mutex
	files map[string][]byte
	held  int64
}

func (m *memo) Open(name string) (icebergio.File, error) {
	if !m.keep(name) {
		return m.IO.Open(name)
	}
	m.mu.Lock()
	b, ok := m.files[name]
	m.mu.Unlock()
	if !ok {
		var err error
		if b, err = m.read(name); err != nil {
			return nil, err
		}
		m.mu.Lock()
		if _, ok := m.files[name]; !ok && m.held+int64(len(b)) <= m.max {
			m.files[name] = b
			m.held += int64(len(b))
		}
		m.mu.Unlock()
	}
	return &memFile{Reader: bytes.NewReader(b), name: path.Base(name), size: int64(len(b))}, nil
}

// read reads name whole, in the one request its Open makes.
func (m *memo) read(name string) ([]byte, error) {
	f, err := m.IO.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("size of %s: %w", name, err)
	}
	b := make([]byte, st.Size())
	if _, err := io.ReadFull(f, b); err != nil {
		return nil, fmt.Errorf("read %s: %w", name, err)
	}
	return b, nil
}

// memFile is a file held in memory; its size is what was read, so that a
// check of the size against a recorded length sees the stored object's.
type memFile struct {
	*bytes.Reader
	name string
	size int64
}

func (f *memFile) Stat() (fs.FileInfo, error) { return f, nil }
func (f *memFile) Close() error               { return nil }
func (f *memFile) Name() string               { return f.name }
func (f *memFile) Size() int64                { return f.size }
func (f *memFile) Mode() fs.FileMode          { return 0o444 }
func (f *memFile) ModTime() time.Time         { return time.Time{} }
func (f *memFile) IsDir() bool                { return false }
func (f *memFile) Sys() any                   { return nil }

// ReadThrough is w with its files opened through r, a Memo of the same
// storage; writes and removals go to w. A commit reads, through it, the
// manifests its stage's scan has just read.
func ReadThrough(w icebergio.WriteFileIO, r icebergio.IO) icebergio.WriteFileIO {
	return readThrough{WriteFileIO: w, reads: r}
}

type readThrough struct {
	icebergio.WriteFileIO
	reads icebergio.IO
}

func (t readThrough) Open(name string) (icebergio.File, error) { return t.reads.Open(name) }
