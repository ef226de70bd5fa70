package compactor

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/icekeeper/icekeeper/internal/commit"
	"github.com/icekeeper/icekeeper/internal/state"
	"github.com/icekeeper/icekeeper/internal/testkit"
	"github.com/icekeeper/icekeeper/internal/testkit/tablecheck"
	"github.com/icekeeper/icekeeper/internal/testkit/tableenv"
)

// upsertWriter is an upsert job with a short checkpoint interval: every
// interval it commits, in one snapshot as Flink does, an equality delete
// on id of a few current ids and their new versions. It keeps the
// fingerprint of each id's current row, so the rows the table must show
// are known whatever compaction did meanwhile.
type upsertWriter struct {
	load     func(context.Context) (*table.Table, error)
	interval time.Duration
	keys     int // ids per upsert
	rng      *rand.Rand

	mu       sync.Mutex
	rows     map[int64]tablecheck.Fingerprint // the current row of every id
	ids      []int64                          // rows' keys, to draw from
	upserts  int                              // upserts committed
	retries  int                              // commits lost to a concurrent commit
	maxRetry int
}

// newUpsertWriter models the rows of tbl by id.
func newUpsertWriter(e *env, tbl *table.Table, keys int, seed uint64) *upsertWriter {
	e.T.Helper()
	w := &upsertWriter{
		load:     func(ctx context.Context) (*table.Table, error) { return e.B.LoadTable(ctx, e.ID) },
		interval: 100 * time.Millisecond, keys: keys, rng: rand.New(rand.NewPCG(seed, 11)),
		rows: map[int64]tablecheck.Fingerprint{},
	}
	_, it, err := tbl.Scan().ToArrowRecords(e.Ctx)
	if err != nil {
		e.T.Fatal(err)
	}
	for rec, err := range it {
		if err != nil {
			e.T.Fatal(err)
		}
		w.model(rec)
		rec.Release()
	}
	if len(w.rows) == 0 {
		e.T.Fatal("setup: no rows")
	}
	for id := range w.rows {
		w.ids = append(w.ids, id)
	}
	slices.Sort(w.ids) // the draws depend on the seed only
	return w
}

// model sets each id of rec to its row in rec, a row's fingerprint being
// that of a one-row slice.
func (w *upsertWriter) model(rec arrow.RecordBatch) {
	ids := rec.Column(rec.Schema().FieldIndices("id")[0]).(*array.Int64)
	for i := 0; i < int(rec.NumRows()); i++ {
		one := rec.NewSlice(int64(i), int64(i+1))
		var fp tablecheck.Fingerprint
		fp.AddRecord(one)
		one.Release()
		w.rows[ids.Value(i)] = fp
	}
}

// want is the fingerprint of the rows the table must show.
func (w *upsertWriter) want() tablecheck.Fingerprint {
	w.mu.Lock()
	defer w.mu.Unlock()
	var fp tablecheck.Fingerprint
	for _, r := range w.rows {
		fp.Add(r)
	}
	return fp
}

func (w *upsertWriter) committed() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.upserts
}

// await returns once the writer has committed n more upserts.
func (w *upsertWriter) await(n int) {
	for until := w.committed() + n; w.committed() < until; {
		time.Sleep(10 * time.Millisecond)
	}
}

// start runs the writer until the returned stop is called; stop returns
// the first error that is not a lost race: an upsert that cannot be
// committed is lost data, and the test must fail.
func (w *upsertWriter) start(ctx context.Context) (stop func() error) {
	ctx, cancel := context.WithCancel(ctx)
	errc := make(chan error, 1)
	go func() {
		tick := time.NewTicker(w.interval)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				errc <- nil
				return
			case <-tick.C:
			}
			// An upsert begun is finished, as a checkpoint is.
			if err := w.upsert(context.WithoutCancel(ctx)); err != nil {
				errc <- err
				return
			}
		}
	}()
	return func() error {
		cancel()
		return <-errc
	}
}

// upsert draws keys distinct ids, new versions and all, and commits their
// equality delete and new versions in one row delta, trying again on the
// reloaded table when it loses a race.
func (w *upsertWriter) upsert(ctx context.Context) error {
	tbl, err := w.load(ctx)
	if err != nil {
		return err
	}
	sc, err := table.SchemaToArrowSchema(tbl.Schema(), nil, true, false)
	if err != nil {
		return err
	}
	idx := sc.FieldIndices("id")[0]
	picked := map[int64]bool{}
	for len(picked) < w.keys {
		picked[w.ids[w.rng.IntN(len(w.ids))]] = true
	}
	keys := slices.Sorted(func(yield func(int64) bool) {
		for id := range picked {
			if !yield(id) {
				return
			}
		}
	})
	b := array.NewInt64Builder(memory.DefaultAllocator)
	b.AppendValues(keys, nil)
	idCol := b.NewArray()
	defer idCol.Release()
	rec := testkit.RandomRecord(sc, len(keys), 0, w.rng)
	defer rec.Release()
	cols := slices.Clone(rec.Columns())
	cols[idx] = idCol
	rows := array.NewRecordBatch(sc, cols, int64(len(keys)))
	defer rows.Release()
	delSc := arrow.NewSchema([]arrow.Field{sc.Field(idx)}, nil)
	dels := array.NewRecordBatch(delSc, []arrow.Array{idCol}, int64(len(keys)))
	defer dels.Release()
	// Both writers below release what they consume: each gets its own
	// reference, so that a retry can write the same records again.
	one := func(r arrow.RecordBatch) func(func(arrow.RecordBatch, error) bool) {
		return func(yield func(arrow.RecordBatch, error) bool) {
			r.Retain()
			yield(r, nil)
		}
	}
	idField, ok := tbl.Schema().FindFieldByName("id")
	if !ok {
		return errors.New("no column id")
	}
	for retries := 0; ; retries++ {
		err := w.commit(ctx, tbl, idField.ID, sc, rows, dels, one)
		if err == nil {
			w.mu.Lock()
			w.model(rows)
			w.upserts++
			w.retries += retries
			w.maxRetry = max(w.maxRetry, retries)
			w.mu.Unlock()
			return nil
		}
		if !commit.IsConflict(err) {
			return fmt.Errorf("upsert of %v: %w", keys, err)
		}
		if retries >= 1000 {
			return errors.New("upsert writer: 1000 lost races in a row")
		}
		if tbl, err = w.load(ctx); err != nil {
			return err
		}
	}
}

