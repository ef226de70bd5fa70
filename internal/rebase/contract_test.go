package rebase_test

import (
	"context"
	"io"
	"strings"
	"testing"

	"github.com/apache/iceberg-go"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"

	"github.com/icekeeper/icekeeper/internal/commit"
	"github.com/icekeeper/icekeeper/internal/rebase"
	"github.com/icekeeper/icekeeper/internal/testkit/tableenv"
)

// The commit engine's contract, proved on a real table (embedded SQL
// catalog, local disk) with rewrites that copy each input file: the rows
// never change, so every difference is the engine's.

// engine is a table of four files, ids 1–80 (file i holds 20i+1..20i+20),
// scanned once, and two groups: the first two files and the last two.
type engine struct {
	e      *tableenv.Env
	tbl    *table.Table
	base   rebase.Base
	groups [][]table.FileScanTask
}

func newEngine(t *testing.T, format string) *engine {
	e, tbl := tableenv.New(t, tableenv.BaseSchema, *iceberg.UnpartitionedSpec, format)
	for range 4 {
		tbl = e.Append(tbl, 20)
	}
	base, err := rebase.Scan(e.Ctx, tbl)
	if err != nil {
		t.Fatal(err)
	}
	if len(base.Tasks) != 4 {
		t.Fatalf("%d files, want 4", len(base.Tasks))
	}
	first := func(ids ...int) (out []table.FileScanTask) {
		for _, i := range ids {
			out = append(out, fileHolding(t, e, tbl, base.Tasks, int64(20*i+1)))
		}
		return out
	}
	return &engine{e: e, tbl: tbl, base: base, groups: [][]table.FileScanTask{first(0, 1), first(2, 3)}}
}

// fileHolding is the task whose file holds row id.
func fileHolding(t *testing.T, e *tableenv.Env, tbl *table.Table, tasks []table.FileScanTask, id int64) table.FileScanTask {
	t.Helper()
	for _, task := range tasks {
		_, recs, err := tbl.Scan(table.WithRowFilter(iceberg.EqualTo(iceberg.Reference("id"), id))).ReadTasks(e.Ctx, []table.FileScanTask{task})
		if err != nil {
			t.Fatal(err)
		}
		n := int64(0)
		for r, err := range recs {
			if err != nil {
				t.Fatal(err)
			}
			n += r.NumRows()
			r.Release()
		}
		if n > 0 {
			return task
		}
	}
	t.Fatalf("no file holds id %d", id)
	return table.FileScanTask{}
}

// rewrite "rewrites" a group by copying each input file to a new one.
func (g *engine) rewrite(t *testing.T, tasks []table.FileScanTask) table.CompactionGroupResult {
	t.Helper()
	fs, err := rebase.WritableFS(g.e.Ctx, g.tbl)
	if err != nil {
		t.Fatal(err)
	}
	res := table.CompactionGroupResult{PartitionKey: "unpartitioned"}
	for _, task := range tasks {
		old := task.File
		from := old.FilePath()
		to := from[:strings.LastIndex(from, "/")+1] + "copy-" + from[strings.LastIndex(from, "/")+1:]
		copyFile(t, fs, old.FilePath(), to)
		b, err := iceberg.NewDataFileBuilder(*iceberg.UnpartitionedSpec, iceberg.EntryContentData, to, iceberg.ParquetFile, nil, nil, nil, old.Count(), old.FileSizeBytes())
		if err != nil {
			t.Fatal(err)
		}
		res.OldDataFiles = append(res.OldDataFiles, old)
		res.NewDataFiles = append(res.NewDataFiles, b.Build())
	}
	return res
}

func copyFile(t *testing.T, fs icebergio.WriteFileIO, from, to string) {
	t.Helper()
	r, err := fs.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	b, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	if err := fs.WriteFile(to, b); err != nil {
		t.Fatal(err)
	}
}

// commit commits both groups' rewrites with a committer whose
// beforeCommit hook is hook.
func (g *engine) commit(t *testing.T, hook func(attempt int)) (rebase.Committed, error) {
	t.Helper()
	fs, cat, err := rebase.OpenWriting(g.e.Ctx, g.e.B, g.tbl)
	if err != nil {
		t.Fatal(err)
	}
	env := rebase.Env{Bucket: g.e.B, Table: g.e.ID, Catalog: cat, FS: fs, Policy: commit.Policy{Retries: 5, Timeout: commit.DefaultPolicy().Timeout},
		BeforeCommit: hook}
	c, err := rebase.NewCommitter(env, rebase.DataRewrite{Caller: rebase.Caller{Job: "test", Name: "test rewrite"}}, g.tbl, g.base)
	if err != nil {
		t.Fatal(err)
	}
	results := []table.CompactionGroupResult{g.rewrite(t, g.groups[0]), g.rewrite(t, g.groups[1])}
	err = c.Run(context.Background(), results)
	return c.Committed(), err
}

