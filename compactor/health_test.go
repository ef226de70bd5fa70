package compactor

import (
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/icekeeper/icekeeper/internal/demo"
	"github.com/icekeeper/icekeeper/internal/health"
	"github.com/icekeeper/icekeeper/internal/state"
	"github.com/icekeeper/icekeeper/internal/testkit"
	"github.com/icekeeper/icekeeper/jobs"
	"github.com/icekeeper/icekeeper/maintenance"
)

// Compacting the demo shows in its health score: its delete files are
// applied, and no partition is left with as many small files as the
// planner merges.
func TestCompactionRaisesHealthScore(t *testing.T) {
	d := testkit.NewDemoTable(t, demo.Options{Appends: 15})
	score := func() health.Health {
		t.Helper()
		h, err := jobs.Health(d.Ctx, d.Target(), d.Settings(), time.Now(), nil)
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	before := score()
	if out := d.Run((&Job{}).Definition(), jobs.Options{}); out.Status != state.Successful {
		t.Fatalf("compaction: %+v", out)
	}
	after := score()
	if after.Score.Total <= before.Score.Total || after.Score.Total != 100 || after.MergeableSmallFiles != 0 {
		t.Fatalf("score %.0f (%d mergeable of %d small files) before, %.0f (%d mergeable of %d small) after",
			before.Score.Total, before.MergeableSmallFiles, before.SmallFiles, after.Score.Total, after.MergeableSmallFiles, after.SmallFiles)
	}
	t.Logf("score %.0f before, %.0f after", before.Score.Total, after.Score.Total)
}

// Health with a cache reads an unchanged table's metadata and nothing
// else: no manifest list, no manifest, and the same figures as a full
// read. A commit, or a new compaction target, is read in full again.
func TestHealthCacheReadsOnlyMetadata(t *testing.T) {
	d := testkit.NewDemoTable(t, demo.Options{Appends: 6})
	opens := testkit.WatchOpens(t, strings.TrimPrefix(d.Load().Location(), "file://")+"/metadata")
	var cache health.Cache
	now := time.Now()
	check := func(s maintenance.Settings, wantManifestReads bool) health.Health {
		t.Helper()
		opens.Take()
		h, err := jobs.Health(d.Ctx, d.Target(), s, now, &cache)
		if err != nil {
			t.Fatal(err)
		}
		got := opens.Take()
		if read := got.ManifestLists+got.Manifests > 0; read != wantManifestReads || got.Metadata != 1 {
			t.Errorf("opened %+v; want one metadata.json and manifests read: %v", got, wantManifestReads)
		}
		full, err := jobs.Health(d.Ctx, d.Target(), s, now, nil)
		if err != nil {
			t.Fatal(err)
		}
		if h != full {
			t.Errorf("cached health %+v, read in full %+v", h, full)
		}
		return h
	}
	s := d.Settings()
	check(s, true)
	check(s, false) // unchanged
	if out := d.Run((&Job{}).Definition(), jobs.Options{}); out.Status != state.Successful {
		t.Fatalf("compaction: %+v", out)
	}
	check(s, true) // a new snapshot
	check(s, false)
	bigger := maintenance.Settings{Configs: maps.Clone(s.Configs), Knobs: s.Knobs}
	cfg := bigger.For(maintenance.Compaction)
	c := *cfg.Compaction()
	c.TargetFileSizeMB = maintenance.Int(*c.TargetFileSizeMB * 4)
	cfg.Settings = &c
	bigger.Configs[maintenance.Compaction] = cfg
	check(bigger, true) // another target: small files are others
}
