package jobs_test

import (
	"math/rand/v2"
	"runtime"
	"testing"
	"time"

	"github.com/icekeeper/icekeeper/compactor"
	"github.com/icekeeper/icekeeper/expire"
	"github.com/icekeeper/icekeeper/internal/demo"
	"github.com/icekeeper/icekeeper/internal/state"
	"github.com/icekeeper/icekeeper/internal/testkit"
	"github.com/icekeeper/icekeeper/jobs"
	"github.com/icekeeper/icekeeper/maintenance"
	"github.com/icekeeper/icekeeper/orphan"
)

// TestSoak runs a few thousand real jobs through one long-lived runner on
// the same table, as the daemon does, and checks the heap stays flat: a
// process that kept table objects (and their metadata) across runs would
// grow with every commit.
func TestSoak(t *testing.T) {
	if testing.Short() {
		t.Skip("soak test")
	}
	d := testkit.NewDemoTable(t, demo.Options{Appends: 10})
	r := &jobs.Runner{Store: d.Store, Jobs: jobs.Map(
		(&compactor.Job{MinInputFiles: 2}).Definition(),
		(&expire.Job{}).Definition(),
		(&orphan.Job{Store: d.Store}).Definition(),
	)}
	heap := func() uint64 {
		runtime.GC()
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	const rounds = 700 // three jobs each: 2,100 runs
	var warm uint64
	start := time.Now()
	for i := 0; i < rounds; i++ {
		if i%50 == 0 {
			// A writer keeps adding small files, so compaction and
			// expiration keep committing.
			if _, err := testkit.AppendRandom(d.Ctx, d.Load(), 20, 1_000_000, rand.New(rand.NewPCG(7, 7))); err != nil {
				t.Fatal(err)
			}
		}
		for _, typ := range []maintenance.JobType{maintenance.Compaction, maintenance.SnapshotManagement, maintenance.UnreferencedFileRemoval} {
			out, err := r.Run(d.Ctx, d.Target(), typ, "soak", jobs.Options{Now: time.Now().Add(time.Duration(i) * time.Hour)})
			if err != nil || out.Status != state.Successful {
				t.Fatalf("round %d %s: %+v %v", i, typ, out, err)
			}
		}
		if i == 100 {
			warm = heap()
		}
	}
	end := heap()
	t.Logf("%d runs in %v; heap %d KiB after 100 rounds, %d KiB after %d", rounds*3, time.Since(start).Round(time.Second), warm>>10, end>>10, rounds)
	if end > warm+16<<20 {
		t.Fatalf("heap grew from %d KiB to %d KiB over %d runs", warm>>10, end>>10, (rounds-100)*3)
	}
}
