package tables_test

import (
	"errors"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/icekeeper/icekeeper/compactor"
	"github.com/icekeeper/icekeeper/internal/bucket"
	"github.com/icekeeper/icekeeper/internal/state"
	"github.com/icekeeper/icekeeper/internal/testkit"
	"github.com/icekeeper/icekeeper/internal/testkit/tableenv"
	"github.com/icekeeper/icekeeper/jobs"
	"github.com/icekeeper/icekeeper/maintenance"
	"github.com/icekeeper/icekeeper/tables"
)

// lifecycle is a table in an embedded catalog with a runner that observes
// it, and what its tests check.
type lifecycle struct {
	t      *testing.T
	e      *tableenv.Env
	cat    catalog.Catalog
	runner *jobs.Runner
	fresh  *jobs.Freshness
	reg    *tables.Registry
}

// catalogs are the catalogs the lifecycle tests run on: the embedded SQL
// catalog, and the Iceberg REST catalog over S3 (skipped where none is
// configured).
var catalogs = []struct {
	name string
	env  func(t *testing.T) (*tableenv.Env, *table.Table)
}{
	{"SQL", func(t *testing.T) (*tableenv.Env, *table.Table) {
		return tableenv.New(t, tableenv.BaseSchema, *iceberg.UnpartitionedSpec, "2")
	}},
	{"REST", func(t *testing.T) (*tableenv.Env, *table.Table) {
		return tableenv.NewREST(t, tableenv.BaseSchema, *iceberg.UnpartitionedSpec, "2")
	}},
}

func newLifecycle(t *testing.T, env func(t *testing.T) (*tableenv.Env, *table.Table)) (*lifecycle, *table.Table) {
	e, tbl := env(t)
	cat, err := e.B.Catalog(e.Ctx)
	if err != nil {
		t.Fatal(err)
	}
	l := &lifecycle{t: t, e: e, cat: cat, fresh: &jobs.Freshness{}, reg: &tables.Registry{Store: e.Store}}
	l.runner = e.Runner((&compactor.Job{MinInputFiles: 2}).Definition())
	l.runner.Tables, l.runner.Freshness = l.reg, l.fresh
	return l, tbl
}

func (l *lifecycle) target(name string) jobs.Target {
	return jobs.Target{Bucket: l.e.B, Table: bucket.TableID{Namespace: []string{"t"}, Name: name}}
}

func (l *lifecycle) key(name string) state.TableKey { return l.target(name).Key() }

// create creates t.name with three small files.
func (l *lifecycle) create(name string) *table.Table {
	l.t.Helper()
	tbl := testkit.NewTable(l.t, l.e.B, "t", name, tableenv.BaseSchema,
		catalog.WithProperties(iceberg.Properties{"format-version": "2"}))
	for range 3 {
		tbl = l.e.Append(tbl, 5)
	}
	return tbl
}

// remember gives t.x (tbl) what icekeeper keeps of a table: three small
// files compacted (a run), a setting put for it, a noncurrent mark.
func (l *lifecycle) remember(tbl *table.Table) {
	l.t.Helper()
	for range 3 {
		tbl = l.e.Append(tbl, 5)
	}
	l.compact("x")
	k := l.key("x")
	if err := l.e.Store.PutTableConfig(l.e.Ctx, k, maintenance.Compaction, maintenance.Config{Status: maintenance.Enabled,
		Settings: &maintenance.CompactionSettings{TargetFileSizeMB: maintenance.Int(64)}}); err != nil {
		l.t.Fatal(err)
	}
	if err := l.e.Store.PutMarks(l.e.Ctx, []state.Mark{{Table: k, Path: tbl.Location() + "/data/stray.parquet", Size: 1, MarkedAt: time.Now()}}); err != nil {
		l.t.Fatal(err)
	}
}

func (l *lifecycle) compact(name string) {
	l.t.Helper()
	out, err := l.runner.Run(l.e.Ctx, l.target(name), maintenance.Compaction, "test", jobs.Options{})
	if err != nil || out.Status != state.Successful {
		l.t.Fatalf("compaction of %s: %+v %v", name, out, err)
	}
}

// history is what the store holds under k: runs of compaction, overrides,
// marks.
func (l *lifecycle) history(k state.TableKey) (runs, overrides, marks int) {
	l.t.Helper()
	rs, err := l.e.Store.Runs(l.e.Ctx, k, maintenance.Compaction, 100)
	if err != nil {
		l.t.Fatal(err)
	}
	cfg, err := l.e.Store.TableConfig(l.e.Ctx, k)
	if err != nil {
		l.t.Fatal(err)
	}
	ms, err := l.e.Store.Marks(l.e.Ctx, k)
	if err != nil {
		l.t.Fatal(err)
	}
	return len(rs), len(cfg), len(ms)
}

