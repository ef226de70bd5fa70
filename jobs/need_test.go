package jobs_test

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"
	"github.com/sourcegraph/conc/pool"

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
	home := t.TempDir()
	return newFleetOn(t, configs.Embedded(home), home, n, 2, 1)
}

// newFleetOn builds n tables in cfg's first bucket, workers at a time:
// each gets appends appends of 10 rows, then compaction runs until one
// has found nothing to do and recorded that evaluation (with two files or
// more the first run compacts them, and a second finds nothing).
func newFleetOn(t testing.TB, cfg *configs.Config, home string, n, appends, workers int) *fleet {
	t.Helper()
	ctx := context.Background()
	reg := cfg.Registry()
	t.Cleanup(reg.Close)
	b := reg.Buckets()[0]
	store, err := state.Open(ctx, "sqlite://"+filepath.Join(home, "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	f := &fleet{ctx: ctx, reg: reg, b: b, store: store,
		runner: &jobs.Runner{Store: store, Jobs: jobs.Map((&compactor.Job{MinInputFiles: 2}).Definition())}}
	cat, err := b.Catalog(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := cat.CreateNamespace(ctx, table.Identifier{"fleet"}, nil); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		f.ids = append(f.ids, bucket.TableID{Namespace: []string{"fleet"}, Name: fmt.Sprintf("t%03d", i)})
	}
	p := pool.New().WithErrors().WithMaxGoroutines(workers)
	for i := range n {
		p.Go(func() error {
			if _, err := cat.CreateTable(ctx, table.Identifier{"fleet", f.ids[i].Name}, demo.Schema()); err != nil {
				return fmt.Errorf("create table %d: %w", i, err)
			}
			for range appends {
				if err := testkit.AppendRows(ctx, b, f.ids[i], 10); err != nil {
					return fmt.Errorf("append to table %d: %w", i, err)
				}
			}
			for range min(appends, 2) {
				if out, err := f.runner.Run(ctx, f.target(i), maintenance.Compaction, "test", jobs.Options{}); err != nil || out.Status != state.Successful {
					return fmt.Errorf("compact table %d: %+v %w", i, out, err)
				}
			}
			if _, ok, err := store.LastEvaluation(ctx, f.target(i).Key(), maintenance.Compaction); err != nil || !ok {
				return fmt.Errorf("table %d: no evaluation recorded (%v)", i, err)
			}
			return nil
		})
	}
	if err := p.Wait(); err != nil {
		t.Fatal(err)
	}
	return f
}

func (f *fleet) target(i int) jobs.Target { return jobs.Target{Bucket: f.b, Table: f.ids[i]} }

// engine is a queue-only engine on f's store.
func (f *fleet) engine(t testing.TB) *jobs.Engine {
	t.Helper()
	e := &jobs.Engine{Store: f.store, Registry: f.reg, Holder: "w"}
	if err := e.Init(); err != nil {
		t.Fatal(err)
	}
	return e
}

// gauges are the values of the gauge name in reg, keyed by their label
// key, of the series whose labels include where.
func gauges(t testing.TB, reg *prometheus.Registry, name, key string, where map[string]string) map[string]float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			matches := true
			for k, v := range where {
				matches = matches && labels[k] == v
			}
			if matches {
				got[labels[key]] = m.GetGauge().GetValue()
			}
		}
	}
	return got
}

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
	names, _ := fireDue(t, ctx, e, sc, clock)
	return names
}

// fireDue is fire, with how long after the fire each job was due.
func fireDue(t testing.TB, ctx context.Context, e *jobs.Engine, sc *jobs.Scheduler, clock *time.Time) ([]string, []time.Duration) {
	t.Helper()
	*clock = clock.Truncate(time.Hour).Add(time.Hour + time.Second)
	if err := sc.Tick(ctx); err != nil {
		t.Fatal(err)
	}
	var jobsByDue []*rivertype.JobRow
	for params := river.NewJobListParams().First(10000); ; {
		res, err := e.Client().JobList(ctx, params)
		if err != nil {
			t.Fatal(err)
		}
		jobsByDue = append(jobsByDue, res.Jobs...)
		if len(res.Jobs) < 10000 {
			break
		}
		params = params.After(res.LastCursor)
	}
	slices.SortStableFunc(jobsByDue, func(a, b *rivertype.JobRow) int { return a.ScheduledAt.Compare(b.ScheduledAt) })
	var names []string
	var due []time.Duration
	for _, j := range jobsByDue {
		var a jobs.RunArgs
		if err := json.Unmarshal(j.EncodedArgs, &a); err != nil {
			t.Fatal(err)
		}
		names = append(names, a.Name)
		due = append(due, j.ScheduledAt.Sub(*clock))
		if _, err := e.Client().JobDelete(ctx, j.ID); err != nil {
			t.Fatal(err)
		}
	}
	return names, due
}

