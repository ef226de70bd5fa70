package testkit

import (
	"slices"
	"testing"

	"github.com/icekeeper/icekeeper/jobs"
	"github.com/icekeeper/icekeeper/maintenance"
)

// CheckCounters fails t unless the counters fig reports are exactly job
// type typ's Counters in maintenance's type table: a key missing there
// would never reach /metrics, and a metric no run reports stays at 0.
// fig must have its counting fields set, as after a run that did work.
func CheckCounters(t *testing.T, typ maintenance.JobType, fig jobs.Figures) {
	t.Helper()
	row, ok := maintenance.Lookup(typ)
	if !ok {
		t.Fatalf("%s is not in the type table", typ)
	}
	got := fig.Counters()
	if len(got) == 0 {
		t.Fatalf("%s: the figures report no counters; set their counting fields", typ)
	}
	var keys []string
	for key := range got {
		keys = append(keys, key)
		if _, ok := row.Counters[key]; !ok {
			t.Errorf("%s: figures count %q, which has no metric in the type table", typ, key)
		}
	}
	for key := range row.Counters {
		if !slices.Contains(keys, key) {
			t.Errorf("%s: the type table's counter %q is not reported by the figures", typ, key)
		}
	}
}
