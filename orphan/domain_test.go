package orphan

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/apache/iceberg-go/catalog"

	"github.com/icekeeper/icekeeper/configs"
	"github.com/icekeeper/icekeeper/internal/bucket"
	"github.com/icekeeper/icekeeper/internal/demo"
	"github.com/icekeeper/icekeeper/internal/state"
	"github.com/icekeeper/icekeeper/internal/testkit"
	"github.com/icekeeper/icekeeper/internal/testkit/servers"
	"github.com/icekeeper/icekeeper/internal/testkit/tablecheck"
)

// domainBuckets are two configured buckets, one and two, over the
// catalogs one and two (their properties), opened under catalogNames[0]
// and catalogNames[1].
func domainBuckets(t *testing.T, one, two map[string]string, catalogNames ...string) (*bucket.Bucket, *bucket.Bucket) {
	t.Helper()
	var y strings.Builder
	y.WriteString("state: sqlite://state.db\nbuckets:\n")
	for i, props := range []map[string]string{one, two} {
		var kv []string
		for _, k := range slices.Sorted(maps.Keys(props)) {
			kv = append(kv, fmt.Sprintf("%q: %q", k, props[k]))
		}
		name := []string{"one", "two"}[i]
		fmt.Fprintf(&y, "  - arn: arn:aws:s3tables:us-east-1:1:bucket/%s\n    catalogName: %s\n    catalog: {%s}\n", name, catalogNames[i], strings.Join(kv, ", "))
	}
	cfg, err := configs.Parse("test.yaml", []byte(y.String()), nil)
	if err != nil {
		t.Fatal(err)
	}
	reg := cfg.Registry()
	t.Cleanup(reg.Close)
	b1, err := reg.Bucket("one")
	if err != nil {
		t.Fatal(err)
	}
	b2, err := reg.Bucket("two")
	if err != nil {
		t.Fatal(err)
	}
	return b1, b2
}

// sqliteDomain is two catalog names of one SQLite catalog, its URI
// spelt two ways (another path spelling, other pragmas), over one
// warehouse on local disk.
func sqliteDomain(t *testing.T) (*bucket.Bucket, *bucket.Bucket, objectStore) {
	dir := t.TempDir()
	wh := "file://" + filepath.Join(dir, "warehouse")
	one := map[string]string{"type": "sql", "warehouse": wh,
		"uri": "file:" + filepath.Join(dir, "catalog.db") + "?mode=rwc&_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_txlock=immediate"}
	two := map[string]string{"type": "sql", "warehouse": wh,
		"uri": "file:" + dir + "//catalog.db?_txlock=immediate&mode=rwc&_pragma=busy_timeout(10000)"}
	b1, b2 := domainBuckets(t, one, two, "team1", "team2")
	return b1, b2, diskStore{}
}

// postgresDomain is two catalog names of one SQL catalog on PostgreSQL,
// one URI with connect_timeout and one without, over one warehouse on S3
// (versitygw).
func postgresDomain(t *testing.T) (*bucket.Bucket, *bucket.Bucket, objectStore) {
	srv := servers.S3(t)
	db := servers.Postgres(t)
	props := func(uri string) map[string]string {
		p := srv.Props()
		p["type"], p["uri"], p["warehouse"] = "sql", uri, "s3://"+srv.Bucket+"/warehouse"
		return p
	}
	sep := "?"
	if strings.Contains(db, "?") {
		sep = "&"
	}
	b1, b2 := domainBuckets(t, props(db), props(db+sep+"connect_timeout=5"), "team1", "team2")
	return b1, b2, s3Store{srv}
}

func TestDomainBuckets(t *testing.T) {
	b1, b2, _ := sqliteDomain(t)
	if d := b1.Domain(); len(d) != 2 || d[0] != b1 || d[1] != b2 {
		t.Fatalf("the domain of bucket one is %v, want one and two", d)
	}
	if b2.Lists() != b2 || b1.Lists() != b1 {
		t.Fatal("two catalog names were taken for one catalog")
	}
	id := bucket.TableID{Namespace: []string{"db"}, Name: "t"}
	if got := b2.TableName(id, b1); got != "two/db.t" {
		t.Fatalf("bucket two's table as bucket one names it: %q", got)
	}
	if got := b1.TableName(id, b1); got != "db.t" {
		t.Fatalf("bucket one's own table: %q", got)
	}
}

// Two teams write under two catalog names of one catalog database, into
// one warehouse. Bucket two's tables reference files under bucket one's
// table a (a snapshot-procedure table, an add_files'd file a never
// referenced, a writer's write.folder-storage.path inside a): a's removal
// is refused while bucket two's folder table lies inside it, naming it
// with its bucket; with allowNestedTables its marking run and its
// deleting run after the window take the stray and a's own expired
// metadata only, and every table of both buckets scans to its rows.
func TestDomainKeepsAnotherBucketsFiles(t *testing.T) {
	b1, b2, st := sqliteDomain(t)
	runSharedIn(t, b1, b2, st, false)
}

