package jobs_test

import (
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/icekeeper/icekeeper/internal/commit"
	"github.com/icekeeper/icekeeper/internal/events"
	"github.com/icekeeper/icekeeper/internal/state"
	"github.com/icekeeper/icekeeper/internal/testkit"
	"github.com/icekeeper/icekeeper/jobs"
	"github.com/icekeeper/icekeeper/maintenance"
	"github.com/icekeeper/icekeeper/planner"
)

// setProperty commits a table property of f's i-th table (no snapshot).
func (f *fleet) setProperty(t testing.TB, i int, key, value string) {
	t.Helper()
	tbl, err := f.b.LoadTable(f.ctx, f.ids[i])
	if err != nil {
		t.Fatal(err)
	}
	tx := tbl.NewTransaction()
	if err := tx.SetProperties(iceberg.Properties{key: value}); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Commit(f.ctx); err != nil {
		t.Fatal(err)
	}
}

// appendRows commits 10 rows to f's i-th table and returns when.
func (f *fleet) appendRows(t testing.TB, i int) time.Time {
	t.Helper()
	if err := testkit.AppendRows(f.ctx, f.b, f.ids[i], 10); err != nil {
		t.Fatal(err)
	}
	tbl, err := f.b.LoadTable(f.ctx, f.ids[i])
	if err != nil {
		t.Fatal(err)
	}
	return time.UnixMilli(tbl.CurrentSnapshot().TimestampMs)
}

// freshScheduler is f's scheduler with freshness scheduling of
// compaction on, and the lags it reads.
func (f *fleet) freshScheduler(t testing.TB, e *jobs.Engine, clock *time.Time) (*jobs.Scheduler, *jobs.Freshness) {
	t.Helper()
	sc := f.scheduler(t, e, clock)
	fresh := &jobs.Freshness{}
	f.runner.Freshness = fresh
	sc.Needs, sc.Freshness, sc.FreshTypes = f.runner.Need, fresh, []maintenance.JobType{maintenance.Compaction}
	return sc, fresh
}

