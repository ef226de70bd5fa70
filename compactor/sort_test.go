package compactor

import (
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
	xb, yb := array.NewInt64Builder(memory.DefaultAllocator), array.NewInt64Builder(memory.DefaultAllocator)
	var points [][2]int64
	for y := int64(3); y >= 0; y-- { // fed in an order unlike the answer
		for x := int64(3); x >= 0; x-- {
			xb.Append(x)
			yb.Append(y)
			points = append(points, [2]int64{x, y})
		}
	}
	xs, ys := xb.NewArray(), yb.NewArray()
	defer xs.Release()
	defer ys.Release()
	var keys []sortKey
	for _, col := range []arrow.Array{xs, ys} {
		cmpFn, zbits, err := comparer(col)
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, sortKey{col: col, compare: cmpFn, zbits: zbits})
	}
	var got [][2]int64
	for _, i := range zorderPermutation(len(points), keys) {
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
