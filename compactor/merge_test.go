package compactor

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/icekeeper/icekeeper/compactor/merge"
	"github.com/icekeeper/icekeeper/internal/testkit"
	"github.com/icekeeper/icekeeper/internal/testkit/tableenv"
	"github.com/icekeeper/icekeeper/internal/version"
	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/format"
)

// appendOnly fills a table with small appends and no deletes: the merge
// path's case.
func appendOnly(t *testing.T, spec iceberg.PartitionSpec, props iceberg.Properties) (*env, *table.Table) {
	t.Helper()
	e, tbl := newEnv(t, tableenv.BaseSchema, spec, "2")
	if len(props) > 0 {
		tbl = e.setProps(tbl, props)
	}
	for i := 0; i < 10; i++ {
		tbl = e.Append(tbl, 300)
	}
	return e, tbl
}

func (e *env) setProps(tbl *table.Table, props iceberg.Properties) *table.Table {
	e.T.Helper()
	tx := tbl.NewTransaction()
	if err := tx.SetProperties(props); err != nil {
		e.T.Fatal(err)
	}
	tbl, err := tx.Commit(e.Ctx)
	if err != nil {
		e.T.Fatal(err)
	}
	return tbl
}

// dataFiles returns the current snapshot's data files.
func (e *env) dataFiles() []iceberg.DataFile {
	e.T.Helper()
	tasks, err := e.Load().Scan().PlanFiles(e.Ctx)
	if err != nil {
		e.T.Fatal(err)
	}
	out := make([]iceberg.DataFile, len(tasks))
	for i, task := range tasks {
		out[i] = task.File
	}
	return out
}

