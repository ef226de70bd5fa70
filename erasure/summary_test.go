package erasure

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go"

	"github.com/icekeeper/icekeeper/internal/testkit/tableenv"
	"github.com/icekeeper/icekeeper/jobs"
	"github.com/icekeeper/icekeeper/maintenance"
)

// Erasure's summary, from the figures as the store keeps them: before
// any deadline it tells what is pending; past it, what it rewrote,
// expired and deleted.
func TestSummaryOfARealRun(t *testing.T) {
	base, tbl := tableenv.New(t, tableenv.BaseSchema, *iceberg.UnpartitionedSpec, "2")
	e := newEnv(t, base)
	e.cdc(tbl)
	summary := func() string {
		t.Helper()
		runs, err := e.Store.Runs(e.Ctx, e.Target().Key(), maintenance.Erasure, 1)
		if err != nil || len(runs) != 1 {
			t.Fatalf("runs: %+v %v", runs, err)
		}
		return jobs.RunSummary(e.erasure.Definition(), runs[0])
	}
	early := figures(t, e.run(maintenance.Erasure, time.Now().Add(3*24*time.Hour), "Successful"))
	if got, want := summary(), fmt.Sprintf("%d pending, ", len(early.Pending)); len(early.Pending) == 0 || !strings.HasPrefix(got, want) {
		t.Errorf("summary before the deadline %q, want it to start %q", got, want)
	}
	fig := figures(t, e.run(maintenance.Erasure, time.Now().Add((deadlineDays+1)*24*time.Hour), "Successful"))
	got := summary()
	want := fmt.Sprintf("rewrote %d data files into %d, expired %d snapshot", fig.FilesRewritten, fig.FilesWritten, len(fig.Expired))
	if !strings.HasPrefix(got, want) || !strings.Contains(got, fmt.Sprintf("deleted %d objects", fig.ObjectsDeleted)) || len(got) > 100 {
		t.Errorf("summary past the deadline %q, want it to start %q and tell the %d objects deleted, under 100 characters", got, want, fig.ObjectsDeleted)
	}
	t.Logf("summary: %s", got)
}
