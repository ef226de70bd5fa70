package compactor

import (
	"context"
	"fmt"
	"slices"

	"github.com/apache/iceberg-go"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"
	"github.com/sourcegraph/conc/pool"

	"github.com/icekeeper/icekeeper/internal/rebase"
	"github.com/icekeeper/icekeeper/internal/rowdigest"
	"github.com/icekeeper/icekeeper/jobs"
	"github.com/icekeeper/icekeeper/maintenance"
	"github.com/icekeeper/icekeeper/planner"
)

// deleteFigures are delete-file compaction's.
type deleteFigures struct {
	// DeleteFilesMinimum is how many distinct delete files a partition's
	// data files must have before their deletes are rewritten (0: never).
	DeleteFilesMinimum int                   `json:"deleteFilesMinimum"`
	DeletePlan         []planner.DeleteGroup `json:"deletePlan,omitempty"`
	DeleteSkipped      []planner.Skip        `json:"deleteSkipped,omitempty"`
	// DeletesRemoved counts the position delete files and deletion
	// vectors the committed groups replaced, DeletesWritten those they
	// wrote; PositionsIn and PositionsOut the positions in each. Positions
	// of data files no longer live, and repeats, are not carried over.
	DeleteGroupsCommitted int      `json:"deleteGroupsCommitted"`
	DeleteGroupsDropped   int      `json:"deleteGroupsDropped"`
	DeletesRemoved        int      `json:"deletesRemoved"`
	DeletesWritten        int      `json:"deletesWritten"`
	PositionsIn           int64    `json:"positionsIn"`
	PositionsOut          int64    `json:"positionsOut"`
	DeleteCommits         int      `json:"deleteCommits"`
	DeleteConflicts       int      `json:"deleteConflicts"`
	DeleteDropped         []string `json:"deleteDropped,omitempty"`
	// DeleteBytes is the size of the position deletes and deletion
	// vectors the groups read to rewrite them, committed or not.
	DeleteBytes int64 `json:"deleteBytes,omitempty"`
	DeleteMs    int64 `json:"deleteMs"`
}

// compactDeletes rewrites the position deletes of the partitions in
// f.DeletePlan, planned on sc, the scan of tbl, and commits them as
// REPLACE snapshots with compaction's committer: staged once, rebased on
// the head, a group dropped when one of the files it replaces was removed
// meanwhile or, on v3, a deletion vector committed meanwhile may apply to
// one of its data files.
func (j *Job) compactDeletes(ctx context.Context, t jobs.Target, tbl *table.Table, sc scanned, f *deleteFigures) error {
	policy, err := j.policy(tbl)
	if err != nil {
		return fmt.Errorf("delete-file compaction of %s: %w", t.Table, err)
	}
	wfs, cat, err := rebase.OpenWriting(ctx, t.Bucket, tbl)
	if err != nil {
		return err
	}
	op := rebase.DeleteRewrite{Caller: rebase.Caller{Job: string(maintenance.Compaction), Name: "delete-file compaction"},
		Rows: &rebase.RowClaims{Deletes: true}}
	c, err := j.newCommitter(op, t, tbl, cat, wfs, sc, policy)
	if err != nil {
		return err
	}
	rec := &rebase.RecordingFS{WriteFileIO: wfs}
	for _, g := range f.DeletePlan {
		for _, d := range g.Remove {
			f.DeleteBytes += deleteSize(d)
		}
	}
	results, err := j.rewriteDeletes(ctx, wfs, rec, c, tbl.Metadata(), f.DeletePlan, op.Rows)
	if err == nil {
		err = c.Run(ctx, results)
	}
	done := c.Committed()
	f.DeleteCommits, f.DeleteConflicts = done.Commits, done.Stats.Conflicts
	f.DeleteGroupsDropped, f.DeleteDropped = len(done.Dropped), done.Dropped
	for _, g := range done.Groups {
		f.DeleteGroupsCommitted++
		for _, d := range slices.Concat(g.SafePosDeletes, g.SafeDeletionVectors) {
			f.DeletesRemoved++
			f.PositionsIn += d.Count()
		}
		for _, d := range g.NewDataFiles {
			f.DeletesWritten++
			f.PositionsOut += d.Count()
		}
	}
	c.RemoveUncommitted(rec)
	return err
}

