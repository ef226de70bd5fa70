package planner

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
)

// eqFile is an equality delete file on key fields ids of spec, in
// partition part (nil: unpartitioned), holding keys rows.
func eqFile(t *testing.T, spec iceberg.PartitionSpec, path string, format iceberg.FileFormat, part map[int]any, keys int64, ids ...int) iceberg.DataFile {
	t.Helper()
	b, err := iceberg.NewDataFileBuilder(spec, iceberg.EntryContentEqDeletes, path, format, part, nil, nil, keys, keys*10)
	if err != nil {
		t.Fatal(err)
	}
	return b.EqualityFieldIDs(ids).Build()
}

// seqTask is a data file task with its data sequence number and the
// equality deletes the scan attached.
func seqTask(df iceberg.DataFile, seq int64, eq ...iceberg.DataFile) table.FileScanTask {
	return table.FileScanTask{File: df, DataSequenceNumber: &seq, EqualityDeleteFiles: eq}
}

func TestCompactionLeavesConvertedEqualityDeletes(t *testing.T) {
	const mb = 1 << 20
	base := File{Partition: "p", Format: "parquet", SizeBytes: 32 * mb, Records: 1000, DeleteFiles: 2, EqualityDeletes: 2}
	for _, tc := range []struct {
		name   string
		file   func(File) File
		groups int
	}{
		{"well-sized, equality deletes not converted: rewritten", func(f File) File { return f }, 1},
		{"well-sized, equality deletes converted: left alone", func(f File) File { f.Converts = true; return f }, 0},
		{"well-sized, converted, 29% of its rows position-deleted: left alone", func(f File) File {
			f.Converts, f.DeletedRows = true, 290
			return f
		}, 0},
		{"well-sized, converted, 30% of its rows position-deleted: rewritten", func(f File) File {
			f.Converts, f.DeletedRows = true, 300
			return f
		}, 1},
		{"small, converted: the data rewrite applies its deletes", func(f File) File {
			f.Converts, f.SizeBytes = true, 4*mb
			return f
		}, 1},
		{"oversized, converted: split", func(f File) File {
			f.Converts, f.SizeBytes = true, 80*mb
			return f
		}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			plan, err := Compaction([]File{tc.file(base)}, CompactionOptions{TargetBytes: 32 * mb})
			if err != nil {
				t.Fatal(err)
			}
			if len(plan.Groups) != tc.groups {
				t.Fatalf("%d groups, want %d: %+v", len(plan.Groups), tc.groups, plan)
			}
		})
	}
}

