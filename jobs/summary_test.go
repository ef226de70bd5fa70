package jobs

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/icekeeper/icekeeper/internal/state"
	"github.com/icekeeper/icekeeper/maintenance"
	"github.com/icekeeper/icekeeper/planner"
)

// A recorded run's summary is its type's line from the figures as
// stored, then its duration and its cost where the figures have one; a
// run the unchanged rule skipped says so without asking the type.
func TestRunSummary(t *testing.T) {
	def := define(maintenance.Compaction, func(_ context.Context, _ *Run[struct{}], fig *testFigures) error {
		fig.Values = map[string]float64{"files": 234}
		fig.Bytes = 21
		return nil
	})
	def.Summary = func(f *testFigures) string { return fmt.Sprintf("%.0f files -> %d files", f.Values["files"], f.Bytes) }
	s, _ := shared(t)
	r := &Runner{Store: s, Jobs: Map(def)}
	if out, err := r.Run(context.Background(), target(t, key(1)), maintenance.Compaction, "test", Options{}); err != nil || out.Status != state.Successful {
		t.Fatalf("run: %+v %v", out, err)
	}
	run := lastRun(t, s, key(1), maintenance.Compaction)
	if got := def.Summarize(run.Metrics); got != "234 files -> 21 files" {
		t.Errorf("summary of the recorded figures: %q", got)
	}

	base := state.Run{Status: state.Successful, Started: time.Unix(100, 0), Finished: time.Unix(103, 200_000_000)}
	with := func(metrics string, status state.RunStatus) state.Run {
		r := base
		r.Metrics, r.Status = json.RawMessage(metrics), status
		return r
	}
	for _, c := range []struct {
		name string
		run  state.Run
		want string
	}{
		{"no cost", with(`{"values":{"files":234},"bytes":21}`, state.Successful), "234 files -> 21 files, 3.2 s"},
		{"cost", with(`{"values":{"files":2},"bytes":1,"cost":{"requests":12,"usd":0.0000123,"s3TablesUSD":0.0012}}`, state.Successful),
			"2 files -> 1 files, 3.2 s, $0.000012 (S3 Tables would charge $0.0012)"},
		{"cost without S3 Tables", with(`{"values":{"files":2},"bytes":1,"cost":{"usd":0.5}}`, state.Successful), "2 files -> 1 files, 3.2 s, $0.50"},
		// Figures of another shape are a cost not known, not an error.
		{"cost of another shape", with(`{"values":{"files":2},"bytes":1,"cost":{"usd":"a lot"}}`, state.Successful), "2 files -> 1 files, 3.2 s, $0"},
		{"cost not an object", with(`{"values":{"files":2},"bytes":1,"cost":3}`, state.Successful), "2 files -> 1 files, 3.2 s"},
		// Figures that do not decode into the type's give no line of
		// the type's, and no wrong one.
		{"figures of another type", with(`{"values":[1,2]}`, state.Successful), "successful, 3.2 s"},
		{"skipped by the rule", with(`{"unchanged":{"skip":true,"rule":"`+planner.RuleUnchanged+`","reason":"unchanged since run 7 (snapshot 3, same settings)","sinceRun":7}}`, state.Successful),
			"skipped: unchanged since run 7 (snapshot 3, same settings), 3.2 s"},
		{"failed", with(`{"values":{"files":2},"bytes":1}`, state.Failed), "failed; 2 files -> 1 files, 3.2 s"},
		{"failed before figures", with(``, state.Failed), "failed, 3.2 s"},
		{"disabled", with(``, state.Disabled), "disabled"},
	} {
		if got := RunSummary(def, c.run); got != c.want {
			t.Errorf("%s: got %q, want %q", c.name, got, c.want)
		}
	}
	long := with(`{"values":{"files":2},"bytes":1}`, state.Successful)
	def.Summary = func(*testFigures) string { return strings.Repeat("x", 200) }
	if got := RunSummary(def, long); len([]rune(got)) > maxWhat+len(", 3.2 s") || !strings.Contains(got, "…") {
		t.Errorf("a long summary is not cut: %d characters", len([]rune(got)))
	}
}
