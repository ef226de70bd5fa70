package compactor

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
	"github.com/parquet-go/parquet-go"

	"github.com/icekeeper/icekeeper/internal/rebase"
	"github.com/icekeeper/icekeeper/internal/state"
	"github.com/icekeeper/icekeeper/internal/testkit"
	"github.com/icekeeper/icekeeper/internal/testkit/tableenv"
)

// cdcTable is the upsert table scaled down: big files right for
// the 1 MB target, each of several row groups, then checkpoints of an
// upsert job, each an equality delete on id of some keys plus an append
// of their new versions.
type cdcTable struct {
	appends     int // appends of bigRows rows, each a well-sized file per partition
	bigRows     int
	checkpoints int
	upserts     int // keys per checkpoint
	// props are the writer's table properties (nil: row groups of
	// 20,000 rows).
	props iceberg.Properties
}

// fill builds the table and returns it with the paths of its well-sized
// files.
func (c cdcTable) fill(e *env, tbl *table.Table) (*table.Table, []string) {
	e.T.Helper()
	props := c.props
	if props == nil {
		props = iceberg.Properties{"write.parquet.row-group-limit": "20000"}
	}
	tx := tbl.NewTransaction()
	if err := tx.SetProperties(props); err != nil {
		e.T.Fatal(err)
	}
	tbl, err := tx.Commit(e.Ctx)
	if err != nil {
		e.T.Fatal(err)
	}
	first := e.Next
	for range c.appends {
		tbl = e.Append(tbl, c.bigRows)
	}
	big := liveDataPaths(e, tbl)
	last := e.Next - 1
	for range c.checkpoints {
		ids := map[int64]bool{}
		for len(ids) < c.upserts {
			e.rngMu.Lock()
			ids[first+e.Rng.Int64N(last-first+1)] = true
			e.rngMu.Unlock()
		}
		keys := slices.Sorted(func(yield func(int64) bool) {
			for id := range ids {
				if !yield(id) {
					return
				}
			}
		})
		tbl = e.upsert(tbl, keys)
	}
	return tbl, big
}

// upsert writes what an upsert job's checkpoint writes for keys: an
// equality delete on id, then the keys' new row versions.
func (e *env) upsert(tbl *table.Table, keys []int64) *table.Table {
	e.T.Helper()
	return e.upsertOn(e.EqDelete(tbl, keys...), keys)
}

// upsertOn appends the new row versions of keys.
func (e *env) upsertOn(tbl *table.Table, keys []int64) *table.Table {
	e.T.Helper()
	sc, err := table.SchemaToArrowSchema(tbl.Schema(), nil, false, false)
	if err != nil {
		e.T.Fatal(err)
	}
	e.rngMu.Lock()
	rec := testkit.RandomRecord(sc, len(keys), 0, e.Rng)
	e.rngMu.Unlock()
	defer rec.Release()
	cols := slices.Clone(rec.Columns())
	b := array.NewInt64Builder(memory.DefaultAllocator)
	b.AppendValues(keys, nil)
	ids := b.NewArray()
	defer ids.Release()
	cols[sc.FieldIndices("id")[0]] = ids
	out := array.NewRecordBatch(sc, cols, int64(len(keys)))
	defer out.Release()
	rdr, err := array.NewRecordReader(sc, []arrow.RecordBatch{out})
	if err != nil {
		e.T.Fatal(err)
	}
	defer rdr.Release()
	if tbl, err = tbl.Append(e.Ctx, rdr, nil); err != nil {
		e.T.Fatal(err)
	}
	return tbl
}

// liveDataPaths lists the current snapshot's data files.
func liveDataPaths(e *env, tbl *table.Table) []string {
	e.T.Helper()
	tasks, err := tbl.Scan().PlanFiles(e.Ctx)
	if err != nil {
		e.T.Fatal(err)
	}
	var out []string
	for _, t := range tasks {
		if !slices.Contains(out, t.File.FilePath()) {
			out = append(out, t.File.FilePath())
		}
	}
	slices.Sort(out)
	return out
}

