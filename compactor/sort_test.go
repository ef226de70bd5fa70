package compactor

import (
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/icekeeper/icekeeper/internal/state"
	"github.com/icekeeper/icekeeper/internal/testkit"
	"github.com/icekeeper/icekeeper/internal/testkit/tableenv"
	"github.com/icekeeper/icekeeper/maintenance"
)

func sortedTable(t *testing.T, fields ...table.SortField) (*env, *table.Table) {
	e, tbl := newEnv(t, tableenv.BaseSchema, iceberg.NewPartitionSpec(tableenv.PF(3, 1000, "ts_day", iceberg.DayTransform{})), "2")
	so, err := table.NewSortOrder(1, fields)
	if err != nil {
		t.Fatal(err)
	}
	tx := tbl.NewTransaction()
	if err := tx.ReplaceSortOrder(so); err != nil {
		t.Fatal(err)
	}
	if tbl, err = tx.Commit(e.Ctx); err != nil {
		t.Fatal(err)
	}
	// The test bucket defaults to binpack; let the table's order decide.
	e.strategy(maintenance.StrategyAuto)
	return e, e.Fill(tbl, 10, 300)
}

func (e *env) strategy(s maintenance.Strategy) {
	e.T.Helper()
	if err := e.Store.PutTableConfig(e.Ctx, e.Target().Key(), maintenance.Compaction,
		maintenance.Config{Status: maintenance.Enabled, Settings: &maintenance.CompactionSettings{Strategy: s}}); err != nil {
		e.T.Fatal(err)
	}
}

// outputs reads each data file written by compaction on its own.
func (e *env) outputs(fig *Figures) [][]map[string]any {
	e.T.Helper()
	tbl := e.Load()
	tasks, err := tbl.Scan().PlanFiles(e.Ctx)
	if err != nil {
		e.T.Fatal(err)
	}
	var files [][]map[string]any
	for _, task := range tasks {
		if !strings.Contains(task.File.FilePath(), "/data/") || task.File.Count() < 100 {
			continue
		}
		task.DeleteFiles, task.EqualityDeleteFiles, task.DeletionVectorFiles = nil, nil, nil
		_, it, err := tbl.Scan().ReadTasks(e.Ctx, []table.FileScanTask{task})
		if err != nil {
			e.T.Fatal(err)
		}
		var rows []map[string]any
		for rec, err := range it {
			if err != nil {
				e.T.Fatal(err)
			}
			cat := rec.Column(rec.Schema().FieldIndices("cat")[0]).(*array.String)
			amount := rec.Column(rec.Schema().FieldIndices("amount")[0]).(*array.Float64)
			for i := 0; i < int(rec.NumRows()); i++ {
				r := map[string]any{"cat": nil, "amount": nil}
				if cat.IsValid(i) {
					r["cat"] = cat.Value(i)
				}
				if amount.IsValid(i) {
					r["amount"] = amount.Value(i)
				}
				rows = append(rows, r)
			}
			rec.Release()
		}
		files = append(files, rows)
	}
	return files
}

// auto on a table with a sort order sorts: every output file is ordered by
// cat ascending (nulls first), then amount descending (nulls last).
func TestSortStrategy(t *testing.T) {
	testkit.SkipUnderRace(t)
	e, _ := sortedTable(t,
		table.SortField{SourceIDs: []int{2}, Transform: iceberg.IdentityTransform{}, Direction: table.SortASC, NullOrder: table.NullsFirst},
		table.SortField{SourceIDs: []int{4}, Transform: iceberg.IdentityTransform{}, Direction: table.SortDESC, NullOrder: table.NullsLast})
	fig := e.checkCompaction(&Job{MinInputFiles: 2})
	if fig.Strategy != "sort" {
		t.Fatalf("auto chose %s", fig.Strategy)
	}
	files := e.outputs(fig)
	if len(files) == 0 {
		t.Fatal("no outputs")
	}
	for _, rows := range files {
		for i := 1; i < len(rows); i++ {
			a, b := rows[i-1], rows[i]
			ca, cb := a["cat"], b["cat"]
			switch {
			case ca == nil && cb != nil, ca == nil && cb == nil:
			case ca != nil && cb == nil:
				t.Fatalf("row %d: null cat after %v", i, ca)
			case ca.(string) > cb.(string):
				t.Fatalf("row %d: cat %v after %v", i, cb, ca)
			case ca.(string) == cb.(string):
				xa, xb := a["amount"], b["amount"]
				if xa == nil && xb != nil {
					t.Fatalf("row %d: null amount before %v", i, xb)
				}
				if xa != nil && xb != nil && xa.(float64) < xb.(float64) {
					t.Fatalf("row %d: amount %v after %v (descending)", i, xb, xa)
				}
			}
		}
	}
}

func TestZOrderStrategy(t *testing.T) {
	testkit.SkipUnderRace(t)
	e, _ := sortedTable(t,
		table.SortField{SourceIDs: []int{2}, Transform: iceberg.IdentityTransform{}, Direction: table.SortASC, NullOrder: table.NullsFirst},
		table.SortField{SourceIDs: []int{4}, Transform: iceberg.IdentityTransform{}, Direction: table.SortASC, NullOrder: table.NullsFirst})
	e.strategy(maintenance.StrategyZOrder)
	if fig := e.checkCompaction(&Job{MinInputFiles: 2}); fig.Strategy != "z-order" {
		t.Fatalf("strategy %s", fig.Strategy)
	}
}

