package compactor

import (
	"strings"
	"testing"

	"github.com/apache/iceberg-go"

	"github.com/icekeeper/icekeeper/internal/rebase"
)

// verifyOutput accepts what the writer wrote and rejects a manifest entry
// whose row count disagrees with its file.
func TestVerifyOutput(t *testing.T) {
	e, tbl := smallTable(t)
	tasks, err := tbl.Scan().PlanFiles(e.Ctx)
	if err != nil {
		t.Fatal(err)
	}
	fs, err := tbl.FS(e.Ctx)
	if err != nil {
		t.Fatal(err)
	}
	df := tasks[0].File
	if err := rebase.VerifyOutput(e.Ctx, fs, tbl.Location(), df); err != nil {
		t.Fatalf("a good file: %v", err)
	}
	bld, err := iceberg.NewDataFileBuilder(*iceberg.UnpartitionedSpec, iceberg.EntryContentData, df.FilePath(), iceberg.ParquetFile, nil, nil, nil, df.Count()+1, df.FileSizeBytes())
	if err != nil {
		t.Fatal(err)
	}
	if err := rebase.VerifyOutput(e.Ctx, fs, tbl.Location(), bld.Build()); err == nil || !strings.Contains(err.Error(), "rows") {
		t.Fatalf("a wrong row count: %v", err)
	}
	bad, _ := iceberg.NewDataFileBuilder(*iceberg.UnpartitionedSpec, iceberg.EntryContentData, df.FilePath()+".missing", iceberg.ParquetFile, nil, nil, nil, 1, 1)
	if err := rebase.VerifyOutput(e.Ctx, fs, tbl.Location(), bad.Build()); err == nil {
		t.Fatal("a missing file verified")
	}
}
