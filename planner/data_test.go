package planner

import (
	"strings"
	"testing"

	"github.com/apache/iceberg-go/table"

	"github.com/icekeeper/icekeeper/maintenance"
)

// PlanData is the data stage's one decision: the strategy, the groups and
// the budget's cut, as a dry run shows them.
func TestPlanData(t *testing.T) {
	meta := newMeta(t, "2")
	var tasks []table.FileScanTask
	var in []File
	for i, p := range []string{"a1", "a2", "a3", "a4", "a5", "b1", "b2", "b3", "b4", "b5"} {
		tasks = append(tasks, table.FileScanTask{File: data(t, "s3://b/t/data/"+p+".parquet")})
		in = append(in, File{ID: i, Path: p, Partition: p[:1], Format: "parquet", SizeBytes: 10 * MB, Records: 10})
	}
	budget := func(n int64) *int64 { return &n }
	for _, tc := range []struct {
		name     string
		strategy maintenance.Strategy
		budget   *int64
		kept     []string // the groups' partitions
		deferred int
		because  string
		want     string // the strategy, or the error's text
	}{
		{"no budget", maintenance.StrategyAuto, nil, []string{"a", "b"}, 0, "", "binpack"},
		{"the budget takes the first group", maintenance.StrategyBinpack, budget(60 * MB), []string{"a"}, 1, "", "binpack"},
		{"budget spent", maintenance.StrategyBinpack, budget(0), nil, 2, BudgetSpent, "binpack"},
		{"sort without a sort order", maintenance.StrategySort, nil, nil, 0, "", "sort order"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := PlanData(meta, tasks, in, nil, DataOptions{CompactionOptions: CompactionOptions{TargetBytes: 128 * MB},
				Strategy: tc.strategy, Budget: tc.budget})
			if err != nil {
				if !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("error %v, want %q", err, tc.want)
				}
				return
			}
			var kept []string
			for _, g := range p.Groups {
				kept = append(kept, g.Partition)
			}
			if p.Strategy != tc.want || strings.Join(kept, ",") != strings.Join(tc.kept, ",") || len(p.Deferred) != tc.deferred ||
				p.DeferredBecause != tc.because || p.Converting != nil {
				t.Fatalf("plan %+v", p)
			}
			for _, g := range p.Groups {
				if g.Path == "" {
					t.Errorf("group %s has no rewrite path", g.Partition)
				}
			}
		})
	}
}