// checkConversion runs compaction on a CDC table and asserts what
// conversion promises: the dry run plans it and changes nothing; one run
// leaves no equality delete and every well-sized file in place, with the
// same rows now and at the snapshot before.
func (e *env) checkConversion(job *Job, big []string) *Figures {
	e.T.Helper()
	before := e.Load()
	if n := count(e.liveDeletes(), iceberg.EntryContentEqDeletes); n == 0 {
		e.T.Fatal("setup: no equality deletes")
	}
	fpBefore := e.Rows(before, 0)
	snapBefore := before.CurrentSnapshot().SnapshotID
	e.opts.DryRun = true
	_, dry := e.compact(job)
	e.opts.DryRun = false
	if len(dry.ConvertPlan) == 0 || !strings.Contains(dry.Text(), "would be converted") || e.Load().CurrentSnapshot().SnapshotID != snapBefore {
		e.T.Fatalf("the dry run planned no conversion, or changed the table:\n%s", dry.Text())
	}
	dryDeletes := 0
	for _, g := range dry.ConvertPlan {
		dryDeletes += g.EqualityDeletes
	}
	for _, g := range dry.Plan.Groups {
		if g.InputBytes > 3<<19*int64(g.InputFiles) {
			e.T.Fatalf("the dry run rewrites a well-sized file: %+v", g)
		}
	}
	out, fig := e.compact(job)
	if out.Status != state.Successful {
		e.T.Fatalf("compaction: %s: %s", out.Status, out.FailureMessage)
	}
	if fig.ConvertGroupsCommitted == 0 || fig.EqualityDeletesConverted == 0 || fig.ConvertRowsMatched == 0 {
		e.T.Fatalf("nothing was converted:\n%s", fig.Text())
	}
	after := e.checkSameRows(fpBefore, snapBefore)
	if n := count(e.liveDeletes(), iceberg.EntryContentEqDeletes); n != 0 {
		e.T.Errorf("%d equality delete files left:\n%s", n, fig.Text())
	}
	if dryDeletes != fig.EqualityDeletesConverted {
		e.T.Errorf("the dry run planned to convert %d equality delete files, the run converted %d:\n%s\n%s", dryDeletes, fig.EqualityDeletesConverted, dry.Text(), fig.Text())
	}
	live := liveDataPaths(e, after)
	for _, p := range big {
		if !slices.Contains(live, p) {
			e.T.Errorf("well-sized file %s was rewritten:\n%s", p, fig.Text())
		}
	}
	if got, want := after.CurrentSnapshot().Summary.Operation, table.OpReplace; got != want {
		e.T.Errorf("snapshot operation %s, want %s", got, want)
	}
	// The conversion's commits claim the position-delete rows they wrote,
	// read back.
	claims := 0
	for s := after.CurrentSnapshot(); s != nil && s.SnapshotID != snapBefore; s = after.SnapshotByID(*s.ParentSnapshotID) {
		p := s.Summary.Properties
		if p[rebase.DeletesReadProperty] == "" {
			continue
		}
		claims++
		if p[rebase.DeletesWrittenProperty] != p[rebase.DeletesReadProperty] {
			e.T.Errorf("snapshot %d claims %v", s.SnapshotID, p)
		}
	}
	if claims == 0 {
		e.T.Error("no conversion commit claims the deletes it wrote")
	}
	return fig
}

// The table, scaled down: one run converts the upserts' equality
// deletes, leaves the well-sized files where they are, and the rows stay
// exact, now and at the snapshot before; on v2 into position delete
// files, on v3 into deletion vectors; unpartitioned and by day.
func TestEqualityConversion(t *testing.T) {
	testkit.SkipUnderRace(t)
	for _, tc := range []struct {
		name   string
		format string
		spec   iceberg.PartitionSpec
		cdc    cdcTable
		// young leaves every file to the writer (a minimum file age), so
		// no data rewrite applies deletes to the new row versions: they
		// are converted too, each delete only where it is newer.
		young bool
	}{
		{"v2 unpartitioned", "2", *iceberg.UnpartitionedSpec, cdcTable{appends: 3, bigRows: 60000, checkpoints: 3, upserts: 100}, false},
		{"v3 unpartitioned", "3", *iceberg.UnpartitionedSpec, cdcTable{appends: 3, bigRows: 60000, checkpoints: 3, upserts: 100}, false},
		{"v2 by day", "2", iceberg.NewPartitionSpec(tableenv.PF(3, 1000, "ts_day", iceberg.DayTransform{})), cdcTable{appends: 2, bigRows: 300000, checkpoints: 3, upserts: 100}, false},
		{"v2 new versions converted too", "2", *iceberg.UnpartitionedSpec, cdcTable{appends: 3, bigRows: 60000, checkpoints: 3, upserts: 100}, true},
		{"v3 new versions converted too", "3", *iceberg.UnpartitionedSpec, cdcTable{appends: 3, bigRows: 60000, checkpoints: 3, upserts: 100}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, tbl := newEnv(t, tableenv.BaseSchema, tc.spec, tc.format)
			e.convertTwice(tbl, tc.cdc, tc.young)
		})
	}
}

