package orphan

import (
	"context"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go/table"

	"github.com/icekeeper/icekeeper/configs"
	"github.com/icekeeper/icekeeper/internal/bucket"
	"github.com/icekeeper/icekeeper/internal/demo"
	"github.com/icekeeper/icekeeper/internal/state"
	"github.com/icekeeper/icekeeper/internal/testkit"
	"github.com/icekeeper/icekeeper/internal/testkit/servers"
	"github.com/icekeeper/icekeeper/internal/testkit/tablecheck"
	"github.com/icekeeper/icekeeper/jobs"
	"github.com/icekeeper/icekeeper/maintenance"
	"github.com/icekeeper/icekeeper/tables"
)

// leftovers is a bucket whose tables are dropped without their files
// being purged, a registry that records it, and removal of what they
// left.
type leftovers struct {
	t        *testing.T
	ctx      context.Context
	registry *bucket.Registry
	b        *bucket.Bucket
	store    state.Store
	reg      *tables.Registry
	runner   *jobs.Runner
	knobs    maintenance.Knobs
	now      time.Time
	rng      *rand.Rand
	exists   func(uri string) bool
}

func newLeftovers(t *testing.T, cfg *configs.Config, exists func(string) bool) *leftovers {
	ctx := context.Background()
	reg := cfg.Registry()
	t.Cleanup(reg.Close)
	b := reg.Buckets()[0]
	store, err := state.Open(ctx, "sqlite://"+filepath.Join(t.TempDir(), "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	l := &leftovers{t: t, ctx: ctx, registry: reg, b: b, store: store, reg: &tables.Registry{Store: store}, now: time.Now(),
		rng: rand.New(rand.NewPCG(5, 5)), knobs: maintenance.Knobs{RemoveDroppedTables: true}, exists: exists}
	job := &Job{Store: store}
	l.runner = &jobs.Runner{Store: store, Jobs: jobs.Map(job.Definition()), Dropped: job.Dropped(), Tables: l.reg}
	l.runner.Resolver = &jobs.Resolver{Store: store, Defaults: map[string]maintenance.BucketDefaults{b.ARN(): {Knobs: l.knobs}}}
	return l
}

func (l *leftovers) id(name string) bucket.TableID {
	return bucket.TableID{Namespace: []string{"db"}, Name: name}
}

// table creates db.name with three appends, and records it.
func (l *leftovers) table(name string) *table.Table {
	l.t.Helper()
	tbl := testkit.NewTable(l.t, l.b, "db", name, demo.Schema())
	var err error
	for range 3 {
		if tbl, err = testkit.AppendRandom(l.ctx, tbl, 5, 0, l.rng); err != nil {
			l.t.Fatal(err)
		}
	}
	if _, err := l.reg.Observe(l.ctx, l.b, l.id(name), tbl); err != nil {
		l.t.Fatal(err)
	}
	return tbl
}

// drop drops db.name from the catalog, files kept, and lets a listing
// record it.
func (l *leftovers) drop(name string) state.TableRecord {
	l.t.Helper()
	cat, err := l.b.Catalog(l.ctx)
	if err != nil {
		l.t.Fatal(err)
	}
	if err := cat.DropTable(l.ctx, l.id(name).Identifier()); err != nil {
		l.t.Fatal(err)
	}
	listed, err := l.b.Tables(l.ctx)
	if err != nil {
		l.t.Fatal(err)
	}
	if _, err := l.reg.Forget(l.ctx, l.b, listed); err != nil {
		l.t.Fatal(err)
	}
	recs, err := l.store.DroppedTables(l.ctx, l.b.ARN(), time.Time{})
	if err != nil {
		l.t.Fatal(err)
	}
	for _, r := range recs {
		if r.Key.Name == name {
			return r
		}
	}
	l.t.Fatalf("%s not recorded dropped: %+v", name, recs)
	return state.TableRecord{}
}

func (l *leftovers) sweep(rec state.TableRecord, after time.Duration) (jobs.Outcome, *Figures) {
	l.t.Helper()
	out, err := l.runner.RunDropped(l.ctx, l.b, rec, "test", jobs.Options{Now: l.now.Add(after)})
	if err != nil {
		l.t.Fatal(err)
	}
	fig, _ := out.Figures.(*Figures)
	return out, fig
}

// files are every file under a table's location, as metadata names them.
func files(t *testing.T, tbl *table.Table) []string {
	t.Helper()
	all, err := tablecheck.ReachableFiles(context.Background(), tbl)
	if err != nil {
		t.Fatal(err)
	}
	return all
}

// TestDroppedTableLeftovers: a table dropped without a purge leaves its
// files; with removeDroppedTables they are marked, shown under the
// dropped table, and deleted nonCurrentDays later, except the one a live
// table took in with add_files, which stays, and that table keeps its
// rows. Off, nothing runs. Local disk and S3.
func TestDroppedTableLeftovers(t *testing.T) {
	runLeftovers(t, newLeftovers(t, configs.Embedded(t.TempDir()), exists))
}

func TestDroppedTableLeftoversOnS3(t *testing.T) {
	srv := servers.S3(t)
	st := s3Store{srv}
	runLeftovers(t, newLeftovers(t, sqlS3Config(t, srv), func(uri string) bool { return st.exists(t, uri) }))
}

func runLeftovers(t *testing.T, l *leftovers) {
	gone := l.table("gone")
	keeper := l.table("keeper")
	shared := files(t, gone)
	shared = slices.DeleteFunc(shared, func(p string) bool { return !strings.HasSuffix(p, ".parquet") })[:1]
	tx := keeper.NewTransaction()
	if err := tx.AddFiles(l.ctx, shared, nil, false); err != nil {
		t.Fatal(err)
	}
	keeper, err := tx.Commit(l.ctx)
	if err != nil {
		t.Fatal(err)
	}
	rows, err := tablecheck.Rows(l.ctx, keeper, 0)
	if err != nil {
		t.Fatal(err)
	}
	left := files(t, gone)
	// A hostile object under the dropped table's location (local disk): a
	// symlink to the live table's own data file, which must outlive the
	// leftovers' removal whatever becomes of the link.
	var link string
	if loc := gone.Location(); strings.HasPrefix(loc, "file://") {
		kept := files(t, keeper)
		target := strings.TrimPrefix(kept[slices.IndexFunc(kept, func(p string) bool { return strings.HasSuffix(p, ".parquet") && !strings.Contains(p, "/gone") })], "file://")
		link = filepath.Join(strings.TrimPrefix(loc, "file://"), "data", "link.parquet")
		if err := os.Symlink(target, link); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if _, err := os.Stat(target); err != nil {
				t.Errorf("the live table's %s, linked from the dropped table, is gone: %v", target, err)
			}
		})
	}
	rec := l.drop("gone")

	l.runner.Resolver.Defaults[l.b.ARN()] = maintenance.BucketDefaults{}
	if out, _ := l.sweep(rec, 4*day); out.Status != state.Disabled {
		t.Fatalf("removeDroppedTables off: %+v", out)
	}
	l.runner.Resolver.Defaults[l.b.ARN()] = maintenance.BucketDefaults{Knobs: l.knobs}

	out, fig := l.sweep(rec, 4*day)
	if out.Status != state.Successful || fig.Marked == 0 || fig.ReferencedByOthers != 1 {
		t.Fatalf("+4d: %+v %+v", out, fig)
	}
	marks, err := l.store.Marks(l.ctx, rec.StateKey())
	if err != nil || len(marks) != fig.Marked {
		t.Fatalf("marks under the dropped table: %d %v, want %d", len(marks), err, fig.Marked)
	}
	for _, m := range marks {
		if m.Path == shared[0] {
			t.Fatalf("marked %s, which keeper references", m.Path)
		}
	}
	out, fig = l.sweep(rec, 15*day)
	if out.Status != state.Successful || fig.Deleted != len(marks) {
		t.Fatalf("+15d: %+v, deleted %d of %d marked", out, fig.Deleted, len(marks))
	}
	for _, p := range left {
		if p == shared[0] {
			if !l.exists(p) {
				t.Errorf("%s, which keeper references, was deleted", p)
			}
		} else if l.exists(p) {
			t.Errorf("the dropped table's %s is still there", p)
		}
	}
	sound(t, l.b, l.id("keeper"), rows)
	// What is left is keeper's file, referenced: not collected yet. The
	// file's removal from keeper would free it; here the sweep goes on.
	if recs, _ := l.store.DroppedTables(l.ctx, l.b.ARN(), time.Time{}); len(recs) != 1 || !recs[0].Collected.IsZero() {
		t.Errorf("dropped records %+v, want gone's, not collected", recs)
	}
}

