package orphan

import (
	"context"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/icekeeper/icekeeper/configs"
	"github.com/icekeeper/icekeeper/internal/bucket"
	"github.com/icekeeper/icekeeper/internal/demo"
	"github.com/icekeeper/icekeeper/internal/state"
	"github.com/icekeeper/icekeeper/internal/testkit"
	"github.com/icekeeper/icekeeper/internal/testkit/servers"
	"github.com/icekeeper/icekeeper/internal/testkit/tablecheck"
)

// sharedTables is a bucket whose tables share files the ways Iceberg's
// own procedures make them share: the table under test, a, and
//   - snap, a snapshot-procedure table: its own location, a's data files;
//   - added, which add_files'd a file under a's location that a never
//     referenced;
//   - folder (where the catalog takes a table whose location is inside
//     another's), whose writer puts its data under a through Java's
//     write.folder-storage.path.
//
// a then replaces every row and expires its old snapshots, so that none
// of the files the others reference is a's any more, and a stray lands
// in a's data directory: the only object a's removal may take.
//
// The others are in ob, a's bucket or another of its reference domain.
type sharedTables struct {
	b, ob   *bucket.Bucket
	a       *table.Table
	stray   string
	shared  []string // files under a's location that other tables reference
	rows    map[string]tablecheck.Fingerprint
	tableIn bool // folder exists
}

func newSharedTables(t *testing.T, b *bucket.Bucket, st objectStore, tableBucket bool) *sharedTables {
	return newSharedTablesIn(t, b, b, st, tableBucket)
}

