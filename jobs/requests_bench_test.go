package jobs_test

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go"

	"github.com/icekeeper/icekeeper/compactor"
	"github.com/icekeeper/icekeeper/erasure"
	"github.com/icekeeper/icekeeper/expire"
	"github.com/icekeeper/icekeeper/expire/records"
	"github.com/icekeeper/icekeeper/internal/state"
	"github.com/icekeeper/icekeeper/internal/testkit"
	"github.com/icekeeper/icekeeper/internal/testkit/servers"
	"github.com/icekeeper/icekeeper/internal/testkit/tableenv"
	"github.com/icekeeper/icekeeper/jobs"
	"github.com/icekeeper/icekeeper/maintenance"
	"github.com/icekeeper/icekeeper/orphan"
)

// BenchmarkRequestsPerRun counts the S3 requests one run of each job type
// makes on an unchanged table, before and after the work that made an
// unchanged table cheap: "before" evaluates in full at every run (the
// unchanged rule's backstop at a nanosecond) and removes unreferenced
// files without the reference index; "after" is the default. The table:
// a SQL catalog (SQLite) over S3 on loopback, requests counted by kind at
// a proxy, 50 appends of 20 rows (50 snapshots, compacted by the first
// compaction run), record expiration on its timestamp column with a
// retention nothing reaches, erasure with a seven-day deadline (the table
// only ever had appends). Each type runs until a run changes nothing,
// then once more per side, measured.
//
//	go test -run '^$' -bench RequestsPerRun -benchtime 1x ./jobs/
func BenchmarkRequestsPerRun(b *testing.B) {
	counter, proxied := servers.S3(b).Counted(b)
	home := b.TempDir()
	e, tbl := tableenv.NewWith(b, tableenv.SQLOnS3(home, proxied), home, tableenv.BaseSchema, *iceberg.UnpartitionedSpec, "2")
	tbl = e.AppendCommits(tbl, 50, 20)
	tx := tbl.NewTransaction()
	if err := tx.SetProperties(iceberg.Properties{records.ExpirationColumnProperty: "ts"}); err != nil {
		b.Fatal(err)
	}
	if _, err := tx.Commit(e.Ctx); err != nil {
		b.Fatal(err)
	}
	e.Defaults.Configs[maintenance.RecordExpiration] = maintenance.Config{Status: maintenance.Enabled,
		Settings: &maintenance.ExpirationSettings{Days: maintenance.Int(maintenance.MaxDays)}}
	e.Defaults.Configs[maintenance.Erasure] = maintenance.Config{Status: maintenance.Enabled,
		Settings: &maintenance.ErasureSettings{DeadlineDays: maintenance.Int(7)}}
	type side struct {
		name      string
		fullEvery time.Duration
		index     bool
	}
	run := func(s side, typ maintenance.JobType) (map[string]int, string) {
		b.Helper()
		removal := &orphan.Job{Store: e.Store}
		if !s.index {
			removal.Store = testkit.FailingIndex{Store: e.Store}
		}
		job := map[maintenance.JobType]jobs.Job{
			maintenance.Compaction:              (&compactor.Job{}).Definition(),
			maintenance.SnapshotManagement:      (&expire.Job{}).Definition(),
			maintenance.UnreferencedFileRemoval: removal.Definition(),
			maintenance.RecordExpiration:        (&records.Job{}).Definition(),
			maintenance.Erasure:                 (&erasure.Job{DeleteFiles: removal.DeleteUnreferenced}).Definition(),
		}[typ]
		r := e.Runner(job)
		r.FullEvery = s.fullEvery
		counter.Take()
		out, err := r.Run(e.Ctx, e.Target(), typ, "bench", jobs.Options{})
		if err != nil || out.Status != state.Successful {
			b.Fatalf("%s: %v %s %s", typ, err, out.Status, out.FailureMessage)
		}
		return counter.Take(), out.Figures.Text()
	}
	after, before := side{"after", 0, true}, side{"before", time.Nanosecond, false}
	for _, typ := range maintenance.JobTypes() {
		// Until a run of the default changes nothing: compaction's first
		// run compacts, its second records the evaluation later runs
		// rest on.
		for range 3 {
			run(after, typ)
		}
	}
	for b.Loop() {
		for _, typ := range maintenance.JobTypes() {
			for _, s := range []side{before, after} {
				c, fig := run(s, typ)
				b.Logf("%s, %s: %d requests %s", typ, s.name, servers.Total(c), kinds(c))
				if testing.Verbose() {
					b.Log(fig)
				}
				b.ReportMetric(float64(servers.Total(c)), fmt.Sprintf("%s-%s-requests", typ, s.name))
			}
		}
	}
}

// kinds formats request counts by kind in a stable order.
func kinds(c map[string]int) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(c)) {
		parts = append(parts, fmt.Sprintf("%s %d", k, c[k]))
	}
	return "(" + strings.Join(parts, ", ") + ")"
}
