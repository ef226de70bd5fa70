package orphan

import (
	"context"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go"

	"github.com/icekeeper/icekeeper/expire"
	"github.com/icekeeper/icekeeper/internal/demo"
	"github.com/icekeeper/icekeeper/internal/state"
	"github.com/icekeeper/icekeeper/internal/testkit"
	"github.com/icekeeper/icekeeper/internal/testkit/tablecheck"
	"github.com/icekeeper/icekeeper/jobs"
	"github.com/icekeeper/icekeeper/maintenance"
)

const day = 24 * time.Hour

type fixture struct {
	*testkit.DemoTable
	t      *testing.T
	job    *Job
	before tablecheck.Fingerprint
	dir    string // the table's directory
	now    time.Time
}

func newFixture(t *testing.T) *fixture {
	d := testkit.NewDemoTable(t, demo.Options{Appends: 15})
	f := &fixture{DemoTable: d, t: t, job: &Job{Store: d.Store}, now: time.Now()}
	tbl := d.Load()
	f.dir = strings.TrimPrefix(tbl.Location(), "file://")
	var err error
	if f.before, err = tablecheck.Rows(d.Ctx, tbl, 0); err != nil {
		t.Fatal(err)
	}
	return f
}

func (f *fixture) run(after time.Duration, dryRun bool) (jobs.Outcome, *Figures) {
	f.t.Helper()
	out := f.Run(f.job.Definition(), jobs.Options{Now: f.now.Add(after), DryRun: dryRun})
	fig, _ := out.Figures.(*Figures)
	return out, fig
}

func (f *fixture) mustRun(after time.Duration) *Figures {
	f.t.Helper()
	out, fig := f.run(after, false)
	if out.Status != state.Successful {
		f.t.Fatalf("run at +%v: %+v", after, out)
	}
	return fig
}

// write creates a file at path (absolute, or relative to the table
// directory) aged age.
func (f *fixture) write(path string, age time.Duration) string {
	f.t.Helper()
	if !filepath.IsAbs(path) {
		path = filepath.Join(f.dir, path)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		f.t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte("stray"), 0o644); err != nil {
		f.t.Fatal(err)
	}
	mt := f.now.Add(-age)
	if err := os.Chtimes(path, mt, mt); err != nil {
		f.t.Fatal(err)
	}
	return path
}

func exists(path string) bool {
	_, err := os.Stat(strings.TrimPrefix(path, "file://"))
	return err == nil
}

// intact asserts the invariant every scenario ends with: every file
// reachable from the metadata exists and the table scans to the rows it
// had at the start.
func (f *fixture) intact() {
	f.t.Helper()
	tbl := f.Load()
	missing, err := tablecheck.MissingFiles(f.Ctx, tbl)
	if err != nil {
		f.t.Fatal(err)
	}
	if len(missing) > 0 {
		f.t.Fatalf("reachable files deleted: %v", missing)
	}
	fp, err := tablecheck.Rows(f.Ctx, tbl, 0)
	if err != nil {
		f.t.Fatal(err)
	}
	if !fp.Equal(f.before) {
		f.t.Fatalf("rows changed: %v, was %v", fp, f.before)
	}
}

func (f *fixture) marks() []state.Mark {
	f.t.Helper()
	m, err := f.Store.Marks(f.Ctx, f.Target().Key())
	if err != nil {
		f.t.Fatal(err)
	}
	return m
}

