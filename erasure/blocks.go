package erasure

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"

	"github.com/icekeeper/icekeeper/expire"
	"github.com/icekeeper/icekeeper/internal/state"
	"github.com/icekeeper/icekeeper/jobs"
	"github.com/icekeeper/icekeeper/planner"
)

// A file that held removed rows and that another table references is
// kept, and blocks erasure, as a tag does. Unlike a tag, nothing in the
// table's own metadata leads back to it once the run expired the
// snapshots that reached it: so the run remembers it in the state store,
// and every later run checks it again until it is resolved — gone from
// storage, or held by no table any more and then deleted through the
// same checks as every other file.

// heldFiles sorts kept, files the run took out of the table that are
// still stored, into blocks by the other table that holds each (noted in
// holders, by path, with its bucket), and those no other table holds.
// rewritten says when each file's rows were removed and are due.
func (j *Job) heldFiles(ctx context.Context, r *jobs.Run[Settings], kept []string, rewritten []Rewrite, holders map[string]jobs.Target) ([]planner.ErasureBlock, []string, error) {
	if j.Holders == nil {
		return nil, kept, nil
	}
	held, err := j.Holders(ctx, r.Target, r.Settings.Removal, kept)
	if err != nil {
		return nil, nil, fmt.Errorf("find the tables that hold its files: %w", err)
	}
	of := map[string]Rewrite{}
	for _, rw := range rewritten {
		for _, p := range slices.Concat(rw.DataFiles, rw.DeleteFiles) {
			of[p] = rw
		}
	}
	var blocks []planner.ErasureBlock
	var unheld []string
	for _, p := range kept {
		h, ok := held[p]
		if !ok {
			unheld = append(unheld, p)
			continue
		}
		rw := of[p]
		holders[p] = h
		blocks = append(blocks, planner.ErasureBlock{Type: planner.BlockTable, Ref: holderName(r.Target, h), Path: p,
			Removed: rw.Removed, Due: rw.Due, Since: r.Now.UTC()})
	}
	return blocks, unheld, nil
}

// recheck checks the blocks remembered from earlier runs that this run
// did not find itself (found): a file gone from storage resolves its
// block; a file no other table holds any more is deleted (a dry run
// counts what would be) and resolves it; the rest still block. It stores
// what still blocks and forgets what is resolved (not in a dry run), and
// returns every block by another table, found or remembered. holders has
// the holding table of each found block's path.
func (j *Job) recheck(ctx context.Context, r *jobs.Run[Settings], fsys icebergio.IO, tbl *table.Table, remembered []state.ErasureBlock, found []planner.ErasureBlock, holders map[string]jobs.Target, fig *Figures) ([]planner.ErasureBlock, error) {
	t := r.Target
	earlier := map[string]state.ErasureBlock{}
	for _, b := range remembered {
		earlier[b.Path] = b
	}
	blocks := slices.Clone(found)
	for i, b := range blocks {
		if e, ok := earlier[b.Path]; ok {
			blocks[i].Since = e.FirstSeen
			delete(earlier, b.Path)
		}
	}
	var again []string
	for p := range earlier {
		again = append(again, p)
	}
	var resolved []string
	if len(again) > 0 {
		gone, stored, err := absent(ctx, fsys, tbl.Location(), again)
		if err != nil {
			return nil, err
		}
		fig.proved(gone)
		resolved = append(resolved, gone...)
		held := map[string]jobs.Target{}
		if len(stored) > 0 && j.Holders != nil {
			if held, err = j.Holders(ctx, t, r.Settings.Removal, stored); err != nil {
				return nil, fmt.Errorf("find the tables that hold its files: %w", err)
			}
		}
		var free []string
		for _, p := range stored {
			e := earlier[p]
			h, ok := held[p]
			if !ok {
				free = append(free, p)
				continue
			}
			holders[p] = h
			blocks = append(blocks, planner.ErasureBlock{Type: planner.BlockTable, Ref: holderName(t, h), Path: p,
				Removed: e.Removed, Due: e.Due, Since: e.FirstSeen})
		}
		if len(free) > 0 {
			if err := j.deleteFreed(ctx, r, fsys, tbl, free, fig); err != nil {
				return nil, err
			}
			resolved = append(resolved, free...)
		}
	}
	slices.SortFunc(blocks, func(a, b planner.ErasureBlock) int {
		return cmp.Or(cmp.Compare(a.Ref, b.Ref), cmp.Compare(a.Path, b.Path))
	})
	if r.DryRun || j.Blocks == nil {
		return blocks, nil
	}
	rows := make([]state.ErasureBlock, len(blocks))
	for i, b := range blocks {
		// Keyed by the holder's own bucket: ns.t of another bucket of
		// the domain is another table.
		rows[i] = state.ErasureBlock{Table: t.Key(), Path: b.Path, Holder: holders[b.Path].Key(),
			Removed: b.Removed, Due: b.Due, FirstSeen: b.Since}
	}
	if err := j.Blocks.PutErasureBlocks(ctx, rows); err != nil {
		return nil, err
	}
	if _, err := j.Blocks.DeleteErasureBlocks(ctx, t.Key(), resolved); err != nil {
		return nil, err
	}
	return blocks, nil
}

