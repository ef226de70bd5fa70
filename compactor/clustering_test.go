package compactor

import (
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/icekeeper/icekeeper/internal/health"
	"github.com/icekeeper/icekeeper/internal/state"
	"github.com/icekeeper/icekeeper/internal/testkit"
	"github.com/icekeeper/icekeeper/maintenance"
	"github.com/icekeeper/icekeeper/planner"
)

// clusterSchema has two random keys and a payload that keeps files near
// the test target of 1 MB at a few thousand rows.
var clusterSchema = iceberg.NewSchema(0,
	iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
	iceberg.NestedField{ID: 2, Name: "k", Type: iceberg.PrimitiveTypes.Int64, Required: true},
	iceberg.NestedField{ID: 3, Name: "v", Type: iceberg.PrimitiveTypes.Int64, Required: true},
	iceberg.NestedField{ID: 4, Name: "payload", Type: iceberg.PrimitiveTypes.String, Required: true},
)

// overlappingTable is a table sorted by k (and v) whose eight data files
// are each of a good size for the 1 MB target and each span the whole
// range of both keys, as eight parallel writers leave it: eight deep.
func overlappingTable(t *testing.T, s maintenance.Strategy) *env {
	e, tbl := newEnv(t, clusterSchema, *iceberg.UnpartitionedSpec, "2")
	so, err := table.NewSortOrder(1, []table.SortField{
		{SourceIDs: []int{2}, Transform: iceberg.IdentityTransform{}, Direction: table.SortASC, NullOrder: table.NullsFirst},
		{SourceIDs: []int{3}, Transform: iceberg.IdentityTransform{}, Direction: table.SortASC, NullOrder: table.NullsFirst}})
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
	e.strategy(s)
	for range 8 {
		tbl = e.Append(tbl, 7000)
	}
	return e
}

// healthOf is the table's health as `icekeeper tables` computes it under
// strategy s, against the test target of 1 MB.
func (e *env) healthOf(s maintenance.Strategy) health.Health {
	e.T.Helper()
	h, err := health.Of(e.Ctx, e.Load(), 1, planner.DefaultMinInput, s, time.Now())
	if err != nil {
		e.T.Fatal(err)
	}
	if h.Clustering == nil {
		e.T.Fatal("the sorted table's clustering was not measured")
	}
	return h
}

// A table of well-sized files whose key ranges overlap eight deep scores
// full marks on size and none on clustering; one sort, z-order or hilbert
// run rewrites it for its overlap alone and leaves at most two files over
// any key (measured from the new manifests' bounds), with the same rows;
// then it is clean, and neither the planner nor a second run rewrites it.
func TestClusteringRewrite(t *testing.T) {
	testkit.SkipUnderRace(t)
	for _, s := range []maintenance.Strategy{maintenance.StrategySort, maintenance.StrategyZOrder, maintenance.StrategyHilbert} {
		t.Run(string(s), func(t *testing.T) {
			e := overlappingTable(t, s)
			before := e.healthOf(s)
			c := before.Clustering
			if before.DataFiles != 8 || before.SmallFiles != 0 || before.Score.Total != 100 {
				t.Fatalf("not a size-healthy table of 8 files: %d files, %d small, score %v", before.DataFiles, before.SmallFiles, before.Score.Total)
			}
			if c.Depth != 8 || c.Overlapping != 8 || c.Score != 0 {
				t.Fatalf("clustering before: %+v", c)
			}
			tbl := e.Load()
			fp, snap := e.Rows(tbl, 0), tbl.CurrentSnapshot().SnapshotID

			out, fig := e.compact(&Job{})
			if out.Status != state.Successful || fig.Strategy != string(s) {
				t.Fatalf("compaction: %s %s, strategy %s", out.Status, out.FailureMessage, fig.Strategy)
			}
			if len(fig.Plan.Groups) != 1 || fig.Plan.Groups[0].Reason != "overlap depth 8" || fig.Plan.Groups[0].Path != string(s) ||
				fig.GroupsCommitted != 1 || fig.InputFiles != 8 {
				t.Fatalf("plan %+v, %d groups committed, %d files in", fig.Plan, fig.GroupsCommitted, fig.InputFiles)
			}
			e.checkSameRows(fp, snap)

			after := e.healthOf(s)
			t.Logf("%s: %d files, depth %d → %d, clustering score %.0f → %.0f", s, after.DataFiles, c.Depth, after.Clustering.Depth, c.Score, after.Clustering.Score)
			if after.Clustering.Depth > planner.MaxOverlapDepth || after.Clustering.Score != 100 || after.SmallFiles > 1 {
				t.Fatalf("after one run: %d files, %d small, clustering %+v", after.DataFiles, after.SmallFiles, after.Clustering)
			}

			// Clean: the planner takes nothing, and a run commits nothing.
			clean := e.Load()
			sc, err := scan(e.Ctx, clean, false)
			if err != nil {
				t.Fatal(err)
			}
			p, err := planner.PlanData(clean.Metadata(), sc.tasks, sc.files, nil, planner.DataOptions{
				CompactionOptions: planner.CompactionOptions{TargetBytes: 1 << 20}, Strategy: s})
			if err != nil || len(p.Groups) != 0 {
				t.Fatalf("the clean table is planned: %+v, %v", p.Groups, err)
			}
			if out, _ := e.compact(&Job{}); out.Status != state.Successful || e.Load().MetadataLocation() != clean.MetadataLocation() {
				t.Fatalf("a second run: %s %s; metadata changed: %v", out.Status, out.FailureMessage, e.Load().MetadataLocation() != clean.MetadataLocation())
			}
		})
	}
}

// Binpack leaves a size-healthy table alone however it overlaps; its
// clustering is still measured, on the sort order's first column.
func TestBinpackIgnoresOverlap(t *testing.T) {
	testkit.SkipUnderRace(t)
	e := overlappingTable(t, maintenance.StrategyBinpack)
	if h := e.healthOf(maintenance.StrategyBinpack); h.Clustering.Depth != 8 || strings.Join(h.Clustering.Columns, ",") != "k" {
		t.Fatalf("clustering %+v", h.Clustering)
	}
	loc := e.Load().MetadataLocation()
	if out, fig := e.compact(&Job{}); out.Status != state.Successful || fig.GroupsPlanned != 0 || e.Load().MetadataLocation() != loc {
		t.Fatalf("binpack: %s, %d groups", out.Status, fig.GroupsPlanned)
	}
}
