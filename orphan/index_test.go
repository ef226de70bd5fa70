package orphan

import (
	"context"
	"errors"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/iceberg-go/table"

	"github.com/icekeeper/icekeeper/expire"
	"github.com/icekeeper/icekeeper/internal/state"
	"github.com/icekeeper/icekeeper/internal/testkit"
	"github.com/icekeeper/icekeeper/internal/testkit/servers"
	"github.com/icekeeper/icekeeper/internal/testkit/tablecheck"
	"github.com/icekeeper/icekeeper/jobs"
)

// allNames collects every referenced path as the metadata names it.
type allNames struct {
	mu    *sync.Mutex
	names map[string]bool
}

func (s allNames) add(p string, _ bool) error {
	s.mu.Lock()
	s.names[p] = true
	s.mu.Unlock()
	return nil
}

func (allNames) flush() {}

// walked returns every path walkRefs visits on tbl with idx.
func walked(t *testing.T, ctx context.Context, tbl *table.Table, idx *runIndex) (map[string]bool, refStats) {
	t.Helper()
	fs, err := tbl.FS(ctx)
	if err != nil {
		t.Fatal(err)
	}
	s := allNames{mu: &sync.Mutex{}, names: map[string]bool{}}
	st, err := walkRefs(ctx, tbl, fs, 4, idx, func() refSink { return s })
	if err != nil {
		t.Fatal(err)
	}
	return s.names, st
}

// sameAsFull asserts that the references a run takes through the index
// are what reading everything finds, and that they cover every file an
// independent walk of the metadata reaches.
func sameAsFull(t *testing.T, ctx context.Context, j *Job, target jobs.Target, tbl *table.Table) {
	t.Helper()
	viaIndex, st := walked(t, ctx, tbl, j.index(target.Key(), tbl, indexOnly))
	full, _ := walked(t, ctx, tbl, nil)
	if !maps.Equal(viaIndex, full) {
		t.Fatalf("references through the index differ from a full read (%d vs %d paths)", len(viaIndex), len(full))
	}
	if st.ManifestsRead != 0 {
		t.Fatalf("after a saving run, a walk through the index still read %d files", st.ManifestsRead)
	}
	reachable, err := tablecheck.ReachableFiles(ctx, tbl)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range reachable {
		if !viaIndex[p] {
			t.Fatalf("%s is reachable but not referenced through the index", p)
		}
	}
}