// The demo walkthrough: mark the crashed writer's files, list them,
// restore one, delete the rest after nonCurrentDays; the restored one is
// kept until released, then marked afresh.
func TestDemoWalkthrough(t *testing.T) {
	f := newFixture(t)
	out, dry := f.run(0, true)
	if out.Status != state.Successful || dry.Marked != 3 || len(f.marks()) != 0 {
		t.Fatalf("dry run: %+v %+v", out, dry)
	}
	fig := f.mustRun(0)
	if fig.Marked != 3 || fig.Deleted != 0 || fig.Unreferenced != 3 {
		t.Fatalf("first run: %+v", fig)
	}
	list, err := ListNoncurrent(f.Ctx, f.Store, f.Target().Key(), 10)
	if err != nil || len(list) != 3 || !list[0].DeleteAfter.Equal(list[0].MarkedAt.Add(10*day)) {
		t.Fatalf("noncurrent: %+v %v", list, err)
	}
	restored := list[0].Path
	key := f.Target().Key()
	if n, err := Restore(f.Ctx, f.Store, key, []string{restored}, f.now); err != nil || n != 1 {
		t.Fatalf("restore: %d %v", n, err)
	}
	if _, err := Restore(f.Ctx, f.Store, key, []string{"file:///nope"}, f.now); !errors.Is(err, ErrNotMarked) {
		t.Fatalf("restoring an unmarked path: %v", err)
	}
	if _, err := Release(f.Ctx, f.Store, key, []string{list[1].Path}); !errors.Is(err, ErrNotMarked) {
		t.Fatalf("releasing an unprotected path: %v", err)
	}
	// Nine days later nothing is due yet, and the restored file is not
	// marked again.
	if fig := f.mustRun(9 * day); fig.Deleted != 0 || fig.Marked != 0 || fig.Protected != 1 || fig.StillPending != 2 {
		t.Fatalf("day 9: %+v", fig)
	}
	// The dry run ahead counts what it would delete, bytes included.
	var due int64
	for _, m := range list[1:] {
		due += m.Size
	}
	if out, dry := f.run(11*day, true); out.Status != state.Successful || dry.Deleted != 2 || dry.DeletedBytes != due || due == 0 {
		t.Fatalf("dry run at day 11: %+v, %d of %d bytes", out, dry.DeletedBytes, due)
	}
	fig = f.mustRun(11 * day)
	if fig.Deleted != 2 || fig.DeletedBytes == 0 || fig.Protected != 1 {
		t.Fatalf("day 11: %+v", fig)
	}
	if !exists(restored) {
		t.Fatal("the restored file was deleted")
	}
	if list, _ := ListNoncurrent(f.Ctx, f.Store, key, 10); len(list) != 1 || !list[0].Protected() || !list[0].DeleteAfter.IsZero() {
		t.Fatalf("noncurrent after day 11: %+v", list)
	}
	// Long after, still kept; released, it is marked with a fresh window.
	if fig := f.mustRun(40 * day); fig.Deleted != 0 || fig.Protected != 1 || !exists(restored) {
		t.Fatalf("day 40: %+v", fig)
	}
	if n, err := Release(f.Ctx, f.Store, key, nil); err != nil || n != 1 {
		t.Fatalf("release: %d %v", n, err)
	}
	if fig := f.mustRun(41 * day); fig.Marked != 1 || fig.Deleted != 0 {
		t.Fatalf("day 41, released: %+v", fig)
	}
	if fig := f.mustRun(52 * day); fig.Deleted != 1 || exists(restored) {
		t.Fatalf("day 52: %+v", fig)
	}
	for _, m := range list[1:] {
		if exists(m.Path) {
			t.Fatalf("%s was not deleted", m.Path)
		}
	}
	f.intact()
}

// Strays of every kind around a live table: only the table's own old
// unreferenced objects are marked, and only after nonCurrentDays deleted.
func TestStrayScenarios(t *testing.T) {
	f := newFixture(t)
	sibling := f.write(f.dir+"_v2/data/old.parquet", 30*day) // shares the prefix string
	outside := f.write(filepath.Join(f.Home, "outside.parquet"), 30*day)
	young := f.write("data/young.parquet", time.Hour)
	inflight := f.write("data/ts_day=2026-11-29/00000-9-inflight.parquet", time.Minute)
	old := []string{
		f.write("data/interrupted-compaction-00001.parquet", 5*day),
		f.write("metadata/00099-0000-1111.metadata.json", 5*day),
		f.write("metadata/snap-1-1-deadbeef.avro", 5*day),
		f.write("metadata/deadbeef-m0.avro", 5*day),
	}
	fig := f.mustRun(0)
	if fig.Marked != len(old)+3 || fig.TooYoung != 2 {
		t.Fatalf("first run: marked %d (want %d), too young %d (want 2): %+v", fig.Marked, len(old)+3, fig.TooYoung, fig)
	}
	for _, p := range fig.MarkedPaths {
		if strings.Contains(p, "_v2") || strings.Contains(p, "outside") {
			t.Fatalf("marked %s outside the table", p)
		}
	}
	fig = f.mustRun(11 * day)
	if fig.Deleted != len(old)+3 || fig.Marked != 2 { // the young ones are old now
		t.Fatalf("day 11: %+v", fig)
	}
	for _, p := range old {
		if exists(p) {
			t.Fatalf("%s survived", p)
		}
	}
	for _, p := range []string{sibling, outside, young, inflight} {
		if !exists(p) {
			t.Fatalf("%s was deleted", p)
		}
	}
	f.intact()
}

// Expire, then remove: files only expired snapshots referenced are marked,
// then deleted; every kept snapshot still reads.
func TestExpireThenRemove(t *testing.T) {
	f := newFixture(t)
	exp := f.Run((&expire.Job{}).Definition(), jobs.Options{Now: f.now.Add(30 * day)})
	if exp.Status != state.Successful {
		t.Fatalf("expire: %+v", exp)
	}
	if n := len(f.Load().Metadata().Snapshots()); n != 1 {
		t.Fatalf("%d snapshots after expiring at +30d", n)
	}
	fig := f.mustRun(4 * day)
	if fig.Marked <= 3 {
		t.Fatalf("expired snapshots' files not marked: %+v", fig)
	}
	fig = f.mustRun(15 * day)
	if fig.Deleted <= 3 {
		t.Fatalf("nothing deleted at +15d: %+v", fig)
	}
	f.intact()
}

