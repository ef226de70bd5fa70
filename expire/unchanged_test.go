package expire

import (
	"strings"
	"testing"
	"time"

	"github.com/icekeeper/icekeeper/internal/state"
	"github.com/icekeeper/icekeeper/internal/testkit"
	"github.com/icekeeper/icekeeper/jobs"
	"github.com/icekeeper/icekeeper/maintenance"
	"github.com/icekeeper/icekeeper/planner"
)

// Snapshot management skips a table whose metadata and settings did not
// change, reading one metadata.json, until a snapshot ages past a max
// age: then the clock makes it decide again, and the decision changes.
func TestUnchangedSnapshotManagement(t *testing.T) {
	f := newFixture(t, 10)
	opens := testkit.WatchOpens(t, strings.TrimPrefix(f.load().Location(), "file://")+"/metadata")
	now := time.Now()
	// A backstop far off, so that only the clock's bound decides.
	r := &jobs.Runner{Store: f.Store, Resolver: f.Resolver(), Jobs: jobs.Map(f.job.Definition()),
		FullEvery: 1000 * 24 * time.Hour}
	run := func(at time.Time) *Figures {
		t.Helper()
		out, err := r.Run(f.ctx, f.Target(), maintenance.SnapshotManagement, "test", jobs.Options{Now: at})
		fig, _ := out.Figures.(*Figures)
		if err != nil || out.Status != state.Successful || fig.Unchanged == nil {
			t.Fatalf("run at %v: %+v %+v", at, out, fig)
		}
		return fig
	}
	run(now) // expires what the demo's history has to expire
	if fig := run(now); fig.Unchanged.Skip || fig.SnapshotsExpired != 0 {
		t.Fatalf("the run after a commit: %+v, %d expired", fig.Unchanged, fig.SnapshotsExpired)
	}
	ev, ok, err := f.Store.LastEvaluation(f.ctx, f.Target().Key(), maintenance.SnapshotManagement)
	if err != nil || !ok || ev.ValidUntil.IsZero() || !ev.ValidUntil.After(now) {
		t.Fatalf("the settled run recorded %+v %v %v: want a bound ahead", ev, ok, err)
	}
	opens.Take()
	fig := run(ev.ValidUntil)
	if !fig.Unchanged.Skip || fig.Unchanged.Rule != planner.RuleUnchanged {
		t.Fatalf("at the bound: %+v", fig.Unchanged)
	}
	if got := opens.Take(); got != (testkit.OpenCounts{Metadata: 1}) {
		t.Fatalf("an unchanged check opened %+v, want one metadata.json", got)
	}
	fig = run(ev.ValidUntil.Add(time.Millisecond))
	if fig.Unchanged.Skip || fig.Unchanged.Rule != planner.RuleClock || fig.SnapshotsBefore == 0 {
		t.Fatalf("past the bound: %+v, %d snapshots seen", fig.Unchanged, fig.SnapshotsBefore)
	}
	if fig.SnapshotsExpired == 0 {
		t.Fatal("past the bound nothing expired: the bound is not where the decision changes")
	}
}
