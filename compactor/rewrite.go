package compactor

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/apache/iceberg-go/catalog"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
	"github.com/sourcegraph/conc/pool"

	"github.com/icekeeper/icekeeper/compactor/merge"
	"github.com/icekeeper/icekeeper/planner"
)

// rewritten is one group's rewrite.
type rewritten struct {
	result table.CompactionGroupResult
	// path is the path taken; a merge whose files turn out to have
	// different Parquet schemas takes iceberg-go's.
	path string
	err  error
}

// rewrite executes the planned groups, at most Parallelism at a time, and
// returns one rewritten per group, in plan order. Every output is read
// back with a second Parquet reader before it may be committed.
func (j *Job) rewrite(ctx context.Context, tbl *table.Table, tasks []table.FileScanTask, groups []planner.Group, target int64, progress func(int, int)) []rewritten {
	par := orDefault(j.Parallelism, 2)
	out := make([]rewritten, len(groups))
	merger := &merge.Merger{WholeFileBytes: j.wholeFileBytes}
	var done atomic.Int64
	p := pool.New().WithContext(ctx).WithMaxGoroutines(par)
	for i, g := range groups {
		p.Go(func(ctx context.Context) error {
			out[i] = rewriteGroup(ctx, merger, tbl, planner.GroupTasks(tasks, g), g, target)
			if progress != nil {
				progress(int(done.Add(1)), len(groups))
			}
			return nil
		})
	}
	_ = p.Wait()
	return out
}

func rewriteGroup(ctx context.Context, merger *merge.Merger, tbl *table.Table, tasks []table.FileScanTask, g planner.Group, target int64) rewritten {
	rw := rewritten{path: g.Path}
	switch g.Path {
	case planner.PathRepartition:
		rw.result, rw.err = repartitionGroup(ctx, tbl, tasks, target)
	case planner.PathSort, planner.PathZOrder:
		rw.result, rw.err = sortedGroup(ctx, tbl, tasks, target, g.Path == planner.PathZOrder)
	case planner.PathMerge:
		rw.result, rw.err = merger.Group(ctx, tbl, tasks, target)
		if !errors.Is(rw.err, merge.ErrNotMergeable) {
			break
		}
		rw.path = planner.PathIceberg
		fallthrough
	default:
		grp := table.CompactionTaskGroup{PartitionKey: g.Partition, TotalSizeBytes: g.InputBytes, Tasks: tasks}
		rw.result, rw.err = table.ExecuteCompactionGroup(ctx, tbl, grp, table.WithCompactionTargetFileSize(target))
	}
	if rw.err == nil {
		fs, err := tbl.FS(ctx)
		if err != nil {
			rw.err = err
		}
		for _, df := range rw.result.NewDataFiles {
			if rw.err != nil {
				break
			}
			rw.err = verifyOutput(fs, df)
		}
	}
	if rw.err != nil {
		rw.err = fmt.Errorf("rewrite group %s: %w", g.Partition, rw.err)
	}
	rw.result.PartitionKey = g.Partition
	return rw
}

// recordingFS remembers the files the rewrite creates.
type recordingFS struct {
	icebergio.WriteFileIO
	mu      sync.Mutex
	created []string
}

func (r *recordingFS) Create(name string) (icebergio.FileWriter, error) {
	r.mu.Lock()
	r.created = append(r.created, name)
	r.mu.Unlock()
	return r.WriteFileIO.Create(name)
}

func (r *recordingFS) WriteFile(name string, p []byte) error {
	r.mu.Lock()
	r.created = append(r.created, name)
	r.mu.Unlock()
	return r.WriteFileIO.WriteFile(name, p)
}

// table is tbl with its files written through r, so that a rewrite on it
// is recorded.
func (r *recordingFS) table(tbl *table.Table, cat catalog.Catalog) *table.Table {
	return table.New(tbl.Identifier(), tbl.Metadata(), tbl.MetadataLocation(), func(context.Context) (icebergio.IO, error) { return r, nil }, cat)
}

// add records files created elsewhere (by a fanned-out group's worker).
func (r *recordingFS) add(paths ...string) {
	r.mu.Lock()
	r.created = append(r.created, paths...)
	r.mu.Unlock()
}

// removeExcept deletes the created files that are not in keep: outputs that
// did not commit are unreferenced. A failure here only leaves them for
// unreferenced file removal.
func (r *recordingFS) removeExcept(keep map[string]bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, p := range r.created {
		if !keep[p] {
			_ = r.WriteFileIO.Remove(p)
		}
	}
}