func (l *lifecycle) wantHistory(what string, k state.TableKey, runs, overrides, marks int) {
	l.t.Helper()
	if r, o, m := l.history(k); r != runs || o != overrides || m != marks {
		l.t.Errorf("%s (%s): %d runs, %d overrides, %d marks; want %d, %d, %d", what, k, r, o, m, runs, overrides, marks)
	}
}

// TestDropAndCreateStartsAfresh is the table of the demo dropped and
// created again under its name while icekeeper keeps state of it: the new
// table has no runs, settings or marks of the old one, and its compaction
// lag counts its own snapshots (the old table's higher sequence numbers
// made them all look handled); the old table's state stays readable under
// its dropped key.
func TestDropAndCreateStartsAfresh(t *testing.T) {
	for _, c := range catalogs {
		t.Run(c.name, func(t *testing.T) { testDropAndCreateStartsAfresh(t, c.env) })
	}
}

func testDropAndCreateStartsAfresh(t *testing.T, env func(t *testing.T) (*tableenv.Env, *table.Table)) {
	l, tbl := newLifecycle(t, env)
	ctx := l.e.Ctx
	k := l.key("x")
	l.remember(tbl)
	oldUUID := tbl.Metadata().TableUUID().String()
	l.wantHistory("before the drop", k, 1, 1, 1)

	if err := l.cat.DropTable(ctx, l.target("x").Table.Identifier()); err != nil {
		t.Fatal(err)
	}
	l.create("x")
	now := time.Now()
	if _, err := l.runner.Need(ctx, l.target("x"), maintenance.Compaction, now); err != nil {
		t.Fatal(err)
	}
	l.wantHistory("the new table", k, 0, 0, 0)
	l.wantHistory("the dropped table", k.Dropped(oldUUID), 1, 1, 1)
	if lag := l.fresh.Lags(k)[maintenance.Compaction]; lag.Oldest == nil {
		t.Errorf("compaction lag of the new table %+v: its three small files wait", lag)
	}
	last, err := l.e.Store.LastRuns(ctx, k)
	if err != nil || len(last) != 0 {
		t.Errorf("last runs of the new table: %d %v, want none (NotYetRun)", len(last), err)
	}
	dropped, err := l.e.Store.DroppedTables(ctx, l.e.B.ARN(), time.Time{})
	if err != nil || len(dropped) != 1 || dropped[0].UUID != oldUUID || dropped[0].Key != k {
		t.Errorf("dropped tables %+v %v, want %s's old table %s", dropped, err, k, oldUUID)
	}
	// Its first run is its own; the dropped table's history is untouched.
	l.compact("x")
	l.wantHistory("the new table after its run", k, 1, 0, 0)
	l.wantHistory("the dropped table", k.Dropped(oldUUID), 1, 1, 1)
}

// TestRenameKeepsState: a renamed table's runs, settings and marks are
// found under its new name and nothing under the old one; a table
// registered at its metadata file under a third name is a table of its
// own; dropped and registered again, the table gets its state back.
func TestRenameForkAndRestore(t *testing.T) {
	for _, c := range catalogs {
		t.Run(c.name, func(t *testing.T) { testRenameForkAndRestore(t, c.env) })
	}
}

