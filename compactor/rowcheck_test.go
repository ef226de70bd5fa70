package compactor

import (
	"context"
	"strings"
	"testing"

	"github.com/apache/iceberg-go"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"

	"github.com/icekeeper/icekeeper/internal/rebase"
	"github.com/icekeeper/icekeeper/internal/rowdigest"
	"github.com/icekeeper/icekeeper/internal/state"
	"github.com/icekeeper/icekeeper/internal/testkit/tableenv"
)

// rowCheckTable is small files with position and equality deletes: a
// rewrite that applies deletes, so that the rows read are not the rows
// stored.
func rowCheckTable(t *testing.T) *env {
	e, tbl := newEnv(t, tableenv.BaseSchema, *iceberg.UnpartitionedSpec, "2")
	for range 8 {
		tbl = e.Append(tbl, 25)
	}
	tbl = e.PosDelete(tbl, 3, 30, 77)
	e.EqDelete(tbl, 100, 150)
	return e
}

// A compaction's commit carries the digests of the rows it read (deletes
// applied) and wrote, equal and counting the table's rows; recomputed
// from storage, the commit kept exactly its rows. An output replaced in
// storage afterwards by another valid Parquet file of the same schema is
// named by the recomputation.
func TestRowClaim(t *testing.T) {
	e := rowCheckTable(t)
	rows := e.Rows(e.Load(), 0)
	if out, _ := e.compact(&Job{}); out.Status != state.Successful {
		t.Fatalf("compaction: %s %s", out.Status, out.FailureMessage)
	}
	tbl := e.Load()
	snap := tbl.CurrentSnapshot()
	props := snap.Summary.Properties
	read, err := rowdigest.Parse(props[rebase.RowsReadProperty])
	if err != nil {
		t.Fatalf("summary %v: %v", props, err)
	}
	if props[rebase.RowsWrittenProperty] != read.String() || props[rebase.RowDigestVersionProp] != "1" || read.Count != rows.Rows {
		t.Fatalf("the commit claims read %s, written %s (version %s); the table holds %d rows",
			read, props[rebase.RowsWrittenProperty], props[rebase.RowDigestVersionProp], rows.Rows)
	}
	c, err := rebase.Recompute(e.Ctx, tbl, snap.SnapshotID)
	if err != nil {
		t.Fatal(err)
	}
	if !c.Kept() || c.Before != read || len(c.Written) == 0 {
		t.Fatalf("recomputed: %s", c.Report())
	}
	t.Log(c.Report())

	// The written file replaced by a replaced one: valid Parquet of the
	// same schema, other rows.
	fs, _ := tbl.FS(e.Ctx)
	body, err := readFile(fs, c.Replaced[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := fs.(icebergio.WriteFileIO).WriteFile(c.Written[0], body); err != nil {
		t.Fatal(err)
	}
	c, err = rebase.Recompute(e.Ctx, tbl, snap.SnapshotID)
	if err != nil {
		t.Fatal(err)
	}
	if c.Kept() || len(c.Mismatched) != 1 || !strings.Contains(c.Mismatched[0], c.Written[0]) || !strings.Contains(c.Report(), "differs") {
		t.Fatalf("a tampered output: %s", c.Report())
	}
	t.Log(c.Report())
}

// A rewrite whose output lost rows between writing and committing (a
// fault injected: the output overwritten with one of the group's inputs)
// is refused before its commit, and the table is left as it was.
func TestRowCheckRefusesLostRows(t *testing.T) {
	e := rowCheckTable(t)
	before := e.Load()
	job := &Job{tamper: func(ctx context.Context, tbl *table.Table, outputs []iceberg.DataFile) error {
		fs, err := tbl.FS(ctx)
		if err != nil {
			return err
		}
		tasks, err := tbl.Scan().PlanFiles(ctx)
		if err != nil {
			return err
		}
		body, err := readFile(fs, tasks[0].File.FilePath())
		if err != nil {
			return err
		}
		return fs.(icebergio.WriteFileIO).WriteFile(outputs[0].FilePath(), body)
	}}
	out, fig := e.compact(job)
	if out.Status != state.Failed || !strings.Contains(out.FailureMessage, rowdigest.ErrRowsDiffer.Error()) || fig.Commits != 0 {
		t.Fatalf("a rewrite that lost rows: %s %s", out.Status, out.FailureMessage)
	}
	if after := e.Load(); after.MetadataLocation() != before.MetadataLocation() {
		t.Fatal("a rewrite that lost rows was committed")
	}
	t.Log(out.FailureMessage)
	// Without the fault, the same run commits.
	if out, _ := e.compact(&Job{}); out.Status != state.Successful {
		t.Fatalf("compaction: %s %s", out.Status, out.FailureMessage)
	}
}

func readFile(fs icebergio.IO, path string) ([]byte, error) {
	f, err := fs.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	b := make([]byte, st.Size())
	_, err = f.ReadAt(b, 0)
	return b, err
}

// On the merge path the claim comes from the merge itself: rows it
// re-encodes by their digest, row groups it copies by their bytes, and
// the counts add up to the table's rows; recomputed from storage, the
// commit kept its rows.
func TestMergeRowClaim(t *testing.T) {
	for _, tc := range []struct {
		limit          string
		copied, copies int64 // rows and row groups copied byte for byte
	}{
		{"1000", 12000, 12},
		{"1001", 0, 0},
	} {
		t.Run("limit "+tc.limit, func(t *testing.T) {
			e, tbl := newEnv(t, tableenv.BaseSchema, *iceberg.UnpartitionedSpec, "2")
			tbl = e.setProps(tbl, iceberg.Properties{"write.parquet.row-group-limit": "1000"})
			for range 4 {
				tbl = e.Append(tbl, 3000)
			}
			for range 6 {
				tbl = e.Append(tbl, 40)
			}
			e.setProps(tbl, iceberg.Properties{"write.parquet.row-group-limit": tc.limit})
			fig := e.checkCompaction(&Job{MinInputFiles: 2})
			if fig.GroupsMerged != 1 {
				t.Fatalf("%d groups merged", fig.GroupsMerged)
			}
			tbl = e.Load()
			snap := tbl.CurrentSnapshot()
			c, err := rebase.Recompute(e.Ctx, tbl, snap.SnapshotID)
			if err != nil {
				t.Fatal(err)
			}
			cl := c.Claimed
			if !c.Kept() || cl == nil || cl.CopiedRows != tc.copied || cl.Copied.Count != tc.copies ||
				cl.Read.Count+cl.CopiedRows != 12240 || c.Before.Count != 12240 {
				t.Fatalf("summary %v\n%s", snap.Summary.Properties, c.Report())
			}
			if tc.copied == 0 && cl.Read != c.Before {
				t.Fatalf("the merge's digest %v is not the one recomputed through Arrow, %v", cl.Read, c.Before)
			}
			t.Log(c.Report())
		})
	}
}
