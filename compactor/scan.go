package compactor

import (
	"context"
	"fmt"
	"iter"
	"slices"
	"strings"
	"time"

	"github.com/apache/iceberg-go"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"

	"github.com/icekeeper/icekeeper/planner"
)

// scanned is the table as the run found it: the snapshot it plans on, the
// live data files with the deletes that apply to each, and those files as
// the planner sees them.
type scanned struct {
	start   *table.Snapshot
	tasks   []table.FileScanTask
	files   []planner.File
	deletes deleteIndex
}

// scan reads tbl's current snapshot. Commit times of the files are read
// only when withAges is set (a minimum file age is configured): it costs a
// pass over the data manifests.
func scan(ctx context.Context, tbl *table.Table, withAges bool) (scanned, error) {
	sc := scanned{start: tbl.CurrentSnapshot()}
	// Planning reads every manifest; on object storage each is a round
	// trip, so more are read at once than there are cores.
	tasks, err := tbl.Scan(table.WithMaxConcurrency(manifestReads)).PlanFiles(ctx)
	if err != nil {
		return sc, fmt.Errorf("plan scan of %s: %w", tbl.Identifier(), err)
	}
	sc.tasks = wholeFiles(tasks)
	var addedAt map[string]time.Time
	if withAges {
		if addedAt, err = fileAges(ctx, tbl); err != nil {
			return sc, err
		}
	}
	meta := tbl.Metadata()
	sc.files = make([]planner.File, len(sc.tasks))
	for i, task := range sc.tasks {
		df := task.File
		sc.files[i] = planner.File{ID: i, Path: df.FilePath(), Partition: partitionKey(df), Label: partitionLabel(meta, df),
			Format: strings.ToLower(string(df.FileFormat())), SizeBytes: df.FileSizeBytes(), Records: df.Count(),
			DeleteFiles:     len(task.DeleteFiles) + len(task.EqualityDeleteFiles) + len(task.DeletionVectorFiles),
			EqualityDeletes: len(task.EqualityDeleteFiles),
			DeletedRows:     deletedRows(task),
			OldSpec:         int(df.SpecID()) != meta.DefaultPartitionSpec(),
			AddedAt:         addedAt[df.FilePath()]}
	}
	sc.deletes = attachments(sc.tasks)
	if sc.deletes.dangling, err = danglingDeletes(ctx, tbl, sc.deletes.covers); err != nil {
		return sc, err
	}
	return sc, nil
}

// deletedRows is the rows of t's file that position deletes scoped to it
// alone delete (an upper bound: two may name one row).
func deletedRows(t table.FileScanTask) int64 {
	var n int64
	for _, d := range planner.PositionDeletes(t) {
		if scopedTo(d, t.File.FilePath()) {
			n += d.Count()
		}
	}
	return min(n, t.File.Count())
}

// scopedTo reports whether position delete file d names only the data
// file at path: a deletion vector or a delete file that references it,
// or one whose file_path bounds are both path.
func scopedTo(d iceberg.DataFile, path string) bool {
	if ref := d.ReferencedDataFile(); ref != nil {
		return *ref == path
	}
	lo, hasLo := d.LowerBoundValues()[filePathFieldID]
	hi, hasHi := d.UpperBoundValues()[filePathFieldID]
	return hasLo && hasHi && string(lo) == path && string(hi) == path
}

// wholeFiles joins the scan's splits of one file (a large Parquet file is
// planned as several byte ranges) back into one task: compaction replaces
// files, and a file planned twice would be removed by one commit while
// another still had to copy the rest of its rows.
func wholeFiles(tasks []table.FileScanTask) []table.FileScanTask {
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

// fileAges maps each live data file of the current snapshot to the commit
// time of the snapshot that added it; files whose adding snapshot has
// expired are absent (and old enough by any measure).
func fileAges(ctx context.Context, tbl *table.Table) (map[string]time.Time, error) {
	meta := tbl.Metadata()
	out := map[string]time.Time{}
	for e, err := range liveEntries(ctx, tbl, iceberg.ManifestContentData) {
		if err != nil {
			return nil, err
		}
		if s := meta.SnapshotByID(e.SnapshotID()); s != nil {
			out[e.DataFile().FilePath()] = time.UnixMilli(s.TimestampMs)
		}
	}
	return out, nil
}

// liveEntries yields the live entries of the current snapshot's manifests
// of one content type.
func liveEntries(ctx context.Context, tbl *table.Table, content iceberg.ManifestContent) iter.Seq2[iceberg.ManifestEntry, error] {
	return func(yield func(iceberg.ManifestEntry, error) bool) {
		fs, err := tbl.FS(ctx)
		if err != nil {
			yield(nil, err)
			return
		}
		snap := tbl.CurrentSnapshot()
		manifests, err := snap.Manifests(fs)
		if err != nil {
			yield(nil, fmt.Errorf("read manifest list %s: %w", snap.ManifestList, err))
			return
		}
		manifests = slices.DeleteFunc(manifests, func(m iceberg.ManifestFile) bool { return m.ManifestContent() != content })
		for m, err := range readManifests(ctx, fs, manifests) {
			if err != nil {
				yield(nil, err)
				return
			}
			for _, e := range m.entries {
				if !yield(e, nil) {
					return
				}
			}
		}
	}
}

// manifestReads is how many manifests are read at once: on object storage
// each read is a round trip, and a table can hold thousands.
const manifestReads = 16

type readManifest struct {
	iceberg.ManifestFile
	entries []iceberg.ManifestEntry // live ones
}

// readManifests yields the live entries of each manifest in order, reading
// up to manifestReads ahead of the consumer.
func readManifests(ctx context.Context, fs icebergio.IO, manifests []iceberg.ManifestFile) iter.Seq2[readManifest, error] {
	return func(yield func(readManifest, error) bool) {
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		type result struct {
			entries []iceberg.ManifestEntry
			err     error
		}
		results := make([]chan result, len(manifests))
		for i := range results {
			results[i] = make(chan result, 1)
		}
		ahead := make(chan struct{}, manifestReads)
		go func() {
			for i, m := range manifests {
				select {
				case ahead <- struct{}{}:
				case <-ctx.Done():
					return
				}
				go func() {
					entries, err := m.FetchEntries(fs, true)
					if err != nil {
						err = fmt.Errorf("read manifest %s: %w", m.FilePath(), err)
					}
					results[i] <- result{entries, err}
				}()
			}
		}()
		for i, m := range manifests {
			var r result
			select {
			case r = <-results[i]:
			case <-ctx.Done():
				yield(readManifest{}, ctx.Err())
				return
			}
			<-ahead
			if !yield(readManifest{m, r.entries}, r.err) || r.err != nil {
				return
			}
		}
	}
}

// partitionLabel and partitionKey are the planner's names for a file's
// partition, for the executor's messages and groupings.
func partitionLabel(meta table.Metadata, df iceberg.DataFile) string {
	return planner.PartitionLabel(meta, df)
}

func partitionKey(df iceberg.DataFile) string { return planner.PartitionKey(df) }