// convertTwice is TestEqualityConversion's case on any catalog: fill the
// CDC table, check one conversion run (checkConversion), and check that
// a second run finds nothing left to convert.
func (e *env) convertTwice(tbl *table.Table, cdc cdcTable, young bool) {
	e.T.Helper()
	if young {
		e.Defaults.Knobs.MinFileAgeMinutes = 60
	}
	_, big := cdc.fill(e, tbl)
	fig := e.checkConversion(&Job{}, big)
	e.T.Log(fig.Text())
	_, again := e.compact(&Job{})
	if len(again.ConvertPlan) != 0 || again.ConvertCommits != 0 {
		e.T.Errorf("a second run converted again:\n%s", again.Text())
	}
}

// A writer commits while conversion commits. An upsert (an equality
// delete and new versions) lands first: the conversion is rebased on it
// and commits, the writer's equality delete stays, and the next run
// converts it. A converted data file rewritten first (into a copy that
// keeps its data sequence number, as a compaction does, so the equality
// deletes still apply to the copy): the partition's conversion is
// dropped — removing its equality deletes would bring their rows back in
// the copy — its equality deletes stay, and the next run converts them on
// the table as it is. Either way the rows are the
// writer's.
func TestEqualityConversionBesideWriter(t *testing.T) {
	for i, tc := range []struct {
		name    string
		format  string
		remove  bool // rewrite a converted data file instead of upserting
		dropped int
		left    int // equality delete files left after the run
	}{
		{"v2 upsert", "2", false, 0, 1},
		{"v3 upsert", "3", false, 0, 1},
		{"v2 data file rewritten", "2", true, 1, 3},
		{"v3 data file rewritten", "3", true, 1, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			testkit.FirstUnderRace(t, i)
			e, tbl := newEnv(t, tableenv.BaseSchema, *iceberg.UnpartitionedSpec, tc.format)
			_, big := cdcTable{appends: 3, bigRows: 60000, checkpoints: 3, upserts: 100}.fill(e, tbl)
			var during *table.Table
			calls := 0
			// The first commit is the data rewrite's of the new versions;
			// the second the conversion's.
			job := &Job{Retry: quickRetry(8), beforeCommit: func(int) {
				if calls++; calls != 2 {
					return
				}
				if !tc.remove {
					during = e.upsert(e.Load(), []int64{7, 60007, 120007})
					return
				}
				during = rewriteCopy(e, big[0])
			}}
			_, fig := e.compact(job)
			if during == nil {
				t.Fatalf("the writer did not run:\n%s", fig.Text())
			}
			want := e.Rows(during, 0)
			if got := e.Rows(e.Load(), 0); !got.Equal(want) {
				t.Fatalf("rows %v, want the writer's %v:\n%s", got, want, fig.Text())
			}
			if fig.ConvertConflicts == 0 || fig.ConvertGroupsDropped != tc.dropped || fig.ConvertGroupsCommitted != 1-tc.dropped {
				t.Fatalf("want %d conversions dropped after a conflict:\n%s", tc.dropped, fig.Text())
			}
			if n := count(e.liveDeletes(), iceberg.EntryContentEqDeletes); n != tc.left {
				t.Fatalf("%d equality delete files left, want %d:\n%s", n, tc.left, fig.Text())
			}
			_, next := e.compact(&Job{})
			if n := count(e.liveDeletes(), iceberg.EntryContentEqDeletes); n != 0 || next.ConvertGroupsCommitted != 1 {
				t.Fatalf("the next run left %d equality delete files:\n%s", n, next.Text())
			}
			if got := e.Rows(e.Load(), 0); !got.Equal(want) {
				t.Fatalf("rows %v after the next run, want %v", got, want)
			}
		})
	}
}