func TestConverts(t *testing.T) {
	v2 := newMeta(t, "2")
	floatMeta, err := table.NewMetadata(iceberg.NewSchema(0,
		iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Float64, Required: true}),
		iceberg.UnpartitionedSpec, table.UnsortedSortOrder, "s3://b/t", iceberg.Properties{table.PropertyFormatVersion: "2"})
	if err != nil {
		t.Fatal(err)
	}
	var parted table.Metadata
	d := data(t, "s3://b/t/data/a.parquet")
	eq := eqFile(t, *iceberg.UnpartitionedSpec, "s3://b/t/data/eq.parquet", iceberg.ParquetFile, nil, 5, 1)
	eqAvro := eqFile(t, *iceberg.UnpartitionedSpec, "s3://b/t/data/eq.avro", iceberg.AvroFile, nil, 5, 1)
	eqNoField := eqFile(t, *iceberg.UnpartitionedSpec, "s3://b/t/data/eq9.parquet", iceberg.ParquetFile, nil, 5, 9)
	// The table was unpartitioned (spec 0), then partitioned by name
	// (spec 1), then unpartitioned again (spec 2).
	evolve := func(meta table.Metadata, spec iceberg.PartitionSpec) table.Metadata {
		b, err := table.MetadataBuilderFromBase(meta, "")
		if err != nil {
			t.Fatal(err)
		}
		if err := b.AddPartitionSpec(&spec, false); err != nil {
			t.Fatal(err)
		}
		if err := b.SetDefaultSpecID(spec.ID()); err != nil {
			t.Fatal(err)
		}
		out, err := b.Build()
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	byName1 := iceberg.NewPartitionSpecID(1, iceberg.PartitionField{SourceIDs: []int{2}, FieldID: 1000, Name: "name", Transform: iceberg.IdentityTransform{}})
	parted = evolve(v2, byName1)
	unparted := evolve(parted, iceberg.NewPartitionSpecID(2))
	eqGlobal := eqFile(t, *iceberg.UnpartitionedSpec, "s3://b/t/data/eqg.parquet", iceberg.ParquetFile, nil, 5, 1)
	eqParted := eqFile(t, byName1, "s3://b/t/data/eqp.parquet", iceberg.ParquetFile, map[int]any{1000: "a"}, 5, 1)
	eqUnknown := eqFile(t, iceberg.NewPartitionSpecID(7), "s3://b/t/data/eq7.parquet", iceberg.ParquetFile, nil, 5, 1)
	orc := dataFile(t, *iceberg.UnpartitionedSpec, iceberg.EntryContentData, "s3://b/t/data/a.orc", iceberg.OrcFile, 10)
	on := ConvertOptions{MinFiles: 1}
	for _, tc := range []struct {
		name string
		meta table.Metadata
		task table.FileScanTask
		opts ConvertOptions
		why  string // "" converts
	}{
		{"long key", v2, seqTask(d, 1, eq), on, ""},
		{"conversion off", v2, seqTask(d, 1, eq), ConvertOptions{}, "off"},
		{"Avro delete", v2, seqTask(d, 1, eqAvro), on, "only Parquet"},
		{"unknown field", v2, seqTask(d, 1, eqNoField), on, "no schema has"},
		{"floating-point key", floatMeta, seqTask(d, 1, eq), on, "does not read"},
		{"ORC data file", v2, seqTask(orc, 1, eq), on, "only Parquet data files"},
		{"global delete on a partitioned table", parted, seqTask(d, 1, eqGlobal), on, "global on a partitioned table"},
		{"partitioned delete on a table now unpartitioned", unparted, seqTask(d, 1, eqParted), on, "now unpartitioned"},
		{"global delete on a table unpartitioned again", unparted, seqTask(d, 1, eqGlobal), on, ""},
		{"delete of a spec the table does not have", v2, seqTask(d, 1, eqUnknown), on, "which the table does not have"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			why, ok := Converts(tc.meta, tc.task, tc.opts)
			if ok != (tc.why == "") || !strings.Contains(why, tc.why) {
				t.Fatalf("Converts = %q, %v; want reason containing %q", why, ok, tc.why)
			}
		})
	}
}

