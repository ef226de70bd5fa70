package expire

import (
	"fmt"
	"strings"
	"testing"

	"github.com/icekeeper/icekeeper/internal/state"
	"github.com/icekeeper/icekeeper/jobs"
	"github.com/icekeeper/icekeeper/maintenance"
)

// A snapshot expiration's summary, from the figures as the store keeps
// them, says how many snapshots it expired; one with nothing to expire
// says how many it kept.
func TestSummaryOfARealRun(t *testing.T) {
	f := newFixture(t, 30)
	summary := func() string {
		t.Helper()
		runs, err := f.Store.Runs(f.ctx, f.Target().Key(), maintenance.SnapshotManagement, 1)
		if err != nil || len(runs) != 1 {
			t.Fatalf("runs: %+v %v", runs, err)
		}
		return jobs.RunSummary(f.job.Definition(), runs[0])
	}
	out, fig := f.run(jobs.Options{})
	if out.Status != state.Successful || fig.SnapshotsExpired == 0 {
		t.Fatalf("run: %+v %+v", out, fig)
	}
	got := summary()
	if want := fmt.Sprintf("expired %d snapshots of %d", fig.SnapshotsExpired, fig.SnapshotsBefore); !strings.HasPrefix(got, want) || len(got) > 100 {
		t.Errorf("summary %q, want it to start %q, under 100 characters", got, want)
	}
	// The next run finds nothing to expire (or skips, the table being
	// as the first left it).
	out, fig = f.run(jobs.Options{})
	if out.Status != state.Successful || fig.SnapshotsExpired != 0 {
		t.Fatalf("second run: %+v %+v", out, fig)
	}
	if next := summary(); !strings.HasPrefix(next, fmt.Sprintf("no snapshot expired, %d kept", fig.SnapshotsKept)) && !strings.HasPrefix(next, "skipped: unchanged since run") {
		t.Errorf("summary of the second run: %q", next)
	}
	t.Logf("summary: %s", got)
}