// commit writes the new versions and the equality delete on tbl and
// commits them as one row delta: one snapshot, so the delete, of the same
// sequence number, does not apply to the new versions.
func (w *upsertWriter) commit(ctx context.Context, tbl *table.Table, idField int, sc *arrow.Schema, rows, dels arrow.RecordBatch,
	one func(arrow.RecordBatch) func(func(arrow.RecordBatch, error) bool)) error {
	tx := tbl.NewTransaction()
	delFiles, err := tx.WriteEqualityDeletes(ctx, []int{idField}, one(dels))
	if err != nil {
		return err
	}
	var dataFiles []iceberg.DataFile
	for df, err := range table.WriteRecords(ctx, tbl, sc, one(rows)) {
		if err != nil {
			return err
		}
		dataFiles = append(dataFiles, df)
	}
	if err := tx.NewRowDelta(nil).AddRows(dataFiles...).AddDeletes(delFiles...).Commit(ctx); err != nil {
		return err
	}
	_, err = tx.Commit(ctx)
	return err
}

// Beside an upsert job that commits every 100 ms, as a Flink CDC job with
// a short checkpoint interval does, conversion runs again and again: each
// run succeeds; then the visible rows are the writer's (each id once, in
// its last version: no delete lost or applied to a newer version), and no
// file any snapshot reaches is missing. Once the writer stops, one more
// run leaves no equality delete and the same rows. Also on the REST
// catalog with SigV4 and S3 (SeaweedFS), whose slower commits leave the
// writer more room to land between a run's plan and its commit.
func TestEqualityConversionBesideUpsertWriter(t *testing.T) {
	testkit.SkipUnderRace(t)
	for _, c := range []struct {
		name string
		new  func(testing.TB, *iceberg.Schema, iceberg.PartitionSpec, string) (*env, *table.Table)
	}{
		{"", func(t testing.TB, sc *iceberg.Schema, spec iceberg.PartitionSpec, format string) (*env, *table.Table) {
			return newEnv(t.(*testing.T), sc, spec, format)
		}},
		{" rest", newRESTEnv},
	} {
		for _, format := range []string{"2", "3"} {
			t.Run("v"+format+c.name, func(t *testing.T) {
				e, tbl := c.new(t, tableenv.BaseSchema, *iceberg.UnpartitionedSpec, format)
				tbl, _ = cdcTable{appends: 2, bigRows: 60000, checkpoints: 2, upserts: 100}.fill(e, tbl)
				besideUpsertWriter(t, e, tbl, 4)
			})
		}
	}
}

func besideUpsertWriter(t *testing.T, e *env, tbl *table.Table, runs int) {
	w := newUpsertWriter(e, tbl, 5, 3)
	stop := w.start(e.Ctx)
	converted := 0
	for i := 0; i < runs; i++ {
		// Let the writer add equality deletes, so that every run has some
		// to convert and the writer commits while it runs.
		w.await(3)
		out, fig := e.compact(&Job{})
		if out.Status != state.Successful {
			t.Errorf("run %d beside the writer: %s %s", i, out.Status, out.FailureMessage)
			continue
		}
		converted += fig.EqualityDeletesConverted
		t.Logf("run %d: %d equality delete files converted, %d groups committed, %d dropped, %d conversion commits (%d lost); data: %d files -> %d in %d commits (%d lost)",
			i, fig.EqualityDeletesConverted, fig.ConvertGroupsCommitted, fig.ConvertGroupsDropped, fig.ConvertCommits, fig.ConvertConflicts,
			fig.InputFiles, fig.OutputFiles, fig.Commits, fig.Conflicts)
	}
	if err := stop(); err != nil {
		t.Fatalf("the writer failed: %v", err)
	}
	t.Logf("writer: %d upserts, %d retries (at most %d for one)", w.upserts, w.retries, w.maxRetry)
	if w.upserts == 0 {
		t.Fatal("the writer committed nothing")
	}
	if converted == 0 {
		t.Error("no run beside the writer converted an equality delete")
	}
	want := w.want()
	check := func(when string) *table.Table {
		t.Helper()
		after := e.Load()
		if got := e.Rows(after, 0); !got.Equal(want) {
			t.Fatalf("%s: visible rows %v, want the writer's %v", when, got, want)
		}
		for id, n := range e.IDs(after) {
			if n != 1 {
				t.Fatalf("%s: id %d visible %d times", when, id, n)
			}
		}
		missing, err := tablecheck.MissingFiles(e.Ctx, after)
		if err != nil || len(missing) > 0 {
			t.Fatalf("%s: reachable files missing: %v %v", when, missing, err)
		}
		return after
	}
	check("beside the writer")
	out, fig := e.compact(&Job{})
	if out.Status != state.Successful {
		t.Fatalf("the run after the writer: %s %s", out.Status, out.FailureMessage)
	}
	check("after the writer")
	if n := count(e.liveDeletes(), iceberg.EntryContentEqDeletes); n != 0 {
		t.Errorf("%d equality delete files left after the writer stopped:\n%s", n, fig.Text())
	}
}