func TestConversion(t *testing.T) {
	v2 := newMeta(t, "2")
	parted := newSpecMeta(t, "2", byName)
	d := func(name string) iceberg.DataFile { return data(t, "s3://b/t/data/"+name+".parquet") }
	eq := func(name string, keys int64) iceberg.DataFile {
		return eqFile(t, *iceberg.UnpartitionedSpec, "s3://b/t/data/"+name+"-eq.parquet", iceberg.ParquetFile, nil, keys, 1)
	}
	pd := func(name, val string) iceberg.DataFile {
		b, err := iceberg.NewDataFileBuilder(byName, iceberg.EntryContentData, "s3://b/t/data/"+name+".parquet", iceberg.ParquetFile, map[int]any{1000: val}, nil, nil, 10, 1000)
		if err != nil {
			t.Fatal(err)
		}
		return b.Build()
	}
	peq := func(name, val string) iceberg.DataFile {
		return eqFile(t, byName, "s3://b/t/data/"+name+"-eq.parquet", iceberg.ParquetFile, map[int]any{1000: val}, 3, 1)
	}

	type want struct {
		partition string
		deletes   []string // equality delete names converted
		data      []string // data file names read
		kept      int
		// chunks, when set, are the group's chunks, each as its key
		// ranges and the data files it is matched against:
		// "c1:0+100 c2:0+50 | big1 new1".
		chunks []string
	}
	for _, tc := range []struct {
		name    string
		meta    table.Metadata
		tasks   []table.FileScanTask
		deletes []EqualityDelete
		taken   []string
		opts    ConvertOptions
		want    []want
		skipped string // a skip reason expected
	}{
		{
			name:    "three checkpoints: every delete converted, the data files below each read",
			meta:    v2,
			tasks:   []table.FileScanTask{seqTask(d("big1"), 1), seqTask(d("big2"), 1), seqTask(d("new1"), 3), seqTask(d("new2"), 5), seqTask(d("new3"), 7)},
			deletes: []EqualityDelete{{eq("c1", 10), 2}, {eq("c2", 10), 4}, {eq("c3", 10), 6}},
			opts:    ConvertOptions{MinFiles: 1},
			want:    []want{{partition: "(unpartitioned)", deletes: []string{"c1", "c2", "c3"}, data: []string{"big1", "big2", "new1", "new2"}}},
		},
		{
			name:    "fewer delete files than the minimum: not due",
			meta:    v2,
			tasks:   []table.FileScanTask{seqTask(d("big1"), 1)},
			deletes: []EqualityDelete{{eq("c1", 10), 2}, {eq("c2", 10), 4}},
			opts:    ConvertOptions{MinFiles: 3},
		},
		{
			name:    "off",
			meta:    v2,
			tasks:   []table.FileScanTask{seqTask(d("big1"), 1)},
			deletes: []EqualityDelete{{eq("c1", 10), 2}},
		},
		{
			name:    "a delete that applies to a file the data rewrite takes stays; a newer one does not apply to it",
			meta:    v2,
			tasks:   []table.FileScanTask{seqTask(d("big1"), 1), seqTask(d("small"), 3)},
			deletes: []EqualityDelete{{eq("c1", 10), 2}, {eq("c2", 10), 4}},
			taken:   []string{"small"},
			opts:    ConvertOptions{MinFiles: 1},
			want:    []want{{partition: "(unpartitioned)", deletes: []string{"c1"}, data: []string{"big1"}, kept: 1}},
		},
		{
			name:    "every delete applies to a taken file",
			meta:    v2,
			tasks:   []table.FileScanTask{seqTask(d("small"), 1)},
			deletes: []EqualityDelete{{eq("c1", 10), 2}},
			taken:   []string{"small"},
			opts:    ConvertOptions{MinFiles: 1},
			skipped: "data rewrite takes",
		},
		{
			name:    "one chunk under the key bound",
			meta:    v2,
			tasks:   []table.FileScanTask{seqTask(d("big1"), 1), seqTask(d("new1"), 3)},
			deletes: []EqualityDelete{{eq("c2", 100), 4}, {eq("c1", 100), 2}},
			opts:    ConvertOptions{MinFiles: 1, ChunkKeys: 200},
			want: []want{{partition: "(unpartitioned)", deletes: []string{"c1", "c2"}, data: []string{"big1", "new1"},
				chunks: []string{"c1:0+100 c2:0+100 | big1 new1"}}},
		},
		{
			name:    "past the key bound: every delete converted in one run, in chunks; a chunk of older deletes skips newer data",
			meta:    v2,
			tasks:   []table.FileScanTask{seqTask(d("big1"), 1), seqTask(d("new1"), 3)},
			deletes: []EqualityDelete{{eq("c2", 100), 4}, {eq("c1", 100), 2}},
			opts:    ConvertOptions{MinFiles: 1, ChunkKeys: 150},
			want: []want{{partition: "(unpartitioned)", deletes: []string{"c1", "c2"}, data: []string{"big1", "new1"},
				chunks: []string{"c1:0+100 c2:0+50 | big1 new1", "c2:50+50 | big1 new1"}}},
		},
		{
			// Each checkpoint commits its delete and new versions at one
			// sequence number: a delete does not apply to its own
			// checkpoint's rows.
			name: "chunks split deletes of several sequence numbers; each chunk reads what its newest delete reaches",
			meta: v2,
			tasks: []table.FileScanTask{seqTask(d("big1"), 1), seqTask(d("new1"), 2), seqTask(d("new2"), 4),
				seqTask(d("new3"), 6)},
			deletes: []EqualityDelete{{eq("c3", 30), 6}, {eq("c1", 60), 2}, {eq("c2", 30), 4}},
			opts:    ConvertOptions{MinFiles: 1, ChunkKeys: 40},
			want: []want{{partition: "(unpartitioned)", deletes: []string{"c1", "c2", "c3"}, data: []string{"big1", "new1", "new2"},
				chunks: []string{"c1:0+40 | big1", "c1:40+20 c2:0+20 | big1 new1", "c2:20+10 c3:0+30 | big1 new1 new2"}}},
		},
		{
			name:    "one delete over the key bound: read in slices, the last one partial",
			meta:    v2,
			tasks:   []table.FileScanTask{seqTask(d("big1"), 1)},
			deletes: []EqualityDelete{{eq("c1", 500), 2}},
			opts:    ConvertOptions{MinFiles: 1, ChunkKeys: 150},
			want: []want{{partition: "(unpartitioned)", deletes: []string{"c1"}, data: []string{"big1"},
				chunks: []string{"c1:0+150 | big1", "c1:150+150 | big1", "c1:300+150 | big1", "c1:450+50 | big1"}}},
		},
		{
			name:    "a delete with no row: converted, in no chunk",
			meta:    v2,
			tasks:   []table.FileScanTask{seqTask(d("big1"), 1)},
			deletes: []EqualityDelete{{eq("c1", 0), 2}, {eq("c2", 150), 3}},
			opts:    ConvertOptions{MinFiles: 1, ChunkKeys: 150},
			want: []want{{partition: "(unpartitioned)", deletes: []string{"c1", "c2"}, data: []string{"big1"},
				chunks: []string{"c2:0+150 | big1"}}},
		},
		{
			name: "partitioned: a delete applies to its own partition only; the minimum is per partition",
			meta: parted,
			tasks: []table.FileScanTask{seqTask(pd("a1", "a"), 1), seqTask(pd("a2", "a"), 1), seqTask(pd("b1", "b"), 1),
				seqTask(pd("c1", "c"), 1)},
			deletes: []EqualityDelete{{peq("ea1", "a"), 2}, {peq("ea2", "a"), 3}, {peq("eb1", "b"), 2}, {peq("eb2", "b"), 4}, {peq("ec1", "c"), 2}},
			opts:    ConvertOptions{MinFiles: 2},
			want: []want{
				{partition: "name=a", deletes: []string{"ea1", "ea2"}, data: []string{"a1", "a2"}},
				{partition: "name=b", deletes: []string{"eb1", "eb2"}, data: []string{"b1"}},
			},
		},
		{
			name:    "an Avro data file in the partition: skipped",
			meta:    v2,
			tasks:   []table.FileScanTask{seqTask(dataFile(t, *iceberg.UnpartitionedSpec, iceberg.EntryContentData, "s3://b/t/data/x.avro", iceberg.AvroFile, 10), 1)},
			deletes: []EqualityDelete{{eq("c1", 10), 2}},
			opts:    ConvertOptions{MinFiles: 1},
			skipped: "only Parquet data files",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			taken := map[string]bool{}
			for _, n := range tc.taken {
				taken["s3://b/t/data/"+n+".parquet"] = true
			}
			groups, skipped := Conversion(tc.meta, tc.tasks, tc.deletes, taken, tc.opts)
			var got []want
			name := func(p string) string {
				return strings.TrimSuffix(strings.TrimSuffix(strings.TrimPrefix(p, "s3://b/t/data/"), ".parquet"), "-eq")
			}
			for _, g := range groups {
				w := want{partition: g.Partition, kept: g.Kept}
				for _, d := range g.Deletes {
					w.deletes = append(w.deletes, name(d.File.FilePath()))
				}
				for i, task := range g.Tasks {
					w.data = append(w.data, name(task.File.FilePath()))
					if g.Seqs[i] != DataSeq(task) {
						t.Errorf("group %s: seq %d for %s, its task says %d", g.Partition, g.Seqs[i], task.File.FilePath(), DataSeq(task))
					}
				}
				if g.EqualityDeletes != len(g.Deletes) || g.DataFiles != len(g.Tasks) {
					t.Errorf("group %s counts %d deletes, %d data files; holds %d, %d", g.Partition, g.EqualityDeletes, g.DataFiles, len(g.Deletes), len(g.Tasks))
				}
				checkChunks(t, g, tc.opts.ChunkKeys)
				for _, c := range g.Slices {
					var keys, data []string
					for _, r := range c.Keys {
						keys = append(keys, fmt.Sprintf("%s:%d+%d", name(g.Deletes[r.Delete].File.FilePath()), r.From, r.Rows))
					}
					for _, i := range c.Tasks {
						data = append(data, name(g.Tasks[i].File.FilePath()))
					}
					w.chunks = append(w.chunks, strings.Join(keys, " ")+" | "+strings.Join(data, " "))
				}
				got = append(got, w)
			}
			if !slices.EqualFunc(got, tc.want, func(a, b want) bool {
				return a.partition == b.partition && a.kept == b.kept && slices.Equal(a.deletes, b.deletes) && slices.Equal(a.data, b.data) &&
					(b.chunks == nil || slices.Equal(a.chunks, b.chunks))
			}) {
				t.Errorf("groups %+v, want %+v", got, tc.want)
			}
			if tc.skipped != "" && !slices.ContainsFunc(skipped, func(s Skip) bool { return strings.Contains(s.Reason, tc.skipped) }) {
				t.Errorf("skipped %+v, want one for %q", skipped, tc.skipped)
			}
			if tc.skipped == "" && len(skipped) > 0 {
				t.Errorf("skipped %+v", skipped)
			}
		})
	}
}