// newSharedTablesIn is newSharedTables with the other tables in ob.
func newSharedTablesIn(t *testing.T, b, ob *bucket.Bucket, st objectStore, tableBucket bool) *sharedTables {
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(5, 6))
	s := &sharedTables{b: b, ob: ob, rows: map[string]tablecheck.Fingerprint{}}
	a := testkit.NewTable(t, b, "db", "a", demo.Schema())
	var err error
	for i := range 3 {
		if a, err = testkit.AppendRandom(ctx, a, 20, int64(i)*100, rng); err != nil {
			t.Fatal(err)
		}
	}
	loc := strings.TrimSuffix(a.Location(), "/")
	tasks, err := a.Scan().PlanFiles(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var aFiles []string
	for _, task := range tasks {
		aFiles = append(aFiles, task.File.FilePath())
	}
	parquet := st.get(t, aFiles[0])

	addFiles := func(tbl *table.Table, paths ...string) *table.Table {
		t.Helper()
		tx := tbl.NewTransaction()
		if err := tx.AddFiles(ctx, paths, nil, false); err != nil {
			t.Fatal(err)
		}
		tbl, err := tx.Commit(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return tbl
	}
	addFiles(testkit.NewTable(t, ob, "db", "snap", demo.Schema()), aFiles...)
	s.shared = append(s.shared, aFiles...)

	imported := loc + "/data/imported/from-added.parquet"
	st.put(t, imported, parquet)
	addFiles(testkit.NewTable(t, ob, "db", "added", demo.Schema()), imported)
	s.shared = append(s.shared, imported)

	cat, err := ob.Catalog(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// Under data/: a table bucket's S3 takes objects only there and under
	// metadata/.
	folder := loc + "/data/folder-storage"
	_, err = cat.CreateTable(ctx, table.Identifier{"db", "folder"}, demo.Schema(), catalog.WithProperties(iceberg.Properties{"write.folder-storage.path": folder}))
	switch {
	case err != nil && tableBucket:
		t.Logf("the catalog refuses write.folder-storage.path inside another table: %v", err)
	case err != nil:
		t.Fatal(err)
	default:
		s.tableIn = true
		f, err := ob.LoadTable(ctx, bucket.TableID{Namespace: []string{"db"}, Name: "folder"})
		if err != nil {
			t.Fatal(err)
		}
		st.put(t, folder+"/written.parquet", parquet)
		addFiles(f, folder+"/written.parquet")
	}

	// a replaces its rows and forgets its old snapshots: its first files
	// are referenced only by snap now, the imported one only by added.
	tx := a.NewTransaction()
	if err := tx.Delete(ctx, iceberg.AlwaysTrue{}, nil); err != nil {
		t.Fatal(err)
	}
	if a, err = tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if a, err = testkit.AppendRandom(ctx, a, 20, 1000, rng); err != nil {
		t.Fatal(err)
	}
	tx = a.NewTransaction()
	if err := tx.ExpireSnapshots(table.WithOlderThan(0), table.WithRetainLast(1), table.WithPostCommit(false)); err != nil {
		t.Fatal(err)
	}
	if s.a, err = tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if n := len(s.a.Metadata().Snapshots()); n != 1 {
		t.Fatalf("a kept %d snapshots", n)
	}
	s.stray = loc + "/data/stray.parquet"
	st.put(t, s.stray, parquet)

	ids := []string{"a", "snap", "added"}
	if s.tableIn {
		ids = append(ids, "folder")
	}
	for _, name := range ids {
		tbl, err := s.of(name).LoadTable(ctx, bucket.TableID{Namespace: []string{"db"}, Name: name})
		if err != nil {
			t.Fatal(err)
		}
		if s.rows[name], err = tablecheck.Rows(ctx, tbl, 0); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

// of is the bucket of the table name.
func (s *sharedTables) of(name string) *bucket.Bucket {
	if name == "a" {
		return s.b
	}
	return s.ob
}

// named is the table name as a's runs name it: with its bucket when it
// is in another.
func (s *sharedTables) named(name string) string {
	return s.of(name).TableName(bucket.TableID{Namespace: []string{"db"}, Name: name}, s.b)
}

// onlyStrays reports whether paths hold the stray and otherwise only a's
// metadata files (its expired snapshots').
func (s *sharedTables) onlyStrays(paths []string) bool {
	meta := strings.TrimSuffix(s.a.Location(), "/") + "/metadata/"
	return slices.Contains(paths, s.stray) && !slices.ContainsFunc(paths, func(p string) bool {
		return p != s.stray && !strings.HasPrefix(p, meta)
	})
}

// sound asserts every table still scans to its rows, nothing it reaches
// deleted.
func (s *sharedTables) sound(t *testing.T) {
	t.Helper()
	for name, rows := range s.rows {
		sound(t, s.of(name), bucket.TableID{Namespace: []string{"db"}, Name: name}, rows)
	}
}

// runShared runs a's removal beside the tables that share its location:
// it refuses a while folder's prefix is inside it, then with
// allowNestedTables marks and deletes the stray and nothing else.
func runShared(t *testing.T, b *bucket.Bucket, st objectStore, tableBucket bool) {
	runSharedIn(t, b, b, st, tableBucket)
}

// runSharedIn is runShared with the other tables in ob.
func runSharedIn(t *testing.T, b, ob *bucket.Bucket, st objectStore, tableBucket bool) {
	s := newSharedTablesIn(t, b, ob, st, tableBucket)
	r := newTrapRunner(t, b, "db", "a")
	if s.tableIn {
		out, _ := r.run(4 * day)
		if out.Status != state.Failed || !strings.Contains(out.FailureMessage, ErrSharedLocation.Error()) || !strings.Contains(out.FailureMessage, s.named("folder")+" at ") {
			t.Fatalf("a table whose write.folder-storage.path is inside a was not refused: %+v", out)
		}
		r.knobs.AllowNestedTables = true
	}
	out, fig := r.run(4 * day)
	if out.Status != state.Successful {
		t.Fatalf("+4d: %+v", out)
	}
	// The stray, and the manifest lists and manifests of a's expired
	// snapshots.
	if !s.onlyStrays(fig.MarkedPaths) || fig.ReferencedByOthers != len(s.shared) {
		t.Fatalf("+4d: marked %v (want %s and a's expired metadata), %d objects kept for other tables (want %d)", fig.MarkedPaths, s.stray, fig.ReferencedByOthers, len(s.shared))
	}
	marked := fig.Marked
	if fig.Bucket.References < len(s.shared) {
		t.Fatalf("the other tables reference %d paths under a, want at least %d: %+v", fig.Bucket.References, len(s.shared), fig.Bucket)
	}
	out, fig = r.run(15 * day)
	if out.Status != state.Successful || fig.Deleted != marked || !s.onlyStrays(fig.DeletedPaths) {
		t.Fatalf("+15d: %+v, deleted %v", out, fig.DeletedPaths)
	}
	for _, p := range s.shared {
		if !st.exists(t, p) {
			t.Errorf("%s, which another table references, was deleted", p)
		}
	}
	s.sound(t)
}

func TestSharedFilesOnLocalDisk(t *testing.T) {
	runShared(t, embeddedBucket(t), diskStore{}, false)
}

func TestSharedFilesOnS3(t *testing.T) {
	srv := servers.S3(t)
	reg := sqlS3Config(t, srv).Registry()
	t.Cleanup(reg.Close)
	b, _ := reg.Bucket("lake")
	runShared(t, b, s3Store{srv}, false)
}

func TestSharedFilesOnREST(t *testing.T) {
	srv := servers.REST(t)
	cfg := configs.Embedded(t.TempDir())
	cfg.Buckets[0].Catalog = srv.Props()
	reg := cfg.Registry()
	t.Cleanup(reg.Close)
	b, _ := reg.Bucket("local")
	runShared(t, b, s3Store{srv.S3()}, true)
}

// Snapshot management's immediate deletion of the files its expired
// snapshots reached asks the same question: a file another table
// references stays.
func TestExpireKeepsSharedFiles(t *testing.T) {
	b := embeddedBucket(t)
	s := newSharedTables(t, b, diskStore{}, false)
	r := newTrapRunner(t, b, "db", "a")
	r.knobs.AllowNestedTables = true
	n, err := r.job.DeleteUnreferenced(context.Background(), r.target, r.settings(), append(slices.Clone(s.shared), s.stray))
	if err != nil || n != 1 {
		t.Fatalf("deleted %d (want 1, the stray): %v", n, err)
	}
	if exists(s.stray) {
		t.Fatal("the stray survived")
	}
	s.sound(t)
}

// Symlinks: a warehouse reachable by two paths. a references one of its
// own files through an alias of its directory, and a table registered at
// a symlinked path lives inside a's directory.
func TestSymlinkedPaths(t *testing.T) {
	ctx := context.Background()
	b := embeddedBucket(t)
	rng := rand.New(rand.NewPCG(7, 8))
	a := testkit.NewTable(t, b, "db", "a", demo.Schema())
	var err error
	if a, err = testkit.AppendRandom(ctx, a, 20, 0, rng); err != nil {
		t.Fatal(err)
	}
	dir := strings.TrimPrefix(strings.TrimSuffix(a.Location(), "/"), "file://")
	tasks, err := a.Scan().PlanFiles(ctx)
	if err != nil {
		t.Fatal(err)
	}
	body := diskStore{}.get(t, tasks[0].File.FilePath())

	// An alias of a's directory beside it, and a file of a's referenced
	// through it.
	alias := filepath.Join(filepath.Dir(dir), "alias")
	if err := os.Symlink(dir, alias); err != nil {
		t.Fatal(err)
	}
	diskStore{}.put(t, "file://"+dir+"/data/aliased.parquet", body)
	tx := a.NewTransaction()
	if err := tx.AddFiles(ctx, []string{alias + "/data/aliased.parquet"}, nil, false); err != nil {
		t.Fatal(err)
	}
	if a, err = tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	aRows, err := tablecheck.Rows(ctx, a, 0)
	if err != nil {
		t.Fatal(err)
	}

	// A table registered at a path that resolves inside a.
	if err := os.MkdirAll(filepath.Join(dir, "c-real"), 0o755); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(filepath.Dir(dir), "c-link")
	if err := os.Symlink(filepath.Join(dir, "c-real"), link); err != nil {
		t.Fatal(err)
	}
	c := testkit.NewTable(t, b, "db", "c", demo.Schema(), catalog.WithLocation("file://"+link))
	if c, err = testkit.AppendRandom(ctx, c, 10, 500, rng); err != nil {
		t.Fatal(err)
	}
	cRows, err := tablecheck.Rows(ctx, c, 0)
	if err != nil {
		t.Fatal(err)
	}
	stray := "file://" + dir + "/data/stray.parquet"
	diskStore{}.put(t, stray, body)

	r := newTrapRunner(t, b, "db", "a")
	out, _ := r.run(4 * day)
	if out.Status != state.Failed || !strings.Contains(out.FailureMessage, "db.c") {
		t.Fatalf("a table registered at a symlink into a was not refused: %+v", out)
	}
	r.knobs.AllowNestedTables = true
	out, fig := r.run(4 * day)
	if out.Status != state.Successful || fig.Marked != 1 || !strings.HasSuffix(fig.MarkedPaths[0], "/data/stray.parquet") {
		t.Fatalf("+4d: %+v, marked %v (want only the stray)", out, fig.MarkedPaths)
	}
	if fig.OtherTables == 0 {
		t.Fatalf("c's objects were not left alone as another table's: %+v", fig.RemovalPlan)
	}
	if out, fig = r.run(15 * day); out.Status != state.Successful || fig.Deleted != 1 {
		t.Fatalf("+15d: %+v, deleted %v", out, fig.DeletedPaths)
	}
	sound(t, b, r.target.Table, aRows)
	sound(t, b, bucket.TableID{Namespace: []string{"db"}, Name: "c"}, cRows)
}

// On a catalog that cannot give every table's metadata file in one query
// (REST), a marking run may use a view of the bucket up to viewTTL old;
// the re-check before deleting loads every table afresh. A file another
// table started to reference after it was marked is kept when it falls
// due, and its mark dropped.
func TestStaleViewRecheckOnREST(t *testing.T) {
	srv := servers.REST(t)
	cfg := configs.Embedded(t.TempDir())
	cfg.Buckets[0].Catalog = srv.Props()
	reg := cfg.Registry()
	t.Cleanup(reg.Close)
	b, _ := reg.Bucket("local")
	st := s3Store{srv.S3()}
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(3, 3))
	a := testkit.NewTable(t, b, "db", "a", demo.Schema())
	var err error
	if a, err = testkit.AppendRandom(ctx, a, 10, 0, rng); err != nil {
		t.Fatal(err)
	}
	later := testkit.NewTable(t, b, "db", "later", demo.Schema())
	tasks, err := a.Scan().PlanFiles(ctx)
	if err != nil {
		t.Fatal(err)
	}
	stray := strings.TrimSuffix(a.Location(), "/") + "/data/stray.parquet"
	st.put(t, stray, st.get(t, tasks[0].File.FilePath()))

	r := newTrapRunner(t, b, "db", "a")
	if out, fig := r.run(4 * day); out.Status != state.Successful || !slices.Contains(fig.MarkedPaths, stray) {
		t.Fatalf("+4d: %+v, marked %v", out, fig.MarkedPaths)
	}
	// After the mark, another table takes the stray in.
	tx := later.NewTransaction()
	if err := tx.AddFiles(ctx, []string{stray}, nil, false); err != nil {
		t.Fatal(err)
	}
	if later, err = tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	rows, err := tablecheck.Rows(ctx, later, 0)
	if err != nil {
		t.Fatal(err)
	}
	out, fig := r.run(15 * day)
	if out.Status != state.Successful || fig.RecheckKept != 1 || slices.Contains(fig.DeletedPaths, stray) || !st.exists(t, stray) {
		t.Fatalf("+15d: %+v, deleted %v, kept on re-check %d", out, fig.DeletedPaths, fig.RecheckKept)
	}
	if m := r.marks(); slices.ContainsFunc(m, func(m state.Mark) bool { return m.Path == stray }) {
		t.Fatal("the mark of a file another table references now was kept")
	}
	sound(t, b, bucket.TableID{Namespace: []string{"db"}, Name: "later"}, rows)
}
