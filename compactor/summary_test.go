package compactor

import (
	"fmt"
	"strings"
	"testing"

	"github.com/icekeeper/icekeeper/internal/demo"
	"github.com/icekeeper/icekeeper/internal/state"
	"github.com/icekeeper/icekeeper/internal/testkit"
	"github.com/icekeeper/icekeeper/jobs"
	"github.com/icekeeper/icekeeper/maintenance"
)

// A compaction's summary, from the figures as the store keeps them, says
// how many files went in and came out and what else it did; the next run
// on the unchanged table says it skipped.
func TestSummaryOfARealRun(t *testing.T) {
	d := testkit.NewDemoTable(t, demo.Options{Appends: 15})
	def := (&Job{}).Definition()
	out := d.Run(def, jobs.Options{})
	fig, _ := out.Figures.(*Figures)
	if out.Status != state.Successful || fig == nil || fig.InputFiles == 0 {
		t.Fatalf("compaction: %+v", out)
	}
	summary := func() string {
		t.Helper()
		runs, err := d.Store.Runs(d.Ctx, d.Target().Key(), maintenance.Compaction, 1)
		if err != nil || len(runs) != 1 {
			t.Fatalf("runs: %+v %v", runs, err)
		}
		return jobs.RunSummary(def, runs[0])
	}
	got := summary()
	want := fmt.Sprintf("%d files -> %d file", fig.InputFiles, fig.OutputFiles)
	if !strings.HasPrefix(got, want) || len(got) > 100 || strings.Contains(got, "\n") {
		t.Errorf("summary %q, want it to start %q, on one line under 100 characters", got, want)
	}
	if fig.DeleteFilesRemoved > 0 && !strings.Contains(got, fmt.Sprintf("%d delete file", fig.DeleteFilesRemoved)) {
		t.Errorf("summary %q does not tell the %d delete files removed", got, fig.DeleteFilesRemoved)
	}
	t.Logf("summary: %s", got)
	if out := d.Run(def, jobs.Options{}); out.Status != state.Successful {
		t.Fatalf("second compaction: %+v", out)
	}
	if got := summary(); !strings.HasPrefix(got, "skipped: unchanged since run") && !strings.HasPrefix(got, "nothing to compact") {
		t.Errorf("summary of a run with nothing to do: %q", got)
	}
}
