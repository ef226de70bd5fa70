package erasure

import (
	"bytes"
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/parquet-go/parquet-go"

	"github.com/icekeeper/icekeeper/compactor"
	"github.com/icekeeper/icekeeper/configs"
	"github.com/icekeeper/icekeeper/expire"
	"github.com/icekeeper/icekeeper/internal/arn"
	"github.com/icekeeper/icekeeper/internal/bucket"
	"github.com/icekeeper/icekeeper/internal/rebase"
	"github.com/icekeeper/icekeeper/internal/state"
	"github.com/icekeeper/icekeeper/internal/testkit"
	"github.com/icekeeper/icekeeper/internal/testkit/servers"
	"github.com/icekeeper/icekeeper/internal/testkit/tablecheck"
	"github.com/icekeeper/icekeeper/internal/testkit/tableenv"
	"github.com/icekeeper/icekeeper/jobs"
	"github.com/icekeeper/icekeeper/maintenance"
	"github.com/icekeeper/icekeeper/orphan"
	"github.com/icekeeper/icekeeper/planner"
)

const deadlineDays = 7

// env is a table and every job type's executor, erasure enabled with a
// seven-day deadline.
type env struct {
	*tableenv.Env
	removal *orphan.Job
	erasure *Job
	runner  *jobs.Runner
	// deleted are the ids of the row versions the table removed; ids are
	// never written twice, so a stored id is a stored removed version.
	deleted []int64
	// raw reads the table's storage directly, not through the table.
	raw rawStore
}

func newEnv(t testing.TB, e *tableenv.Env) *env {
	e.Defaults.Configs[maintenance.Erasure] = maintenance.Config{Status: maintenance.Enabled,
		Settings: &maintenance.ErasureSettings{DeadlineDays: maintenance.Int(deadlineDays)}}
	removal := &orphan.Job{Store: e.Store}
	er := &Job{DeleteFiles: removal.DeleteUnreferenced, Unreferenced: removal.Unreferenced, Holders: removal.Holders, Blocks: e.Store}
	runner := e.Runner(er.Definition())
	runner.Jobs = jobs.Map(er.Definition(), (&compactor.Job{}).Definition(),
		(&expire.Job{DeleteFiles: removal.DeleteUnreferenced}).Definition(), removal.Definition())
	return &env{Env: e, removal: removal, erasure: er, runner: runner, raw: diskStore{}}
}

// cdc makes the table a change stream's: four appends, then three
// checkpoints that each remove row versions — by position deletes (or
// deletion vectors on v3), by an equality delete, and by position deletes
// beside new rows, as an upsert does.
func (e *env) cdc(tbl *table.Table) *table.Table {
	for range 4 {
		tbl = e.Append(tbl, 50)
	}
	for i, ids := range [][]int64{{3, 17, 60, 111, 190}, {5, 70, 120, 150}, {8, 99, 180}} {
		if i == 1 {
			tbl = e.EqDelete(tbl, ids...)
		} else {
			tbl = e.PosDelete(tbl, ids...)
		}
		e.deleted = append(e.deleted, ids...)
		if i == 2 {
			tbl = e.Append(tbl, 30)
		}
	}
	return tbl
}

// jobsNow are the options of a run at after from now.
func jobsNow(after time.Duration) jobs.Options { return jobs.Options{Now: time.Now().Add(after)} }

// run runs typ at now, failing the test unless the run's status is want.
func (e *env) run(typ maintenance.JobType, now time.Time, want string) jobs.Outcome {
	e.T.Helper()
	out, err := e.runner.Run(e.Ctx, e.Target(), typ, "test", jobs.Options{Now: now})
	if err != nil {
		e.T.Fatalf("%s: %v", typ, err)
	}
	if string(out.Status) != want {
		e.T.Fatalf("%s: %s (%s), want %s", typ, out.Status, out.FailureMessage, want)
	}
	return out
}

func figures(t *testing.T, out jobs.Outcome) *Figures {
	t.Helper()
	fig, ok := out.Figures.(*Figures)
	if !ok {
		t.Fatalf("figures %T", out.Figures)
	}
	testkit.CheckCounters(t, maintenance.Erasure, fig)
	return fig
}

// stored reads every Parquet object under the table's location raw, not
// through the table, and returns the removed ids each still holds, and
// every Parquet object's URI.
func (e *env) stored(tbl *table.Table) (holding map[string][]int64, parquets []string) {
	e.T.Helper()
	gone := map[int64]bool{}
	for _, id := range e.deleted {
		gone[id] = true
	}
	holding = map[string][]int64{}
	for _, p := range e.raw.objects(e.T, tbl.Location()) {
		if !strings.HasSuffix(p, ".parquet") {
			continue
		}
		parquets = append(parquets, p)
		for _, id := range rawIDs(e.T, p, e.raw.read(e.T, p)) {
			if gone[id] {
				holding[p] = append(holding[p], id)
			}
		}
	}
	return holding, parquets
}