// checkChunks asserts the invariants of g's chunks: together they hold
// every row of every delete exactly once, in order, each at most limit
// keys (DefaultConvertChunkKeys when 0), and each is matched against
// exactly the data files older than its newest delete.
func checkChunks(t *testing.T, g ConvertGroup, limit int64) {
	t.Helper()
	if limit <= 0 {
		limit = DefaultConvertChunkKeys
	}
	if g.Chunks != len(g.Slices) {
		t.Errorf("group %s counts %d chunks, holds %d", g.Partition, g.Chunks, len(g.Slices))
	}
	var keys int64
	next := make([]int64, len(g.Deletes)) // the next row of each delete
	last := 0
	for n, c := range g.Slices {
		var size, seq int64
		for _, r := range c.Keys {
			if r.Delete < last || r.From != next[r.Delete] || r.Rows <= 0 {
				t.Errorf("group %s chunk %d: range %+v out of order (next row %d)", g.Partition, n, r, next[r.Delete])
			}
			last, next[r.Delete] = r.Delete, r.From+r.Rows
			size += r.Rows
			seq = max(seq, g.Deletes[r.Delete].Seq)
		}
		keys += size
		if size > limit || size == 0 {
			t.Errorf("group %s chunk %d holds %d keys, bound %d", g.Partition, n, size, limit)
		}
		var want []int
		for i, s := range g.Seqs {
			if s < seq {
				want = append(want, i)
			}
		}
		if !slices.Equal(c.Tasks, want) {
			t.Errorf("group %s chunk %d matched against data files %v, want %v", g.Partition, n, c.Tasks, want)
		}
	}
	for i, d := range g.Deletes {
		if next[i] != d.File.Count() {
			t.Errorf("group %s: chunks hold %d rows of %s, it has %d", g.Partition, next[i], d.File.FilePath(), d.File.Count())
		}
	}
	if keys != g.Keys {
		t.Errorf("group %s: chunks hold %d keys, the group %d", g.Partition, keys, g.Keys)
	}
}