// A rollback to older metadata re-references files that were marked: they
// are unmarked and never deleted.
func TestRollbackUnmarks(t *testing.T) {
	f := newFixture(t)
	oldLoc := f.Load().MetadataLocation()
	if exp := f.Run((&expire.Job{}).Definition(), jobs.Options{Now: f.now.Add(30 * day)}); exp.Status != state.Successful {
		t.Fatalf("expire: %+v", exp)
	}
	marked := f.mustRun(4 * day).Marked
	// Re-register the pre-expiration metadata, as an operator rolling back
	// would.
	if err := demo.Repoint(f.Ctx, f.Bucket, f.ID.Identifier(), f.Load().MetadataLocation(), oldLoc); err != nil {
		t.Fatal(err)
	}
	fig := f.mustRun(5 * day)
	if fig.Unmarked != marked-3 {
		t.Fatalf("unmarked %d of %d re-referenced marks: %+v", fig.Unmarked, marked-3, fig)
	}
	f.mustRun(20 * day)
	f.intact()
	tbl := f.Load()
	for _, s := range tbl.Metadata().Snapshots() {
		if _, err := tablecheck.Rows(f.Ctx, tbl, s.SnapshotID); err != nil {
			t.Fatalf("time travel to %d after rollback: %v", s.SnapshotID, err)
		}
	}
}

func TestGCDisabled(t *testing.T) {
	f := newFixture(t)
	tx := f.Load().NewTransaction()
	if err := tx.SetProperties(iceberg.Properties{"gc.enabled": "false"}); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Commit(f.Ctx); err != nil {
		t.Fatal(err)
	}
	out, _ := f.run(30*day, false)
	if out.Status != state.Failed || out.FailureMessage != maintenance.GCDisabledMessage || len(f.marks()) != 0 {
		t.Fatalf("gc.enabled=false: %+v", out)
	}
}

// Any unreadable part of the metadata fails the run before anything is
// marked or deleted.
func TestUnreadableMetadataFailsSafe(t *testing.T) {
	for _, what := range []string{"manifest list", "manifest"} {
		t.Run(what, func(t *testing.T) {
			f := newFixture(t)
			f.mustRun(0) // marks the 3 strays
			tbl := f.Load()
			fsys, _ := tbl.FS(f.Ctx)
			snap := tbl.Metadata().Snapshots()[0]
			victim := snap.ManifestList
			if what == "manifest" {
				ms, err := snap.Manifests(fsys)
				if err != nil {
					t.Fatal(err)
				}
				victim = ms[0].FilePath()
			}
			if err := os.WriteFile(strings.TrimPrefix(victim, "file://"), []byte("garbage"), 0o644); err != nil {
				t.Fatal(err)
			}
			out, _ := f.run(30*day, false)
			if out.Status != state.Failed || !strings.Contains(out.FailureMessage, victim) {
				t.Fatalf("outcome %+v, want Failed naming %s", out, victim)
			}
			if n := len(f.marks()); n != 3 {
				t.Fatalf("%d marks after the failed run, want the 3 from before", n)
			}
			for _, m := range f.marks() {
				if !exists(m.Path) {
					t.Fatalf("%s deleted by a failed run", m.Path)
				}
			}
		})
	}
}

func TestDeleteCap(t *testing.T) {
	f := newFixture(t)
	f.Defaults.Knobs.MaxDeletesPerRun = 1
	f.mustRun(0)
	fig := f.mustRun(11 * day)
	if fig.Deleted != 1 || fig.CappedDeletes != 2 {
		t.Fatalf("capped run: %+v", fig)
	}
	if fig := f.mustRun(12 * day); fig.Deleted != 1 {
		t.Fatalf("next run: %+v", fig)
	}
}

// A file registered into the table between the listing and the deletion
// is found by the re-check against fresh metadata and kept.
func TestRecheckKeepsNewlyReferenced(t *testing.T) {
	f := newFixture(t)
	f.mustRun(0)
	stray := f.marks()[0].Path
	f.job.storage = func(ctx context.Context, p loc) (Storage, error) {
		return afterList{localStorage{}, func() {
			tx := f.Load().NewTransaction()
			if err := tx.AddFiles(ctx, []string{stray}, nil, false); err != nil {
				t.Fatal(err)
			}
			if _, err := tx.Commit(ctx); err != nil {
				t.Fatal(err)
			}
		}}, nil
	}
	fig := f.mustRun(11 * day)
	if fig.RecheckKept != 1 || fig.Deleted != 2 || !exists(stray) {
		t.Fatalf("re-check: %+v, stray exists %v", fig, exists(stray))
	}
	missing, err := tablecheck.MissingFiles(f.Ctx, f.Load())
	if err != nil || len(missing) > 0 {
		t.Fatalf("missing %v %v", missing, err)
	}
}