// rewriteCopy replaces the data file at path with a byte copy under a new
// name that keeps its data sequence number, as a compaction that started
// before the table's equality deletes would, and returns the table.
func rewriteCopy(e *env, path string) *table.Table {
	e.T.Helper()
	tbl := e.Load()
	tasks, err := tbl.Scan().PlanFiles(e.Ctx)
	if err != nil {
		e.T.Fatal(err)
	}
	i := slices.IndexFunc(tasks, func(t table.FileScanTask) bool { return t.File.FilePath() == path })
	if i < 0 {
		e.T.Fatalf("%s is not live", path)
	}
	old := tasks[i].File
	fs, err := tbl.FS(e.Ctx)
	if err != nil {
		e.T.Fatal(err)
	}
	f, err := fs.Open(path)
	if err != nil {
		e.T.Fatal(err)
	}
	data, err := io.ReadAll(f)
	f.Close()
	if err != nil {
		e.T.Fatal(err)
	}
	copyPath := strings.TrimSuffix(path, ".parquet") + "-copy.parquet"
	if err := rebase.WriteFile(fs.(icebergio.WriteFileIO), copyPath, data); err != nil {
		e.T.Fatal(err)
	}
	b, err := iceberg.NewDataFileBuilder(*tbl.Metadata().PartitionSpecByID(int(old.SpecID())), iceberg.EntryContentData, copyPath, iceberg.ParquetFile,
		old.Partition(), nil, nil, old.Count(), int64(len(data)))
	if err != nil {
		e.T.Fatal(err)
	}
	tx := tbl.NewTransaction()
	if err := tx.NewRewrite(nil).DeleteFile(old).AddDataFile(b.Build()).DataSequenceNumber(*tasks[i].DataSequenceNumber).Commit(e.Ctx); err != nil {
		e.T.Fatal(err)
	}
	if tbl, err = tx.Commit(e.Ctx); err != nil {
		e.T.Fatal(err)
	}
	return tbl
}

// The equality field set changes between commits: upserts on id, then on
// (id, name), a long and a nullable string. Each delete file's keys are
// matched on its own field set, nulls equal to nulls.
func TestEqualityConversionFieldSetChanged(t *testing.T) {
	testkit.SkipUnderRace(t)
	for _, format := range []string{"2", "3"} {
		t.Run("v"+format, func(t *testing.T) {
			e, tbl := newEnv(t, tableenv.BaseSchema, *iceberg.UnpartitionedSpec, format)
			tbl, big := cdcTable{appends: 3, bigRows: 60000, checkpoints: 2, upserts: 100}.fill(e, tbl)
			var keys []int64
			for k := int64(5); len(keys) < 200; k += 877 {
				keys = append(keys, k)
			}
			e.upsertOn(e.EqDeleteOn(tbl, []string{"id", "name"}, []string{"id", "name"}, keys...), keys)
			fig := e.checkConversion(&Job{}, big)
			t.Log(fig.Text())
		})
	}
}

// The same on S3 (versitygw) with the SQL catalog on PostgreSQL.
func TestEqualityConversionS3(t *testing.T) {
	for _, format := range []string{"2", "3"} {
		t.Run("v"+format, func(t *testing.T) {
			e, tbl := newS3Env(t, tableenv.BaseSchema, *iceberg.UnpartitionedSpec, format)
			_, big := cdcTable{appends: 3, bigRows: 60000, checkpoints: 3, upserts: 100}.fill(e, tbl)
			e.checkConversion(&Job{}, big)
		})
	}
}

