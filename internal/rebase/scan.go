package rebase

import (
	"context"
	"fmt"
	"iter"
	"slices"

	"github.com/apache/iceberg-go"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"

	"github.com/icekeeper/icekeeper/internal/verified"
)

// Base is the table as a rewrite found it: the snapshot it plans on, the
// live data files with the deletes that apply to each, and those deletes
// indexed. Every snapshot the rewrite commits is rebased from it.
type Base struct {
	Start   *table.Snapshot
	Tasks   []table.FileScanTask
	Deletes Deletes
}

// Scan reads tbl's current snapshot: its live data files, each once
// (WholeFiles), and the deletes attached to them, dangling ones included.
func Scan(ctx context.Context, tbl *table.Table) (Base, error) {
	b := Base{Start: tbl.CurrentSnapshot()}
	// Planning reads every manifest; on object storage each is a round
	// trip, so more are read at once than there are cores.
	tasks, err := PlanVerified(ctx, tbl, b.Start)
	if err != nil {
		return b, err
	}
	b.Tasks = tasks
	b.Deletes = Attachments(b.Tasks)
	if b.Deletes.Dangling, err = DanglingDeletes(ctx, tbl, b.Deletes.Covers); err != nil {
		return b, err
	}
	return b, nil
}

// PlanVerified plans a scan of every live data file of tbl's snapshot
// snap, each once (WholeFiles), and checks that it found as many as the
// snapshot counts (verified.LiveDataFiles): iceberg-go reads the manifests,
// and a manifest cut short at a block boundary reads without an error.
// Files without rows are counted, then left out, as iceberg-go's scans
// leave them.
func PlanVerified(ctx context.Context, tbl *table.Table, snap *table.Snapshot) ([]table.FileScanTask, error) {
	if snap == nil {
		return nil, nil
	}
	fs, err := tbl.FS(ctx)
	if err != nil {
		return nil, err
	}
	// iceberg-go opens the manifests itself: it is handed an IO that
	// checks each one's size against the list's manifest_length on open
	// (the size comes with the read), so that a manifest cut at a block
	// boundary fails the plan even where no count or total would tell.
	list, err := verified.Manifests(fs, snap)
	if err != nil {
		return nil, fmt.Errorf("plan scan of %s: %w", tbl.Identifier(), err)
	}
	checkedFS := verified.IO(fs, list)
	checked := table.New(tbl.Identifier(), tbl.Metadata(), tbl.MetadataLocation(),
		func(context.Context) (icebergio.IO, error) { return checkedFS, nil }, nil)
	tasks, err := checked.Scan(table.WithSnapshotID(snap.SnapshotID), table.WithMaxConcurrency(verified.ManifestReads),
		table.WithOptions(iceberg.Properties{"include_empty_files": "true"})).PlanFiles(ctx)
	if err != nil {
		return nil, fmt.Errorf("plan scan of %s at snapshot %d: %w", tbl.Identifier(), snap.SnapshotID, err)
	}
	tasks = WholeFiles(tasks)
	if err := verified.LiveDataFiles(fs, snap, len(tasks)); err != nil {
		return nil, fmt.Errorf("plan scan of %s: %w", tbl.Identifier(), err)
	}
	return slices.DeleteFunc(tasks, func(t table.FileScanTask) bool { return t.File.Count() == 0 }), nil
}

// WholeFiles joins the scan's splits of one file (a large Parquet file is
// planned as several byte ranges) back into one task: a rewrite replaces
// files, and a file planned twice would be removed by one commit while
// another still had to copy the rest of its rows.
func WholeFiles(tasks []table.FileScanTask) []table.FileScanTask {
	out := make([]table.FileScanTask, 0, len(tasks))
	at := map[string]int{}
	for _, t := range tasks {
		p := t.File.FilePath()
		i, ok := at[p]
		if !ok {
			at[p] = len(out)
			t.Start, t.Length, t.Residual = 0, t.File.FileSizeBytes(), nil
			out = append(out, t)
			continue
		}
		w := &out[i]
		w.DeleteFiles = unionFiles(w.DeleteFiles, t.DeleteFiles)
		w.EqualityDeleteFiles = unionFiles(w.EqualityDeleteFiles, t.EqualityDeleteFiles)
		w.DeletionVectorFiles = unionFiles(w.DeletionVectorFiles, t.DeletionVectorFiles)
	}
	return out
}

func unionFiles(a, b []iceberg.DataFile) []iceberg.DataFile {
	for _, f := range b {
		if !slices.ContainsFunc(a, func(g iceberg.DataFile) bool { return g.FilePath() == f.FilePath() }) {
			a = append(a, f)
		}
	}
	return a
}

// LiveEntries yields the live entries of the current snapshot's manifests
// of one content type.
func LiveEntries(ctx context.Context, tbl *table.Table, content iceberg.ManifestContent) iter.Seq2[iceberg.ManifestEntry, error] {
	return func(yield func(iceberg.ManifestEntry, error) bool) {
		fs, err := tbl.FS(ctx)
		if err != nil {
			yield(nil, err)
			return
		}
		snap := tbl.CurrentSnapshot()
		manifests, err := verified.Manifests(fs, snap)
		if err != nil {
			yield(nil, err)
			return
		}
		manifests = slices.DeleteFunc(manifests, func(m iceberg.ManifestFile) bool { return m.ManifestContent() != content })
		for m, err := range verified.ReadAhead(ctx, fs, manifests, true) {
			if err != nil {
				yield(nil, err)
				return
			}
			for _, e := range m.Entries {
				if !yield(e, nil) {
					return
				}
			}
		}
	}
}