// rawIDs reads the id column of a Parquet file with parquet-go.
func rawIDs(t testing.TB, path string, body []byte) []int64 {
	t.Helper()
	pf, err := parquet.OpenFile(bytes.NewReader(body), int64(len(body)))
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	col, ok := pf.Schema().Lookup("id")
	if !ok {
		return nil // a position delete file: paths and positions
	}
	var ids []int64
	for _, rg := range pf.RowGroups() {
		pages := rg.ColumnChunks()[col.ColumnIndex].Pages()
		for {
			p, err := pages.ReadPage()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			vals := make([]parquet.Value, p.NumValues())
			n, err := p.Values().ReadValues(vals)
			if err != nil && !errors.Is(err, io.EOF) {
				t.Fatal(err)
			}
			for _, v := range vals[:n] {
				ids = append(ids, v.Int64())
			}
		}
		pages.Close()
	}
	return ids
}

// rawStore is a table's storage read directly.
type rawStore interface {
	// objects lists every object under loc, by URI.
	objects(t testing.TB, loc string) []string
	read(t testing.TB, uri string) []byte
}

type diskStore struct{}

func (diskStore) objects(t testing.TB, loc string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(strings.TrimPrefix(loc, "file://"), func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			out = append(out, "file://"+p)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func (diskStore) read(t testing.TB, uri string) []byte {
	t.Helper()
	b, err := os.ReadFile(strings.TrimPrefix(uri, "file://"))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

type s3Store struct{ c *s3.Client }

func (s s3Store) objects(t testing.TB, loc string) []string {
	t.Helper()
	bucket, prefix, _ := strings.Cut(strings.TrimPrefix(loc, "s3://"), "/")
	var out []string
	p := s3.NewListObjectsV2Paginator(s.c, &s3.ListObjectsV2Input{Bucket: aws.String(bucket), Prefix: aws.String(strings.TrimSuffix(prefix, "/") + "/")})
	for p.HasMorePages() {
		page, err := p.NextPage(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range page.Contents {
			out = append(out, "s3://"+bucket+"/"+aws.ToString(o.Key))
		}
	}
	return out
}

func (s s3Store) read(t testing.TB, uri string) []byte {
	t.Helper()
	bucket, key, _ := strings.Cut(strings.TrimPrefix(uri, "s3://"), "/")
	out, err := s.c.GetObject(context.Background(), &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
	if err != nil {
		t.Fatal(err)
	}
	defer out.Body.Close()
	b, err := io.ReadAll(out.Body)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// settled fails unless no stored object holds a removed version, every
// Parquet object under the location is a live data file, no delete file is
// live, nothing reachable is missing, and the visible rows are want.
func (e *env) settled(want tablecheck.Fingerprint) {
	e.T.Helper()
	tbl := e.Load()
	holding, parquets := e.stored(tbl)
	if len(holding) > 0 {
		e.T.Errorf("removed row versions still stored: %v", holding)
	}
	tasks, err := tbl.Scan().PlanFiles(e.Ctx)
	if err != nil {
		e.T.Fatal(err)
	}
	live := map[string]bool{}
	for _, task := range tasks {
		live[task.File.FilePath()] = true
		if n := len(task.DeleteFiles) + len(task.EqualityDeleteFiles) + len(task.DeletionVectorFiles); n > 0 {
			e.T.Errorf("%s still has %d delete files", task.File.FilePath(), n)
		}
	}
	for _, p := range parquets {
		if !live[p] {
			e.T.Errorf("stored, and not a live data file: %s", p)
		}
	}
	if missing, err := tablecheck.MissingFiles(e.Ctx, tbl); err != nil || len(missing) > 0 {
		e.T.Errorf("reachable files missing: %v %v", missing, err)
	}
	if got := e.Rows(tbl, 0); !got.Equal(want) {
		e.T.Errorf("visible rows %v, want %v", got, want)
	}
}

// A removed row version is stored nowhere under the table's location once
// erasure ran past its deadline: on v2 with position and equality deletes,
// on v3 with deletion vectors, on a partitioned table. The run's proof
// names what it rewrote, expired and found gone.
func TestErasureSettlesRemovedVersions(t *testing.T) {
	for _, tc := range []struct {
		name, format string
		spec         iceberg.PartitionSpec
	}{
		{"v2", "2", *iceberg.UnpartitionedSpec},
		{"v3 deletion vectors", "3", *iceberg.UnpartitionedSpec},
		{"v2 partitioned", "2", iceberg.NewPartitionSpec(tableenv.PF(2, 1000, "cat", iceberg.IdentityTransform{}))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base, tbl := tableenv.New(t, tableenv.BaseSchema, tc.spec, tc.format)
			e := newEnv(t, base)
			tbl = e.cdc(tbl)
			want := e.Rows(tbl, 0)
			if holding, _ := e.stored(tbl); len(holding) == 0 {
				t.Fatal("the generator stored no removed version: the test would prove nothing")
			}

			// Before the lead of the deadline nothing is due: the run
			// lists what is pending and when it is due.
			early := figures(t, e.run(maintenance.Erasure, time.Now().Add(3*24*time.Hour), "Successful"))
			if early.FilesRewritten != 0 || len(early.Expired) != 0 || len(early.Pending) == 0 || early.NextDue.IsZero() {
				t.Fatalf("a run before any deadline: %+v", early)
			}
			if d := early.NextDue.Sub(time.Now()); d < (deadlineDays-1)*24*time.Hour || d > deadlineDays*24*time.Hour {
				t.Errorf("next due in %v, want within the %d-day deadline of the deletes", d, deadlineDays)
			}
			// The scheduler's need order reads the deadline.
			if need, err := e.runner.Need(e.Ctx, e.Target(), maintenance.Erasure, time.Now()); err != nil || !need.Due.Equal(early.NextDue) {
				t.Errorf("need %+v, %v: want due %v", need, err, early.NextDue)
			}

			fig := figures(t, e.run(maintenance.Erasure, time.Now().Add((deadlineDays+1)*24*time.Hour), "Successful"))
			if fig.FilesRewritten == 0 || len(fig.Rewritten) == 0 || len(fig.Expired) == 0 || len(fig.Gone) == 0 || len(fig.Kept) != 0 {
				t.Fatalf("proof: %+v", fig)
			}
			for _, rw := range fig.Rewritten {
				if rw.DeleteCommit == 0 || rw.Due.Sub(rw.Removed) != deadlineDays*24*time.Hour || len(rw.DataFiles) == 0 || rw.At.IsZero() {
					t.Errorf("rewrite proof %+v", rw)
				}
				for _, p := range rw.DataFiles {
					if !slices.Contains(fig.Gone, p) {
						t.Errorf("%s was rewritten but is not proved gone", p)
					}
				}
			}
			if fig.Overdue == 0 {
				t.Error("a run a day past the deadline settled nothing overdue")
			}
			e.settled(want)
			// The rewrite claims its rows: as many read (deletes applied)
			// as written, the same ones.
			claimed := 0
			for _, s := range e.Load().Metadata().Snapshots() {
				p := s.Summary.Properties
				if p[rebase.RowsReadProperty] == "" {
					continue
				}
				claimed++
				if p[rebase.RowsReadProperty] != p[rebase.RowsWrittenProperty] || p[rebase.RowsRemovedProperty] != "" {
					t.Errorf("snapshot %d claims %v", s.SnapshotID, p)
				}
			}
			if claimed == 0 {
				t.Error("no snapshot of the rewrite claims its rows")
			}

			// The next run has nothing left; it costs the table's metadata.
			again := figures(t, e.run(maintenance.Erasure, time.Now().Add((deadlineDays+2)*24*time.Hour), "Successful"))
			if again.FilesRewritten != 0 || len(again.Expired) != 0 || again.ObjectsDeleted != 0 {
				t.Errorf("a second run did more: %+v", again)
			}
		})
	}
}

// The same over S3 with the Iceberg REST catalog (SeaweedFS): the stored
// objects are listed and read through S3 itself.
func TestErasureOnREST(t *testing.T) {
	e, tbl := newRESTEnv(t)
	tbl = e.cdc(tbl)
	want := e.Rows(tbl, 0)
	if holding, _ := e.stored(tbl); len(holding) == 0 {
		t.Fatal("the generator stored no removed version: the test would prove nothing")
	}
	fig := figures(t, e.run(maintenance.Erasure, time.Now().Add((deadlineDays+1)*24*time.Hour), "Successful"))
	if fig.FilesRewritten == 0 || len(fig.Gone) == 0 {
		t.Fatalf("proof: %+v", fig)
	}
	e.settled(want)
}

// newRESTEnv is an env on the REST catalog (SeaweedFS) over S3, whose raw
// reads go through S3 itself; it skips where no REST catalog is
// configured.
func newRESTEnv(t *testing.T) (*env, *table.Table) {
	srv := servers.REST(t)
	home := t.TempDir()
	cfg := configs.Embedded(home)
	cfg.Buckets[0].Catalog = srv.Props()
	base, tbl := tableenv.NewWith(t, cfg, home, tableenv.BaseSchema, *iceberg.UnpartitionedSpec, "2")
	e := newEnv(t, base)
	e.raw = s3Store{srv.S3().Client}
	return e, tbl
}

// Every job at +8 and +9 days — compaction, snapshot management, removal,
// erasure, as the daemon runs them — leaves no removed version stored,
// whatever compaction rewrote on the way. On these small files compaction
// applies every delete and snapshot management expires the old snapshots
// first; what erasure adds here is that snapshot management deletes their
// files at once (without it they would wait out nonCurrentDays, and this
// test fails).
func TestEveryJobMeetsTheDeadline(t *testing.T) {
	base, tbl := tableenv.New(t, tableenv.BaseSchema, *iceberg.UnpartitionedSpec, "2")
	e := newEnv(t, base)
	tbl = e.cdc(tbl)
	want := e.Rows(tbl, 0)
	for _, day := range []int{deadlineDays + 1, deadlineDays + 2} {
		now := time.Now().Add(time.Duration(day) * 24 * time.Hour)
		for _, typ := range []maintenance.JobType{maintenance.Compaction, maintenance.SnapshotManagement, maintenance.UnreferencedFileRemoval, maintenance.Erasure} {
			e.run(typ, now, "Successful")
		}
	}
	e.settled(want)
}

// A tag on an old snapshot blocks exactly the versions it reaches: those
// removed after it was taken, from rows it never saw, go; the run fails
// naming the tag. Once the tag is removed, the next run finishes.
func TestTagBlocksWhatItReaches(t *testing.T) {
	base, tbl := tableenv.New(t, tableenv.BaseSchema, *iceberg.UnpartitionedSpec, "2")
	e := newEnv(t, base)
	tbl = e.Append(tbl, 50) // ids 0-49, which the tag sees
	tagged := tbl.CurrentSnapshot().SnapshotID
	e.commit(table.NewSetSnapshotRefUpdate("audit-2026", tagged, table.TagRef, 0, 0, 0))
	tbl = e.Load()
	tbl = e.Append(tbl, 50) // ids 50-99, which it does not
	tbl = e.PosDelete(tbl, 7, 60, 61)
	e.deleted = []int64{7, 60, 61}
	want := e.Rows(tbl, 0)

	out := e.run(maintenance.Erasure, time.Now().Add((deadlineDays+1)*24*time.Hour), "Failed")
	fig := figures(t, out)
	if !strings.Contains(out.FailureMessage, `tag "audit-2026"`) || len(fig.Blocked) != 1 || fig.Blocked[0].SnapshotID != tagged || fig.Blocked[0].Due.IsZero() {
		t.Fatalf("blocked run: %q %+v", out.FailureMessage, fig.Blocked)
	}
	holding, _ := e.stored(e.Load())
	var held []int64
	for _, ids := range holding {
		held = append(held, ids...)
	}
	slices.Sort(held)
	if !slices.Equal(held, []int64{7}) {
		t.Fatalf("stored removed versions %v, want only id 7, which the tag reaches", held)
	}
	if got := e.Rows(e.Load(), 0); !got.Equal(want) {
		t.Fatalf("rows %v, want %v", got, want)
	}

	// The first run expired main's history around the tag; the tag,
	// off main now, still blocks.
	if out := e.run(maintenance.Erasure, time.Now().Add((deadlineDays+1)*24*time.Hour+time.Hour), "Failed"); len(figures(t, out).Blocked) != 1 {
		t.Fatalf("the tag stopped blocking once main's history around it expired: %s", out.FailureMessage)
	}

	e.commit(table.NewRemoveSnapshotRefUpdate("audit-2026"))
	e.run(maintenance.Erasure, time.Now().Add((deadlineDays+2)*24*time.Hour), "Successful")
	e.settled(want)
}

// A streaming writer committing every 100 ms beside erasure loses
// nothing: every row it committed is visible after, beside the rows that
// were there, and erasure still settles what was due.
func TestErasureBesideStreamingWriter(t *testing.T) {
	base, tbl := tableenv.New(t, tableenv.BaseSchema, *iceberg.UnpartitionedSpec, "2")
	e := newEnv(t, base)
	tbl = e.cdc(tbl)
	want := e.Rows(tbl, 0)
	w := &testkit.Writer{
		Load:     func(ctx context.Context) (*table.Table, error) { return e.B.LoadTable(ctx, e.ID) },
		Interval: 100 * time.Millisecond, Rows: 20, NextID: 1 << 40, Seed: 3,
	}
	stop := w.Start(e.Ctx)
	w.Await(3)
	// Each commit's first attempt waits for a writer's commit, so that
	// it loses the race and is rebased (the rewrite) or decided again
	// (the expiry).
	e.erasure.beforeCommit = func(attempt int) {
		if attempt == 1 {
			w.Await(1)
		}
	}
	fig := figures(t, e.run(maintenance.Erasure, time.Now().Add((deadlineDays+1)*24*time.Hour), "Successful"))
	w.Await(3)
	if err := stop(); err != nil {
		t.Fatalf("the writer failed: %v", err)
	}
	t.Logf("erasure: %d files rewritten, %d snapshots expired, %d commits in %d attempts (%d lost); writer: %+v",
		fig.FilesRewritten, len(fig.Expired), fig.Commits, fig.CommitAttempts, fig.Conflicts, w.Stats())
	if fig.Conflicts < 2 {
		t.Errorf("%d commits lost to the writer, want both the rewrite's and the expiry's first", fig.Conflicts)
	}
	want.Add(w.Written())
	if got := e.Rows(e.Load(), 0); !got.Equal(want) {
		t.Fatalf("rows %v, want %v", got, want)
	}
	if holding, _ := e.stored(e.Load()); len(holding) > 0 {
		t.Errorf("removed row versions still stored: %v", holding)
	}
}

// commit commits updates to the table through its catalog.
func (e *env) commit(updates ...table.Update) {
	e.T.Helper()
	cat, err := e.B.Catalog(e.Ctx)
	if err != nil {
		e.T.Fatal(err)
	}
	if _, _, err := cat.CommitTable(e.Ctx, e.Load().Identifier(), nil, updates); err != nil {
		e.T.Fatal(err)
	}
}

// Another table of the bucket references the table's data files, as
// Iceberg's snapshot procedure makes one: erasure deletes none of them,
// that table's rows stay whole, and the run fails saying a file that held
// removed rows is still stored because another table references it.
func TestAnotherTablesFilesStay(t *testing.T) {
	base, tbl := tableenv.New(t, tableenv.BaseSchema, *iceberg.UnpartitionedSpec, "2")
	e := newEnv(t, base)
	tbl = e.cdc(tbl)
	tasks, err := tbl.Scan().PlanFiles(e.Ctx)
	if err != nil {
		t.Fatal(err)
	}
	var files []string
	for _, task := range tasks {
		files = append(files, task.File.FilePath())
	}
	other := testkit.NewTable(t, e.B, "t", "snap", tableenv.BaseSchema)
	tx := other.NewTransaction()
	if err := tx.AddFiles(e.Ctx, files, nil, false); err != nil {
		t.Fatal(err)
	}
	if other, err = tx.Commit(e.Ctx); err != nil {
		t.Fatal(err)
	}
	otherRows := e.Rows(other, 0)

	out := e.run(maintenance.Erasure, time.Now().Add((deadlineDays+1)*24*time.Hour), "Failed")
	if !strings.Contains(out.FailureMessage, ErrBlocked.Error()) || !strings.Contains(out.FailureMessage, `table "t.snap" references `) {
		t.Fatalf("failure %q", out.FailureMessage)
	}
	for _, p := range files {
		if _, err := os.Stat(strings.TrimPrefix(p, "file://")); err != nil {
			t.Errorf("another table's file went: %v", err)
		}
	}
	other, err = e.B.LoadTable(e.Ctx, bucketID("t", "snap"))
	if err != nil {
		t.Fatal(err)
	}
	if got := e.Rows(other, 0); !got.Equal(otherRows) {
		t.Errorf("the other table's rows %v, want %v", got, otherRows)
	}
	if missing, err := tablecheck.MissingFiles(e.Ctx, e.Load()); err != nil || len(missing) > 0 {
		t.Errorf("reachable files missing: %v %v", missing, err)
	}
}

// A manifest cut at an Avro block boundary reads cleanly with fewer
// entries: erasure fails naming it, commits nothing and deletes nothing.
func TestDamagedManifestStopsErasure(t *testing.T) {
	base, tbl := tableenv.New(t, tableenv.BaseSchema, *iceberg.UnpartitionedSpec, "2")
	damagedManifest(t, newEnv(t, base), tbl)
}

// The same over S3 with the REST catalog.
func TestDamagedManifestStopsErasureOnREST(t *testing.T) {
	e, tbl := newRESTEnv(t)
	damagedManifest(t, e, tbl)
}

func damagedManifest(t *testing.T, e *env, tbl *table.Table) {
	tbl = e.cdc(tbl)
	tbl, err := testkit.AddCopies(e.Ctx, tbl, 300)
	if err != nil {
		t.Fatal(err)
	}
	tbl = e.PosDelete(tbl, 1)
	path, _, err := testkit.LargestManifest(e.Ctx, tbl)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := testkit.Damage(e.Ctx, tbl, path, func(b []byte) ([]byte, error) { return testkit.CutAfterBlocks(b, 1) }); err != nil {
		t.Fatal(err)
	}
	before := e.raw.objects(t, tbl.Location())
	out := e.run(maintenance.Erasure, time.Now().Add((deadlineDays+1)*24*time.Hour), "Failed")
	if !strings.Contains(out.FailureMessage, path) {
		t.Fatalf("failure %q does not name %s", out.FailureMessage, path)
	}
	if e.Load().MetadataLocation() != tbl.MetadataLocation() {
		t.Error("erasure committed over a damaged manifest")
	}
	after := e.raw.objects(t, tbl.Location())
	for _, p := range before {
		if !slices.Contains(after, p) {
			t.Errorf("deleted over a damaged manifest: %s", p)
		}
	}
}

func bucketID(ns, name string) bucket.TableID {
	return bucket.TableID{Namespace: []string{ns}, Name: name}
}

// Only files holding removed rows are rewritten: a position delete file
// without file_path bounds is attached by the scan to every data file,
// but names one; that one is rewritten and the delete file dropped.
func TestRewritesOnlyFilesWithRemovedRows(t *testing.T) {
	base, tbl := tableenv.New(t, tableenv.BaseSchema, *iceberg.UnpartitionedSpec, "2")
	e := newEnv(t, base)
	for range 4 {
		tbl = e.Append(tbl, 50)
	}
	tbl = e.PosDelete(tbl, 3, 17)
	e.deleted = []int64{3, 17}
	want := e.Rows(tbl, 0)
	fig := figures(t, e.run(maintenance.Erasure, time.Now().Add((deadlineDays+1)*24*time.Hour), "Successful"))
	if fig.FilesRewritten != 1 || fig.DeletesRemoved != 1 {
		t.Fatalf("rewrote %d files and dropped %d delete files, want the one file the delete names and the delete:\n%s", fig.FilesRewritten, fig.DeletesRemoved, fig.Text())
	}
	e.settled(want)
}

// Names built to trick the delete: the table adds another table's data
// file spelled through "..", through "//", and through a symlink in its
// own data directory, then deletes the rows they hold. Erasure rewrites
// them away and expires the snapshots that reached them; the other
// table's file stays under every spelling (the link itself, the table's
// own object, may go), the other table's rows are intact, and the run
// fails naming the other table, which holds what is still stored.
func TestHostileNamesKeepAnotherTablesFile(t *testing.T) {
	base, tbl := tableenv.New(t, tableenv.BaseSchema, *iceberg.UnpartitionedSpec, "2")
	e := newEnv(t, base)
	tbl = e.Append(tbl, 50)
	other := testkit.NewTable(t, e.B, "t", "other", tableenv.BaseSchema)
	other, err := testkit.AppendRandom(e.Ctx, other, 20, 900_000, e.Rng)
	if err != nil {
		t.Fatal(err)
	}
	tasks, err := other.Scan().PlanFiles(e.Ctx)
	if err != nil || len(tasks) != 1 {
		t.Fatalf("other table: %d files, %v", len(tasks), err)
	}
	theirs := tasks[0].File.FilePath()
	theirsOnDisk := strings.TrimPrefix(theirs, "file://")
	otherRows := e.Rows(other, 0)

	loc := strings.TrimSuffix(tbl.Location(), "/")
	link := loc + "/data/link.parquet"
	if err := os.Symlink(theirsOnDisk, strings.TrimPrefix(link, "file://")); err != nil {
		t.Fatal(err)
	}
	rel, err := filepath.Rel(strings.TrimPrefix(loc, "file://")+"/data", theirsOnDisk)
	if err != nil {
		t.Fatal(err)
	}
	hostile := []string{
		loc + "/data/" + rel, // …/x/data/../../other/data/f.parquet
		strings.Replace(theirs, "/data/", "/data//", 1),
		link,
	}
	tx := tbl.NewTransaction()
	if err := tx.AddFiles(e.Ctx, hostile, nil, false); err != nil {
		t.Fatal(err)
	}
	if tbl, err = tx.Commit(e.Ctx); err != nil {
		t.Fatal(err)
	}
	ids := make([]int64, 20)
	for i := range ids {
		ids[i] = 900_000 + int64(i)
	}
	tbl = e.PosDelete(tbl, ids...)
	want := e.Rows(tbl, 0)

	out := e.run(maintenance.Erasure, time.Now().Add((deadlineDays+1)*24*time.Hour), "Failed")
	if !strings.Contains(out.FailureMessage, `table "t.other" references `) {
		t.Fatalf("failure %q", out.FailureMessage)
	}
	if _, err := os.Stat(theirsOnDisk); err != nil {
		t.Fatalf("the other table's file went: %v", err)
	}
	other, err = e.B.LoadTable(e.Ctx, bucketID("t", "other"))
	if err != nil {
		t.Fatal(err)
	}
	if got := e.Rows(other, 0); !got.Equal(otherRows) {
		t.Errorf("the other table's rows %v, want %v", got, otherRows)
	}
	if got := e.Rows(e.Load(), 0); !got.Equal(want) {
		t.Errorf("rows %v, want %v", got, want)
	}
	if missing, err := tablecheck.MissingFiles(e.Ctx, e.Load()); err != nil || len(missing) > 0 {
		t.Errorf("reachable files missing: %v %v", missing, err)
	}
}

// A file that held removed rows and that another table references blocks
// erasure until that table lets it go: the first run fails naming the
// table; a day later, when the table's own metadata no longer reaches the
// file, the run still fails naming it and reports the block in its
// figures; once the other table drops its reference, a dry run and the
// real run at the same clock both delete the file, and the real run
// succeeds.
func TestAnotherTableBlocksUntilItLetsGo(t *testing.T) {
	base, tbl := tableenv.New(t, tableenv.BaseSchema, *iceberg.UnpartitionedSpec, "2")
	e := newEnv(t, base)
	tbl = e.cdc(tbl)
	want := e.Rows(tbl, 0)
	tasks, err := tbl.Scan().PlanFiles(e.Ctx)
	if err != nil {
		t.Fatal(err)
	}
	var file string
	for _, task := range tasks {
		if len(task.DeleteFiles)+len(task.EqualityDeleteFiles)+len(task.DeletionVectorFiles) > 0 {
			file = task.File.FilePath()
			break
		}
	}
	if file == "" {
		t.Fatal("no data file holds removed rows: the test would prove nothing")
	}
	other := testkit.NewTable(t, e.B, "t", "snap", tableenv.BaseSchema)
	tx := other.NewTransaction()
	if err := tx.AddFiles(e.Ctx, []string{file}, nil, false); err != nil {
		t.Fatal(err)
	}
	if other, err = tx.Commit(e.Ctx); err != nil {
		t.Fatal(err)
	}
	named := `table "t.snap" references ` + file
	day := func(n int) time.Time { return time.Now().Add(time.Duration(deadlineDays+n) * 24 * time.Hour) }
	blockedBy := func(fig *Figures) bool {
		return slices.ContainsFunc(fig.Blocked, func(bl planner.ErasureBlock) bool {
			return bl.Type == planner.BlockTable && bl.Ref == "t.snap" && bl.Path == file && !bl.Due.IsZero() && !bl.Since.IsZero()
		})
	}

	out := e.run(maintenance.Erasure, day(1), "Failed")
	if fig := figures(t, out); !strings.Contains(out.FailureMessage, named) || !blockedBy(fig) {
		t.Fatalf("first run: %q\n%s", out.FailureMessage, fig.Text())
	}
	if _, err := os.Stat(strings.TrimPrefix(file, "file://")); err != nil {
		t.Fatalf("the file another table references went: %v", err)
	}

	// A day later the table's metadata no longer reaches the file: the
	// block is remembered, and every run reports it.
	for _, n := range []int{2, 3} {
		out = e.run(maintenance.Erasure, day(n), "Failed")
		fig := figures(t, out)
		if !strings.Contains(out.FailureMessage, named) || !blockedBy(fig) || fig.Counters()["erasure_blocked_snapshots"] == 0 || fig.NextDue.IsZero() {
			t.Fatalf("day %d: %q\n%s", n, out.FailureMessage, fig.Text())
		}
		if !strings.Contains(fig.Text(), `table "t.snap" references`) || !strings.Contains(summary(fig), "blocked by another table") {
			t.Errorf("day %d: the proof does not name the table: %s / %s", n, fig.Text(), summary(fig))
		}
	}
	last, err := e.Store.LastRuns(e.Ctx, e.Target().Key())
	if err != nil || last[maintenance.Erasure].Status != "Failed" || !strings.Contains(last[maintenance.Erasure].FailureMessage, named) {
		t.Fatalf("status: %+v %v", last[maintenance.Erasure], err)
	}
	if blocks, err := e.Store.ErasureBlocks(e.Ctx, e.Target().Key()); err != nil || len(blocks) != 1 || blocks[0].Holder.Name != "snap" {
		t.Fatalf("remembered blocks: %+v %v", blocks, err)
	}

	// The other table expires its only snapshot: nothing holds the file.
	cat, err := e.B.Catalog(e.Ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := cat.CommitTable(e.Ctx, other.Identifier(), nil, []table.Update{
		table.NewRemoveSnapshotRefUpdate(table.MainBranch),
		table.NewRemoveSnapshotsUpdate([]int64{other.CurrentSnapshot().SnapshotID}, false),
	}); err != nil {
		t.Fatal(err)
	}
	dry, err := e.runner.Run(e.Ctx, e.Target(), maintenance.Erasure, "test", jobs.Options{Now: day(4), DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	real := figures(t, e.run(maintenance.Erasure, day(4), "Successful"))
	if d := figures(t, dry); d.ObjectsDeleted != real.ObjectsDeleted || real.ObjectsDeleted == 0 {
		t.Errorf("dry run would delete %d objects, the real run deleted %d", d.ObjectsDeleted, real.ObjectsDeleted)
	}
	if !slices.Contains(real.Gone, file) || len(real.Blocked) != 0 {
		t.Fatalf("resolving run:\n%s", real.Text())
	}
	if blocks, err := e.Store.ErasureBlocks(e.Ctx, e.Target().Key()); err != nil || len(blocks) != 0 {
		t.Fatalf("blocks after resolving: %+v %v", blocks, err)
	}
	e.settled(want)
	e.run(maintenance.Erasure, day(5), "Successful")
}

// A dry run at a shifted clock reports what the real run at the same
// clock then does: the snapshots it expires and the objects it deletes
// after that expiry, and it changes nothing itself.
func TestDryRunShowsTheDeletions(t *testing.T) {
	base, tbl := tableenv.New(t, tableenv.BaseSchema, *iceberg.UnpartitionedSpec, "2")
	e := newEnv(t, base)
	tbl = e.cdc(tbl)
	want := e.Rows(tbl, 0)
	// Compaction applies the deletes now; what erasure has left at the
	// deadline is the expiry of the snapshots that reach removed rows,
	// and the deletion of what only they reached.
	e.run(maintenance.Compaction, time.Now(), "Successful")
	at := time.Now().Add((deadlineDays + 1) * 24 * time.Hour)
	metadata := e.Load().MetadataLocation()
	stored := e.raw.objects(t, tbl.Location())

	out, err := e.runner.Run(e.Ctx, e.Target(), maintenance.Erasure, "test", jobs.Options{Now: at, DryRun: true})
	if err != nil || out.Status != "Successful" {
		t.Fatalf("dry run: %v %s %s", err, out.Status, out.FailureMessage)
	}
	dry := figures(t, out)
	if e.Load().MetadataLocation() != metadata || !slices.Equal(e.raw.objects(t, tbl.Location()), stored) {
		t.Fatal("the dry run changed the table or its storage")
	}
	real := figures(t, e.run(maintenance.Erasure, at, "Successful"))
	if real.ObjectsDeleted == 0 || len(real.Expired) == 0 {
		t.Fatalf("the real run did nothing to compare with:\n%s", real.Text())
	}
	if dry.ObjectsDeleted != real.ObjectsDeleted || len(dry.Expired) != len(real.Expired) || dry.FilesRewritten != real.FilesRewritten {
		t.Errorf("dry run: %d objects deleted, %d snapshots expired, %d files rewritten; real run: %d, %d, %d\n%s\n%s",
			dry.ObjectsDeleted, len(dry.Expired), dry.FilesRewritten, real.ObjectsDeleted, len(real.Expired), real.FilesRewritten, dry.Text(), real.Text())
	}
	e.settled(want)
}

// A second bucket over the same catalog database (another catalog name,
// another team's writers) is one reference domain with the table's: its
// table that references a file which held removed rows blocks erasure as
// a table of the bucket does. The file stays, that table's rows stay
// whole, the failure names it with its bucket, and the block is kept
// under that bucket's key.
func TestAnotherBucketsTableBlocks(t *testing.T) {
	home := t.TempDir()
	cfg := configs.Embedded(home)
	second := cfg.Buckets[0]
	second.ARN = "arn:aws:s3tables:us-east-1:000000000000:bucket/team2"
	second.CatalogName = "team2"
	second.Maintenance = configs.Maintenance{}
	var err error
	if second.Parsed, err = arn.Parse(second.ARN); err != nil {
		t.Fatal(err)
	}
	cfg.Buckets = append(cfg.Buckets, second)
	base, tbl := tableenv.NewWith(t, cfg, home, tableenv.BaseSchema, *iceberg.UnpartitionedSpec, "2")
	e := newEnv(t, base)
	domain := e.B.Domain()
	if len(domain) != 2 {
		t.Fatalf("the domain of %s is %d buckets, want both", e.B.Name(), len(domain))
	}
	b2 := domain[1]
	tbl = e.cdc(tbl)
	want := e.Rows(tbl, 0)
	tasks, err := tbl.Scan().PlanFiles(e.Ctx)
	if err != nil {
		t.Fatal(err)
	}
	var file string
	for _, task := range tasks {
		if len(task.DeleteFiles)+len(task.EqualityDeleteFiles)+len(task.DeletionVectorFiles) > 0 {
			file = task.File.FilePath()
			break
		}
	}
	if file == "" {
		t.Fatal("no data file holds removed rows: the test would prove nothing")
	}
	// Named as the table itself is, another table all the same; located
	// apart, as the catalog would put it where the table is.
	other := testkit.NewTable(t, b2, "t", "x", tableenv.BaseSchema, catalog.WithLocation(b2.Properties()["warehouse"]+"/team2/t/x"))
	tx := other.NewTransaction()
	if err := tx.AddFiles(e.Ctx, []string{file}, nil, false); err != nil {
		t.Fatal(err)
	}
	if other, err = tx.Commit(e.Ctx); err != nil {
		t.Fatal(err)
	}
	otherRows := e.Rows(other, 0)

	out := e.run(maintenance.Erasure, time.Now().Add((deadlineDays+1)*24*time.Hour), "Failed")
	if named := `table "team2/t.x" references ` + file; !strings.Contains(out.FailureMessage, named) {
		t.Fatalf("failure %q, want it to say %s", out.FailureMessage, named)
	}
	if _, err := os.Stat(strings.TrimPrefix(file, "file://")); err != nil {
		t.Fatalf("the file bucket two's table references went: %v", err)
	}
	other, err = b2.LoadTable(e.Ctx, bucketID("t", "x"))
	if err != nil {
		t.Fatal(err)
	}
	if got := e.Rows(other, 0); !got.Equal(otherRows) {
		t.Errorf("bucket two's table's rows %v, want %v", got, otherRows)
	}
	if got := e.Rows(e.Load(), 0); !got.Equal(want) {
		t.Errorf("rows %v, want %v", got, want)
	}
	blocks, err := e.Store.ErasureBlocks(e.Ctx, e.Target().Key())
	if err != nil || len(blocks) != 1 || blocks[0].Holder != (state.TableKey{Bucket: b2.ARN(), Namespace: "t", Name: "x"}) {
		t.Fatalf("remembered blocks: %+v %v", blocks, err)
	}
}