// fullPaths is how many paths under the table's prefixes its metadata
// references, read in full.
func fullPaths(t *testing.T, f *fixture) int {
	t.Helper()
	tbl := f.Load()
	fs, err := tbl.FS(f.Ctx)
	if err != nil {
		t.Fatal(err)
	}
	pfx, err := prefixes(tbl.Metadata())
	if err != nil {
		t.Fatal(err)
	}
	_, st, err := collectRefs(f.Ctx, tbl, fs, scope{pfx: pfx}, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	return st.Paths
}

// An unchanged table's second removal run reads no manifest list or
// manifest (at most a tenth of the first run's, asserted on the files the
// kernel saw opened); a writer's commit costs only its new files; rows of
// manifests that snapshot expiry dropped are forgotten; and the run that
// deletes re-checks by reading everything. On the SQLite store and on
// PostgreSQL.
func TestIndexUnchangedTable(t *testing.T) {
	t.Run("sqlite", func(t *testing.T) { testIndexUnchanged(t, nil) })
	t.Run("postgres", func(t *testing.T) {
		dsn := servers.Postgres(t)
		testIndexUnchanged(t, func(t *testing.T) state.Store {
			s, err := state.Open(context.Background(), dsn)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			return s
		})
	})
}

func testIndexUnchanged(t *testing.T, open func(t *testing.T) state.Store) {
	f := newFixture(t)
	if open != nil {
		f.Store = open(t)
		f.job.Store = f.Store
	}
	opens := testkit.WatchOpens(t, f.dir+"/metadata")
	read := func(o testkit.OpenCounts) int { return o.ManifestLists + o.Manifests }

	first := f.mustRun(0)
	o1 := opens.Take()
	r := first.References
	if read(o1) != r.ManifestLists+r.Manifests || r.ManifestsRead != read(o1) || r.ManifestsFromIndex != 0 {
		t.Fatalf("first run opened %+v, figures %+v: want every list and manifest read once", o1, r)
	}
	second := f.mustRun(time.Minute)
	o2 := opens.Take()
	if read(o2)*10 > read(o1) {
		t.Fatalf("the second run on an unchanged table opened %d manifest lists and manifests, the first %d: want at most a tenth", read(o2), read(o1))
	}
	if r2 := second.References; r2.ManifestsRead != read(o2) || r2.ManifestsFromIndex != read(o1) || r2.Paths != r.Paths || r.Paths != fullPaths(t, f) {
		t.Fatalf("second run's figures %+v after a first with %+v", r2, r)
	}
	if !strings.Contains(second.Text(), "0 read, "+strconv.Itoa(read(o1))+" from the reference index") {
		t.Fatalf("the run's text does not say what came from the index:\n%s", second.Text())
	}
	sameAsFull(t, f.Ctx, f.job, f.Target(), f.Load())

	// A writer commits: the run reads its new manifest list and
	// manifest, and nothing else.
	if err := testkit.AppendRows(f.Ctx, f.Bucket, f.ID, 10); err != nil {
		t.Fatal(err)
	}
	var err error
	if f.before, err = tablecheck.Rows(f.Ctx, f.Load(), 0); err != nil {
		t.Fatal(err)
	}
	opens.Take()
	third := f.mustRun(2 * time.Minute)
	o3 := opens.Take()
	if r3 := third.References; read(o3) != r3.ManifestsRead || r3.ManifestsRead == 0 || r3.ManifestsRead > 3 || r3.Paths != fullPaths(t, f) {
		t.Fatalf("after one commit the run opened %+v, figures %+v", o3, r3)
	}
	sameAsFull(t, f.Ctx, f.job, f.Target(), f.Load())

	expired := f.Load().Metadata().Snapshots()[0].ManifestList
	// Snapshot expiry drops the lists and manifests of the old snapshots
	// from the metadata, not from storage: their rows are forgotten, and
	// their files are marked like any other unreferenced object.
	if exp := f.Run((&expire.Job{}).Definition(), jobs.Options{Now: f.now.Add(30 * day)}); exp.Status != state.Successful {
		t.Fatalf("expire: %+v", exp)
	}
	opens.Take()
	fourth := f.mustRun(4 * day)
	o4 := opens.Take()
	if r4 := fourth.References; r4.IndexForgotten == 0 || r4.ManifestsRead != 0 || read(o4) != 0 || fourth.Marked <= 3 {
		t.Fatalf("after expiry: opened %+v, figures %+v, marked %d", o4, r4, fourth.Marked)
	}
	sameAsFull(t, f.Ctx, f.job, f.Target(), f.Load())
	if rows, err := f.Store.IndexedRefs(f.Ctx, f.Target().Key(), []string{expired}); err != nil || len(rows) != 0 {
		t.Fatalf("the row of an expired snapshot's manifest list was kept: %v %v", rows, err)
	}

	// The deleting run's re-check reads every list and manifest again.
	opens.Take()
	fifth := f.mustRun(15 * day)
	o5 := opens.Take()
	if fifth.Deleted <= 3 || read(o5) < fifth.References.ManifestLists+fifth.References.Manifests {
		t.Fatalf("deleting run: opened %+v, deleted %d, references %+v: the re-check must read everything", o5, fifth.Deleted, fifth.References)
	}
	f.intact()
}

// Rows that must not be trusted are rebuilt by reading their files: a row
// of garbage bytes, and rows written for another table UUID (a table
// dropped and created again under the same name) that claim the file
// references nothing; so is a row that is missing. Trusting any of them,
// or skipping the file of the missing one, would mark live files.
func TestIndexRowsNotTrusted(t *testing.T) {
	f := newFixture(t)
	if fig := f.mustRun(0); fig.Marked != 3 {
		t.Fatalf("first run marked %d, want the demo's 3 strays", fig.Marked)
	}
	tbl := f.Load()
	fs, err := tbl.FS(f.Ctx)
	if err != nil {
		t.Fatal(err)
	}
	snap := tbl.CurrentSnapshot()
	ms, err := snap.Manifests(fs)
	if err != nil || len(ms) < 3 {
		t.Fatalf("manifests %v %v: want at least 3", ms, err)
	}
	list, garbled, missing, foreign := snap.ManifestList, ms[0].FilePath(), ms[1].FilePath(), ms[len(ms)-1].FilePath()
	key := f.Target().Key()
	uuid := tbl.Metadata().TableUUID().String()
	before, err := f.Store.IndexedRefs(f.Ctx, key, []string{list, garbled, missing, foreign})
	if err != nil || len(before) != 4 {
		t.Fatalf("index rows after the first run: %d %v", len(before), err)
	}
	// One row lost: forget every row but the others.
	reachable, err := tablecheck.ReachableFiles(f.Ctx, tbl)
	if err != nil {
		t.Fatal(err)
	}
	if n, err := f.Store.ForgetIndexedRefs(f.Ctx, key, uuid, slices.DeleteFunc(reachable, func(p string) bool { return p == missing })); err != nil || n != 1 {
		t.Fatalf("forgetting one row: %d %v", n, err)
	}
	const otherUUID = "3f8a1c9e-0000-4000-8000-000000000000"
	emptyList, _ := f.job.codec.encode(list, nil)
	emptyManifest, _ := f.job.codec.encode(foreign, nil)
	if err := f.Store.PutIndexedRefs(f.Ctx, key, []state.IndexRow{
		{Path: list, TableUUID: otherUUID, Refs: emptyList},
		{Path: foreign, TableUUID: otherUUID, Refs: emptyManifest},
		{Path: garbled, TableUUID: uuid, Refs: []byte("\x00garbage\xff not a row")},
	}); err != nil {
		t.Fatal(err)
	}

	fig := f.mustRun(4 * day)
	r := fig.References
	if fig.Marked != 0 || len(f.marks()) != 3 {
		t.Fatalf("marked %d (%v): a live file was taken for unreferenced", fig.Marked, fig.MarkedPaths)
	}
	// The list and the three manifests are read; a manifest whose list
	// came from the index needs that list read again.
	if r.IndexRejected != 3 || r.ManifestsRead < 4 || r.ManifestsRead > 7 {
		t.Fatalf("figures %+v: want 3 rows rejected, and their files and the lost row's read", r)
	}
	sameAsFull(t, f.Ctx, f.job, f.Target(), tbl)
	after, err := f.Store.IndexedRefs(f.Ctx, key, []string{list, garbled, missing, foreign})
	if err != nil || len(after) != 4 {
		t.Fatalf("rows after the run: %d %v", len(after), err)
	}
	for p, row := range after {
		refs, err := f.job.codec.decode(p, row.Refs)
		if err != nil || row.TableUUID != uuid {
			t.Fatalf("row of %s not rebuilt: uuid %s, %v", p, row.TableUUID, err)
		}
		want, _ := f.job.codec.decode(p, before[p].Refs)
		if !slices.Equal(refs, want) {
			t.Fatalf("row of %s rebuilt as %v, was %v", p, refs, want)
		}
	}
	if fig := f.mustRun(15 * day); fig.Deleted != 3 {
		t.Fatalf("deleted %d, want the 3 strays", fig.Deleted)
	}
	f.intact()
}

// An index that cannot be read or written is not fatal: the run reads
// everything and decides as it would without one.
func TestIndexUnavailable(t *testing.T) {
	f := newFixture(t)
	f.job.Store = testkit.FailingIndex{Store: f.Store}
	for _, after := range []time.Duration{0, time.Minute} {
		fig := f.mustRun(after)
		r := fig.References
		if r.ManifestsRead != r.ManifestLists+r.Manifests || r.ManifestsFromIndex != 0 || r.IndexUnsaved != r.ManifestsRead {
			t.Fatalf("run at +%v: %+v", after, r)
		}
		if !strings.Contains(fig.Text(), "not saved to the index") {
			t.Fatalf("the run's text does not say the index was not saved:\n%s", fig.Text())
		}
	}
	if n := len(f.marks()); n != 3 {
		t.Fatalf("%d marks, want the 3 strays", n)
	}
	if fig := f.mustRun(15 * day); fig.Deleted != 3 {
		t.Fatalf("deleted %d, want the 3 strays", fig.Deleted)
	}
	f.intact()
}

// A row round-trips any object name (newlines, NUL, bytes that are not
// UTF-8), and everything but an intact row of the same file is refused.
func TestRefCodec(t *testing.T) {
	var c refCodec
	file := "s3://b/t/metadata/m1.avro"
	refs := []string{"s3://b/t/data/a\nb.parquet", "s3://b/t/data/\x00\xff.parquet", "", "s3://b/t/data/%2e%2e/x"}
	row, err := c.encode(file, refs)
	if err != nil {
		t.Fatal(err)
	}
	got, err := c.decode(file, row)
	if err != nil || !slices.Equal(got, refs) {
		t.Fatalf("round trip: %q %v", got, err)
	}
	if got, err := c.decode(file, must(c.encode(file, nil))); err != nil || len(got) != 0 {
		t.Fatalf("no references: %q %v", got, err)
	}
	flipped := slices.Clone(row)
	flipped[len(flipped)-6] ^= 0x40
	for name, b := range map[string][]byte{
		"garbage":     []byte("\x00garbage"),
		"empty":       nil,
		"no header":   row[len(refsMagic):],
		"truncated":   row[:len(row)-3],
		"a bit flips": flipped,
		"trailing":    append(slices.Clone(row), 0),
	} {
		if _, err := c.decode(file, b); !errors.Is(err, errBadRow) {
			t.Errorf("%s: decoded (%v)", name, err)
		}
	}
	if _, err := c.decode("s3://b/t/metadata/m2.avro", row); !errors.Is(err, errBadRow) {
		t.Errorf("another file's row decoded (%v)", err)
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// A dry run records nothing, in the index neither; it still takes what
// the index holds.
func TestIndexDryRun(t *testing.T) {
	f := newFixture(t)
	list := []string{f.Load().CurrentSnapshot().ManifestList}
	rows := func() int {
		t.Helper()
		got, err := f.Store.IndexedRefs(f.Ctx, f.Target().Key(), list)
		if err != nil {
			t.Fatal(err)
		}
		return len(got)
	}
	if _, fig := f.run(0, true); fig.References.ManifestsFromIndex != 0 || rows() != 0 {
		t.Fatalf("a dry run wrote the index: %+v, %d rows", fig.References, rows())
	}
	f.mustRun(0)
	if rows() != 1 {
		t.Fatal("a run did not write the index")
	}
	if _, fig := f.run(time.Minute, true); fig.References.ManifestsRead != 0 || fig.References.ManifestsFromIndex == 0 {
		t.Fatalf("a dry run after a run: %+v", fig.References)
	}
}
