package orphan

import (
	"fmt"
	"strings"
	"testing"

	"github.com/icekeeper/icekeeper/jobs"
	"github.com/icekeeper/icekeeper/maintenance"
)

// Removal's summary, from the figures as the store keeps them, says what
// it marked noncurrent and what it deleted, "deleted 0" included, and
// the bytes deleted when it deleted some.
func TestSummaryOfARealRun(t *testing.T) {
	f := newFixture(t)
	summary := func() string {
		t.Helper()
		runs, err := f.Store.Runs(f.Ctx, f.Target().Key(), maintenance.UnreferencedFileRemoval, 1)
		if err != nil || len(runs) != 1 {
			t.Fatalf("runs: %+v %v", runs, err)
		}
		return jobs.RunSummary(f.job.Definition(), runs[0])
	}
	fig := f.mustRun(0)
	if got, want := summary(), fmt.Sprintf("marked %d files noncurrent, deleted 0, ", fig.Marked); fig.Marked == 0 || !strings.HasPrefix(got, want) {
		t.Errorf("first run (%d marked): summary %q, want it to start %q", fig.Marked, got, want)
	}
	fig = f.mustRun(11 * day)
	got := summary()
	if want := fmt.Sprintf("marked 0 files noncurrent, deleted %d (", fig.Deleted); fig.Deleted == 0 || !strings.HasPrefix(got, want) ||
		!strings.Contains(got, "B)") || len(got) > 100 {
		t.Errorf("run at day 11 (%d deleted): summary %q, want it to start %q and tell the bytes", fig.Deleted, got, want)
	}
	t.Logf("summary: %s", got)
}