func openParquet(t testing.TB, df iceberg.DataFile) *parquet.File {
	t.Helper()
	f, err := os.Open(strings.TrimPrefix(df.FilePath(), "file://"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	st, _ := f.Stat()
	pf, err := parquet.OpenFile(f, st.Size())
	if err != nil {
		t.Fatal(err)
	}
	return pf
}

// openParquet opens a data file of the table through its own file IO,
// local or S3.
func (e *env) openParquet(df iceberg.DataFile) *parquet.File {
	e.T.Helper()
	if strings.HasPrefix(df.FilePath(), "file://") {
		return openParquet(e.T, df)
	}
	fsys, err := e.Load().FS(e.Ctx)
	if err != nil {
		e.T.Fatal(err)
	}
	f, err := fsys.Open(df.FilePath())
	if err != nil {
		e.T.Fatal(err)
	}
	defer f.Close()
	b, err := io.ReadAll(f)
	if err != nil {
		e.T.Fatal(err)
	}
	pf, err := parquet.OpenFile(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		e.T.Fatal(err)
	}
	return pf
}

// columnStats are the table-wide totals and extremes of the manifests'
// column metrics, which compaction must not change.
type columnStats struct {
	values, nulls map[int]int64
	lower, upper  map[int][]byte
}

func statsOf(sc *iceberg.Schema, files []iceberg.DataFile) columnStats {
	s := columnStats{values: map[int]int64{}, nulls: map[int]int64{}, lower: map[int][]byte{}, upper: map[int][]byte{}}
	for _, df := range files {
		for _, f := range sc.Fields() {
			s.values[f.ID] += df.ValueCounts()[f.ID]
			s.nulls[f.ID] += df.NullValueCounts()[f.ID]
			cmp := func(a, b []byte) int { c, _ := merge.CompareBound(f.Type, a, b); return c }
			if l, ok := df.LowerBoundValues()[f.ID]; ok && (s.lower[f.ID] == nil || cmp(l, s.lower[f.ID]) < 0) {
				s.lower[f.ID] = l
			}
			if u, ok := df.UpperBoundValues()[f.ID]; ok && (s.upper[f.ID] == nil || cmp(u, s.upper[f.ID]) > 0) {
				s.upper[f.ID] = u
			}
		}
	}
	return s
}

// The merge path keeps every row, and its files are good files: the
// table's field IDs and codec, one row group, dictionary pages for the
// low-cardinality column, and manifest metrics that add up to the
// inputs' — counts equal, bounds no narrower.
func TestMergePath(t *testing.T) {
	for i, tc := range []struct {
		name  string
		spec  iceberg.PartitionSpec
		whole int64
	}{
		// First, the variant with the most concurrency: each input read
		// in concurrent ranges.
		{"unpartitioned, ranged reads", *iceberg.UnpartitionedSpec, 1},
		{"unpartitioned", *iceberg.UnpartitionedSpec, 0},
		{"identity+day", iceberg.NewPartitionSpec(tableenv.PF(2, 1000, "cat", iceberg.IdentityTransform{}), tableenv.PF(3, 1001, "ts_day", iceberg.DayTransform{})), 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			testkit.FirstUnderRace(t, i)
			e, _ := appendOnly(t, tc.spec, nil)
			before := statsOf(tableenv.BaseSchema, e.dataFiles())
			fig := e.checkCompaction(&Job{MinInputFiles: 2, wholeFileBytes: tc.whole})
			if fig.GroupsMerged != fig.GroupsCommitted {
				t.Fatalf("%d of %d groups merged; every group is append-only", fig.GroupsMerged, fig.GroupsCommitted)
			}
			files := e.dataFiles()
			after := statsOf(tableenv.BaseSchema, files)
			for _, f := range tableenv.BaseSchema.Fields() {
				cmp := func(a, b []byte) int { c, _ := merge.CompareBound(f.Type, a, b); return c }
				if after.values[f.ID] != before.values[f.ID] || after.nulls[f.ID] != before.nulls[f.ID] {
					t.Errorf("column %s: %d values, %d nulls; before %d, %d", f.Name, after.values[f.ID], after.nulls[f.ID], before.values[f.ID], before.nulls[f.ID])
				}
				if after.lower[f.ID] == nil || cmp(after.lower[f.ID], before.lower[f.ID]) > 0 || cmp(after.upper[f.ID], before.upper[f.ID]) < 0 {
					t.Errorf("column %s: bounds [%x, %x], inputs' [%x, %x]", f.Name, after.lower[f.ID], after.upper[f.ID], before.lower[f.ID], before.upper[f.ID])
				}
			}
			for _, df := range files {
				if df.ColumnSizes()[6] == 0 || len(df.SplitOffsets()) == 0 {
					t.Errorf("%s: column sizes %v, split offsets %v", df.FilePath(), df.ColumnSizes(), df.SplitOffsets())
				}
				pq := openParquet(t, df)
				if want := "icekeeper version " + version.Version() + " (build " + version.Commit() + ")"; pq.Metadata().CreatedBy != want {
					t.Errorf("created_by %q, want %q", pq.Metadata().CreatedBy, want)
				}
				for i, col := range pq.Schema().Fields() {
					if want := tableenv.BaseSchema.Fields()[i]; col.ID() != want.ID || col.Name() != want.Name {
						t.Errorf("%s: column %d is %s (id %d), want %s (id %d)", df.FilePath(), i, col.Name(), col.ID(), want.Name, want.ID)
					}
				}
				rgs := pq.Metadata().RowGroups
				if len(rgs) != 1 {
					t.Errorf("%s: %d row groups, want 1", df.FilePath(), len(rgs))
				}
				for _, c := range rgs[0].Columns {
					if c.MetaData.Codec != format.Zstd {
						t.Errorf("%s: column %v is %v, want the default zstd", df.FilePath(), c.MetaData.PathInSchema, c.MetaData.Codec)
					}
				}
				allNull := df.NullValueCounts()[2] == df.ValueCounts()[2] // the cat=null partition
				if cat := rgs[0].Columns[1].MetaData; !allNull && !slices.Contains(cat.Encoding, format.RLEDictionary) {
					t.Errorf("%s: low-cardinality column cat is not dictionary-encoded: %v", df.FilePath(), cat.Encoding)
				}
			}
		})
	}
}

// The table's write properties shape the output, whatever the inputs
// were written with (here zstd and dictionaries, the defaults): codec,
// row-group size, the dictionary limit past which a column falls back to
// plain pages, and dictionaries switched off.
func TestMergeHonoursWriteProperties(t *testing.T) {
	t.Run("codec, row groups", func(t *testing.T) {
		e, tbl := appendOnly(t, *iceberg.UnpartitionedSpec, nil)
		e.setProps(tbl, iceberg.Properties{
			"write.parquet.compression-codec":    "snappy",
			"write.parquet.row-group-size-bytes": "32768",
		})
		fig := e.checkCompaction(&Job{MinInputFiles: 2})
		if fig.GroupsMerged == 0 {
			t.Fatal("the merge path was not taken")
		}
		for _, df := range e.dataFiles() {
			md := openParquet(t, df).Metadata()
			if len(md.RowGroups) < 2 {
				t.Errorf("%s: %d row groups of %d rows; row groups are bounded at 32 KiB", df.FilePath(), len(md.RowGroups), df.Count())
			}
			for _, rg := range md.RowGroups {
				for _, c := range rg.Columns {
					if c.MetaData.Codec != format.Snappy {
						t.Fatalf("column %v is %v, want snappy", c.MetaData.PathInSchema, c.MetaData.Codec)
					}
				}
			}
		}
	})
	t.Run("dictionary limit", func(t *testing.T) {
		// Each input holds 50 distinct codes, dictionary-encoded; merged,
		// 500 codes outgrow a 1 KiB dictionary.
		sc := iceberg.NewSchema(0, iceberg.NestedField{ID: 1, Name: "code", Type: iceberg.PrimitiveTypes.String, Required: true})
		e, tbl := newEnv(t, sc, *iceberg.UnpartitionedSpec, "2")
		asc := arrow.NewSchema([]arrow.Field{{Name: "code", Type: arrow.BinaryTypes.String}}, nil)
		for f := 0; f < 10; f++ {
			bld := array.NewRecordBuilder(memory.DefaultAllocator, asc)
			for r := 0; r < 400; r++ {
				bld.Field(0).(*array.StringBuilder).Append(fmt.Sprintf("code-%04d", f*50+r%50))
			}
			rec := bld.NewRecordBatch()
			rdr, _ := array.NewRecordReader(asc, []arrow.RecordBatch{rec})
			var err error
			if tbl, err = tbl.Append(e.Ctx, rdr, nil); err != nil {
				t.Fatal(err)
			}
			rdr.Release()
			rec.Release()
			bld.Release()
		}
		if enc := openParquet(t, e.dataFiles()[0]).Metadata().RowGroups[0].Columns[0].MetaData.Encoding; !slices.Contains(enc, format.RLEDictionary) {
			t.Fatalf("setup: the inputs are not dictionary-encoded: %v", enc)
		}
		// Small uncompressed pages: the limit is checked page by page,
		// and the dictionary page's size is then its entries' (13 bytes
		// each, 6.5 KB for all 500).
		e.setProps(tbl, iceberg.Properties{"write.parquet.dict-size-bytes": "1024", "write.parquet.page-size-bytes": "1024", "write.parquet.compression-codec": "uncompressed"})
		if fig := e.checkCompaction(&Job{MinInputFiles: 2}); fig.GroupsMerged == 0 {
			t.Fatal("the merge path was not taken")
		}
		for _, df := range e.dataFiles() {
			md := openParquet(t, df).Metadata().RowGroups[0].Columns[0].MetaData
			if dict := md.DataPageOffset - md.DictionaryPageOffset; md.DictionaryPageOffset == 0 || dict > 3<<10 {
				t.Errorf("%s: a %d-byte dictionary page; want the one that passed 1 KiB, then plain pages", df.FilePath(), dict)
			}
		}
	})
	t.Run("no dictionaries", func(t *testing.T) {
		e, tbl := appendOnly(t, *iceberg.UnpartitionedSpec, nil)
		e.setProps(tbl, iceberg.Properties{"parquet.enable.dictionary": "false"})
		if fig := e.checkCompaction(&Job{MinInputFiles: 2}); fig.GroupsMerged == 0 {
			t.Fatal("the merge path was not taken")
		}
		for _, df := range e.dataFiles() {
			for _, rg := range openParquet(t, df).Metadata().RowGroups {
				for _, c := range rg.Columns {
					if slices.Contains(c.MetaData.Encoding, format.RLEDictionary) || slices.Contains(c.MetaData.Encoding, format.PlainDictionary) || c.MetaData.DictionaryPageOffset > 0 {
						t.Fatalf("column %v is dictionary-encoded (%v) with dictionaries off", c.MetaData.PathInSchema, c.MetaData.Encoding)
					}
				}
			}
		}
	})
}

// Groups the merge path cannot take go iceberg-go's way and still keep
// every row: row-level deletes, files of older schemas — including a
// rename that metrics cannot reveal, found only in the files' footers.
func TestMergeFallsBack(t *testing.T) {
	t.Run("deletes", func(t *testing.T) {
		e, tbl := newEnv(t, tableenv.BaseSchema, *iceberg.UnpartitionedSpec, "2")
		e.Fill(tbl, 6, 200)
		if fig := e.checkCompaction(&Job{MinInputFiles: 2}); fig.GroupsMerged != 0 {
			t.Fatalf("%d groups with deletes merged", fig.GroupsMerged)
		}
	})
	t.Run("rename", func(t *testing.T) {
		e, tbl := newEnv(t, tableenv.BaseSchema, *iceberg.UnpartitionedSpec, "2")
		for i := 0; i < 4; i++ {
			tbl = e.Append(tbl, 200)
		}
		tx := tbl.NewTransaction()
		if err := tx.UpdateSchema(true, false).RenameColumn([]string{"name"}, "label").Commit(); err != nil {
			t.Fatal(err)
		}
		tbl, err := tx.Commit(e.Ctx)
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 4; i++ {
			tbl = e.Append(tbl, 200)
		}
		dir := strings.TrimPrefix(tbl.Location(), "file://") + "/data"
		fig := e.checkCompaction(&Job{MinInputFiles: 2})
		if fig.GroupsMerged != 0 {
			t.Fatalf("%d groups of two schemas merged", fig.GroupsMerged)
		}
		if n, want := countFiles(t, dir), 8+fig.OutputFiles; n != want {
			t.Fatalf("%d data files, want the 8 inputs and %d outputs: an abandoned merge output was left", n, fig.OutputFiles)
		}
	})
}

// The merge path on S3 (versitygw) with the SQL catalog on PostgreSQL:
// inputs read whole (one GET each) and through ranged reads, outputs
// beside the inputs under the s3:// URL.
func TestMergePathOnS3(t *testing.T) {
	for _, tc := range []struct {
		name  string
		whole int64
	}{{"whole", 0}, {"ranged", 1}} {
		t.Run(tc.name, func(t *testing.T) {
			e, tbl := newS3Env(t, tableenv.BaseSchema, iceberg.NewPartitionSpec(tableenv.PF(2, 1000, "cat", iceberg.IdentityTransform{})), "2")
			for i := 0; i < 8; i++ {
				tbl = e.Append(tbl, 150)
			}
			fig := e.checkCompaction(&Job{MinInputFiles: 2, wholeFileBytes: tc.whole})
			if fig.GroupsMerged == 0 || fig.GroupsMerged != fig.GroupsCommitted {
				t.Fatalf("%d of %d groups merged; every group is append-only", fig.GroupsMerged, fig.GroupsCommitted)
			}
			for _, df := range e.dataFiles() {
				if !strings.HasPrefix(df.FilePath(), "s3://") {
					t.Fatalf("output %s is not under the table's s3:// location", df.FilePath())
				}
			}
		})
	}
}

// Every column type of the merge path, with negative numbers where the
// type has them: counts and bounds of the merged files cover the inputs'.
func TestMergePathTypes(t *testing.T) {
	sc := iceberg.NewSchema(0,
		iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
		iceberg.NestedField{ID: 2, Name: "i", Type: iceberg.PrimitiveTypes.Int32},
		iceberg.NestedField{ID: 3, Name: "f", Type: iceberg.PrimitiveTypes.Float32},
		iceberg.NestedField{ID: 4, Name: "d", Type: iceberg.PrimitiveTypes.Date},
		iceberg.NestedField{ID: 5, Name: "t", Type: iceberg.PrimitiveTypes.Time},
		iceberg.NestedField{ID: 6, Name: "ts", Type: iceberg.PrimitiveTypes.Timestamp},
		iceberg.NestedField{ID: 7, Name: "b", Type: iceberg.PrimitiveTypes.Binary},
		iceberg.NestedField{ID: 8, Name: "ok", Type: iceberg.PrimitiveTypes.Bool},
	)
	e, tbl := newEnv(t, sc, *iceberg.UnpartitionedSpec, "2")
	for i := 0; i < 8; i++ {
		tbl = e.Append(tbl, 200)
	}
	before := statsOf(sc, e.dataFiles())
	fig := e.checkCompaction(&Job{MinInputFiles: 2})
	if fig.GroupsMerged != fig.GroupsCommitted {
		t.Fatalf("%d of %d groups merged", fig.GroupsMerged, fig.GroupsCommitted)
	}
	after := statsOf(sc, e.dataFiles())
	for _, f := range sc.Fields() {
		cmp := func(a, b []byte) int { c, _ := merge.CompareBound(f.Type, a, b); return c }
		if after.values[f.ID] != before.values[f.ID] || after.nulls[f.ID] != before.nulls[f.ID] {
			t.Errorf("column %s: %d values, %d nulls; before %d, %d", f.Name, after.values[f.ID], after.nulls[f.ID], before.values[f.ID], before.nulls[f.ID])
		}
		if after.lower[f.ID] == nil || cmp(after.lower[f.ID], before.lower[f.ID]) != 0 || cmp(after.upper[f.ID], before.upper[f.ID]) != 0 {
			t.Errorf("column %s: bounds [%x, %x], inputs' [%x, %x]", f.Name, after.lower[f.ID], after.upper[f.ID], before.lower[f.ID], before.upper[f.ID])
		}
	}
}
