package testkit

import (
	"context"
	"fmt"
	"io"
	"strings"

	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
)

// AddCopies commits n copies of tbl's first live data file, written beside
// it, with one AddFiles: one snapshot whose one manifest holds n entries,
// several Avro blocks of them (a block is about 64 KiB), as a bulk import
// or the add_files procedure makes. The copies repeat the file's rows.
func AddCopies(ctx context.Context, tbl *table.Table, n int) (*table.Table, error) {
	tasks, err := tbl.Scan().PlanFiles(ctx)
	if err != nil {
		return nil, err
	}
	if len(tasks) == 0 {
		return nil, fmt.Errorf("%s has no data file to copy", tbl.Identifier())
	}
	src := tasks[0].File.FilePath()
	fs, err := tbl.FS(ctx)
	if err != nil {
		return nil, err
	}
	body, err := readAll(fs, src)
	if err != nil {
		return nil, err
	}
	wfs, ok := fs.(icebergio.WriteFileIO)
	if !ok {
		return nil, fmt.Errorf("the file IO of %s cannot write", tbl.Identifier())
	}
	dir := src[:strings.LastIndex(src, "/")]
	paths := make([]string, n)
	for i := range paths {
		paths[i] = fmt.Sprintf("%s/copy-%05d.parquet", dir, i)
		if err := wfs.WriteFile(paths[i], body); err != nil {
			return nil, err
		}
	}
	tx := tbl.NewTransaction()
	if err := tx.AddFiles(ctx, paths, nil, false); err != nil {
		return nil, err
	}
	return tx.Commit(ctx)
}

// Damage replaces the file at path with what how makes of its bytes:
// CutAfterBlocks or LowerBlockCount, say. It returns the original bytes, to put
// back.
func Damage(ctx context.Context, tbl *table.Table, path string, how func([]byte) ([]byte, error)) ([]byte, error) {
	fs, err := tbl.FS(ctx)
	if err != nil {
		return nil, err
	}
	orig, err := readAll(fs, path)
	if err != nil {
		return nil, err
	}
	damaged, err := how(orig)
	if err != nil {
		return nil, fmt.Errorf("damage %s: %w", path, err)
	}
	if err := fs.(icebergio.WriteFileIO).WriteFile(path, damaged); err != nil {
		return nil, err
	}
	return orig, nil
}

// LargestManifest is the path of the current snapshot's manifest with the
// most entries, and that number.
func LargestManifest(ctx context.Context, tbl *table.Table) (string, int, error) {
	fs, err := tbl.FS(ctx)
	if err != nil {
		return "", 0, err
	}
	list, err := tbl.CurrentSnapshot().Manifests(fs)
	if err != nil {
		return "", 0, err
	}
	best, most := "", -1
	for _, m := range list {
		if n := int(m.AddedDataFiles() + m.ExistingDataFiles() + m.DeletedDataFiles()); n > most {
			best, most = m.FilePath(), n
		}
	}
	return best, most, nil
}

func readAll(fs icebergio.IO, path string) ([]byte, error) {
	f, err := fs.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(f)
}