// deleteFreed deletes files no other table holds any more, which held
// removed rows, through DeleteFiles' checks, and looks for each
// afterwards; a dry run counts those DeleteFiles would delete.
func (j *Job) deleteFreed(ctx context.Context, r *jobs.Run[Settings], fsys icebergio.IO, tbl *table.Table, paths []string, fig *Figures) error {
	t := r.Target
	if r.DryRun {
		if j.Unreferenced == nil {
			return errors.New("erasure has no file deleter wired")
		}
		del, err := j.Unreferenced(ctx, t, r.Settings.Removal, tbl, paths)
		if err != nil {
			return fmt.Errorf("check files no other table holds any more: %w", err)
		}
		fig.ObjectsDeleted += len(del)
		return nil
	}
	if j.DeleteFiles == nil {
		return errors.New("erasure has no file deleter wired")
	}
	n, err := j.DeleteFiles(ctx, t, r.Settings.Removal, paths)
	fig.ObjectsDeleted += n
	if err != nil {
		return fmt.Errorf("delete files no other table holds any more: %w", err)
	}
	gone, kept, err := absent(ctx, fsys, tbl.Location(), paths)
	if err != nil {
		return err
	}
	fig.proved(gone)
	// Still stored, with no other table holding it: the table's own
	// metadata references it again (its versions are traced from there
	// again), or it lies outside the table's location, which erasure
	// never deletes.
	fig.Kept = append(fig.Kept, kept...)
	return nil
}

// wouldDelete is how many files a real run at the same clock deletes
// after expiring snapshots ids of before: the files of those snapshots
// that DeleteFiles would delete from the table as the expiry leaves it.
func (j *Job) wouldDelete(ctx context.Context, r *jobs.Run[Settings], before *table.Table, ids []int64, fsys icebergio.IO) (int, error) {
	if j.Unreferenced == nil {
		return 0, errors.New("erasure has no file deleter wired")
	}
	manifests, files, err := expire.FilesOf(fsys, before.Metadata(), ids, r.Progress)
	if err != nil {
		return 0, fmt.Errorf("list the files of the snapshots it would expire: %w", err)
	}
	b, err := table.MetadataBuilderFromBase(before.Metadata(), before.MetadataLocation())
	if err != nil {
		return 0, fmt.Errorf("model the expiry: %w", err)
	}
	if err := b.RemoveSnapshots(ids, false); err != nil {
		return 0, fmt.Errorf("model the expiry: %w", err)
	}
	meta, err := b.Build()
	if err != nil {
		return 0, fmt.Errorf("model the expiry: %w", err)
	}
	after := table.New(before.Identifier(), meta, before.MetadataLocation(),
		func(context.Context) (icebergio.IO, error) { return fsys, nil }, nil)
	del, err := j.Unreferenced(ctx, r.Target, r.Settings.Removal, after, slices.Concat(manifests, files))
	if err != nil {
		return 0, fmt.Errorf("check the files of the snapshots it would expire: %w", err)
	}
	return len(del), nil
}

// holderName is the table h as t's failure names it: bare in t's own
// catalog, with its bucket in another bucket of the domain.
func holderName(t, h jobs.Target) string { return h.Bucket.TableName(h.Table, t.Bucket) }

// tableHolders are the failure's words for blocks by other tables, one
// clause per table, as a tag's names the tag.
func tableHolders(blocks []planner.ErasureBlock) []string {
	var out []string
	for i := 0; i < len(blocks); {
		n := 1
		for i+n < len(blocks) && blocks[i+n].Ref == blocks[i].Ref {
			n++
		}
		group := blocks[i : i+n]
		first := slices.MinFunc(group, func(a, b planner.ErasureBlock) int { return a.Due.Compare(b.Due) })
		if n == 1 {
			out = append(out, fmt.Sprintf("table %q references %s (rows due %s); remove the reference to let erasure finish",
				first.Ref, first.Path, stamp(first.Due)))
		} else {
			out = append(out, fmt.Sprintf("table %q references %s and %d more files that held removed rows (rows due %s); remove the references to let erasure finish",
				first.Ref, first.Path, n-1, stamp(first.Due)))
		}
		i += n
	}
	return out
}

// proved records files found absent from storage now.
func (f *Figures) proved(gone []string) {
	if len(gone) == 0 {
		return
	}
	f.Gone = append(f.Gone, gone...)
	if f.GoneAt.IsZero() {
		f.GoneAt = time.Now().UTC()
	}
}