// afterList runs hook once, after the listing and before any deletion.
type afterList struct {
	Storage
	hook func()
}

func (a afterList) List(ctx context.Context, p loc, fn func(Object) error) error {
	err := a.Storage.List(ctx, p, fn)
	a.hook()
	return err
}

// A table that writes data under write.data.path has that prefix listed
// too: its strays are found, its live files kept.
func TestWriteDataPath(t *testing.T) {
	f := newFixture(t)
	other := filepath.Join(f.Home, "elsewhere", "events-data")
	tx := f.Load().NewTransaction()
	if err := tx.SetProperties(iceberg.Properties{"write.data.path": "file://" + other}); err != nil {
		t.Fatal(err)
	}
	tbl, err := tx.Commit(f.Ctx)
	if err != nil {
		t.Fatal(err)
	}
	if tbl, err = testkit.AppendRandom(f.Ctx, tbl, 20, 1_000_000, rand.New(rand.NewPCG(7, 7))); err != nil {
		t.Fatal(err)
	}
	if f.before, err = tablecheck.Rows(f.Ctx, tbl, 0); err != nil {
		t.Fatal(err)
	}
	stray := f.write(filepath.Join(other, "stray.parquet"), 5*day)
	neighbour := f.write(filepath.Join(f.Home, "elsewhere", "events-data-v2", "x.parquet"), 5*day)
	fig := f.mustRun(0)
	if len(fig.Prefixes) != 2 || fig.Marked != 4 {
		t.Fatalf("%+v", fig)
	}
	f.mustRun(11 * day)
	if exists(stray) || !exists(neighbour) {
		t.Fatalf("stray exists %v, neighbour exists %v", exists(stray), exists(neighbour))
	}
	f.intact()
}

// Snapshot management's opt-in deletion: the files only expired snapshots
// reached go right after the commit; every kept snapshot still reads, and
// unused schemas and specs are pruned.
func TestExpireDeletesExpiredFiles(t *testing.T) {
	f := newFixture(t)
	f.Defaults.Knobs.DeleteExpiredFiles, f.Defaults.Knobs.PruneUnusedSchemasAndSpecs = true, true
	// An old schema no snapshot will use once the history expires.
	tx := f.Load().NewTransaction()
	if err := tx.UpdateSchema(true, false).AddColumn([]string{"note"}, iceberg.PrimitiveTypes.String, "", false, nil).Commit(); err != nil {
		t.Fatal(err)
	}
	tbl, err := tx.Commit(f.Ctx)
	if err != nil {
		t.Fatal(err)
	}
	if tbl, err = testkit.AppendRandom(f.Ctx, tbl, 10, 1_000_000, rand.New(rand.NewPCG(7, 7))); err != nil {
		t.Fatal(err)
	}
	// The appended sample has no "note": fill the column as null for the
	// fingerprint of the current rows.
	if f.before, err = tablecheck.Rows(f.Ctx, tbl, 0); err != nil {
		t.Fatal(err)
	}
	dataDir := filepath.Join(f.dir, "metadata")
	before, _ := os.ReadDir(dataDir)
	job := &expire.Job{DeleteFiles: f.job.DeleteUnreferenced}
	out := f.Run(job.Definition(), jobs.Options{Now: f.now.Add(30 * day)})
	fig := out.Figures.(*expire.Figures)
	if out.Status != state.Successful || fig.FilesDeleted == 0 || len(fig.SchemasRemoved) != 1 {
		t.Fatalf("%+v %+v", out, fig)
	}
	after, _ := os.ReadDir(dataDir)
	if len(after) >= len(before) {
		t.Fatalf("metadata files %d → %d", len(before), len(after))
	}
	f.intact()
	tbl = f.Load()
	for _, s := range tbl.Metadata().Snapshots() {
		if _, err := tablecheck.Rows(f.Ctx, tbl, s.SnapshotID); err != nil {
			t.Fatalf("kept snapshot %d: %v", s.SnapshotID, err)
		}
	}
	// The crashed writer's strays were never referenced by any snapshot
	// and were not the expiration's to delete.
	if fig := f.mustRun(0); fig.Marked != 3 {
		t.Fatalf("strays after expiration: %+v", fig)
	}
}