// The same on the REST catalog with SigV4 and S3 (SeaweedFS), where the
// catalog commits and the files are remote: the path of table buckets.
func TestEqualityConversionREST(t *testing.T) {
	for _, format := range []string{"2", "3"} {
		t.Run("v"+format+" unpartitioned", func(t *testing.T) {
			e, tbl := newRESTEnv(t, tableenv.BaseSchema, *iceberg.UnpartitionedSpec, format)
			e.convertTwice(tbl, cdcTable{appends: 3, bigRows: 60000, checkpoints: 3, upserts: 100}, false)
		})
	}
}

// Past the key bound a partition's equality deletes are converted in one
// run, in chunks: with a bound of 70 keys, deletes of 230, 40 and 100
// keys (the last re-upserting 50 keys of the first, whose new versions it
// deletes and the first does not) are converted in 6 chunks, whose
// boundaries fall inside the first and third delete files and mix
// sequence numbers. The new versions are left to the writer (a minimum
// file age), so every data file stays and each delete applies only where
// it is newer. Once with every delete file read by ranges, as a big one
// is.
func TestEqualityConversionChunked(t *testing.T) {
	testkit.SkipUnderRace(t)
	const bound, chunks = 70, 6 // 370 keys
	for _, tc := range []struct {
		format string
		whole  int64 // wholeDeleteBytes (1: ranged reads)
	}{{"2", 0}, {"3", 0}, {"2", 1}} {
		name := "v" + tc.format
		if tc.whole == 1 {
			name += " ranged reads"
		}
		t.Run(name, func(t *testing.T) {
			e, tbl := newEnv(t, tableenv.BaseSchema, *iceberg.UnpartitionedSpec, tc.format)
			e.Defaults.Knobs.MinFileAgeMinutes = 60
			tbl, big := cdcTable{appends: 3, bigRows: 60000}.fill(e, tbl)
			keys := func(from, step int64, n int) []int64 {
				var out []int64
				for i := range int64(n) {
					out = append(out, from+i*step)
				}
				return out
			}
			first := keys(1, 701, 230)
			tbl = e.upsert(tbl, first)
			tbl = e.upsert(tbl, keys(3, 997, 40))
			again := map[int64]bool{}
			for _, k := range append(first[:50:50], keys(5, 1009, 50)...) {
				again[k] = true
			}
			tbl = e.upsert(tbl, slices.Sorted(maps.Keys(again)))
			paths := liveDataPaths(e, tbl)

			job := &Job{ConvertChunkKeys: bound, wholeDeleteBytes: tc.whole}
			e.opts.DryRun = true
			_, dry := e.compact(job)
			e.opts.DryRun = false
			if len(dry.ConvertPlan) != 1 || dry.ConvertPlan[0].Chunks != chunks || dry.ConvertPlan[0].Kept != 0 ||
				!strings.Contains(dry.Text(), fmt.Sprintf("in %d chunks of keys", chunks)) {
				t.Fatalf("want one partition converted in %d chunks:\n%s", chunks, dry.Text())
			}
			fig := e.checkConversion(job, big)
			t.Log(fig.Text())
			if fig.ConvertChunks != chunks || fig.EqualityDeletesConverted != 3 {
				t.Errorf("%d chunks, %d equality deletes converted; want %d, 3:\n%s", fig.ConvertChunks, fig.EqualityDeletesConverted, chunks, fig.Text())
			}
			if got := liveDataPaths(e, e.Load()); !slices.Equal(got, paths) {
				t.Errorf("data files %v, want %v unchanged", got, paths)
			}
		})
	}
}

// An integer key set moved to encoded keys (a later delete holds a null
// or a non-integer key) keeps every key and sequence number, encoded as
// a data file's value of either width is.
func TestKeySetEncode(t *testing.T) {
	s := newKeySet([]int{1})
	s.iseq[7], s.iseq[-3] = 4, 9
	s.encode()
	if s.integral || s.size() != 2 {
		t.Fatalf("integral %v, %d keys after encode", s.integral, s.size())
	}
	for v, want := range map[parquet.Value]int64{parquet.Int64Value(7): 4, parquet.Int32Value(-3): 9} {
		k, err := appendKey(nil, v)
		if err != nil {
			t.Fatal(err)
		}
		if got := s.seq[string(k)]; got != want {
			t.Errorf("key %v: seq %d, want %d", v, got, want)
		}
	}
}