// A fire with Needs queues only the tables whose compaction would not
// just skip: the one that received an append, those never evaluated, and
// all of them once their last full evaluation is older than the backstop;
// without Needs it queues every table.
func TestSchedulerQueuesByNeed(t *testing.T) {
	f := newFleet(t, 12)
	e := f.engine(t)
	clock := time.Now()
	sc := f.scheduler(t, e, &clock)
	reg := prometheus.NewRegistry()
	sc.Fired = jobs.NewMetrics(reg, f.store).Fired
	// fireGauges are the fire gauges of compaction, by outcome.
	fireGauges := func() map[string]float64 {
		t.Helper()
		return gauges(t, reg, "icekeeper_fire_tables", "outcome", map[string]string{"job": string(maintenance.Compaction)})
	}

	sc.Needs = f.runner.Need
	if got := fire(t, f.ctx, e, sc, &clock); len(got) != 0 {
		t.Fatalf("nothing changed, yet the fire queued %v", got)
	}
	if got, want := fireGauges(), map[string]float64{"fired": 12, "queued": 0, "skipped": 12, "poll_error": 0}; !maps.Equal(got, want) {
		t.Fatalf("fire gauges %v, want %v", got, want)
	}
	if err := testkit.AppendRows(f.ctx, f.b, f.ids[5], 10); err != nil {
		t.Fatal(err)
	}
	if got := fire(t, f.ctx, e, sc, &clock); !slices.Equal(got, []string{"t005"}) {
		t.Fatalf("after an append to t005 the fire queued %v", got)
	}
	if got, want := fireGauges(), map[string]float64{"fired": 12, "queued": 1, "skipped": 11, "poll_error": 0}; !maps.Equal(got, want) {
		t.Fatalf("fire gauges %v, want %v", got, want)
	}
	sc.Needs = nil
	if got := fire(t, f.ctx, e, sc, &clock); len(got) != 12 {
		t.Fatalf("without Needs the fire queued %d tables, want all 12: %v", len(got), got)
	}
	if got, want := fireGauges(), map[string]float64{"fired": 12, "queued": 12, "skipped": 0, "poll_error": 0}; !maps.Equal(got, want) {
		t.Fatalf("fire gauges %v, want %v", got, want)
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

// The health refresh, the polls that feed it and /metrics scrapes run
// side by side in the daemon (the refresh's timer, the freshness checks,
// Prometheus): under the race detector, none touches the tables' health
// unlocked. A scrape once read the map the polls write into (which stops
// the process when the two meet); the refresh once read its new map after
// handing it to the polls, a window a few instructions wide that this
// test caught in about one run of five (and TestServeDropAndCreate under
// -race in CI once).
func TestRefreshBesidePolls(t *testing.T) {
	if !testkit.Race {
		t.Skip("only the race detector can fail this test: the -race tier runs it")
	}
	f := newFleet(t, 2)
	reg := prometheus.NewRegistry()
	m := jobs.NewMetrics(reg, f.store)
	resolver := &jobs.Resolver{Store: f.store}
	now := time.Now()
	if err := m.RefreshHealth(f.ctx, f.reg, resolver, now); err != nil {
		t.Fatal(err)
	}
	settings, err := resolver.Table(f.ctx, f.target(0))
	if err != nil {
		t.Fatal(err)
	}
	tbls := make([]*table.Table, len(f.ids))
	for i := range f.ids {
		if tbls[i], err = f.b.LoadTable(f.ctx, f.ids[i]); err != nil {
			t.Fatal(err)
		}
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		defer close(done)
		for i := range 100 {
			if err := m.RefreshHealth(f.ctx, f.reg, resolver, now.Add(time.Duration(i+1)*time.Minute)); err != nil {
				t.Error(err)
				return
			}
		}
	})
	wg.Go(func() {
		for {
			select {
			case <-done:
				return
			default:
			}
			if _, err := reg.Gather(); err != nil {
				t.Error(err)
				return
			}
		}
	})
	wg.Go(func() {
		for i := 0; ; i++ {
			select {
			case <-done:
				return
			default:
			}
			// Polled after every refresh's start, so that each refresh
			// takes the polls' health and reads no table: the refreshes
			// come quickly, each a chance for the two to meet.
			m.Polled(f.target(i%2), tbls[i%2], settings, now.Add(24*time.Hour+time.Duration(i)*time.Millisecond))
		}
	})
	wg.Wait()
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

// A table changed since its last evaluation into nothing compaction
// would act on (one data file, no delete files; here a property commit) is
// settled by its snapshot's summary totals at the poll, and not queued;
// past the backstop it is polled as needing a full run again.
func TestNeedSettledBySummary(t *testing.T) {
	f := newFleet(t, 1)
	tbl, err := f.b.LoadTable(f.ctx, f.ids[0])
	if err != nil {
		t.Fatal(err)
	}
	if files := tbl.CurrentSnapshot().Summary.Properties["total-data-files"]; files != "1" {
		t.Fatalf("the fleet's table holds %s data files, want 1", files)
	}
	tx := tbl.NewTransaction()
	if err := tx.SetProperties(iceberg.Properties{"owner": "someone else"}); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Commit(f.ctx); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	if n, err := f.runner.Need(f.ctx, f.target(0), maintenance.Compaction, now.Add(time.Hour)); err != nil || !n.Skip || n.Rule != planner.RuleSummary {
		t.Fatalf("after a property commit: %+v %v, want a skip by %q", n, err, planner.RuleSummary)
	}
	if n, err := f.runner.Need(f.ctx, f.target(0), maintenance.Compaction, now.Add(25*time.Hour)); err != nil || n.Skip || n.Rule != planner.RuleMetadataChanged {
		t.Fatalf("past the backstop: %+v %v, want a full run for %q", n, err, planner.RuleMetadataChanged)
	}
}

// The health gauges come from the polls' loads: after a refresh has read
// every table once, a poll gives the unchanged tables' health without a
// read, and the next refresh loads only the table a writer changed (whose
// manifests the poll did not read).
func TestHealthFromPolls(t *testing.T) {
	f := newFleet(t, 3)
	var dirs []string
	for i := range f.ids {
		tbl, err := f.b.LoadTable(f.ctx, f.ids[i])
		if err != nil {
			t.Fatal(err)
		}
		dirs = append(dirs, strings.TrimPrefix(tbl.Location(), "file://")+"/metadata")
	}
	opens := testkit.WatchOpens(t, dirs[0], dirs[1:]...)
	reg := prometheus.NewRegistry()
	m := jobs.NewMetrics(reg, f.store)
	f.runner.Loaded = m.Polled
	resolver := &jobs.Resolver{Store: f.store}
	now := time.Now()
	if err := m.RefreshHealth(f.ctx, f.reg, resolver, now); err != nil {
		t.Fatal(err)
	}
	if got := opens.Take(); got.Metadata != 3 || got.ManifestLists != 3 {
		t.Fatalf("the first refresh opened %+v, want every table's metadata and manifest list", got)
	}
	if err := testkit.AppendRows(f.ctx, f.b, f.ids[2], 10); err != nil {
		t.Fatal(err)
	}
	opens.Take()
	for i := range f.ids {
		if _, err := f.runner.Need(f.ctx, f.target(i), maintenance.Compaction, now.Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
	}
	if got := opens.Take(); got != (testkit.OpenCounts{Metadata: 3}) {
		t.Fatalf("the polls opened %+v, want one metadata.json each", got)
	}
	if err := m.RefreshHealth(f.ctx, f.reg, resolver, now.Add(time.Hour+time.Minute)); err != nil {
		t.Fatal(err)
	}
	if got := opens.Take(); got.Metadata != 1 || got.ManifestLists != 1 {
		t.Fatalf("the refresh after the polls opened %+v, want the changed table's metadata and manifest list only", got)
	}
	// Every table keeps its gauges, the changed one with its new file.
	files := gauges(t, reg, "icekeeper_table_data_files", "table", nil)
	if len(files) != 3 || files["t002"] != files["t000"]+1 {
		t.Fatalf("data-file gauges %v: want all three tables, t002 one file more", files)
	}
	// With no poll since, the next refresh loads every table again.
	if err := m.RefreshHealth(f.ctx, f.reg, resolver, now.Add(2*time.Hour)); err != nil {
		t.Fatal(err)
	}
	if got := opens.Take(); got != (testkit.OpenCounts{Metadata: 3}) {
		t.Fatalf("a refresh with no poll since opened %+v, want one metadata.json each", got)
	}
}

// A table whose poll fails is queued, so that its run reports why.
func TestSchedulerQueuesFailedPolls(t *testing.T) {
	f := newFleet(t, 3)
	e := f.engine(t)
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

// A compaction run that its rewrite budget held back puts its table
// first at the next fire, ahead of one that changed earlier, with the
// deferred bytes as its estimate; the pending gauge counts it as budget.
func TestSchedulerCarriesDeferredWorkFirst(t *testing.T) {
	f := newFleet(t, 4)
	e := f.engine(t)
	clock := time.Now()
	sc := f.scheduler(t, e, &clock)
	reg := prometheus.NewRegistry()
	sc.Fired = jobs.NewMetrics(reg, f.store).Fired
	sc.Needs = f.runner.Need
	if err := testkit.AppendRows(f.ctx, f.b, f.ids[1], 10); err != nil {
		t.Fatal(err)
	}
	for range 6 {
		if err := testkit.AppendRows(f.ctx, f.b, f.ids[3], 10); err != nil {
			t.Fatal(err)
		}
	}
	spent := int64(0)
	out, err := f.runner.Run(f.ctx, f.target(3), maintenance.Compaction, "test", jobs.Options{RewriteBytes: &spent})
	if err != nil || out.Status != state.Successful {
		t.Fatalf("capped run: %+v %v", out, err)
	}
	fig := out.Figures.(*compactor.Figures)
	if fig.GroupsDeferredByBudget == 0 || fig.GroupsCommitted != 0 {
		t.Fatalf("a run with nothing to spend: %d deferred, %d committed", fig.GroupsDeferredByBudget, fig.GroupsCommitted)
	}
	// Without the carry-over, t003 (its success the newest) would come
	// after t001.
	clock = clock.Truncate(time.Hour).Add(time.Hour + time.Second)
	if err := sc.Tick(f.ctx); err != nil {
		t.Fatal(err)
	}
	// The order and the reasons travel with the queued runs: another
	// replica's engine on the same store, which never fired, tells them.
	other := &jobs.Engine{Store: f.store, Registry: f.reg, Holder: "another replica"}
	if err := other.Init(); err != nil {
		t.Fatal(err)
	}
	queued, err := other.Queued(f.ctx, 100)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	pending := map[string]jobs.Pending{}
	for _, q := range queued {
		if q.Type == maintenance.Compaction {
			got = append(got, q.Table.Name)
			pending[q.Table.Name] = q.Pending
		}
	}
	if !slices.Equal(got, []string{"t003", "t001"}) {
		t.Fatalf("the fire queued %v, want t003 (deferred work) before t001", got)
	}
	if p, ok := pending["t003"]; !ok || p.Reason != planner.NeedBudget || p.Estimate != fig.BytesDeferredByBudget {
		t.Fatalf("pending of t003: %+v %v, want %q and %d bytes", p, ok, planner.NeedBudget, fig.BytesDeferredByBudget)
	}
	if p, ok := pending["t001"]; !ok || p.Reason != planner.RuleSnapshotChanged {
		t.Fatalf("pending of t001: %+v %v", p, ok)
	}
	if _, ok := pending["t000"]; ok {
		t.Fatal("an unchanged table is pending")
	}
	reasons := gauges(t, reg, "icekeeper_pending_tables", "reason", map[string]string{"job": string(maintenance.Compaction)})
	if want := map[string]float64{"budget": 1, planner.RuleSnapshotChanged: 1}; !maps.Equal(reasons, want) {
		t.Fatalf("pending tables %v, want %v", reasons, want)
	}
}
