package rebase

import (
	"context"
	"sync"

	"github.com/apache/iceberg-go/catalog"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
)

// RecordingFS remembers the files a rewrite creates through it, so that
// those no commit references can be removed (Committer.RemoveUncommitted).
type RecordingFS struct {
	icebergio.WriteFileIO
	mu      sync.Mutex
	created []string
}

// Create implements icebergio.WriteFileIO, recording name.
func (r *RecordingFS) Create(name string) (icebergio.FileWriter, error) {
	r.mu.Lock()
	r.created = append(r.created, name)
	r.mu.Unlock()
	return r.WriteFileIO.Create(name)
}

// WriteFile implements icebergio.WriteFileIO, recording name.
func (r *RecordingFS) WriteFile(name string, p []byte) error {
	r.mu.Lock()
	r.created = append(r.created, name)
	r.mu.Unlock()
	return r.WriteFileIO.WriteFile(name, p)
}

// Unwrap is the IO under r (objects.Unwrapper).
func (r *RecordingFS) Unwrap() icebergio.IO { return r.WriteFileIO }

// Table is tbl with its files written through r, so that a rewrite on it
// is recorded.
func (r *RecordingFS) Table(tbl *table.Table, cat catalog.Catalog) *table.Table {
	return table.New(tbl.Identifier(), tbl.Metadata(), tbl.MetadataLocation(), func(context.Context) (icebergio.IO, error) { return r, nil }, cat)
}

// Add records files created elsewhere (by a fanned-out group's worker).
func (r *RecordingFS) Add(paths ...string) {
	r.mu.Lock()
	r.created = append(r.created, paths...)
	r.mu.Unlock()
}

// RemoveExcept deletes the created files that are not in keep: outputs
// that did not commit are unreferenced. A failure here only leaves them
// for unreferenced file removal.
func (r *RecordingFS) RemoveExcept(keep map[string]bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, p := range r.created {
		if !keep[p] {
			_ = r.WriteFileIO.Remove(p)
		}
	}
}
