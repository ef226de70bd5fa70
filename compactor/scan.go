package compactor

import (
	"context"
	"strings"
	"time"

	"github.com/apache/iceberg-go"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"

	"github.com/icekeeper/icekeeper/internal/objects"
	"github.com/icekeeper/icekeeper/internal/rebase"
	"github.com/icekeeper/icekeeper/planner"
)

// scanned is the table as the run found it: the snapshot it plans on, the
// live data files with the deletes that apply to each, and those files as
// the planner sees them; avro holds the manifests the scan read (memoBytes
// of them at most), for the commit that follows.
type scanned struct {
	start   *table.Snapshot
	tasks   []table.FileScanTask
	files   []planner.File
	deletes rebase.Deletes
	avro    icebergio.IO
}

// memoBytes bounds the manifest bytes a scan holds for the stage's commit
// and the ages pass. A streaming writer's table, a manifest of a few KiB
// per commit, fits whole; past the bound a manifest is read again.
const memoBytes = 64 << 20

// scan reads tbl's current snapshot (rebase.Scan) through a memo of its
// Avro files: the commit of the stage reads again those holding the files
// it replaces, and so does the ages pass. Commit times of the files are
// read only when withAges is set (a minimum file age is configured): it
// costs a pass over the data manifests.
func scan(ctx context.Context, tbl *table.Table, withAges bool) (scanned, error) {
	tbl, memo, err := memoManifests(ctx, tbl)
	if err != nil {
		return scanned{}, err
	}
	base, err := rebase.Scan(ctx, tbl)
	sc := scanned{start: base.Start, tasks: base.Tasks, deletes: base.Deletes, avro: memo}
	if err != nil {
		return sc, err
	}
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
		sc.files[i] = planner.File{ID: i, Path: df.FilePath(), Partition: planner.PartitionKey(df), Label: planner.PartitionLabel(meta, df),
			Format: strings.ToLower(string(df.FileFormat())), SizeBytes: df.FileSizeBytes(), Records: df.Count(),
			DeleteFiles:     len(task.DeleteFiles) + len(task.EqualityDeleteFiles) + len(task.DeletionVectorFiles),
			EqualityDeletes: len(task.EqualityDeleteFiles),
			DeletedRows:     deletedRows(task),
			OldSpec:         int(df.SpecID()) != meta.DefaultPartitionSpec(),
			AddedAt:         addedAt[df.FilePath()]}
	}
	return sc, nil
}

// memoManifests returns tbl reading its Avro files (manifest lists and
// manifests) once each through objects.Memo, and the memo; it only reads.
func memoManifests(ctx context.Context, tbl *table.Table) (*table.Table, icebergio.IO, error) {
	fsys, err := tbl.FS(ctx)
	if err != nil {
		return nil, nil, err
	}
	memo := objects.Memo(fsys, func(name string) bool { return strings.HasSuffix(name, ".avro") }, memoBytes)
	return table.New(tbl.Identifier(), tbl.Metadata(), tbl.MetadataLocation(),
		func(context.Context) (icebergio.IO, error) { return memo, nil }, nil), memo, nil
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
	lo, hasLo := d.LowerBoundValues()[rebase.FilePathFieldID]
	hi, hasHi := d.UpperBoundValues()[rebase.FilePathFieldID]
	return hasLo && hasHi && string(lo) == path && string(hi) == path
}

// fileAges maps each live data file of the current snapshot to the commit
// time of the snapshot that added it; files whose adding snapshot has
// expired are absent (and old enough by any measure).
func fileAges(ctx context.Context, tbl *table.Table) (map[string]time.Time, error) {
	meta := tbl.Metadata()
	out := map[string]time.Time{}
	for e, err := range rebase.LiveEntries(ctx, tbl, iceberg.ManifestContentData) {
		if err != nil {
			return nil, err
		}
		if s := meta.SnapshotByID(e.SnapshotID()); s != nil {
			out[e.DataFile().FilePath()] = time.UnixMilli(s.TimestampMs)
		}
	}
	return out, nil
}
