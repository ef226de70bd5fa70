package compactor

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/apache/iceberg-go"

	"github.com/icekeeper/icekeeper/internal/state"
	"github.com/icekeeper/icekeeper/internal/testkit/tableenv"
	"github.com/icekeeper/icekeeper/maintenance"
	"github.com/icekeeper/icekeeper/planner"
)

// A run capped by its rewrite budget rewrites the first groups of its
// plan and defers the rest, keeps the rows, and does not settle; one with
// nothing left rewrites nothing and says why; one with less left than its
// first group rewrites that group; the next run with budget finishes the
// work.
func TestRewriteBudget(t *testing.T) {
	e, tbl := newEnv(t, tableenv.BaseSchema, iceberg.NewPartitionSpec(tableenv.PF(2, 1000, "cat", iceberg.IdentityTransform{})), "2")
	for range 6 {
		tbl = e.Append(tbl, 50)
	}
	want := e.Rows(tbl, 0)
	before := tbl.CurrentSnapshot().SnapshotID

	// The plan, from a dry run.
	e.opts.DryRun = true
	_, plan := e.compact(&Job{})
	groups := plan.Plan.Groups
	if len(groups) < 2 {
		t.Fatalf("want a plan of several groups, got %d", len(groups))
	}
	budget := groups[0].InputBytes
	// A dry run with a cap counts what the cap would defer.
	e.opts.RewriteBytes = &budget
	_, dry := e.compact(&Job{})
	if dry.GroupsPlanned != 1 || dry.GroupsDeferredByBudget != len(groups)-1 || dry.BytesDeferredByBudget != planner.GroupBytes(groups[1:]) {
		t.Fatalf("dry run with a cap of %d: %d planned, %d groups (%d bytes) deferred", budget, dry.GroupsPlanned, dry.GroupsDeferredByBudget, dry.BytesDeferredByBudget)
	}
	if !strings.Contains(dry.Text(), "deferred to the next run by the rewrite budget") {
		t.Fatalf("the dry run does not show the deferral:\n%s", dry.Text())
	}

	// Nothing left: a successful run that rewrites nothing, and says why.
	e.opts.DryRun = false
	zero := int64(0)
	e.opts.RewriteBytes = &zero
	out, fig := e.compact(&Job{})
	if out.Status != state.Successful || fig.GroupsCommitted != 0 || fig.Commits != 0 || fig.GroupsDeferredByBudget != len(groups) ||
		fig.DeferredBecause != planner.BudgetSpent || out.Evaluation != nil {
		t.Fatalf("run with a spent budget: %s, %d committed, %d deferred, %q, evaluation %v", out.Status, fig.GroupsCommitted, fig.GroupsDeferredByBudget, fig.DeferredBecause, out.Evaluation)
	}
	if got := e.Load().CurrentSnapshot().SnapshotID; got != before {
		t.Fatalf("a run with a spent budget committed snapshot %d", got)
	}

	// One byte left, less than the first group: it alone is rewritten
	// (an overdraft; a group larger than every allowance would
	// otherwise never run).
	one := int64(1)
	e.opts.RewriteBytes = &one
	out, fig = e.compact(&Job{})
	if out.Status != state.Successful || fig.GroupsCommitted != 1 || fig.InputBytes != budget || out.Rewritten != budget ||
		fig.GroupsDeferredByBudget != len(groups)-1 || fig.DeferredBecause != "" {
		t.Fatalf("capped run: %s %s, %d committed (%d bytes), %d deferred", out.Status, out.FailureMessage, fig.GroupsCommitted, fig.InputBytes, fig.GroupsDeferredByBudget)
	}
	if out.Evaluation != nil {
		t.Fatal("a run that deferred work left a verdict a later run may rest on")
	}
	e.checkSameRows(want, before)
	// What the run recorded tells the next fire to take the table first.
	runs, err := e.Store.Runs(e.Ctx, e.Target().Key(), maintenance.Compaction, 1)
	if err != nil || len(runs) != 1 {
		t.Fatal(runs, err)
	}
	deferred, estimate := pending(runs[0].Metrics)
	if deferred != planner.GroupBytes(groups[1:]) || estimate != deferred {
		t.Fatalf("pending from the recorded figures: %d deferred, %d estimated", deferred, estimate)
	}
	if d, est := pending(json.RawMessage(`{"plan":`)); d != 0 || est != 0 {
		t.Fatalf("pending from broken figures: %d %d", d, est)
	}

	// With budget for the rest, the next run finishes.
	e.opts.RewriteBytes = nil
	out, fig = e.compact(&Job{})
	if out.Status != state.Successful || fig.GroupsCommitted != len(groups)-1 || fig.GroupsDeferredByBudget != 0 {
		t.Fatalf("run after: %s %s, %d committed, %d deferred", out.Status, out.FailureMessage, fig.GroupsCommitted, fig.GroupsDeferredByBudget)
	}
	e.checkSameRows(want, before)
	_, fig = e.compact(&Job{})
	if fig.GroupsPlanned != 0 {
		t.Fatalf("%d groups left after the budgeted runs", fig.GroupsPlanned)
	}
}