// live is the data files of the table's current snapshot by path, with
// their data sequence numbers.
func live(t *testing.T, tbl *table.Table) map[string]int64 {
	t.Helper()
	fs, err := tbl.FS(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	manifests, err := tbl.CurrentSnapshot().Manifests(fs)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int64{}
	for _, m := range manifests {
		if m.ManifestContent() != iceberg.ManifestContentData {
			continue
		}
		entries, err := m.FetchEntries(fs, true)
		if err != nil {
			t.Fatal(err)
		}
		for _, en := range entries {
			out[en.DataFile().FilePath()] = en.SequenceNum()
		}
	}
	return out
}

// The outputs replace the inputs, with the data sequence number of the
// snapshot the rewrite started from: an equality delete committed after
// the start must still apply to their rows.
func TestReplaceKeepsStartSequence(t *testing.T) {
	g := newEngine(t, "2")
	want := g.e.Rows(g.tbl, 0)
	done, err := g.commit(t, nil)
	if err != nil || done.Commits != 1 || len(done.Groups) != 2 || len(done.Dropped) != 0 {
		t.Fatalf("commit: %+v %v", done, err)
	}
	after := g.e.Load()
	if got := g.e.Rows(after, 0); !got.Equal(want) {
		t.Fatalf("rows changed: %v, want %v", got, want)
	}
	files := live(t, after)
	if len(files) != 4 {
		t.Fatalf("live files %v, want the 4 copies", files)
	}
	for p, seq := range files {
		if !strings.Contains(p, "copy-") || seq != g.base.Start.SequenceNumber {
			t.Errorf("live %s at sequence %d, want a copy at the start's %d", p, seq, g.base.Start.SequenceNumber)
		}
	}
}

// A writer's append between the staging and the commit: the attempt is
// rebased on the new head, and both the writer's rows and the rewrite
// land.
func TestRebaseOnAppend(t *testing.T) {
	g := newEngine(t, "2")
	var want = g.e.Rows(g.tbl, 0)
	done, err := g.commit(t, func(attempt int) {
		if attempt == 1 {
			want = g.e.Rows(g.e.Append(g.e.Load(), 7), 0)
		}
	})
	if err != nil || done.Commits != 1 || done.Rebases != 1 || done.Stats.Conflicts != 1 || len(done.Groups) != 2 {
		t.Fatalf("commit: %+v %v", done, err)
	}
	after := g.e.Load()
	if got := g.e.Rows(after, 0); !got.Equal(want) {
		t.Fatalf("rows after the rebased commit: %v, want %v", got, want)
	}
	if n := len(live(t, after)); n != 5 {
		t.Fatalf("%d live files, want the 4 copies and the writer's", n)
	}
}

// A position delete committed since the start that may apply to a
// group's input drops that group, since its copy would bring the row back.
// On v2 the delete file's file_path bounds are truncated, so it may apply
// to every input: both groups are dropped. On v3 a deletion vector names
// its data file: only the first group is dropped, the second commits. The
// delete holds either way.
func TestDropOnNewPositionDelete(t *testing.T) {
	for _, tc := range []struct {
		format         string
		dropped, kept  int
		copies, commit int
	}{{"2", 2, 0, 0, 0}, {"3", 1, 1, 2, 1}} {
		t.Run("v"+tc.format, func(t *testing.T) {
			g := newEngine(t, tc.format)
			var want = g.e.Rows(g.tbl, 0)
			done, err := g.commit(t, func(attempt int) {
				if attempt == 1 {
					want = g.e.Rows(g.e.PosDelete(g.e.Load(), 5), 0) // in the first group
				}
			})
			if err != nil || done.Commits != tc.commit || len(done.Groups) != tc.kept || len(done.Dropped) != tc.dropped {
				t.Fatalf("commit: %+v %v", done, err)
			}
			after := g.e.Load()
			if got := g.e.Rows(after, 0); !got.Equal(want) {
				t.Fatalf("rows: %v, want %v (the deleted row is back?)", got, want)
			}
			copies := 0
			for p := range live(t, after) {
				if strings.Contains(p, "copy-") {
					copies++
				}
			}
			if copies != tc.copies {
				t.Fatalf("%d copies live, want %d", copies, tc.copies)
			}
		})
	}
}
