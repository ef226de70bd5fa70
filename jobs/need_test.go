package jobs_test

import (
	"context"
	"encoding/json"
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

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/icekeeper/icekeeper/compactor"
	"github.com/icekeeper/icekeeper/configs"
	"github.com/icekeeper/icekeeper/internal/bucket"
	"github.com/icekeeper/icekeeper/internal/demo"
	"github.com/icekeeper/icekeeper/internal/state"
	"github.com/icekeeper/icekeeper/internal/testkit"
	"github.com/icekeeper/icekeeper/jobs"
	"github.com/icekeeper/icekeeper/maintenance"
	"github.com/icekeeper/icekeeper/planner"
)

// fleet is n small tables in the local bucket of a fresh home, each
// compacted and then evaluated once more, so that each has a recorded
// evaluation a later compaction may rest on.
type fleet struct {
	ctx    context.Context
	reg    *bucket.Registry
	b      *bucket.Bucket
	store  state.Store
	runner *jobs.Runner
	ids    []bucket.TableID
}

func newFleet(t testing.TB, n int) *fleet {
	t.Helper()
	ctx := context.Background()
	home := t.TempDir()
	reg := configs.Embedded(home).Registry()
	t.Cleanup(reg.Close)
	b, _ := reg.Bucket("local")
	store, err := state.Open(ctx, "sqlite://"+filepath.Join(home, "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	f := &fleet{ctx: ctx, reg: reg, b: b, store: store,
		runner: &jobs.Runner{Store: store, Jobs: map[maintenance.JobType]jobs.Job{maintenance.Compaction: &compactor.Job{MinInputFiles: 2}}}}
	for i := range n {
		id := bucket.TableID{Namespace: []string{"fleet"}, Name: fmt.Sprintf("t%03d", i)}
		testkit.NewTable(t, b, "fleet", id.Name, demo.Schema())
		for range 2 {
			if err := testkit.AppendRows(ctx, b, id, 10); err != nil {
				t.Fatal(err)
			}
		}
		f.ids = append(f.ids, id)
		for range 2 {
			f.compact(t, i)
		}
		if _, ok, err := store.LastEvaluation(ctx, f.target(i).Key(), maintenance.Compaction); err != nil || !ok {
			t.Fatalf("table %d: no evaluation recorded (%v)", i, err)
		}
	}
	return f
}

func (f *fleet) target(i int) jobs.Target { return jobs.Target{Bucket: f.b, Table: f.ids[i]} }

func (f *fleet) compact(t testing.TB, i int) jobs.Outcome {
	t.Helper()
	out, err := f.runner.Run(f.ctx, f.target(i), maintenance.Compaction, "test", jobs.Options{})
	if err != nil || out.Status != state.Successful {
		t.Fatalf("compact table %d: %+v %v", i, out, err)
	}
	return out
}

// scheduler fires compaction hourly on f's tables from now on, and no
// other type.
func (f *fleet) scheduler(t testing.TB, e *jobs.Engine, clock *time.Time) *jobs.Scheduler {
	t.Helper()
	sc := &jobs.Scheduler{Store: f.store, Queue: e, Tables: &jobs.Discovery{Registry: f.reg}, Now: func() time.Time { return *clock },
		Schedules: map[maintenance.JobType]string{maintenance.Compaction: "@hourly", maintenance.SnapshotManagement: "@hourly",
			maintenance.UnreferencedFileRemoval: "@hourly", maintenance.RecordExpiration: "@hourly"},
		Skip: func(_ jobs.Target, typ maintenance.JobType) bool { return typ != maintenance.Compaction }}
	if err := sc.Init(); err != nil {
		t.Fatal(err)
	}
	sc.Tables.Discover(f.ctx)
	if got := len(sc.Tables.Tables()); got != len(f.ids) {
		t.Fatalf("discovered %d tables, want %d", got, len(f.ids))
	}
	if err := sc.Tick(f.ctx); err != nil { // the first tick only starts counting
		t.Fatal(err)
	}
	return sc
}

// fire advances the clock to the next hourly fire, ticks, and returns
// the tables queued, in the order the queue will run them, and empties
// the queue.
func fire(t testing.TB, ctx context.Context, e *jobs.Engine, sc *jobs.Scheduler, clock *time.Time) []string {
	t.Helper()
	*clock = clock.Truncate(time.Hour).Add(time.Hour + time.Second)
	if err := sc.Tick(ctx); err != nil {
		t.Fatal(err)
	}
	res, err := e.Client().JobList(ctx, river.NewJobListParams().First(10000))
	if err != nil {
		t.Fatal(err)
	}
	jobsByDue := res.Jobs
	slices.SortStableFunc(jobsByDue, func(a, b *rivertype.JobRow) int { return a.ScheduledAt.Compare(b.ScheduledAt) })
	var names []string
	for _, j := range jobsByDue {
		var a jobs.RunArgs
		if err := json.Unmarshal(j.EncodedArgs, &a); err != nil {
			t.Fatal(err)
		}
		names = append(names, a.Name)
		if _, err := e.Client().JobDelete(ctx, j.ID); err != nil {
			t.Fatal(err)
		}
	}
	return names
}

// A fire with Needs queues only the tables whose compaction would not
// just skip: the one that received an append, those never evaluated, and
// all of them once their last full evaluation is older than the backstop;
// without Needs it queues every table.
func TestSchedulerQueuesByNeed(t *testing.T) {
	f := newFleet(t, 12)
	e := &jobs.Engine{Store: f.store, Registry: f.reg, Holder: "w"}
	if err := e.Init(); err != nil {
		t.Fatal(err)
	}
	clock := time.Now()
	sc := f.scheduler(t, e, &clock)

	sc.Needs = f.runner.Need
	if got := fire(t, f.ctx, e, sc, &clock); len(got) != 0 {
		t.Fatalf("nothing changed, yet the fire queued %v", got)
	}
	if err := testkit.AppendRows(f.ctx, f.b, f.ids[5], 10); err != nil {
		t.Fatal(err)
	}
	if got := fire(t, f.ctx, e, sc, &clock); !slices.Equal(got, []string{"t005"}) {
		t.Fatalf("after an append to t005 the fire queued %v", got)
	}
	sc.Needs = nil
	if got := fire(t, f.ctx, e, sc, &clock); len(got) != 12 {
		t.Fatalf("without Needs the fire queued %d tables, want all 12: %v", len(got), got)
	}

	// t005 is compacted (its evaluation is newer than the others'); t007
	// gets an append. A table that changed comes before those due by the
	// backstop, and among those, the one evaluated last comes last.
	f.compact(t, 5)
	f.compact(t, 5)
	if err := testkit.AppendRows(f.ctx, f.b, f.ids[7], 10); err != nil {
		t.Fatal(err)
	}
	sc.Needs = f.runner.Need
	f.runner.FullEvery = time.Hour
	got := fire(t, f.ctx, e, sc, &clock)
	if len(got) != 12 || got[0] != "t007" || got[11] != "t005" {
		t.Fatalf("past the backstop the fire queued %v, want all 12, t007 first and t005 last", got)
	}
}

// An unchanged table needs a run once its last success is half the
// backstop old: the run skips, but records a success the alerts see.
func TestNeedHeartbeat(t *testing.T) {
	f := newFleet(t, 1)
	now := time.Now()
	if n, err := f.runner.Need(f.ctx, f.target(0), maintenance.Compaction, now.Add(11*time.Hour)); err != nil || !n.Skip || n.Rule != planner.RuleUnchanged {
		t.Fatalf("11 h after its last run: %+v %v, want a skip", n, err)
	}
	if n, err := f.runner.Need(f.ctx, f.target(0), maintenance.Compaction, now.Add(13*time.Hour)); err != nil || n.Skip || n.Rule != planner.NeedHeartbeat {
		t.Fatalf("13 h after its last run: %+v %v, want a heartbeat", n, err)
	}
	if n, err := f.runner.Need(f.ctx, f.target(0), maintenance.Compaction, now.Add(25*time.Hour)); err != nil || n.Skip || n.Rule != planner.RuleBackstop {
		t.Fatalf("25 h after its last run: %+v %v, want the backstop", n, err)
	}
}

// A table whose poll fails is queued, so that its run reports why.
func TestSchedulerQueuesFailedPolls(t *testing.T) {
	f := newFleet(t, 3)
	e := &jobs.Engine{Store: f.store, Registry: f.reg, Holder: "w"}
	if err := e.Init(); err != nil {
		t.Fatal(err)
	}
	clock := time.Now()
	sc := f.scheduler(t, e, &clock)
	// The metadata of t001 is gone: its load fails.
	tbl, err := f.b.LoadTable(f.ctx, f.ids[1])
	if err != nil {
		t.Fatal(err)
	}
	if err := removeLocal(tbl.MetadataLocation()); err != nil {
		t.Fatal(err)
	}
	sc.Needs = f.runner.Need
	if got := fire(t, f.ctx, e, sc, &clock); !slices.Equal(got, []string{"t001"}) {
		t.Fatalf("with t001 unreadable the fire queued %v", got)
	}
}

// removeLocal removes the local file at loc, a path or a file:// URL.
func removeLocal(loc string) error {
	return os.Remove(strings.TrimPrefix(loc, "file://"))
}

// TestNeedOrderFigures measures a compaction fire on a fleet of
// ICEKEEPER_NEED_TABLES tables (local disk, embedded SQL catalog, SQLite
// state store), each compacted until a run finds nothing to do: every
// table queued and its job run, two at a time and without the jitter
// wait, as before; with Needs when nothing changed; and with Needs when
// 1% changed. It logs wall time, CPU seconds and metadata.json,
// manifest-list and manifest opens (inotify) for each.
func TestNeedOrderFigures(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("ICEKEEPER_NEED_TABLES"))
	if n <= 0 {
		t.Skip("set ICEKEEPER_NEED_TABLES to the number of tables")
	}
	built := time.Now()
	f := newFleet(t, n)
	t.Logf("%d tables built in %v", n, time.Since(built).Round(time.Second))
	var dirs []string
	for i := range f.ids {
		tbl, err := f.b.LoadTable(f.ctx, f.ids[i])
		if err != nil {
			t.Fatal(err)
		}
		dirs = append(dirs, filepath.Dir(strings.TrimPrefix(tbl.MetadataLocation(), "file://")))
	}
	opens := testkit.WatchOpens(t, dirs[0], dirs[1:]...)
	e := &jobs.Engine{Store: f.store, Registry: f.reg, Holder: "w"}
	if err := e.Init(); err != nil {
		t.Fatal(err)
	}
	clock := time.Now()
	sc := f.scheduler(t, e, &clock)
	index := map[string]int{}
	for i, id := range f.ids {
		index[id.Name] = i
	}
	cpu := func() time.Duration {
		var ru syscall.Rusage
		if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
			t.Fatal(err)
		}
		return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	// measure fires once, runs what it queued two at a time, and logs.
	var changedNames []string
	measure := func(label string) {
		t.Helper()
		opens.Take()
		wall, c := time.Now(), cpu()
		queued := fire(t, f.ctx, e, sc, &clock)
		fired := time.Since(wall)
		sem := make(chan struct{}, 2)
		var wg sync.WaitGroup
		for _, name := range queued {
			sem <- struct{}{}
			wg.Go(func() {
				defer func() { <-sem }()
				f.compact(t, index[name])
			})
		}
		wg.Wait()
		o := opens.Take()
		var places []int // where the changed tables are in the queue's order
		for i, name := range queued {
			if slices.Contains(changedNames, name) {
				places = append(places, i+1)
			}
		}
		t.Logf("%s: %d queued; fire %v, fire and runs %v, CPU %.2fs; opens: metadata.json %d, manifest lists %d, manifests %d; changed tables at places %v of the queue",
			label, len(queued), fired.Round(time.Millisecond), time.Since(wall).Round(time.Millisecond), (cpu() - c).Seconds(),
			o.Metadata, o.ManifestLists, o.Manifests, places)
	}
	sc.Needs = nil
	measure("every table queued, nothing changed")
	sc.Needs = f.runner.Need
	measure("need-ordered, nothing changed")
	changed := max(n/100, 1)
	for i := range changed {
		changedNames = append(changedNames, f.ids[i*n/changed].Name)
		if err := testkit.AppendRows(f.ctx, f.b, f.ids[i*n/changed], 10); err != nil {
			t.Fatal(err)
		}
	}
	measure(fmt.Sprintf("need-ordered, %d changed", changed))
	sc.Needs = nil
	for i := range changed {
		if err := testkit.AppendRows(f.ctx, f.b, f.ids[i*n/changed], 10); err != nil {
			t.Fatal(err)
		}
	}
	measure(fmt.Sprintf("every table queued, %d changed", changed))
}
