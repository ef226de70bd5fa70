package statistics

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"maps"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/icekeeper/icekeeper/compactor"
	"github.com/icekeeper/icekeeper/internal/testkit/tableenv"
	"github.com/icekeeper/icekeeper/jobs"
	"github.com/icekeeper/icekeeper/maintenance"
)

// figures are a partition's counts as the test derives them.
type figures struct {
	records, bytes, posRecords int64
	files, posFiles            int64
}

// The partition statistics file of a run holds, per partition, the counts
// iceberg-go's own scan planning gives for the snapshot (data files,
// records, bytes; position delete files and records), under the spec's
// field IDs, which iceberg-go reads back from the file's schema; and the
// table iceberg-go loads lists the file with its size.
func TestPartitionStatisticsMatchTheManifests(t *testing.T) {
	spec := iceberg.NewPartitionSpec(tableenv.PF(7, 1000, "cat", iceberg.IdentityTransform{}), tableenv.PF(3, 1001, "ts_day", iceberg.DayTransform{}))
	e, tbl := tableenv.New(t, schema, spec, "2")
	e.Defaults.Configs[maintenance.Statistics] = maintenance.Config{Status: maintenance.Enabled}
	j := &Job{}
	runner := e.Runner(j.Definition())
	g := newGen()
	for range 3 {
		tbl = g.append(t, e.Ctx, tbl, 400)
	}
	tbl = e.PosDelete(tbl, 3, 30, 300, 900)
	out, err := runner.Run(e.Ctx, e.Target(), maintenance.Statistics, "test", jobs.Options{})
	if err != nil || out.Status != "Successful" {
		t.Fatalf("run: %v %s (%s)", err, out.Status, out.FailureMessage)
	}
	fig := out.Figures.(*Figures)
	tbl = e.Load()

	// What iceberg-go's scan planning says, by partition.
	want := map[string]*figures{}
	tasks, err := tbl.Scan().PlanFiles(e.Ctx)
	if err != nil {
		t.Fatal(err)
	}
	seenDeletes := map[string]bool{}
	key := func(df iceberg.DataFile) string {
		return fmt.Sprintf("%v|%v", df.Partition()[1000], df.Partition()[1001])
	}
	for _, task := range tasks {
		k := key(task.File)
		if want[k] == nil {
			want[k] = &figures{}
		}
		want[k].files++
		want[k].records += task.File.Count()
		want[k].bytes += task.File.FileSizeBytes()
		for _, d := range task.DeleteFiles {
			if !seenDeletes[d.FilePath()] {
				seenDeletes[d.FilePath()] = true
				want[key(d)].posFiles++
				want[key(d)].posRecords += d.Count()
			}
		}
	}

	var listed *table.PartitionStatisticsFile
	for f := range tbl.Metadata().PartitionStatistics() {
		if f.SnapshotID == tbl.CurrentSnapshot().SnapshotID {
			listed = &f
		}
	}
	if listed == nil || listed.StatisticsPath != fig.PartitionStatisticsPath {
		t.Fatalf("the table lists %+v, the run wrote %q", listed, fig.PartitionStatisticsPath)
	}
	fs, err := tbl.FS(e.Ctx)
	if err != nil {
		t.Fatal(err)
	}
	f, err := fs.Open(listed.StatisticsPath)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := io.ReadAll(f)
	f.Close()
	if err != nil || int64(len(raw)) != listed.FileSizeInBytes {
		t.Fatalf("file of %d bytes, listed %d (%v)", len(raw), listed.FileSizeInBytes, err)
	}
	pr, err := file.NewParquetReader(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	fr, err := pqarrow.NewFileReader(pr, pqarrow.ArrowReadProperties{}, memory.DefaultAllocator)
	if err != nil {
		t.Fatal(err)
	}
	got, err := fr.ReadTable(e.Ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer got.Release()
	sc, err := table.ArrowSchemaToIceberg(got.Schema(), false, nil)
	if err != nil {
		t.Fatal(err)
	}
	part, _ := unifiedPartitionType(tbl.Metadata())
	if wantSc := PartitionStatisticsSchema(part, 2); !sc.Equals(wantSc) {
		t.Fatalf("the file's schema, as iceberg-go reads it:\n%s\nwant the spec's:\n%s", sc, wantSc)
	}

	tr := array.NewTableReader(got, 0)
	defer tr.Release()
	rows := 0
	for tr.Next() {
		rec := tr.RecordBatch()
		ps := rec.Column(0).(*array.Struct)
		for i := range int(rec.NumRows()) {
			rows++
			cat := ps.Field(0).(*array.String).Value(i)
			day := ps.Field(1).ValueStr(i)
			var w *figures
			for k, v := range want {
				if k == fmt.Sprintf("%v|%v", cat, dayOf(t, day)) {
					w = v
				}
			}
			if w == nil {
				t.Fatalf("partition %s/%s is not one the scan found (%v)", cat, day, want)
			}
			gotF := figures{records: rec.Column(2).(*array.Int64).Value(i), files: int64(rec.Column(3).(*array.Int32).Value(i)),
				bytes: rec.Column(4).(*array.Int64).Value(i), posRecords: rec.Column(5).(*array.Int64).Value(i),
				posFiles: int64(rec.Column(6).(*array.Int32).Value(i))}
			if gotF != *w {
				t.Errorf("partition %s/%s: %+v, the scan says %+v", cat, day, gotF, *w)
			}
		}
	}
	deletes := int64(0)
	for _, w := range want {
		deletes += w.posFiles
	}
	t.Logf("%d partitions, %d position delete files", rows, deletes)
	if deletes == 0 || rows < 5 {
		t.Fatalf("the fixture has %d partitions and %d position delete files: too few to prove the counts", rows, deletes)
	}
	if rows != len(want) || rows != fig.Partitions {
		t.Errorf("%d rows, %d partitions planned, figures say %d", rows, len(want), fig.Partitions)
	}

	// The next run's file replaces this one in the metadata.
	g.append(t, e.Ctx, tbl, 100)
	if out, err := runner.Run(e.Ctx, e.Target(), maintenance.Statistics, "test", jobs.Options{}); err != nil || out.Status != "Successful" {
		t.Fatalf("second run: %v %s (%s)", err, out.Status, out.FailureMessage)
	}
	tbl = e.Load()
	var snaps []int64
	for f := range tbl.Metadata().PartitionStatistics() {
		snaps = append(snaps, f.SnapshotID)
	}
	if len(snaps) != 1 || snaps[0] != tbl.CurrentSnapshot().SnapshotID {
		t.Errorf("partition statistics listed for snapshots %v, want only the current %d", snaps, tbl.CurrentSnapshot().SnapshotID)
	}
}

// dayOf is the partition value iceberg-go holds for a date Arrow prints.
func dayOf(t *testing.T, s string) any {
	t.Helper()
	lit, err := iceberg.NewLiteral(s).To(iceberg.PrimitiveTypes.Date)
	if err != nil {
		t.Fatal(err)
	}
	return lit.(iceberg.DateLiteral).Value()
}

// After the first run, partition statistics are brought up to date from
// the manifests each commit wrote — appends, position deletes, a
// compaction — and each file counts what a count of every manifest of the
// snapshot counts. On local disk, and on the Iceberg REST catalog with S3
// (SeaweedFS) where one is configured.
func TestPartitionStatisticsFromTheChange(t *testing.T) {
	spec := iceberg.NewPartitionSpec(tableenv.PF(7, 1000, "cat", iceberg.IdentityTransform{}))
	t.Run("local", func(t *testing.T) {
		e, tbl := tableenv.New(t, schema, spec, "2")
		partitionsFromTheChange(t, e, tbl)
	})
	t.Run("rest", func(t *testing.T) {
		e, tbl := tableenv.NewREST(t, schema, spec, "2")
		partitionsFromTheChange(t, e, tbl)
	})
}

func partitionsFromTheChange(t *testing.T, e *tableenv.Env, tbl *table.Table) {
	e.Defaults.Configs[maintenance.Statistics] = maintenance.Config{Status: maintenance.Enabled}
	j := &Job{}
	runner := e.Runner(j.Definition())
	runner.Jobs = jobs.Map(j.Definition(), (&compactor.Job{}).Definition())
	g := newGen()
	run := func(typ maintenance.JobType) jobs.Outcome {
		t.Helper()
		out, err := runner.Run(e.Ctx, e.Target(), typ, "test", jobs.Options{})
		if err != nil || out.Status != "Successful" {
			t.Fatalf("%s: %v %s (%s)", typ, err, out.Status, out.FailureMessage)
		}
		return out
	}
	for range 3 {
		tbl = g.append(t, e.Ctx, tbl, 300)
	}
	if fig := run(maintenance.Statistics).Figures.(*Figures); fig.PartitionsFromChange || fig.Partitions != 5 {
		t.Fatalf("first run: from the change %v, %d partitions", fig.PartitionsFromChange, fig.Partitions)
	}
	for i, change := range []func(){
		func() { g.append(t, e.Ctx, e.Load(), 200) },
		func() { e.PosDelete(e.Load(), 2, 20, 200, 950) },
		func() {
			run(maintenance.Compaction)
			if op := e.Load().CurrentSnapshot().Summary.Operation; op != table.OpReplace {
				t.Fatalf("compaction committed %s, not replace", op)
			}
		},
		func() { g.append(t, e.Ctx, e.Load(), 10) },
	} {
		change()
		fig := run(maintenance.Statistics).Figures.(*Figures)
		if !fig.PartitionsFromChange {
			t.Fatalf("change %d: partition statistics counted afresh", i)
		}
		tbl = e.Load()
		fs, err := tbl.FS(e.Ctx)
		if err != nil {
			t.Fatal(err)
		}
		part, _ := unifiedPartitionType(tbl.Metadata())
		got, err := readPartitionStatistics(e.Ctx, fs, fig.PartitionStatisticsPath, part, 2)
		if err != nil {
			t.Fatal(err)
		}
		want, err := partitionStatistics(e.Ctx, fs, tbl.Metadata(), tbl.CurrentSnapshot().SnapshotID)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(want.rows) {
			t.Fatalf("change %d: %d partitions from the change, %d counted", i, len(got), len(want.rows))
		}
		for _, w := range want.rows {
			g, ok := got[partitionKey(w.specID, w.values, part.FieldList)]
			if !ok {
				t.Fatalf("change %d: partition %v missing", i, w.values)
			}
			counts := func(r partitionRow) [8]int64 {
				return [8]int64{r.dataRecords, int64(r.dataFiles), r.dataBytes, r.posRecords, int64(r.posFiles), r.eqRecords, int64(r.eqFiles), int64(r.dvs)}
			}
			if counts(*g) != counts(w) {
				t.Errorf("change %d, partition %v: %v from the change, %v counted", i, w.values, counts(*g), counts(w))
			}
		}
	}
}

// Rows from the change that do not add up to the snapshot's totals are
// refused (the run then counts every manifest); where the summary has no
// total there is nothing to hold them to.
func TestCheckTotals(t *testing.T) {
	p := &partitionFile{rows: []partitionRow{{dataFiles: 2, dataRecords: 30, posFiles: 1, posRecords: 4}, {dataFiles: 1, dataRecords: 5}}}
	snap := func(props map[string]string) *table.Snapshot {
		return &table.Snapshot{SnapshotID: 9, Summary: &table.Summary{Operation: table.OpAppend, Properties: props}}
	}
	good := map[string]string{"total-data-files": "3", "total-records": "35", "total-delete-files": "1", "total-position-deletes": "4", "total-equality-deletes": "0"}
	if err := checkTotals(snap(good), p); err != nil {
		t.Errorf("totals that add up: %v", err)
	}
	if err := checkTotals(snap(nil), p); err != nil {
		t.Errorf("no totals: %v", err)
	}
	for key := range good {
		bad := maps.Clone(good)
		bad[key] = "99"
		if err := checkTotals(snap(bad), p); !errors.Is(err, errNotFromChange) {
			t.Errorf("%s off: %v", key, err)
		}
	}
}