// A sort order this version cannot apply fails the run with the reason.
func TestSortOnTransformFails(t *testing.T) {
	e, _ := sortedTable(t, table.SortField{SourceIDs: []int{1}, Transform: iceberg.BucketTransform{NumBuckets: 4}, Direction: table.SortASC, NullOrder: table.NullsFirst})
	loc := e.Load().MetadataLocation()
	out, _ := e.compact(&Job{MinInputFiles: 2})
	if out.Status != state.Failed || !strings.Contains(out.FailureMessage, "only identity sort fields") || e.Load().MetadataLocation() != loc {
		t.Fatalf("%+v", out)
	}
}

// The Z-curve over two keys visits a 4×4 grid in Morton order: quadrant by
// quadrant, each quadrant in the same Z.
func TestZOrderPermutationIsMorton(t *testing.T) {
	points, keys := grid4x4(t) // fed in an order unlike the answer
	var got [][2]int64
	perm, _ := zorderPermutation(len(points), keys)
	for _, i := range perm {
		got = append(got, points[i])
	}
	// Morton order with x as the first (more significant) key.
	want := [][2]int64{{0, 0}, {0, 1}, {1, 0}, {1, 1}, {0, 2}, {0, 3}, {1, 2}, {1, 3},
		{2, 0}, {2, 1}, {3, 0}, {3, 1}, {2, 2}, {2, 3}, {3, 2}, {3, 3}}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("z-order %v, want %v", got, want)
		}
	}
}

// hilbertOrder is the cells of a grid of side 2^bits in dims dimensions,
// ordered by their Hilbert index, each coordinate in the top bits of its
// 64-bit image.
func hilbertOrder(t *testing.T, dims, bits int) [][]uint64 {
	t.Helper()
	side := uint64(1) << bits
	cells := 1
	for range dims {
		cells *= int(side)
	}
	type coded struct {
		cell []uint64
		code string
	}
	all := make([]coded, cells)
	for c := range all {
		cell, rest := make([]uint64, dims), uint64(c)
		for d := range cell {
			cell[d], rest = rest%side, rest/side
		}
		x := make([]uint64, dims)
		for d, v := range cell {
			x[d] = v << (64 - bits)
		}
		hilbertTranspose(x)
		code := make([]byte, 8*dims)
		interleave(code, x)
		all[c] = coded{cell, string(code)}
	}
	slices.SortFunc(all, func(a, b coded) int { return strings.Compare(a.code, b.code) })
	out := make([][]uint64, cells)
	for i, c := range all {
		if i > 0 && c.code == all[i-1].code {
			t.Fatalf("cells %v and %v have one Hilbert index", all[i-1].cell, c.cell)
		}
		out[i] = c.cell
	}
	return out
}

// The Hilbert index is a bijection from a grid's cells onto distances
// along a path of unit steps from the origin: every cell has its own
// index, and cells with consecutive indexes are neighbours. Two and three
// dimensions; the top bits of each image decide, as the images of real
// keys do.
func TestHilbertIndex(t *testing.T) {
	for _, tc := range []struct{ dims, bits int }{{2, 1}, {2, 3}, {3, 2}, {1, 4}} {
		order := hilbertOrder(t, tc.dims, tc.bits)
		if first := order[0]; slices.ContainsFunc(first, func(v uint64) bool { return v != 0 }) {
			t.Fatalf("%d×%d bits: the curve starts at %v", tc.dims, tc.bits, first)
		}
		for i := 1; i < len(order); i++ {
			dist := 0
			for d := range order[i] {
				a, b := order[i-1][d], order[i][d]
				dist += int(max(a, b) - min(a, b))
			}
			if dist != 1 {
				t.Fatalf("%d dims, %d bits: step %d goes from %v to %v", tc.dims, tc.bits, i, order[i-1], order[i])
			}
		}
	}
}

// hilbertPermutation orders a group's rows along the curve: on a 4×4
// grid fed backwards, each row is a neighbour of the one before, and one
// key orders as the sort does.
func TestHilbertPermutation(t *testing.T) {
	points, keys := grid4x4(t)
	perm, _ := hilbertPermutation(len(points), keys)
	for i := 1; i < len(perm); i++ {
		a, b := points[perm[i-1]], points[perm[i]]
		if d := abs(a[0]-b[0]) + abs(a[1]-b[1]); d != 1 {
			t.Fatalf("step %d: %v to %v", i, a, b)
		}
	}
	one, _ := hilbertPermutation(len(points), keys[:1])
	for i := 1; i < len(one); i++ {
		if points[one[i-1]][0] > points[one[i]][0] {
			t.Fatalf("one key: %v after %v", points[one[i]], points[one[i-1]])
		}
	}
}

// grid4x4 is the points of a 4×4 grid of two int64 columns, fed from
// (3,3) down to (0,0), and the sort keys over the columns (released with
// the test).
func grid4x4(t *testing.T) ([][2]int64, []sortKey) {
	xb, yb := array.NewInt64Builder(memory.DefaultAllocator), array.NewInt64Builder(memory.DefaultAllocator)
	var points [][2]int64
	for y := int64(3); y >= 0; y-- {
		for x := int64(3); x >= 0; x-- {
			xb.Append(x)
			yb.Append(y)
			points = append(points, [2]int64{x, y})
		}
	}
	xs, ys := xb.NewArray(), yb.NewArray()
	t.Cleanup(func() { xs.Release(); ys.Release() })
	var keys []sortKey
	for _, col := range []arrow.Array{xs, ys} {
		cmpFn, zbits, err := comparer(col)
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, sortKey{col: col, compare: cmpFn, zbits: zbits})
	}
	return points, keys
}
