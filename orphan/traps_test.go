package orphan

import (
	"bytes"
	"context"
	"io"
	"math/rand/v2"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/icekeeper/icekeeper/configs"
	"github.com/icekeeper/icekeeper/internal/bucket"
	"github.com/icekeeper/icekeeper/internal/demo"
	"github.com/icekeeper/icekeeper/internal/state"
	"github.com/icekeeper/icekeeper/internal/testkit"
	"github.com/icekeeper/icekeeper/internal/testkit/servers"
	"github.com/icekeeper/icekeeper/internal/testkit/tablecheck"
	"github.com/icekeeper/icekeeper/jobs"
	"github.com/icekeeper/icekeeper/maintenance"
)

// objectStore is what the trap scenario needs of storage, addressed by
// the URIs table metadata uses.
type objectStore interface {
	put(t *testing.T, uri string, body []byte)
	get(t *testing.T, uri string) []byte
	exists(t *testing.T, uri string) bool
	// unclean are names under a table location, with "//" or "/./",
	// that storage resolves to their clean form.
	unclean() []string
}

type diskStore struct{}

func (diskStore) unclean() []string { return []string{"//data/dslash.parquet", "/./data/dot.parquet"} }

func (diskStore) file(uri string) string { return strings.TrimPrefix(uri, "file://") }

func (s diskStore) put(t *testing.T, uri string, body []byte) {
	t.Helper()
	p := s.file(uri)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, body, 0o644); err != nil {
		t.Fatal(err)
	}
}

