package merge

import (
	"context"
	"errors"
	"io"
	"testing"

	"github.com/apache/iceberg-go"
	icebergio "github.com/apache/iceberg-go/io"

	"github.com/icekeeper/icekeeper/internal/rowdigest"
	"github.com/icekeeper/icekeeper/internal/testkit/tableenv"
)

// The merge proves its rows as it goes: the claim counts every row, its
// read and written digests agree, and they are the digest iceberg-go's
// reader (Arrow) gives the same rows, a second implementation of the
// definition. An output replaced in storage between its writing and its
// proof is refused.
func TestMergeProvesRows(t *testing.T) {
	e, tbl := tableenv.New(t, tableenv.BaseSchema, *iceberg.UnpartitionedSpec, "2")
	for range 6 {
		tbl = e.Append(tbl, 50)
	}
	ctx := context.Background()
	tasks, err := tbl.Scan().PlanFiles(ctx)
	if err != nil {
		t.Fatal(err)
	}
	scan := tbl.Scan()
	sc, _ := scan.Projection()
	want, err := rowdigest.Tasks(ctx, scan, sc, tasks, nil)
	if err != nil {
		t.Fatal(err)
	}

	// Read whole, and in ranges read ahead (WholeFileBytes 1).
	for _, whole := range []int64{0, 1} {
		res, rep, err := (&Merger{CheckRows: true, WholeFileBytes: whole}).Group(ctx, tbl, tasks, 1<<30)
		if err != nil {
			t.Fatal(err)
		}
		if c := rep.Rows; c == nil || c.Read != want || c.Written != want || c.CopiedRows != 0 || len(res.NewDataFiles) != 1 {
			t.Fatalf("whole-file bytes %d: claim %+v, Arrow's digest of the inputs %v", whole, c, want)
		}
	}

	fs, _ := tbl.FS(ctx)
	m := &Merger{CheckRows: true, beforeProve: func(path string) error {
		return overwrite(fs, path, tasks[0].File.FilePath())
	}}
	if _, _, err := m.Group(ctx, tbl, tasks, 1<<30); !errors.Is(err, rowdigest.ErrRowsDiffer) {
		t.Fatalf("an output replaced before its proof: %v", err)
	}
	if _, rep, err := (&Merger{}).Group(ctx, tbl, tasks, 1<<30); err != nil || rep.Rows != nil {
		t.Fatalf("without CheckRows: %+v, %v", rep, err)
	}
}

// overwrite replaces the file at dst with the bytes of src.
func overwrite(fs icebergio.IO, dst, src string) error {
	f, err := fs.Open(src)
	if err != nil {
		return err
	}
	defer f.Close()
	b, err := io.ReadAll(f)
	if err != nil {
		return err
	}
	return fs.(icebergio.WriteFileIO).WriteFile(dst, b)
}