func testRenameForkAndRestore(t *testing.T, env func(t *testing.T) (*tableenv.Env, *table.Table)) {
	l, tbl := newLifecycle(t, env)
	ctx := l.e.Ctx
	k := l.key("x")
	l.remember(tbl)

	renamed, err := l.cat.RenameTable(ctx, l.target("x").Table.Identifier(), l.target("y").Table.Identifier())
	if err != nil {
		t.Fatal(err)
	}
	ch, err := l.reg.Observe(ctx, l.e.B, l.target("y").Table, renamed)
	if err != nil || ch != tables.Renamed {
		t.Fatalf("observe the renamed table: %v %v, want renamed", ch, err)
	}
	l.wantHistory("the renamed table", l.key("y"), 1, 1, 1)
	l.wantHistory("its old name", k, 0, 0, 0)
	if _, ok, _ := l.e.Store.LiveTable(ctx, k); ok {
		t.Error("the old name is still recorded live")
	}

	if l.e.B.Properties()["type"] == "rest" {
		// SeaweedFS's REST catalog refuses a second table at a location
		// in use (409) and purges a dropped table's files: the fork and
		// the undrop below are the SQL catalog's.
		return
	}
	// register_table at y's metadata file under z: the same UUID, two
	// live tables.
	fork := testkit.Register(t, l.e.B, "t", "z", renamed.MetadataLocation())
	if ch, err := l.reg.Observe(ctx, l.e.B, l.target("z").Table, fork); err != nil || ch != tables.New {
		t.Fatalf("observe the fork: %v %v, want new", ch, err)
	}
	l.wantHistory("the fork", l.key("z"), 0, 0, 0)
	l.wantHistory("the table it was registered from", l.key("y"), 1, 1, 1)

	// y dropped (the next listing misses it), then registered again at
	// its metadata file: its state comes back.
	if err := l.cat.DropTable(ctx, l.target("y").Table.Identifier()); err != nil {
		t.Fatal(err)
	}
	listed, err := l.e.B.Tables(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if n, err := l.reg.Forget(ctx, l.e.B, listed); err != nil || n != 1 {
		t.Fatalf("forget: %d %v, want y dropped", n, err)
	}
	uuid := renamed.Metadata().TableUUID().String()
	l.wantHistory("y dropped", l.key("y"), 0, 0, 0)
	l.wantHistory("y's dropped key", l.key("y").Dropped(uuid), 1, 1, 1)
	back := testkit.Register(t, l.e.B, "t", "y", renamed.MetadataLocation())
	if ch, err := l.reg.Observe(ctx, l.e.B, l.target("y").Table, back); err != nil || ch != tables.Restored {
		t.Fatalf("observe y registered again: %v %v, want restored", ch, err)
	}
	l.wantHistory("y restored", l.key("y"), 1, 1, 1)
	l.wantHistory("y's dropped key", l.key("y").Dropped(uuid), 0, 0, 0)
}

// TestFirstObservationKeepsHistory: what a store written before the
// registry holds under a name is the table's that the name holds at its
// first observation, runs and settings alike.
func TestFirstObservationKeepsHistory(t *testing.T) {
	for _, c := range catalogs {
		t.Run(c.name, func(t *testing.T) { testFirstObservationKeepsHistory(t, c.env) })
	}
}

func testFirstObservationKeepsHistory(t *testing.T, env func(t *testing.T) (*tableenv.Env, *table.Table)) {
	l, tbl := newLifecycle(t, env)
	ctx := l.e.Ctx
	l.runner.Tables = nil // the release before the registry
	l.compact("x")
	k := l.key("x")
	if err := l.e.Store.PutTableConfig(ctx, k, maintenance.Compaction, maintenance.Config{Status: maintenance.Enabled,
		Settings: &maintenance.CompactionSettings{TargetFileSizeMB: maintenance.Int(64)}}); err != nil {
		t.Fatal(err)
	}
	if ch, err := l.reg.Observe(ctx, l.e.B, l.target("x").Table, tbl); err != nil || ch != tables.New {
		t.Fatalf("first observation: %v %v, want new", ch, err)
	}
	l.wantHistory("after the first observation", k, 1, 1, 0)
	l.runner.Tables = l.reg
	l.compact("x")
	l.wantHistory("after a run that observed it", k, 2, 1, 0)
}

// TestDropFoundByPoll: a poll (or a drop event's check) that finds the
// table gone records the drop at once, not at the next listing.
func TestDropFoundByPoll(t *testing.T) {
	l, tbl := newLifecycle(t, catalogs[0].env)
	k := l.key("x")
	if _, err := l.reg.Observe(l.e.Ctx, l.e.B, l.target("x").Table, tbl); err != nil {
		t.Fatal(err)
	}
	if err := l.cat.DropTable(l.e.Ctx, l.target("x").Table.Identifier()); err != nil {
		t.Fatal(err)
	}
	if _, err := l.runner.Need(l.e.Ctx, l.target("x"), maintenance.Compaction, time.Now()); !errors.Is(err, bucket.ErrNoSuchTable) {
		t.Fatalf("need of a dropped table: %v", err)
	}
	if _, live, _ := l.e.Store.LiveTable(l.e.Ctx, k); live {
		t.Error("the table is still recorded live")
	}
	dropped, err := l.e.Store.DroppedTables(l.e.Ctx, l.e.B.ARN(), time.Time{})
	if err != nil || len(dropped) != 1 || dropped[0].UUID != tbl.Metadata().TableUUID().String() {
		t.Errorf("dropped: %+v %v", dropped, err)
	}
	// A run queued before the drop records nothing under the name, which
	// the next table of that name would take for its own.
	out, err := l.runner.Run(l.e.Ctx, l.target("x"), maintenance.Compaction, "schedule", jobs.Options{})
	if err != nil || out.Status != state.Skipped {
		t.Fatalf("run of a dropped table: %+v %v", out, err)
	}
	l.wantHistory("the name after a run of the dropped table", k, 0, 0, 0)
}
