package records

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go"

	"github.com/icekeeper/icekeeper/internal/state"
	"github.com/icekeeper/icekeeper/internal/testkit/tableenv"
	"github.com/icekeeper/icekeeper/jobs"
	"github.com/icekeeper/icekeeper/maintenance"
)

// Record expiration's summary, from the figures as the store keeps them,
// says how many records went from how many files; the next run says none
// was old enough (or that it skipped the unchanged table).
func TestSummaryOfARealRun(t *testing.T) {
	e, tbl := newEnv(t, tableenv.BaseSchema, iceberg.NewPartitionSpec(tableenv.PF(3, 1000, "ts_day", iceberg.DayTransform{})), "2")
	e.Fill(e.setColumn(tbl, "ts"), 4, 150)
	summary := func() string {
		t.Helper()
		runs, err := e.Store.Runs(e.Ctx, e.Target().Key(), maintenance.RecordExpiration, 1)
		if err != nil || len(runs) != 1 {
			t.Fatalf("runs: %+v %v", runs, err)
		}
		return jobs.RunSummary((&Job{}).Definition(), runs[0])
	}
	out, fig := e.expire(&Job{}, false)
	if out.Status != state.Successful || fig.DeletedRecords == 0 {
		t.Fatalf("run: %+v %+v", out, fig)
	}
	got := summary()
	if want := fmt.Sprintf("removed %d records from %d data files (", fig.DeletedRecords, fig.DeletedDataFiles); !strings.HasPrefix(got, want) || len(got) > 100 {
		t.Errorf("summary %q, want it to start %q, under 100 characters", got, want)
	}
	t.Logf("summary: %s", got)
	if out, _ := e.expire(&Job{}, false); out.Status != state.Successful {
		t.Fatalf("second run: %+v", out)
	}
	if got := summary(); !strings.HasPrefix(got, "no record older than 30 days") && !strings.HasPrefix(got, "skipped: unchanged since run") {
		t.Errorf("summary of the second run: %q", got)
	}
}

// A retention past Duration's range (about 106,751 days of 24 h) still
// puts the cutoff in the past: days*24h would overflow and expire every
// row.
func TestCutoffFarBack(t *testing.T) {
	now := time.Date(2026, 12, 5, 0, 0, 0, 0, time.UTC)
	for _, days := range []int{1, 36500, 365000} {
		got := cutoff(Settings{Days: days}, now)
		if want := now.AddDate(0, 0, -days); !got.Equal(want) || !got.Before(now) {
			t.Errorf("%d days: cutoff %v, want %v", days, got, want)
		}
	}
}
