package jobs_test

import (
	"testing"
	"time"

	"github.com/apache/iceberg-go"

	"github.com/icekeeper/icekeeper/compactor"
	"github.com/icekeeper/icekeeper/expire"
	"github.com/icekeeper/icekeeper/internal/state"
	"github.com/icekeeper/icekeeper/internal/testkit/servers"
	"github.com/icekeeper/icekeeper/internal/testkit/tableenv"
	"github.com/icekeeper/icekeeper/jobs"
	"github.com/icekeeper/icekeeper/maintenance"
	"github.com/icekeeper/icekeeper/orphan"
)

// A run's cost counts every request the S3 server saw for it, by kind:
// the meter is checked against a counting proxy in front of the server,
// for compaction, snapshot expiration and removal (marking, then
// deleting), on a table compaction rewrites, so that GETs, PUTs, LISTs
// and deletes all occur. The time is shifted so that removal and
// erasure have something to delete.
func TestCostCountsEveryRequest(t *testing.T) {
	counter, proxied := servers.S3(t).Counted(t)
	home := t.TempDir()
	e, tbl := tableenv.NewWith(t, tableenv.SQLOnS3(home, proxied), home, tableenv.BaseSchema, *iceberg.UnpartitionedSpec, "2")
	e.AppendCommits(tbl, 12, 20)
	e.Defaults.Configs[maintenance.SnapshotManagement] = maintenance.Config{Status: maintenance.Enabled,
		Settings: &maintenance.SnapshotSettings{MinSnapshotsToKeep: maintenance.Int(1), MaxSnapshotAgeHours: maintenance.Int(1)}}
	e.Defaults.Configs[maintenance.UnreferencedFileRemoval] = maintenance.Config{Status: maintenance.Enabled,
		Settings: &maintenance.RemovalSettings{UnreferencedDays: maintenance.Int(1), NonCurrentDays: maintenance.Int(1)}}
	removal := &orphan.Job{Store: e.Store}
	defs := map[maintenance.JobType]jobs.Job{
		maintenance.Compaction:              (&compactor.Job{}).Definition(),
		maintenance.SnapshotManagement:      (&expire.Job{}).Definition(),
		maintenance.UnreferencedFileRemoval: removal.Definition(),
	}
	for _, step := range []struct {
		typ   maintenance.JobType
		hours int // the run's clock, hours from now
	}{
		{maintenance.Compaction, 0},
		{maintenance.SnapshotManagement, 2},
		{maintenance.UnreferencedFileRemoval, 48},
		{maintenance.UnreferencedFileRemoval, 96},
	} {
		r := e.Runner(defs[step.typ])
		counter.Take()
		out, err := r.Run(e.Ctx, e.Target(), step.typ, "test", jobs.Options{Now: time.Now().Add(time.Duration(step.hours) * time.Hour)})
		if err != nil || out.Status != state.Successful {
			t.Fatalf("%s: %v %s %s", step.typ, err, out.Status, out.FailureMessage)
		}
		seen := counter.Take()
		c := jobs.RunCost(out.Figures)
		if c == nil {
			t.Fatalf("%s recorded no cost", step.typ)
		}
		t.Logf("%s: server saw %v; meter %v", step.typ, seen, c.ByKind)
		if int64(servers.Total(seen)) != c.Requests {
			t.Errorf("%s: the server saw %d requests %v, the run's cost says %d %v", step.typ, servers.Total(seen), seen, c.Requests, c.ByKind)
		}
		for _, kind := range []string{"GET", "PUT", "LIST", "HEAD"} {
			if int64(seen[kind]) != c.ByKind[kind] {
				t.Errorf("%s: %s: server %d, meter %d", step.typ, kind, seen[kind], c.ByKind[kind])
			}
		}
		if int64(seen["DELETE"]+seen["POST"]) != c.ByKind["DELETE"]+c.ByKind["POST"] {
			t.Errorf("%s: deletes and posts: server %v, meter %v", step.typ, seen, c.ByKind)
		}
		if c.Requests > 0 && c.USD <= 0 {
			t.Errorf("%s: %d requests priced at %g", step.typ, c.Requests, c.USD)
		}
	}
}