func (s diskStore) get(t *testing.T, uri string) []byte {
	t.Helper()
	b, err := os.ReadFile(s.file(uri))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func (s diskStore) exists(t *testing.T, uri string) bool {
	_, err := os.Stat(s.file(uri))
	return err == nil
}

type s3Store struct{ srv servers.S3Server }

// unclean: none, since versitygw refuses a key with "//" or "/./"
// ("invalid argument"), so no table can reference one there.
func (s3Store) unclean() []string { return nil }

// key is the object key of uri, verbatim: what iceberg-go asks S3 for.
func (s s3Store) key(t *testing.T, uri string) string {
	t.Helper()
	k, ok := strings.CutPrefix(uri, "s3://"+s.srv.Bucket+"/")
	if !ok {
		t.Fatalf("%s is not in bucket %s", uri, s.srv.Bucket)
	}
	return k
}

func (s s3Store) put(t *testing.T, uri string, body []byte) {
	t.Helper()
	if _, err := s.srv.Client.PutObject(context.Background(), &s3.PutObjectInput{Bucket: aws.String(s.srv.Bucket), Key: aws.String(s.key(t, uri)), Body: bytes.NewReader(body)}); err != nil {
		t.Fatalf("put %s: %v", uri, err)
	}
}

func (s s3Store) get(t *testing.T, uri string) []byte {
	t.Helper()
	obj, err := s.srv.Client.GetObject(context.Background(), &s3.GetObjectInput{Bucket: aws.String(s.srv.Bucket), Key: aws.String(s.key(t, uri))})
	if err != nil {
		t.Fatal(err)
	}
	defer obj.Body.Close()
	b, err := io.ReadAll(obj.Body)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func (s s3Store) exists(t *testing.T, uri string) bool {
	_, err := s.srv.Client.HeadObject(context.Background(), &s3.HeadObjectInput{Bucket: aws.String(s.srv.Bucket), Key: aws.String(s.key(t, uri))})
	return err == nil
}

// trapRunner runs removal on one table of a bucket with the given knobs.
type trapRunner struct {
	t      *testing.T
	b      *bucket.Bucket
	store  state.Store
	job    *Job
	target jobs.Target
	now    time.Time
	knobs  maintenance.Knobs
}

func newTrapRunner(t *testing.T, b *bucket.Bucket, ns, name string) *trapRunner {
	store, err := state.Open(context.Background(), "sqlite://"+filepath.Join(t.TempDir(), "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	return &trapRunner{t: t, b: b, store: store, job: &Job{Store: store}, now: time.Now(),
		target: jobs.Target{Bucket: b, Table: bucket.TableID{Namespace: []string{ns}, Name: name}}}
}

func (r *trapRunner) resolver() *jobs.Resolver {
	return &jobs.Resolver{Store: r.store, Defaults: map[string]maintenance.BucketDefaults{r.b.ARN(): {Knobs: r.knobs}}}
}

// settings are the table's settings under the runner's knobs.
func (r *trapRunner) settings() maintenance.Settings {
	r.t.Helper()
	s, err := r.resolver().Table(context.Background(), r.target)
	if err != nil {
		r.t.Fatal(err)
	}
	return s
}

func (r *trapRunner) run(after time.Duration) (jobs.Outcome, *Figures) {
	r.t.Helper()
	runner := &jobs.Runner{Store: r.store, Resolver: r.resolver(), Jobs: jobs.Map(r.job.Definition())}
	out, err := runner.Run(context.Background(), r.target, maintenance.UnreferencedFileRemoval, "test", jobs.Options{Now: r.now.Add(after)})
	if err != nil {
		r.t.Fatal(err)
	}
	fig, _ := out.Figures.(*Figures)
	return out, fig
}

func (r *trapRunner) marks() []state.Mark {
	r.t.Helper()
	m, err := r.store.Marks(context.Background(), r.target.Key())
	if err != nil {
		r.t.Fatal(err)
	}
	return m
}

// sound asserts that every file reachable from tbl's metadata exists and
// that it scans to the rows it had.
func sound(t *testing.T, b *bucket.Bucket, id bucket.TableID, rows tablecheck.Fingerprint) {
	t.Helper()
	ctx := context.Background()
	tbl, err := b.LoadTable(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	missing, err := tablecheck.MissingFiles(ctx, tbl)
	if err != nil {
		t.Fatal(err)
	}
	if len(missing) > 0 {
		t.Fatalf("%s: reachable files deleted: %v", id, missing)
	}
	fp, err := tablecheck.Rows(ctx, tbl, 0)
	if err != nil {
		t.Fatal(err)
	}
	if !fp.Equal(rows) {
		t.Fatalf("%s: rows changed: %v, was %v", id, fp, rows)
	}
}

// runTraps is a removal run on a table beside every trap an attacker or an
// unlucky operator can set, on the storage behind b:
//   - objects named with a percent-encoded "..", which storage resolves
//     outside the table once decoded;
//   - another table registered inside the table's location;
//   - files the metadata names through "//" and "/./", which storage lists
//     under their clean names.
//
// Removal must refuse the table while the nested table is unconfigured,
// and with allowNestedTables delete exactly the genuine strays and the
// bait objects themselves, nothing outside the table, nothing of the
// nested table and nothing referenced.
//
// tableBucket says the catalog is a table bucket (SeaweedFS's, like S3
// Tables): it refuses to register a table inside another's location, and
// its S3 refuses objects outside the tables' locations and names that
// resolve there. The scenario then checks the first, and sets only the
// traps that can be set there.
func runTraps(t *testing.T, b *bucket.Bucket, st objectStore, tableBucket bool) {
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(3, 4))
	base := testkit.NewTable(t, b, "db", "base", demo.Schema())
	var err error
	for i := range 2 {
		if base, err = testkit.AppendRandom(ctx, base, 40, int64(i)*1000, rng); err != nil {
			t.Fatal(err)
		}
	}
	loc := strings.TrimSuffix(base.Location(), "/")
	// The nested table, where the catalog lets one be registered.
	cat, err := b.Catalog(ctx)
	if err != nil {
		t.Fatal(err)
	}
	nested, err := cat.CreateTable(ctx, table.Identifier{"db", "nested"}, demo.Schema(), catalog.WithLocation(loc+"/nested"))
	if tableBucket {
		if err == nil {
			t.Fatal("the catalog registered a table inside another's location")
		}
		t.Logf("the catalog refuses a nested table: %v", err)
	} else {
		if err != nil {
			t.Fatal(err)
		}
		if nested, err = testkit.AppendRandom(ctx, nested, 30, 5000, rng); err != nil {
			t.Fatal(err)
		}
	}

	// Files the metadata names through "//" and "/./": readable, since
	// storage resolves them, and listed under their clean names.
	tasks, err := base.Scan().PlanFiles(ctx)
	if err != nil {
		t.Fatal(err)
	}
	parquet := st.get(t, tasks[0].File.FilePath())
	var odd []string
	for _, name := range st.unclean() {
		st.put(t, loc+path.Clean(name), parquet)
		odd = append(odd, loc+name)
	}
	if len(odd) > 0 {
		tx := base.NewTransaction()
		if err := tx.AddFiles(ctx, odd, nil, false); err != nil {
			t.Fatal(err)
		}
		if base, err = tx.Commit(ctx); err != nil {
			t.Fatal(err)
		}
	}
	baseRows, err := tablecheck.Rows(ctx, base, 0)
	if err != nil {
		t.Fatal(err)
	}
	var nestedRows tablecheck.Fingerprint
	if !tableBucket {
		if nestedRows, err = tablecheck.Rows(ctx, nested, 0); err != nil {
			t.Fatal(err)
		}
	}

	// Bait whose decoded names lie outside the table, and the victims
	// they would reach: a live data file of a table beside this one, and
	// (where storage takes objects outside tables) a file three levels up.
	up := func(u string) string { return u[:strings.LastIndex(u, "/")] }
	parent := up(loc)
	sibling := testkit.NewTable(t, b, "db", "victim", demo.Schema())
	if sibling, err = testkit.AppendRandom(ctx, sibling, 10, 9000, rng); err != nil {
		t.Fatal(err)
	}
	siblingRows, err := tablecheck.Rows(ctx, sibling, 0)
	if err != nil {
		t.Fatal(err)
	}
	siblingTasks, err := sibling.Scan().PlanFiles(ctx)
	if err != nil {
		t.Fatal(err)
	}
	live := siblingTasks[0].File.FilePath()
	rel, ok := strings.CutPrefix(live, parent+"/")
	if !ok {
		t.Fatalf("the sibling's data file %s is not beside %s", live, loc)
	}
	// A table bucket's S3 refuses both the bait (it resolves "%2e%2e"
	// itself, and the name lands outside the table) and objects outside
	// tables: there the sibling's files are the victims of nothing but
	// the removal run itself.
	victims := []string{live}
	var bait []string
	if !tableBucket {
		victims = append(victims, up(parent)+"/victim2.parquet")
		bait = []string{loc + "/%2e%2e/" + rel, loc + "/data/%2e%2e/%2e%2e/%2e%2e/victim2.parquet"}
		st.put(t, victims[1], parquet)
	}
	strays := []string{loc + "/data/stray.parquet", loc + "/metadata/stray.avro"}
	for _, u := range slices.Concat(strays, bait) {
		st.put(t, u, parquet)
	}

	r := newTrapRunner(t, b, "db", "base")
	if !tableBucket {
		out, _ := r.run(4 * day)
		if out.Status != state.Failed || !strings.Contains(out.FailureMessage, "db.nested") || !strings.Contains(out.FailureMessage, "allowNestedTables") {
			t.Fatalf("a table holding another was not refused: %+v", out)
		}
		if m := r.marks(); len(m) != 0 {
			t.Fatalf("a refused run marked %d objects", len(m))
		}
		r.knobs.AllowNestedTables = true
	}
	out, fig := r.run(4 * day)
	if out.Status != state.Successful {
		t.Fatalf("+4d: %+v", out)
	}
	if want := len(bait) + len(strays); fig.Marked != want || (fig.OtherTables == 0) != tableBucket {
		t.Fatalf("+4d: marked %d (want %d: the bait and the strays), %d of the nested table's objects left alone (want some): %v",
			fig.Marked, want, fig.OtherTables, fig.MarkedPaths)
	}
	out, fig = r.run(15 * day)
	if out.Status != state.Successful || fig.Deleted != len(bait)+len(strays) {
		t.Fatalf("+15d: %+v %+v", out, fig)
	}
	for _, u := range victims {
		if !st.exists(t, u) {
			t.Errorf("%s, outside the table, was deleted", u)
			continue
		}
	}
	for _, u := range slices.Concat(strays, bait) {
		if st.exists(t, u) {
			t.Errorf("%s, unreferenced inside the table, survived", u)
		}
	}
	sound(t, b, r.target.Table, baseRows)
	sound(t, b, bucket.TableID{Namespace: []string{"db"}, Name: "victim"}, siblingRows)
	if !tableBucket {
		sound(t, b, bucket.TableID{Namespace: []string{"db"}, Name: "nested"}, nestedRows)
	}
}

// embeddedBucket is the embedded default's bucket in a fresh home.
func embeddedBucket(t *testing.T) *bucket.Bucket {
	reg := configs.Embedded(t.TempDir()).Registry()
	t.Cleanup(reg.Close)
	b, err := reg.Bucket("local")
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestTrapsOnLocalDisk(t *testing.T) {
	runTraps(t, embeddedBucket(t), diskStore{}, false)
}

// On S3 (versitygw, whose posix backend resolves "..", "//" and "/./" in
// keys as a file system does) with a SQL catalog on PostgreSQL.
func TestTrapsOnS3(t *testing.T) {
	srv := servers.S3(t)
	reg := sqlS3Config(t, srv).Registry()
	t.Cleanup(reg.Close)
	b, _ := reg.Bucket("lake")
	runTraps(t, b, s3Store{srv}, false)
}

// A table at the warehouse directory, where the catalog creates every
// other table, is refused even before another table exists there.
func TestWarehouseLocationRefused(t *testing.T) {
	b := embeddedBucket(t)
	wh := b.Properties()["warehouse"]
	testkit.NewTable(t, b, "db", "everything", demo.Schema(), catalog.WithLocation(wh))
	r := newTrapRunner(t, b, "db", "everything")
	out, _ := r.run(4 * day)
	if out.Status != state.Failed || !strings.Contains(out.FailureMessage, "the warehouse") {
		t.Fatalf("a table at the warehouse directory was not refused: %+v", out)
	}
	r.knobs.AllowNestedTables = true
	if out, _ := r.run(4 * day); out.Status != state.Successful {
		t.Fatalf("with allowNestedTables: %+v", out)
	}
}

// A file the snapshots need that the listing lacks fails the run, naming
// it, before anything is marked: the table is broken, or storage names
// objects otherwise than its metadata, and what looks unreferenced may be
// live.
func TestReferencedFileMissingFailsRun(t *testing.T) {
	b := embeddedBucket(t)
	ctx := context.Background()
	tbl := testkit.NewTable(t, b, "db", "t", demo.Schema())
	var err error
	if tbl, err = testkit.AppendRandom(ctx, tbl, 20, 0, rand.New(rand.NewPCG(1, 2))); err != nil {
		t.Fatal(err)
	}
	tasks, err := tbl.Scan().PlanFiles(ctx)
	if err != nil {
		t.Fatal(err)
	}
	lost := tasks[0].File.FilePath()
	if err := os.Remove(strings.TrimPrefix(lost, "file://")); err != nil {
		t.Fatal(err)
	}
	diskStore{}.put(t, strings.TrimSuffix(tbl.Location(), "/")+"/data/stray.parquet", []byte("stray"))
	r := newTrapRunner(t, b, "db", "t")
	out, _ := r.run(4 * day)
	if out.Status != state.Failed || !strings.Contains(out.FailureMessage, lost) {
		t.Fatalf("a missing data file did not fail the run with its path: %+v", out)
	}
	if m := r.marks(); len(m) != 0 {
		t.Fatalf("the failed run marked %d objects", len(m))
	}
}

// Through the REST catalog and S3 of SeaweedFS, as users run it.
func TestTrapsOnREST(t *testing.T) {
	srv := servers.REST(t)
	cfg := configs.Embedded(t.TempDir())
	cfg.Buckets[0].Catalog = srv.Props()
	reg := cfg.Registry()
	t.Cleanup(reg.Close)
	b, _ := reg.Bucket("local")
	runTraps(t, b, s3Store{srv.S3()}, true)
}