func TestDomainKeepsAnotherBucketsFilesOnS3(t *testing.T) {
	b1, b2, st := postgresDomain(t)
	runSharedIn(t, b1, b2, st, false)
}

// A table of bucket two, named as bucket one's table is (db.a: another
// table all the same), lies inside bucket one's a: a's removal fails
// with ErrSharedLocation naming two/db.a; with allowNestedTables it
// removes around it, taking only a's stray, and bucket two's db.a keeps
// every file and its rows.
func runDomainNested(t *testing.T, b1, b2 *bucket.Bucket, st objectStore) {
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(11, 12))
	a := testkit.NewTable(t, b1, "db", "a", demo.Schema())
	var err error
	if a, err = testkit.AppendRandom(ctx, a, 20, 0, rng); err != nil {
		t.Fatal(err)
	}
	aRows, err := tablecheck.Rows(ctx, a, 0)
	if err != nil {
		t.Fatal(err)
	}
	loc := strings.TrimSuffix(a.Location(), "/")
	inner := testkit.NewTable(t, b2, "db", "a", demo.Schema(), catalog.WithLocation(loc+"/data/inner"))
	for i := range 2 {
		if inner, err = testkit.AppendRandom(ctx, inner, 10, 1000+int64(i)*100, rng); err != nil {
			t.Fatal(err)
		}
	}
	innerRows, err := tablecheck.Rows(ctx, inner, 0)
	if err != nil {
		t.Fatal(err)
	}
	innerFiles, err := tablecheck.ReachableFiles(ctx, inner)
	if err != nil {
		t.Fatal(err)
	}
	tasks, err := a.Scan().PlanFiles(ctx)
	if err != nil {
		t.Fatal(err)
	}
	stray := loc + "/data/stray.parquet"
	st.put(t, stray, st.get(t, tasks[0].File.FilePath()))

	r := newTrapRunner(t, b1, "db", "a")
	out, _ := r.run(4 * day)
	if out.Status != state.Failed || !strings.Contains(out.FailureMessage, ErrSharedLocation.Error()) || !strings.Contains(out.FailureMessage, "two/db.a at ") {
		t.Fatalf("bucket two's table inside a was not refused, named with its bucket: %+v", out)
	}
	r.knobs.AllowNestedTables = true
	out, fig := r.run(4 * day)
	if out.Status != state.Successful || !slices.Equal(fig.MarkedPaths, []string{stray}) || fig.OtherTables == 0 {
		t.Fatalf("+4d: %+v, marked %v (want only %s), %d objects of other tables left alone", out, fig.MarkedPaths, stray, fig.OtherTables)
	}
	if fig.Bucket.Tables != 1 {
		t.Fatalf("a's run saw %d other tables, want bucket two's db.a: %+v", fig.Bucket.Tables, fig.Bucket)
	}
	if out, fig = r.run(15 * day); out.Status != state.Successful || !slices.Equal(fig.DeletedPaths, []string{stray}) {
		t.Fatalf("+15d: %+v, deleted %v", out, fig.DeletedPaths)
	}
	for _, p := range innerFiles {
		if !st.exists(t, p) {
			t.Errorf("%s of bucket two's table was deleted", p)
		}
	}
	sound(t, b1, bucket.TableID{Namespace: []string{"db"}, Name: "a"}, aRows)
	sound(t, b2, bucket.TableID{Namespace: []string{"db"}, Name: "a"}, innerRows)
}

func TestDomainNestedTable(t *testing.T) {
	b1, b2, st := sqliteDomain(t)
	runDomainNested(t, b1, b2, st)
}

func TestDomainNestedTableOnS3(t *testing.T) {
	b1, b2, st := postgresDomain(t)
	runDomainNested(t, b1, b2, st)
}

// Two entries over one catalog under one name (other namespace filters,
// say) list the same tables: a table reached through the other entry is
// the table itself, not another one inside it, and its removal runs.
func TestTwoEntriesOverOneCatalog(t *testing.T) {
	dir := t.TempDir()
	props := map[string]string{"type": "sql", "warehouse": "file://" + filepath.Join(dir, "warehouse"),
		"uri": "file:" + filepath.Join(dir, "catalog.db") + "?mode=rwc&_pragma=busy_timeout(10000)&_txlock=immediate"}
	b1, b2 := domainBuckets(t, props, props, "lake", "lake")
	if b2.Lists() != b1 {
		t.Fatal("two entries over one catalog were taken for two catalogs")
	}
	ctx := context.Background()
	a := testkit.NewTable(t, b1, "db", "a", demo.Schema())
	a, err := testkit.AppendRandom(ctx, a, 20, 0, rand.New(rand.NewPCG(1, 1)))
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range []*bucket.Bucket{b1, b2} {
		out, fig := newTrapRunner(t, b, "db", "a").run(4 * day)
		if out.Status != state.Successful || fig.Bucket.Tables != 0 {
			t.Fatalf("removal of db.a through bucket %s: %+v, %+v", b.Name(), out, fig.Bucket)
		}
	}
}