// On v3 a converted data file gets one vector with all its positions: its
// old vector goes, and a v2 position delete file goes once every data file
// it is attached to gets a vector.
func TestConverted(t *testing.T) {
	d := func(name string) iceberg.DataFile { return data(t, "s3://b/t/data/"+name+".parquet") }
	pd := func(name string) iceberg.DataFile { return posDelete(t, "s3://b/t/data/"+name+"-deletes.parquet") }
	dv := func(ref string, off int64) iceberg.DataFile {
		return vector(t, "s3://b/t/data/p.puffin", "s3://b/t/data/"+ref+".parquet", off)
	}
	a, b, c := d("a"), d("b"), d("c")
	g := ConvertGroup{Tasks: []table.FileScanTask{
		{File: a, DeletionVectorFiles: []iceberg.DataFile{dv("a", 4)}, DeleteFiles: []iceberg.DataFile{pd("ab"), pd("a")}},
		{File: b, DeleteFiles: []iceberg.DataFile{pd("ab"), pd("bc")}},
		{File: c, DeletionVectorFiles: []iceberg.DataFile{dv("c", 40)}, DeleteFiles: []iceberg.DataFile{pd("bc")}},
	}}
	covers := map[string][]string{
		pd("ab").FilePath(): {a.FilePath(), b.FilePath()},
		pd("a").FilePath():  {a.FilePath()},
		pd("bc").FilePath(): {b.FilePath(), c.FilePath()},
	}
	vectors := map[string]bool{a.FilePath(): true, b.FilePath(): true}
	var got []string
	for _, f := range Converted(g, covers, vectors) {
		got = append(got, RemovalKey(f))
	}
	slices.Sort(got)
	want := []string{"s3://b/t/data/a-deletes.parquet", "s3://b/t/data/ab-deletes.parquet", "s3://b/t/data/p.puffin@4"}
	if !slices.Equal(got, want) {
		t.Fatalf("replaced %v, want %v (bc still applies to c, whose vector stays)", got, want)
	}
}