// Every stage of a run is charged to the rewrite budgets, and the stages
// after the data rewrite wait for budget like its groups: a run whose cap
// is spent converts no equality delete and does not settle; the next run
// with budget converts them and charges the bytes conversion read beside
// the data it rewrote.
func TestRewriteBudgetCoversEveryStage(t *testing.T) {
	e, tbl := newEnv(t, tableenv.BaseSchema, *iceberg.UnpartitionedSpec, "2")
	cdcTable{appends: 2, bigRows: 60000, checkpoints: 2, upserts: 50}.fill(e, tbl)
	want := e.Rows(e.Load(), 0)

	zero := int64(0)
	e.opts.RewriteBytes = &zero
	out, fig := e.compact(&Job{})
	if out.Status != state.Successful || fig.ConvertCommits != 0 || fig.Commits != 0 || out.Evaluation != nil ||
		!slices.Equal(fig.StagesDeferredByBudget, []string{"equality-delete conversion", "delete-file compaction"}) {
		t.Fatalf("run with a spent budget: %s, %d conversion commits, %d commits, deferred %v, evaluation %v\n%s",
			out.Status, fig.ConvertCommits, fig.Commits, fig.StagesDeferredByBudget, out.Evaluation, fig.Text())
	}
	if out.Rewritten != 0 || !strings.Contains(fig.Text(), "equality-delete conversion and delete-file compaction deferred") {
		t.Fatalf("a run that did nothing charged %d bytes:\n%s", out.Rewritten, fig.Text())
	}

	e.opts.RewriteBytes = nil
	out, fig = e.compact(&Job{})
	if out.Status != state.Successful || fig.EqualityDeletesConverted == 0 || fig.ConvertBytesRead == 0 {
		t.Fatalf("run with budget: %s, %d equality deletes converted\n%s", out.Status, fig.EqualityDeletesConverted, fig.Text())
	}
	charged := fig.Plan.InputBytes() + fig.ManifestBytes + fig.ConvertBytesRead + fig.DeleteBytes
	if fig.ChargedBytes != charged || out.Rewritten != charged || charged <= fig.InputBytes {
		t.Fatalf("charged %d (outcome %d), want %d: data %d, manifests %d, conversion %d, deletes %d",
			fig.ChargedBytes, out.Rewritten, charged, fig.Plan.InputBytes(), fig.ManifestBytes, fig.ConvertBytesRead, fig.DeleteBytes)
	}
	if fp := e.Rows(e.Load(), 0); !fp.Equal(want) {
		t.Fatalf("visible rows changed: %v, want %v", fp, want)
	}
	// A dry run charges nothing.
	e.opts.DryRun = true
	if out, fig = e.compact(&Job{}); out.Rewritten != 0 || fig.ChargedBytes != 0 {
		t.Fatalf("a dry run charged %d bytes", out.Rewritten)
	}
}
