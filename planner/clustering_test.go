package planner

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/icekeeper/icekeeper/maintenance"
)

// keyed is a data file of n rows with bounds on the given columns: each
// entry of bounds is a column id and its lower and upper values, nil for
// none; nulls are null counts per column id.
type keyed struct {
	bounds map[int][2]any
	nulls  map[int]int64
	rows   int64
	sizeMB float64
}

func lit(t *testing.T, v any) []byte {
	t.Helper()
	var l iceberg.Literal
	switch v := v.(type) {
	case int64:
		l = iceberg.NewLiteral(v)
	case string:
		l = iceberg.NewLiteral(v)
	default:
		t.Fatalf("no literal for %T", v)
	}
	b, err := l.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func (k keyed) file(t *testing.T, path string) iceberg.DataFile {
	t.Helper()
	rows := max(k.rows, 10)
	lo, hi := map[int][]byte{}, map[int][]byte{}
	for id, b := range k.bounds {
		lo[id], hi[id] = lit(t, b[0]), lit(t, b[1])
	}
	b, err := iceberg.NewDataFileBuilder(*iceberg.UnpartitionedSpec, iceberg.EntryContentData, path, iceberg.ParquetFile, nil, nil, nil, rows, int64(max(k.sizeMB, 1)*MB))
	if err != nil {
		t.Fatal(err)
	}
	b.LowerBoundValues(lo).UpperBoundValues(hi)
	if k.nulls != nil {
		b.NullValueCounts(k.nulls)
	}
	return b.Build()
}

// ids1 is a file with bounds [lo, hi] on column 1 (id).
func ids1(lo, hi int64) keyed { return keyed{bounds: map[int][2]any{1: {lo, hi}}} }

// names is a file with bounds [lo, hi] on column 2 (name).
func names(lo, hi string) keyed { return keyed{bounds: map[int][2]any{2: {lo, hi}}} }

// box2 is a file with bounds on id and name, the name a zero-padded number.
func box2(x0, x1, y0, y1 int64) keyed {
	return keyed{bounds: map[int][2]any{1: {x0, x1}, 2: {fmt.Sprintf("%04d", y0), fmt.Sprintf("%04d", y1)}}}
}

// measureFiles measures ks as one partition of meta under strategy.
func measureFiles(t *testing.T, meta table.Metadata, strategy string, ks ...keyed) Clustering {
	t.Helper()
	m, ok := NewClusterMeter(meta, strategy)
	if !ok {
		t.Fatal("the table's sort order is not measured")
	}
	for i, k := range ks {
		m.Add(k.file(t, fmt.Sprintf("s3://b/t/data/%d.parquet", i)), "unpartitioned")
	}
	return m.Result()
}

func repeatK(k keyed, n int) []keyed {
	out := make([]keyed, n)
	for i := range out {
		out[i] = k
	}
	return out
}

func TestOverlapDepth(t *testing.T) {
	byID := newMeta(t, "2", sortBy(1, iceberg.IdentityTransform{}))
	desc := sortBy(1, iceberg.IdentityTransform{})
	desc.Direction, desc.NullOrder = table.SortDESC, table.NullsLast
	byIDDesc := newMeta(t, "2", desc)
	byName := newMeta(t, "2", sortBy(2, iceberg.IdentityTransform{}))
	meta := func(props iceberg.Properties) table.Metadata {
		m, err := table.NewMetadata(testSchema, iceberg.UnpartitionedSpec, mustOrder(t, sortBy(2, iceberg.IdentityTransform{})), "s3://b/t", props)
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	fullMetrics := meta(iceberg.Properties{table.DefaultWriteMetricsModeKey: "full"})
	nullsOnly := keyed{nulls: map[int]int64{1: 10}, rows: 10}
	withNulls := func(k keyed) keyed { k.nulls = map[int]int64{1: 2}; return k }
	cut := strings.Repeat("b", 16) // as long as Iceberg's default truncation

	for _, tc := range []struct {
		name  string
		meta  table.Metadata
		files []keyed
		want  int
	}{
		{"no files", byID, nil, 0},
		{"a single file", byID, []keyed{ids1(0, 100)}, 1},
		{"eight identical ranges", byID, repeatK(ids1(0, 100), 8), 8},
		{"a sorted run: files meeting at one key do not overlap", byID, []keyed{ids1(0, 10), ids1(10, 20), ids1(20, 30)}, 1},
		{"a chain of overlaps", byID, []keyed{ids1(0, 10), ids1(5, 15), ids1(12, 20)}, 2},
		{"three ranges over one point", byID, []keyed{ids1(0, 10), ids1(5, 15), ids1(9, 20), ids1(30, 40)}, 3},
		{"a file without bounds overlaps every file", byID, []keyed{{}, ids1(0, 10), ids1(20, 30)}, 2},
		{"files without bounds overlap each other", byID, []keyed{{}, {}, {}}, 3},
		{"files of one key count once", byID, repeatK(ids1(5, 5), 4), 1},
		{"files of one key beside the run around it", byID, append(repeatK(ids1(5, 5), 4), ids1(0, 5), ids1(5, 9)), 2},
		{"a nulls-only file is the null point", byID, []keyed{nullsOnly, ids1(0, 10)}, 1},
		{"nulls-only files are one key", byID, []keyed{nullsOnly, nullsOnly, nullsOnly}, 1},
		{"a file with nulls reaches the nulls-only file", byID, []keyed{nullsOnly, withNulls(ids1(0, 10)), ids1(20, 30)}, 2},
		{"descending: eight identical ranges", byIDDesc, repeatK(ids1(0, 100), 8), 8},
		{"descending: a sorted run", byIDDesc, []keyed{ids1(20, 30), ids1(10, 20), ids1(0, 10)}, 1},
		{"descending: nulls last meet the nulls-only file", byIDDesc, []keyed{withNulls(ids1(0, 10)), nullsOnly, ids1(20, 30)}, 2},
		{"string keys", byName, []keyed{names("a", "c"), names("b", "d"), names("d", "e")}, 2},
		{"a string upper bound as long as the truncation may stand for longer keys", byName,
			[]keyed{names("a", cut), names(cut, "c")}, 2},
		{"a shorter string upper bound is whole", byName, []keyed{names("a", "bbb"), names("bbb", "c")}, 1},
		{"with full metrics no bound is cut", fullMetrics, []keyed{names("a", cut), names(cut, "c")}, 1},
		{"a raised truncated upper bound still holds its prefix", byName,
			[]keyed{names("a", strings.Repeat("b", 15)+"c"), names(strings.Repeat("b", 15)+"c", "d"), names(strings.Repeat("b", 15)+"cz", "d")}, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.files == nil {
				m, _ := NewClusterMeter(tc.meta, "sort")
				if c := m.Result(); c.Depth != 0 || c.Score != 100 {
					t.Fatalf("%+v", c)
				}
				return
			}
			c := measureFiles(t, tc.meta, "sort", tc.files...)
			if c.Depth != tc.want {
				t.Fatalf("depth %d, want %d", c.Depth, tc.want)
			}
		})
	}
}

func mustOrder(t *testing.T, fields ...table.SortField) table.SortOrder {
	t.Helper()
	o, err := table.NewSortOrder(1, fields)
	if err != nil {
		t.Fatal(err)
	}
	return o
}

// Z-order and hilbert measure boxes: the depth is the most boxes over one
// point, not the deepest column.
func TestOverlapDepthOfBoxes(t *testing.T) {
	meta := newMeta(t, "2", sortBy(1, iceberg.IdentityTransform{}), sortBy(2, iceberg.IdentityTransform{}))
	for _, tc := range []struct {
		name  string
		files []keyed
		want  int
	}{
		{"four quadrants", []keyed{box2(0, 5, 0, 5), box2(5, 10, 0, 5), box2(0, 5, 5, 10), box2(5, 10, 5, 10)}, 1},
		{"four whole boxes", repeatK(box2(0, 10, 0, 10), 4), 4},
		// On name alone the three overlap three deep; no point is in all.
		{"a bar and two columns", []keyed{box2(0, 10, 0, 2), box2(0, 2, 0, 10), box2(8, 10, 0, 10)}, 2},
		// Boxes that meet pairwise share a point (Helly).
		{"three boxes meeting pairwise", []keyed{box2(0, 6, 0, 6), box2(4, 10, 0, 6), box2(0, 10, 4, 10)}, 3},
		{"a box without bounds on one column", []keyed{{bounds: map[int][2]any{1: {int64(0), int64(10)}}}, box2(0, 5, 0, 5), box2(5, 10, 5, 10)}, 2},
	} {
		for _, strategy := range []string{"z-order", "hilbert"} {
			t.Run(strategy+"/"+tc.name, func(t *testing.T) {
				c := measureFiles(t, meta, strategy, tc.files...)
				if c.Depth != tc.want || len(c.Columns) != 2 {
					t.Fatalf("depth %d on %v, want %d on both columns", c.Depth, c.Columns, tc.want)
				}
			})
		}
	}
	// Sort measures the first column only.
	if c := measureFiles(t, meta, "sort", box2(0, 10, 0, 2), box2(0, 2, 0, 10), box2(8, 10, 0, 10)); c.Depth != 2 || len(c.Columns) != 1 {
		t.Fatalf("sort: depth %d on %v", c.Depth, c.Columns)
	}
}

func TestClusteringScore(t *testing.T) {
	meta := newMeta(t, "2", sortBy(1, iceberg.IdentityTransform{}))
	if _, ok := NewClusterMeter(newMeta(t, "2"), "sort"); ok {
		t.Fatal("an unsorted table is measured")
	}
	if _, ok := NewClusterMeter(newMeta(t, "2", sortBy(1, iceberg.BucketTransform{NumBuckets: 4})), "sort"); ok {
		t.Fatal("a bucketed sort order is measured")
	}
	clean := measureFiles(t, meta, "sort", ids1(0, 10), ids1(10, 20), ids1(15, 30))
	if clean.Score != 100 || clean.Depth != 2 || clean.Overlapping != 0 || clean.DeepPartitions != 0 {
		t.Fatalf("two deep: %+v", clean)
	}
	// Eight whole-range files and two apart from them: 8 of 10 overlap.
	c := measureFiles(t, meta, "sort", append(repeatK(ids1(0, 100), 8), ids1(200, 300), ids1(300, 400))...)
	if c.Depth != 8 || c.Overlapping != 8 || c.Files != 10 || math.Abs(c.Score-20) > 1e-9 || c.DeepPartitions != 1 || c.String() != "overlap depth 8 on id" {
		t.Fatalf("eight deep: depth %d, %d of %d files overlapping, score %v, %d deep partitions, %q",
			c.Depth, c.Overlapping, c.Files, c.Score, c.DeepPartitions, c)
	}
}

// sized is the planner's File of each keyed file, ID i, in partition p.
func sized(t *testing.T, meta table.Metadata, strategy string, ks ...keyed) ([]table.FileScanTask, []File) {
	t.Helper()
	var tasks []table.FileScanTask
	var fs []File
	for i, k := range ks {
		df := k.file(t, fmt.Sprintf("s3://b/t/data/%d.parquet", i))
		tasks = append(tasks, table.FileScanTask{File: df})
		fs = append(fs, File{ID: i, Path: df.FilePath(), Partition: "p", Format: "parquet", SizeBytes: df.FileSizeBytes(), Records: df.Count()})
	}
	return tasks, fs
}

func withSize(k keyed, mb float64) keyed { k.sizeMB = mb; return k }

func TestClusteringRule(t *testing.T) {
	target := int64(128 * MB)
	meta := newMeta(t, "2", sortBy(1, iceberg.IdentityTransform{}))
	run := func(ks []keyed, strategy maintenance.Strategy, maxGroup int64) DataPlan {
		t.Helper()
		tasks, fs := sized(t, meta, string(strategy), ks...)
		p, err := PlanData(meta, tasks, fs, nil, DataOptions{CompactionOptions: CompactionOptions{TargetBytes: target, MaxGroupBytes: maxGroup}, Strategy: strategy})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	deep := repeatK(withSize(ids1(0, 1000), 120), 8)
	for _, s := range []maintenance.Strategy{maintenance.StrategySort, maintenance.StrategyAuto, maintenance.StrategyZOrder, maintenance.StrategyHilbert} {
		p := run(deep, s, 0)
		if len(p.Groups) != 1 || p.Groups[0].InputFiles != 8 || p.Groups[0].Reason != "overlap depth 8" {
			t.Fatalf("%s on eight deep well-sized files: %+v", s, p.Groups)
		}
	}
	if p := run(deep, maintenance.StrategyBinpack, 0); len(p.Groups) != 0 {
		t.Fatalf("binpack rewrote well-sized files for their overlap: %+v", p.Groups)
	}
	run2 := []keyed{withSize(ids1(0, 10), 120), withSize(ids1(5, 15), 120), withSize(ids1(20, 30), 120)}
	if p := run(run2, maintenance.StrategySort, 0); len(p.Groups) != 0 || len(p.Skipped) != 0 {
		t.Fatalf("two deep was planned: %+v", p)
	}
	// Three sorted runs over one range, ten files each: packed in key
	// order, each group holds neighbouring keys of every run and ends
	// where the next begins (9 files, not the 10 that fit), so that one
	// rewrite leaves them apart.
	var runs []keyed
	for r := 0; r < 3; r++ {
		for i := int64(0); i < 10; i++ {
			runs = append(runs, withSize(ids1(i*100, i*100+100), 120))
		}
	}
	p := run(runs, maintenance.StrategySort, 0)
	if len(p.Groups) != 4 || p.Groups[0].InputFiles != 9 || p.InputFiles() != 30 || !strings.HasPrefix(p.Groups[0].Reason, "overlap depth 3") {
		t.Fatalf("three runs: %+v", p.Groups)
	}
	// Groups of one file cannot separate anything: left alone, and said.
	p = run(repeatK(withSize(ids1(0, 1000), 120), 3), maintenance.StrategySort, target)
	if len(p.Groups) != 0 || len(p.Skipped) != 1 || !strings.Contains(p.Skipped[0].Reason, "would not lower") {
		t.Fatalf("unseparable overlap: %+v", p)
	}
	// Small files join the overlap's groups; a file apart from the rest
	// stays.
	mixed := append(repeatK(withSize(ids1(0, 1000), 120), 3), withSize(ids1(0, 1000), 1), withSize(ids1(5000, 6000), 120))
	p = run(mixed, maintenance.StrategySort, 0)
	if len(p.Groups) != 1 || p.Groups[0].InputFiles != 4 || p.Groups[0].Reason != "overlap depth 4, 1 small" {
		t.Fatalf("mixed: %+v", p.Groups)
	}
}