// rewriteDeletes writes the merged deletes of each group, Parallelism
// groups at a time. A delete file that cannot be read fails the run before
// anything is committed.
func (j *Job) rewriteDeletes(ctx context.Context, rfs icebergio.IO, wfs icebergio.WriteFileIO, c *rebase.Committer, meta table.Metadata, groups []planner.DeleteGroup, claims *rebase.RowClaims) ([]table.CompactionGroupResult, error) {
	par := orDefault(j.Parallelism, 2)
	run := uuid.New()
	out := make([]table.CompactionGroupResult, len(groups))
	p := pool.New().WithContext(ctx).WithMaxGoroutines(par).WithCancelOnError()
	for i, g := range groups {
		p.Go(func(ctx context.Context) error {
			w := newDeleteWriter(wfs, c.Locations(), meta, fmt.Sprintf("%s-%05d", run, i))
			r, claim, err := rewriteDeleteGroup(ctx, rfs, w, g)
			if err != nil {
				return fmt.Errorf("rewrite deletes of %s: %w", g.Partition, err)
			}
			claims.Put(r, claim)
			out[i] = r
			return nil
		})
	}
	return out, p.Wait()
}

// rewriteDeleteGroup merges, for each of g's data files, the positions of
// every position delete file and deletion vector attached to it, and
// writes them anew. Each delete file is read once. It proves the rewrite:
// the position-delete rows (file_path, pos) it read and those its new
// files hold, read back from storage, must have one row digest.
func rewriteDeleteGroup(ctx context.Context, fs icebergio.IO, w *deleteWriter, g planner.DeleteGroup) (table.CompactionGroupResult, rowdigest.Claim, error) {
	res := table.CompactionGroupResult{PartitionKey: g.Partition}
	var claim rowdigest.Claim
	read := map[string]map[string][]int64{}
	for _, t := range g.Tasks {
		if err := ctx.Err(); err != nil {
			return res, claim, err
		}
		// A position past the file's end deletes nothing.
		positions, err := existingPositions(fs, t, read)
		if err != nil {
			return res, claim, err
		}
		positions = sortedUnique(positions)
		addPositions(&claim.Read, t.File.FilePath(), positions)
		if err := w.add(t.File, positions); err != nil {
			return res, claim, err
		}
	}
	files, err := w.finish(ctx)
	if err != nil {
		return res, claim, err
	}
	if claim.Written, err = writtenPositions(fs, g.Tasks, files); err != nil {
		return res, claim, err
	}
	if claim.Read != claim.Written {
		return res, claim, fmt.Errorf("%w: position deletes read %s, written %s", rowdigest.ErrRowsDiffer, claim.Read, claim.Written)
	}
	res.NewDataFiles = files
	for _, d := range g.Remove {
		if d.FileFormat() == iceberg.PuffinFile {
			res.SafeDeletionVectors = append(res.SafeDeletionVectors, d)
		} else {
			res.SafePosDeletes = append(res.SafePosDeletes, d)
		}
	}
	return res, claim, nil
}

// addPositions adds the position-delete rows (path, pos) of positions to
// d: rows of the position delete schema, file_path and pos by their field
// IDs.
func addPositions(d *rowdigest.Digest, path string, positions []int64) {
	h := rowdigest.ValueHash(rebase.FilePathFieldID, []byte(path))
	seed := rowdigest.Seed(rebase.PosFieldID)
	for _, p := range positions {
		d.Add(rowdigest.Fmix64(h + rowdigest.XXH64Uint64(seed, uint64(p))))
	}
}

// writtenPositions is the digest of the position-delete rows that files,
// the delete files written for tasks' data files, hold, read back.
func writtenPositions(fs icebergio.IO, tasks []table.FileScanTask, files []iceberg.DataFile) (rowdigest.Digest, error) {
	var d rowdigest.Digest
	read := map[string]map[string][]int64{}
	for _, t := range tasks {
		back := table.FileScanTask{File: t.File}
		for _, f := range files {
			if ref := f.ReferencedDataFile(); ref == nil || *ref != t.File.FilePath() {
				continue
			}
			if f.FileFormat() == iceberg.PuffinFile {
				back.DeletionVectorFiles = append(back.DeletionVectorFiles, f)
			} else {
				back.DeleteFiles = append(back.DeleteFiles, f)
			}
		}
		positions, err := existingPositions(fs, back, read)
		if err != nil {
			return d, fmt.Errorf("read back: %w", err)
		}
		addPositions(&d, t.File.FilePath(), sortedUnique(positions))
	}
	return d, nil
}

// deleteSize is what reading delete file d costs: a deletion vector's
// blob, else the file.
func deleteSize(d iceberg.DataFile) int64 {
	if n := d.ContentSizeInBytes(); d.ContentType() == iceberg.EntryContentPosDeletes && n != nil && d.FileFormat() == iceberg.PuffinFile {
		return *n
	}
	return d.FileSizeBytes()
}