// On a table unpartitioned again, a global equality delete applies to the
// data files of the older partitioned spec too: they are read, or the
// delete's removal would bring their rows back.
func TestConversionAcrossSpecs(t *testing.T) {
	b, err := table.MetadataBuilderFromBase(newMeta(t, "2"), "")
	if err != nil {
		t.Fatal(err)
	}
	byName1 := iceberg.NewPartitionSpecID(1, iceberg.PartitionField{SourceIDs: []int{2}, FieldID: 1000, Name: "name", Transform: iceberg.IdentityTransform{}})
	again := iceberg.NewPartitionSpecID(2)
	for _, s := range []iceberg.PartitionSpec{byName1, again} {
		if err := b.AddPartitionSpec(&s, false); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.SetDefaultSpecID(2); err != nil {
		t.Fatal(err)
	}
	meta, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	old, err := iceberg.NewDataFileBuilder(byName1, iceberg.EntryContentData, "s3://b/t/data/name=a/old.parquet", iceberg.ParquetFile, map[int]any{1000: "a"}, nil, nil, 10, 1000)
	if err != nil {
		t.Fatal(err)
	}
	now := dataFile(t, again, iceberg.EntryContentData, "s3://b/t/data/now.parquet", iceberg.ParquetFile, 10)
	eq := eqFile(t, again, "s3://b/t/data/eq.parquet", iceberg.ParquetFile, nil, 5, 1)
	tasks := []table.FileScanTask{seqTask(old.Build(), 1, eq), seqTask(now, 2, eq)}
	groups, skipped := Conversion(meta, tasks, []EqualityDelete{{eq, 3}}, nil, ConvertOptions{MinFiles: 1})
	if len(groups) != 1 || len(groups[0].Tasks) != 2 || len(skipped) != 0 {
		t.Fatalf("groups %+v, skipped %+v; want one reading both data files", groups, skipped)
	}
	if got := Converting(meta, tasks, []EqualityDelete{{eq, 3}}, ConvertOptions{MinFiles: 1}); !slices.Equal(got, []bool{true, true}) {
		t.Fatalf("Converting = %v", got)
	}
}
