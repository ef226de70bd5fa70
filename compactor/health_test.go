package compactor

import (
	"testing"
	"time"

	"github.com/icekeeper/icekeeper/internal/demo"
	"github.com/icekeeper/icekeeper/internal/health"
	"github.com/icekeeper/icekeeper/internal/state"
	"github.com/icekeeper/icekeeper/internal/testkit"
	"github.com/icekeeper/icekeeper/jobs"
)

// Compacting the demo shows in its health score: its delete files are
// applied, and no partition is left with as many small files as the
// planner merges.
func TestCompactionRaisesHealthScore(t *testing.T) {
	d := testkit.NewDemoTable(t, demo.Options{Appends: 15})
	score := func() health.Health {
		t.Helper()
		h, err := jobs.Health(d.Ctx, d.Target(), d.Settings(), time.Now())
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	before := score()
	if out := d.Run(&Job{}, jobs.Options{}); out.Status != state.Successful {
		t.Fatalf("compaction: %+v", out)
	}
	after := score()
	if after.Score.Total <= before.Score.Total || after.Score.Total != 100 || after.MergeableSmallFiles != 0 {
		t.Fatalf("score %.0f (%d mergeable of %d small files) before, %.0f (%d mergeable of %d small) after",
			before.Score.Total, before.MergeableSmallFiles, before.SmallFiles, after.Score.Total, after.MergeableSmallFiles, after.SmallFiles)
	}
	t.Logf("score %.0f before, %.0f after", before.Score.Total, after.Score.Total)
}
