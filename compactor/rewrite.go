package compactor

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/sourcegraph/conc/pool"

	"github.com/icekeeper/icekeeper/compactor/merge"
	"github.com/icekeeper/icekeeper/internal/rebase"
	"github.com/icekeeper/icekeeper/internal/rowdigest"
	"github.com/icekeeper/icekeeper/planner"
)

// rewritten is one group's rewrite.
type rewritten struct {
	result table.CompactionGroupResult
	// path is the path taken; a merge whose files turn out to have
	// different Parquet schemas takes iceberg-go's.
	path string
	// rowGroups is what the merge path did with the inputs' row groups;
	// provenAsSent how many of its outputs it proved from the bytes it
	// sent (merge.Report).
	rowGroups    merge.RowGroupCounts
	provenAsSent int
	// claim is the digest of the rows the group read and wrote, which
	// agree, when the run checks rows.
	claim *rebase.RowClaim
	err   error
}

// rewrite executes the planned groups, at most Parallelism at a time, and
// returns one rewritten per group, in plan order. Every output is read
// back with a second Parquet reader before it may be committed.
func (j *Job) rewrite(ctx context.Context, tbl *table.Table, tasks []table.FileScanTask, groups []planner.Group, target int64, progress func(int, int), checkRows bool) []rewritten {
	par := orDefault(j.Parallelism, 2)
	out := make([]rewritten, len(groups))
	merger := &merge.Merger{WholeFileBytes: j.wholeFileBytes, NoStorageCopies: j.NoStorageCopies, CheckRows: checkRows}
	var done atomic.Int64
	p := pool.New().WithContext(ctx).WithMaxGoroutines(par)
	for i, g := range groups {
		p.Go(func(ctx context.Context) error {
			out[i] = j.rewriteGroup(ctx, merger, tbl, planner.GroupTasks(tasks, g), g, target, checkRows)
			if progress != nil {
				progress(int(done.Add(1)), len(groups))
			}
			return nil
		})
	}
	_ = p.Wait()
	return out
}

func (j *Job) rewriteGroup(ctx context.Context, merger *merge.Merger, tbl *table.Table, tasks []table.FileScanTask, g planner.Group, target int64, checkRows bool) rewritten {
	rw := rewritten{path: g.Path}
	switch g.Path {
	case planner.PathRepartition:
		rw.result, rw.err = repartitionGroup(ctx, tbl, tasks, target)
	case planner.PathSort, planner.PathZOrder, planner.PathHilbert:
		rw.result, rw.err = sortedGroup(ctx, tbl, tasks, target, g.Path)
	case planner.PathMerge:
		var rep merge.Report
		rw.result, rep, rw.err = merger.Group(ctx, tbl, tasks, target)
		rw.rowGroups, rw.claim, rw.provenAsSent = rep.RowGroups, rep.Rows, rep.ProvenAsSent
		if !errors.Is(rw.err, merge.ErrNotMergeable) {
			break
		}
		rw.claim = nil
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
			rw.err = rebase.VerifyOutput(ctx, fs, tbl.Location(), df)
		}
	}
	if rw.err == nil && j.tamper != nil {
		// The merge's proof is of the outputs before the tampering.
		rw.err, rw.claim = j.tamper(ctx, tbl, rw.result.NewDataFiles), nil
	}
	if rw.err == nil && checkRows && rw.claim == nil {
		// The merge path proved its rows as it went; the other paths are
		// read back here.
		var claim rebase.RowClaim
		if claim, rw.err = rowCheck(ctx, tbl, tasks, rw.result.NewDataFiles); rw.err == nil {
			rw.claim = &claim
		}
	}
	if rw.err != nil {
		rw.err = fmt.Errorf("rewrite group %s: %w", g.Partition, rw.err)
	}
	rw.result.PartitionKey = g.Partition
	return rw
}

// rowCheck digests the rows the group's inputs hold, their deletes
// applied, and the rows its outputs hold, read back from storage, and
// refuses the rewrite (ErrRowsDiffer) when they are not the same multiset.
func rowCheck(ctx context.Context, tbl *table.Table, tasks []table.FileScanTask, outputs []iceberg.DataFile) (rebase.RowClaim, error) {
	scan := tbl.Scan()
	sc, err := scan.Projection()
	if err != nil {
		return rebase.RowClaim{}, err
	}
	var claim rebase.RowClaim
	if claim.Read, err = rowdigest.Tasks(ctx, scan, sc, tasks, nil); err != nil {
		return claim, fmt.Errorf("digest the rows read: %w", err)
	}
	if claim.Written, err = rebase.WrittenRows(ctx, tbl, outputs); err != nil {
		return claim, err
	}
	if claim.Read != claim.Written {
		return claim, fmt.Errorf("%w: read %s, wrote %s", rowdigest.ErrRowsDiffer, claim.Read, claim.Written)
	}
	return claim, nil
}