// TestDroppedTableComesBack: leftovers marked, then the table registered
// again at its metadata file (an undrop): its marks come back with it,
// a sweep of the dropped record does nothing, and the table's own
// removal deletes none of its files. A table created again where a
// dropped one was is left to its own removal.
func TestDroppedTableComesBack(t *testing.T) {
	l := newLeftovers(t, configs.Embedded(t.TempDir()), exists)
	back := l.table("back")
	rows, err := tablecheck.Rows(l.ctx, back, 0)
	if err != nil {
		t.Fatal(err)
	}
	rec := l.drop("back")
	if out, fig := l.sweep(rec, 4*day); out.Status != state.Successful || fig.Marked == 0 {
		t.Fatalf("+4d: %+v %+v", out, fig)
	}
	again := testkit.Register(t, l.b, "db", "back", rec.MetadataLocation)
	if ch, err := l.reg.Observe(l.ctx, l.b, l.id("back"), again); err != nil || ch != tables.Restored {
		t.Fatalf("registered again: %v %v, want restored", ch, err)
	}
	if out, _ := l.sweep(rec, 15*day); out.Status != state.Skipped || !strings.Contains(out.FailureMessage, "live again") {
		t.Fatalf("sweep of a table back: %+v", out)
	}
	if m, _ := l.store.Marks(l.ctx, rec.StateKey()); len(m) != 0 {
		t.Errorf("%d marks left under the dropped key", len(m))
	}
	out, err := l.runner.Run(l.ctx, jobs.Target{Bucket: l.b, Table: l.id("back")}, maintenance.UnreferencedFileRemoval, "test", jobs.Options{Now: l.now.Add(15 * day)})
	if err != nil || out.Status != state.Successful {
		t.Fatalf("removal of the table back: %+v %v", out, err)
	}
	if fig := out.Figures.(*Figures); fig.Deleted != 0 {
		t.Errorf("removal of the table back deleted %v", fig.DeletedPaths)
	}
	sound(t, l.b, l.id("back"), rows)

	// A dropped table with nothing left is collected by its sweep.
	empty := l.table("empty")
	erec := l.drop("empty")
	if err := os.RemoveAll(strings.TrimPrefix(empty.Location(), "file://")); err != nil {
		t.Fatal(err)
	}
	if out, fig := l.sweep(erec, 4*day); out.Status != state.Successful || fig.Listed != 0 {
		t.Fatalf("sweep of an emptied dropped table: %+v %+v", out, fig)
	}
	keys, err := jobs.DroppedTables(l.ctx, l.registry, l.runner.Resolver, l.store)
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(keys, erec.StateKey()) || slices.Contains(keys, rec.StateKey()) {
		t.Errorf("a fire would queue %v: the collected table or the table back", keys)
	}

	// A listing that missed a live table recorded it dropped: the catalog
	// still has it, so nothing of it is a leftover.
	l.table("missed")
	liveRec, ok, err := l.store.LiveTable(l.ctx, state.TableKey{Bucket: l.b.ARN(), Namespace: "db", Name: "missed"})
	if err != nil || !ok {
		t.Fatalf("missed: %v %v", ok, err)
	}
	if err := l.store.DropTable(l.ctx, liveRec, l.now); err != nil {
		t.Fatal(err)
	}
	liveRec.Dropped = l.now
	if out, _ := l.sweep(liveRec, 4*day); out.Status != state.Skipped || !strings.Contains(out.FailureMessage, "in the catalog again") {
		t.Fatalf("sweep of a table a listing missed: %+v", out)
	}
	if m, _ := l.store.Marks(l.ctx, liveRec.StateKey()); len(m) != 0 {
		t.Errorf("marked %d files of a live table", len(m))
	}

	// Dropped and created again at the same location: the new table's
	// removal takes what the old one left.
	l.table("same")
	old := l.drop("same")
	l.table("same")
	if out, _ := l.sweep(old, 4*day); out.Status != state.Skipped || !strings.Contains(out.FailureMessage, "inside live table") {
		t.Fatalf("sweep of a table created again where it was: %+v", out)
	}
	if !errors.Is(ErrNotLeftover, jobs.ErrNotLeftover) {
		t.Fatal("orphan's ErrNotLeftover is not jobs'")
	}
}