// A check of a table with a freshness target queues its compaction half
// the target after the oldest file not taken was committed, and records
// the lag; a table without a target is left to its schedule; once a run
// took the files, nothing waits.
func TestFreshnessCheckQueuesByDeadline(t *testing.T) {
	f := newFleet(t, 2)
	e := f.engine(t)
	clock := time.Now()
	sc, fresh := f.freshScheduler(t, e, &clock)
	f.setProperty(t, 0, planner.FreshnessProperty, "2m")

	committed := f.appendRows(t, 0)
	f.appendRows(t, 1)
	clock = committed.Add(10 * time.Second)
	if got := sc.Check(f.ctx, f.target(0), "event"); len(got) != 1 || got[0] != maintenance.Compaction {
		t.Fatalf("check of the table with a target queued %v, want compaction", got)
	}
	if got := sc.Check(f.ctx, f.target(1), "event"); len(got) != 0 {
		t.Fatalf("check of the table without a target queued %v, want nothing", got)
	}
	queued, err := e.Queued(f.ctx, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(queued) != 1 || queued[0].Table != f.target(0).Key() || queued[0].Trigger != "event" {
		t.Fatalf("queue %+v, want t000's compaction", queued)
	}
	if want := committed.Add(time.Minute); queued[0].Due.Sub(want).Abs() > time.Millisecond {
		t.Errorf("due %v, want half the target after the commit (%v)", queued[0].Due, want)
	}
	lag := fresh.Lags(f.target(0).Key())[maintenance.Compaction]
	if lag.Target != 2*time.Minute || lag.Oldest == nil || !strings.Contains(lag.Oldest.What, "1 data file added by snapshot") {
		t.Fatalf("lag %+v, want the append waiting against a 2m target", lag)
	}
	if got := lag.Seconds(clock); got < 9 || got > 11 {
		t.Errorf("lag %v s at 10 s after the commit", got)
	}
	if lag.Late(clock) || !lag.Late(committed.Add(3*time.Minute)) {
		t.Errorf("late at 10 s: %v; at 3 min: %v", lag.Late(clock), lag.Late(committed.Add(3*time.Minute)))
	}
	// A second check while the run is queued queues nothing new.
	if got := sc.Check(f.ctx, f.target(0), "event"); len(got) != 0 {
		t.Fatalf("a second check queued %v", got)
	}

	f.compact(t, 0)
	if _, err := f.runner.Need(f.ctx, f.target(0), maintenance.Compaction, clock); err != nil {
		t.Fatal(err)
	}
	if lag := fresh.Lags(f.target(0).Key())[maintenance.Compaction]; lag.Oldest != nil || lag.Seconds(clock) != 0 {
		t.Fatalf("after the compaction: %+v, want nothing waiting", lag)
	}

	// The metrics read the lags at each scrape.
	reg := prometheus.NewRegistry()
	jobs.NewMetrics(reg, f.store).Watch(fresh)
	if got := gauges(t, reg, "icekeeper_table_freshness_target_seconds", "table", nil); len(got) != 1 || got["t000"] != 120 {
		t.Errorf("target gauges %v, want t000 at 120", got)
	}
	if got := gauges(t, reg, "icekeeper_tables_past_freshness_target", "job", nil); got[string(maintenance.Compaction)] != 0 {
		t.Errorf("tables past target %v", got)
	}
}

// A freshness target lowered while a run waits for the old one's deadline
// (the configuration changed and the daemon started again, with the run
// still in the queue) brings that run forward to the new deadline; a
// check or a fire that finds a later deadline, or the same one, leaves
// it where it is.
func TestLoweredTargetBringsThePendingRunForward(t *testing.T) {
	f := newFleet(t, 1)
	e := f.engine(t)
	clock := time.Now()
	sc, _ := f.freshScheduler(t, e, &clock)
	f.setProperty(t, 0, planner.FreshnessProperty, "2h")
	committed := f.appendRows(t, 0)
	clock = committed.Add(10 * time.Second)
	due := func(want time.Time, why string) {
		t.Helper()
		queued, err := e.Queued(f.ctx, 10)
		if err != nil {
			t.Fatal(err)
		}
		if len(queued) != 1 || queued[0].Due.Sub(want).Abs() > time.Millisecond {
			t.Fatalf("%s: queue %+v, want one run due at %v", why, queued, want)
		}
	}
	if got := sc.Check(f.ctx, f.target(0), "event"); len(got) != 1 {
		t.Fatalf("first check queued %v", got)
	}
	due(committed.Add(time.Hour), "a 2h target")

	// A fire that places the run later leaves it.
	if n, err := e.EnqueueMany(f.ctx, []state.TableKey{f.target(0).Key()}, maintenance.Compaction, "schedule",
		func(state.TableKey) jobs.Placement { return jobs.Placement{At: committed.Add(2 * time.Hour)} }); err != nil || n != 0 {
		t.Fatalf("a later fire: %d queued, %v", n, err)
	}
	due(committed.Add(time.Hour), "after a later fire")

	// The target lowered to 2m; a new scheduler, as after a restart,
	// whose checks have not queued anything yet.
	f.setProperty(t, 0, planner.FreshnessProperty, "2m")
	sc, _ = f.freshScheduler(t, e, &clock)
	if got := sc.Check(f.ctx, f.target(0), "freshness"); len(got) != 1 || got[0] != maintenance.Compaction {
		t.Fatalf("check after the target was lowered queued %v, want compaction sooner", got)
	}
	due(committed.Add(time.Minute), "a 2m target")
	queued, err := e.Queued(f.ctx, 10)
	if err != nil {
		t.Fatal(err)
	}
	if queued[0].Trigger != "freshness" {
		t.Errorf("the run queued sooner carries trigger %q, want the check's", queued[0].Trigger)
	}
	// The same deadline again moves nothing.
	if got := sc.Check(f.ctx, f.target(0), "freshness"); len(got) != 0 {
		t.Fatalf("a check at the same deadline queued %v", got)
	}
	due(committed.Add(time.Minute), "a second check")
}

// Runs that lost every commit to concurrent ones back the table off:
// after two in a row, Need skips it until five minutes after the last,
// and says why; the back-off doubles with each further one.
func TestNeedBacksOffConflictingTables(t *testing.T) {
	f := newFleet(t, 1)
	fresh := &jobs.Freshness{}
	f.runner.Freshness = fresh
	if err := testkit.AppendRows(f.ctx, f.b, f.ids[0], 10); err != nil {
		t.Fatal(err)
	}
	k := f.target(0).Key()
	var last time.Time
	lose := func() {
		t.Helper()
		last = time.Now()
		r := state.Run{Table: k, Type: maintenance.Compaction, Trigger: "test", Started: last}
		id, err := f.store.StartRun(f.ctx, r)
		if err != nil {
			t.Fatal(err)
		}
		r.ID, r.Finished, r.Status, r.FailureMessage = id, last, state.Failed, commit.MsgStaleMetadata+": requirement failed"
		if err := f.store.FinishRun(f.ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	need := func(at time.Time) planner.Need {
		t.Helper()
		n, err := f.runner.Need(f.ctx, f.target(0), maintenance.Compaction, at)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	lose()
	if n := need(last.Add(time.Minute)); n.Skip {
		t.Fatalf("after one lost run: %+v, want a run", n)
	}
	lose()
	if n := need(last.Add(time.Minute)); !n.Skip || n.Rule != jobs.NeedBackoff {
		t.Fatalf("a minute after two lost runs: %+v, want a back-off", n)
	}
	if w := fresh.Lags(k)[maintenance.Compaction].Waits; !strings.HasPrefix(w, "backoff: 2 runs in a row") {
		t.Errorf("waits %q", w)
	}
	if n := need(last.Add(jobs.BackoffFirst + time.Second)); n.Skip {
		t.Fatalf("past the back-off: %+v, want a run", n)
	}
	lose()
	if n := need(last.Add(jobs.BackoffFirst + time.Second)); !n.Skip {
		t.Fatalf("after a third lost run, past the first back-off: %+v, want the doubled one", n)
	}
	if n := need(last.Add(2*jobs.BackoffFirst + time.Second)); n.Skip {
		t.Fatalf("past the doubled back-off: %+v, want a run", n)
	}
	// A success ends it.
	f.compact(t, 0)
	if n := need(time.Now()); n.Rule == jobs.NeedBackoff {
		t.Fatalf("after a success: %+v", n)
	}
}

// Events reach exactly their table: an object under its location, a
// catalog event naming it; an object of another table, one outside every
// table, and a key built to resolve into another table's location reach
// none.
func TestRouteEvents(t *testing.T) {
	f := newFleet(t, 2)
	e := f.engine(t)
	clock := time.Now()
	sc, _ := f.freshScheduler(t, e, &clock)
	locs := map[string]string{}
	for i := range 2 {
		if _, err := f.runner.Need(f.ctx, f.target(i), maintenance.Compaction, clock); err != nil {
			t.Fatal(err)
		}
		tbl, err := f.b.LoadTable(f.ctx, f.ids[i])
		if err != nil {
			t.Fatal(err)
		}
		locs[f.ids[i].Name] = tbl.Location()
	}
	obj := func(loc, rest string) events.Event {
		return events.Event{Source: "s3", Kind: "created", Location: loc + rest}
	}
	for _, tc := range []struct {
		name string
		ev   events.Event
		want string // "": no table
	}{
		{"data file of t000", obj(locs["t000"], "/data/part-0.parquet"), "t000"},
		{"metadata of t001", obj(locs["t001"], "/metadata/00002.metadata.json"), "t001"},
		{"catalog event", events.Event{Source: "cloudevents", Kind: "table-changed", Namespace: []string{"fleet"}, Name: "t001"}, "t001"},
		{"catalog event, other warehouse", events.Event{Source: "cloudevents", Namespace: []string{"fleet"}, Name: "t001", Warehouse: "elsewhere"}, ""},
		{"unknown table", events.Event{Source: "cloudevents", Namespace: []string{"fleet"}, Name: "nope"}, ""},
		{"outside every table", obj(strings.TrimSuffix(locs["t000"], "/t000")+"/other", "/data/x.parquet"), ""},
		{"prefix of another name", obj(locs["t000"], "x/data/y.parquet"), ""},
		{"dot-dot into t001", obj(locs["t000"], "/../t001/data/y.parquet"), ""},
		{"double slash", obj(locs["t000"], "//data/y.parquet"), ""},
		{"dot segment", obj(locs["t000"], "/./data/y.parquet"), ""},
	} {
		got, ignored := sc.Route([]events.Event{tc.ev})
		var names []string
		for _, k := range got {
			names = append(names, k.Name)
		}
		if tc.want == "" {
			if len(got) != 0 || ignored != 1 {
				t.Errorf("%s: routed to %v (ignored %d), want none", tc.name, names, ignored)
			}
			continue
		}
		if len(got) != 1 || got[0].Name != tc.want || ignored != 0 {
			t.Errorf("%s: routed to %v (ignored %d), want %s", tc.name, names, ignored, tc.want)
		}
	}
}

// A table without a freshness target reports its lag too: how far behind
// maintenance is matters for every table, a target only adds a deadline.
// It comes from the metadata the daemon reads anyway: a fire's poll, or,
// before the first fire, the health refresh of /metrics, which leaves a
// table with a target to the scheduler's checks.
func TestLagWithoutTarget(t *testing.T) {
	f := newFleet(t, 3)
	fresh := &jobs.Freshness{}
	f.runner.Freshness = fresh
	f.setProperty(t, 2, planner.FreshnessProperty, "2m")
	var committed time.Time
	for i := range 3 {
		if err := testkit.AppendRows(f.ctx, f.b, f.ids[i], 10); err != nil {
			t.Fatal(err)
		}
		tbl, err := f.b.LoadTable(f.ctx, f.ids[i])
		if err != nil {
			t.Fatal(err)
		}
		committed = time.UnixMilli(tbl.CurrentSnapshot().TimestampMs)
	}
	reg := prometheus.NewRegistry()
	m := jobs.NewMetrics(reg, f.store)
	m.Watch(fresh)
	m.History, m.Loaded = &jobs.HealthHistory{Store: f.store}, f.runner.Lags
	lags := func() map[string]float64 {
		return gauges(t, reg, "icekeeper_table_freshness_lag_seconds", "table", map[string]string{"job": string(maintenance.Compaction)})
	}

	// The health refresh, before any fire.
	if err := m.RefreshHealth(f.ctx, f.reg, &jobs.Resolver{Store: f.store}, time.Now()); err != nil {
		t.Fatal(err)
	}
	got := lags()
	for _, name := range []string{"t000", "t001"} {
		if l, ok := got[name]; !ok || l <= 0 || l > time.Since(committed).Seconds()+60 {
			t.Errorf("after the health refresh, lag gauges %v: want %s's append waiting", got, name)
		}
	}
	if _, ok := got["t002"]; ok {
		t.Errorf("the health refresh gave t002, which has a target, a lag: %v", got)
	}
	if targets := gauges(t, reg, "icekeeper_table_freshness_target_seconds", "table", nil); len(targets) != 0 {
		t.Errorf("target gauges %v before any check of t002", targets)
	}

	// A fire's poll: the table with a target gets its deadline as before.
	for i := range 3 {
		if _, err := f.runner.Need(f.ctx, f.target(i), maintenance.Compaction, time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	if got := lags(); len(got) != 3 || got["t000"] <= 0 {
		t.Errorf("after a poll, lag gauges %v, want all three tables", got)
	}
	if targets := gauges(t, reg, "icekeeper_table_freshness_target_seconds", "table", nil); len(targets) != 1 || targets["t002"] != 120 {
		t.Errorf("target gauges %v, want t002 at 120", targets)
	}
}
