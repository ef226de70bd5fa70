package status

import (
	"bytes"
	"encoding/json"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/icekeeper/icekeeper/internal/cost"
	"github.com/icekeeper/icekeeper/internal/state"
	"github.com/icekeeper/icekeeper/jobs"
	"github.com/icekeeper/icekeeper/maintenance"
)

// TestJobStatusJSON holds the job-status answer written by hand to
// json.Encoder's bytes for the same value, over generated answers with
// every optional member present and absent, strings that need escaping,
// and floats on both sides of the exponent form's bounds.
func TestJobStatusJSON(t *testing.T) {
	strs := []string{"", "Successful", "Not_Yet_Run", `quote " and \ backslash`, "<script>&</script>", "tab\tnew\nline",
		"naïve ünïcode ✓", "\u2028 separators \u2029", "bad utf-8 \xff\xfe", "\x00\x1f\x7f"}
	floats := []float64{0, 1, -1, 0.5, 3600.123456789, 1e-6, 9.99e-7, 1e-7, 5e-324, 1e20, 1e21, 123456789012345678901234.0, -2.5e-9, math.MaxFloat64}
	at := time.Date(2026, 12, 5, 4, 15, 36, 880723727, time.UTC)
	rng := rand.New(rand.NewPCG(1, 2))
	pick := func(xs []string) string { return xs[rng.IntN(len(xs))] }
	for i := range 2000 {
		r := jobStatusResponse{TableARN: pick(strs), Status: map[maintenance.JobType]wireStatus{}}
		for _, typ := range []maintenance.JobType{maintenance.Compaction, maintenance.SnapshotManagement, maintenance.UnreferencedFileRemoval, maintenance.Erasure}[:rng.IntN(5)] {
			ws := wireStatus{Status: pick(strs), LastRunTimestamp: pick(strs), FailureMessage: pick(strs)}
			if rng.IntN(2) == 0 {
				ws.Cost = &cost.Figures{Requests: rng.Int64N(1000), ByKind: map[string]int64{"GET": 3, "PUT": 1}, BytesRead: rng.Int64(), USD: floats[rng.IntN(len(floats))]}
				if rng.IntN(2) == 0 { // as the server's cache of costs hands it
					ws.costJSON = (&costs{}).of(state.Run{ID: 1, Metrics: mustJSON(t, map[string]any{"cost": ws.Cost})}).json
				}
			}
			if rng.IntN(3) > 0 {
				v := &jobs.LagView{TargetSeconds: floats[rng.IntN(len(floats))], LagSeconds: floats[rng.IntN(len(floats))], Late: rng.IntN(2) == 0,
					Oldest: pick(strs), Waits: pick(strs), Checked: at.Add(time.Duration(rng.Int64N(1e15)))}
				if rng.IntN(2) == 0 {
					since := at.Add(-time.Duration(rng.Int64N(1e15))).In(time.FixedZone("x", 3600))
					v.Since = &since
				}
				ws.Freshness = v
			}
			r.Status[typ] = ws
		}
		var want bytes.Buffer
		if err := json.NewEncoder(&want).Encode(r); err != nil {
			t.Fatal(err)
		}
		got := append(r.appendJSON(nil), '\n')
		if !bytes.Equal(got, want.Bytes()) {
			t.Fatalf("answer %d:\n got %s\nwant %s", i, got, want.Bytes())
		}
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
