package compactor

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/icekeeper/icekeeper/jobs"
)

// commitBatch commits the batch on base as one REPLACE snapshot whose new
// files carry start's sequence number. It returns the table after the
// commit, the groups committed and those dropped for true conflicts; an
// error means the batch gave up (its groups are neither).
func (j *Job) commitBatch(ctx context.Context, t jobs.Target, base *table.Table, start *table.Snapshot, batch []table.CompactionGroupResult, deletes deleteIndex, fig *Figures) (after *table.Table, committed, dropped []table.CompactionGroupResult, err error) {
	var landed []table.CompactionGroupResult // an earlier attempt landed though it reported failure
	gone := map[string]bool{}                // delete files another commit removed since start
	maxAttempts, backoff := j.MaxAttempts, j.Backoff
	if maxAttempts <= 0 {
		maxAttempts = 4
	}
	if backoff <= 0 {
		backoff = 200 * time.Millisecond
	}
	for attempt := 1; ; attempt++ {
		if attempt > 1 {
			fresh, err := t.Bucket.LoadTable(ctx, t.Table)
			if err != nil {
				return base, landed, dropped, err
			}
			keep, drop, done, removed, err := conflicts(ctx, fresh, start, batch)
			if err != nil {
				return base, landed, dropped, err
			}
			for p := range removed {
				gone[p] = true
			}
			dropped = append(dropped, drop...)
			landed = append(landed, done...)
			batch, base = keep, fresh
			if len(batch) == 0 {
				return base, landed, dropped, nil
			}
		}
		batch = safeDeletes(batch, deletes)
		for i := range batch {
			batch[i].SafePosDeletes = slices.DeleteFunc(batch[i].SafePosDeletes, func(d iceberg.DataFile) bool { return gone[d.FilePath()] })
		}
		if j.beforeCommit != nil {
			j.beforeCommit(attempt)
		}
		fig.CommitAttempts++
		tx := base.NewTransaction()
		rw := tx.NewRewrite(iceberg.Properties{"icekeeper.job": "icebergCompaction"})
		for _, r := range batch {
			rw.ApplyResult(r)
		}
		rw.DataSequenceNumber(start.SequenceNumber)
		err := rw.Commit(ctx)
		var after *table.Table
		if err == nil {
			after, err = tx.Commit(ctx)
		}
		if j.afterCommit != nil {
			err = j.afterCommit(err)
		}
		if err == nil {
			return after, append(landed, batch...), dropped, nil
		}
		if !errors.Is(err, table.ErrCommitFailed) && !moved(ctx, t, base) {
			return base, landed, dropped, fmt.Errorf("commit compaction of %s: %w", t.Table, err)
		}
		if attempt >= maxAttempts {
			return base, landed, dropped, errors.New(MsgStaleMetadata)
		}
		select {
		case <-time.After(backoff << (attempt - 1)):
		case <-ctx.Done():
			return base, landed, dropped, ctx.Err()
		}
	}
}

func moved(ctx context.Context, t jobs.Target, base *table.Table) bool {
	now, err := t.Bucket.LoadTable(ctx, t.Table)
	return err == nil && now.MetadataLocation() != base.MetadataLocation()
}

// conflicts splits the batch into groups that can still commit on fresh,
// groups whose rewrite already landed (a commit reported as failed that
// went through: all their outputs were added since start), and groups that
// truly conflict: a replaced file was removed since start,
// or a position delete or deletion vector was added since start in the
// partition of one of the group's files (it may delete rows the rewrite
// has already copied). Equality deletes added since start do not
// conflict: the rewritten files keep start's sequence number, so those
// deletes still apply to them. It also returns the delete files removed
// since start, which the retry must not try to remove again.
func conflicts(ctx context.Context, fresh *table.Table, start *table.Snapshot, batch []table.CompactionGroupResult) (keep, drop, landed []table.CompactionGroupResult, removedDeletes map[string]bool, err error) {
	fs, err := fresh.FS(ctx)
	if err != nil {
		return nil, nil, nil, nil, err
	}
	removedDeletes = map[string]bool{}
	meta := fresh.Metadata()
	removed, added := map[string]bool{}, map[string]bool{}
	deletedParts := map[string]bool{}
	reached := false
	cur := fresh.CurrentSnapshot()
	for s := cur; s != nil; {
		if s.SnapshotID == start.SnapshotID {
			reached = true
			break
		}
		manifests, err := s.Manifests(fs)
		if err != nil {
			return nil, nil, nil, nil, fmt.Errorf("read manifest list %s: %w", s.ManifestList, err)
		}
		for _, m := range manifests {
			if m.SnapshotID() != s.SnapshotID {
				continue // carried over, not written by this commit
			}
			for e, err := range m.Entries(fs, false) {
				if err != nil {
					return nil, nil, nil, nil, fmt.Errorf("read manifest %s: %w", m.FilePath(), err)
				}
				if e.SnapshotID() != s.SnapshotID {
					continue
				}
				df := e.DataFile()
				switch {
				case e.Status() == iceberg.EntryStatusDELETED && df.ContentType() == iceberg.EntryContentData:
					removed[df.FilePath()] = true
				case e.Status() == iceberg.EntryStatusADDED && df.ContentType() == iceberg.EntryContentData:
					added[df.FilePath()] = true
				case e.Status() == iceberg.EntryStatusADDED && df.ContentType() == iceberg.EntryContentPosDeletes:
					deletedParts[partitionKey(df)] = true
				case e.Status() == iceberg.EntryStatusDELETED:
					removedDeletes[df.FilePath()] = true // a delete file: no longer ours to remove
				}
			}
		}
		if s.ParentSnapshotID == nil {
			break
		}
		s = meta.SnapshotByID(*s.ParentSnapshotID)
	}
	if !reached {
		// The table was rolled back or replaced: nothing planned on the
		// old state may commit.
		return nil, batch, nil, removedDeletes, nil
	}
	for _, r := range batch {
		if len(r.NewDataFiles) > 0 && allIn(r.NewDataFiles, added) {
			landed = append(landed, r)
			continue
		}
		bad := false
		for _, df := range r.OldDataFiles {
			if removed[df.FilePath()] || deletedParts[partitionKey(df)] {
				bad = true
				break
			}
		}
		if bad {
			drop = append(drop, r)
		} else {
			keep = append(keep, r)
		}
	}
	return keep, drop, landed, removedDeletes, nil
}

func allIn(files []iceberg.DataFile, set map[string]bool) bool {
	for _, df := range files {
		if !set[df.FilePath()] {
			return false
		}
	}
	return true
}
