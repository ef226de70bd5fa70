package jobs_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/icekeeper/icekeeper/configs"
	"github.com/icekeeper/icekeeper/internal/testkit"
	"github.com/icekeeper/icekeeper/internal/testkit/servers"
	"github.com/icekeeper/icekeeper/internal/testkit/tableenv"
	"github.com/icekeeper/icekeeper/jobs"
)

// BenchmarkFleetFire measures one fire of compaction's schedule over a
// fleet of small tables (ICEKEEPER_FLEET_TABLES of them, 100 unless set),
// each with a recorded compaction run that found nothing to do:
//
//   - every table queued, as before need order, and need-ordered
//     (`serve --need-order`: every table polled, only those that need a
//     run queued, in order of need);
//   - when nothing changed, and when 1% of the tables received an append.
//
// A fire's runs are worked two at a time (the daemon's default
// --parallelism) in the queue's order, without the jitter wait a daemon
// holds each job to. Per case it reports the jobs queued, the fire (poll
// and queue inserts), the fire and its runs, the time until the last
// changed table's compaction finished, CPU seconds of the process, and:
//
//   - local: the embedded SQL catalog on local disk, two appends per
//     table (compacted, then evaluated again), metadata.json,
//     manifest-list and manifest opens counted with inotify;
//   - s3-20ms: a SQL catalog (SQLite) over S3 on loopback, one append per
//     table, every request held back 20 ms (toxiproxy) and counted by
//     kind.
//
// The fleet is built once, outside the timing, eight tables at a time
// (directly on S3, without the latency). Run it once per fleet:
//
//	ICEKEEPER_FLEET_TABLES=10000 go test -run '^$' -bench 'FleetFire/s3-20ms' -benchtime 1x -timeout 120m ./jobs/
func BenchmarkFleetFire(b *testing.B) {
	n := 100
	if v, err := strconv.Atoi(os.Getenv("ICEKEEPER_FLEET_TABLES")); err == nil && v > 0 {
		n = v
	}
	b.Run("local", func(b *testing.B) {
		home := b.TempDir()
		f := newFleetOn(b, configs.Embedded(home), home, n, 2, 2)
		var dirs []string
		for i := range f.ids {
			tbl, err := f.b.LoadTable(f.ctx, f.ids[i])
			if err != nil {
				b.Fatal(err)
			}
			dirs = append(dirs, filepath.Dir(strings.TrimPrefix(tbl.MetadataLocation(), "file://")))
		}
		opens := testkit.WatchOpens(b, dirs[0], dirs[1:]...)
		benchFleet(b, f, func() (string, int) {
			o := opens.Take()
			return fmt.Sprintf("opens: metadata.json %d, manifest lists %d, manifests %d", o.Metadata, o.ManifestLists, o.Manifests), -1
		})
	})
	b.Run("s3-20ms", func(b *testing.B) {
		srv := servers.S3(b)
		counter, slow := srv.WithLatency(b, 20*time.Millisecond).Counted(b)
		home := b.TempDir()
		f := newFleetOn(b, tableenv.SQLOnS3(home, srv), home, n, 1, 8)
		// The fleet is measured through the latency and the counter: the
		// same catalog file, state store and tables, another registry.
		reg := tableenv.SQLOnS3(home, slow).Registry()
		b.Cleanup(reg.Close)
		f.reg, f.b = reg, reg.Buckets()[0]
		counter.Take()
		benchFleet(b, f, func() (string, int) {
			c := counter.Take()
			return fmt.Sprintf("requests %v", c), servers.Total(c)
		})
	})
}

// benchFleet fires compaction over f's tables: every table queued, then
// need-ordered, when nothing changed and when 1% changed. io describes
// the I/O since it was last called, with the requests made (-1: not
// counted).
func benchFleet(b *testing.B, f *fleet, io func() (string, int)) {
	e := &jobs.Engine{Store: f.store, Registry: f.reg, Holder: "w"}
	if err := e.Init(); err != nil {
		b.Fatal(err)
	}
	clock := time.Now()
	sc := f.scheduler(b, e, &clock)
	index := map[string]int{}
	for i, id := range f.ids {
		index[id.Name] = i
	}
	cpu := func() time.Duration {
		var ru syscall.Rusage
		if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
			b.Fatal(err)
		}
		return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	n := len(f.ids)
	changed := max(n/100, 1)
	var changedNames []string
	// measure fires once, runs what it queued two at a time in the
	// queue's order, logs, and reports metrics named after label.
	measure := func(label string) {
		b.Helper()
		io()
		wall, c := time.Now(), cpu()
		queued, due := fireDue(b, f.ctx, e, sc, &clock)
		fired := time.Since(wall)
		var mu sync.Mutex
		var changedDone time.Duration
		sem := make(chan struct{}, 2)
		var wg sync.WaitGroup
		for _, name := range queued {
			sem <- struct{}{}
			wg.Go(func() {
				defer func() { <-sem }()
				f.compact(b, index[name])
				if slices.Contains(changedNames, name) {
					mu.Lock()
					changedDone = max(changedDone, time.Since(wall))
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		total, used := time.Since(wall), cpu()-c
		// Where the changed tables are in the queue's order, and the
		// latest a daemon would have held one back.
		var places []int
		var latest time.Duration
		for i, name := range queued {
			if slices.Contains(changedNames, name) {
				places = append(places, i+1)
				latest = max(latest, due[i])
			}
		}
		if len(places) > 12 {
			places = append(places[:6], places[len(places)-6:]...)
		}
		desc, reqs := io()
		b.Logf("%s: %d queued; fire %v, fire and runs %v, CPU %.2fs; changed tables done %v after the fire began, at places %v of the queue (first and last six), due up to %v after the fire; %s",
			label, len(queued), fired.Round(time.Millisecond), total.Round(time.Millisecond), used.Seconds(),
			changedDone.Round(time.Millisecond), places, latest.Round(time.Second), desc)
		b.ReportMetric(float64(len(queued)), label+"-queued")
		b.ReportMetric(fired.Seconds(), label+"-fire-s")
		b.ReportMetric(total.Seconds(), label+"-wall-s")
		b.ReportMetric(used.Seconds(), label+"-CPU-s")
		if len(changedNames) > 0 {
			b.ReportMetric(changedDone.Seconds(), label+"-changed-done-s")
		}
		if reqs >= 0 {
			b.ReportMetric(float64(reqs)/float64(len(f.ids)), label+"-requests/table")
		}
	}
	for b.Loop() {
		changedNames = nil
		sc.Needs = nil
		measure("before-unchanged")
		sc.Needs = f.runner.Need
		measure("need-unchanged")
		for k := range 2 {
			for i := range changed {
				if k == 0 {
					changedNames = append(changedNames, f.ids[i*n/changed].Name)
				}
				if err := testkit.AppendRows(f.ctx, f.b, f.ids[i*n/changed], 10); err != nil {
					b.Fatal(err)
				}
			}
			if k == 0 {
				sc.Needs = f.runner.Need
				measure("need-1pct")
			} else {
				sc.Needs = nil
				measure("before-1pct")
			}
		}
	}
}
