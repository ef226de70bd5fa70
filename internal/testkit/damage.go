package testkit

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/apache/iceberg-go"
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

// DamageFor is Damage for the rest of the test: the original bytes are
// put back when t ends.
func DamageFor(t testing.TB, ctx context.Context, tbl *table.Table, path string, how func([]byte) ([]byte, error)) {
	t.Helper()
	orig, err := Damage(ctx, tbl, path, how)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if _, err := Damage(ctx, tbl, path, func([]byte) ([]byte, error) { return orig, nil }); err != nil {
			t.Error(err)
		}
	})
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
	// Counted by reading: an old writer's list may count nothing.
	best, most := "", -1
	for _, m := range list {
		entries, err := m.FetchEntries(fs, false)
		if err != nil {
			return "", 0, err
		}
		if len(entries) > most {
			best, most = m.FilePath(), len(entries)
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

// ListCounts are the counts SetListCounts writes for one manifest in its
// manifest-list entry: its ADDED, EXISTING and DELETED files. -1 leaves a
// count null, as format-version-1 writers may.
type ListCounts struct{ Added, Existing, Deleted int32 }

// NullCounts is ListCounts for an old writer that wrote none.
func NullCounts(iceberg.ManifestFile) ListCounts { return ListCounts{-1, -1, -1} }

// SetListCounts rewrites the current manifest list of the format-version-1
// table tbl in place, each manifest's entry with the counts counts gives
// it and everything else as it was: an old writer's list (NullCounts), or
// one whose counts were made to agree with a damaged manifest.
func SetListCounts(ctx context.Context, tbl *table.Table, counts func(iceberg.ManifestFile) ListCounts) error {
	if v := tbl.Metadata().Version(); v != 1 {
		return fmt.Errorf("null manifest-list counts are a format-version-1 matter; %s is version %d", tbl.Identifier(), v)
	}
	snap := tbl.CurrentSnapshot()
	_, err := Damage(ctx, tbl, snap.ManifestList, func(b []byte) ([]byte, error) {
		list, err := iceberg.ReadManifestList(bytes.NewReader(b))
		if err != nil {
			return nil, err
		}
		out := make([]iceberg.ManifestFile, len(list))
		for i, m := range list {
			c := counts(m)
			out[i] = iceberg.NewManifestFile(1, m.FilePath(), m.Length(), m.PartitionSpecID(), m.SnapshotID()).
				Content(m.ManifestContent()).
				AddedFiles(c.Added).ExistingFiles(c.Existing).DeletedFiles(c.Deleted).
				AddedRows(m.AddedRows()).ExistingRows(m.ExistingRows()).DeletedRows(m.DeletedRows()).
				Partitions(m.Partitions()).KeyMetadata(m.KeyMetadata()).Build()
		}
		var buf bytes.Buffer
		if err := iceberg.WriteManifestList(1, &buf, snap.SnapshotID, snap.ParentSnapshotID, nil, 0, out); err != nil {
			return nil, err
		}
		return buf.Bytes(), nil
	})
	return err
}

// StripSummaryTotals rewrites tbl's current metadata file in place with
// every snapshot summary's total-* properties removed, as writers that
// keep no totals leave them. Load the table again to see it.
func StripSummaryTotals(ctx context.Context, tbl *table.Table) error {
	_, err := Damage(ctx, tbl, tbl.MetadataLocation(), func(b []byte) ([]byte, error) {
		var meta map[string]any
		if err := json.Unmarshal(b, &meta); err != nil {
			return nil, err
		}
		snaps, _ := meta["snapshots"].([]any)
		for _, s := range snaps {
			summary, _ := s.(map[string]any)["summary"].(map[string]any)
			for k := range summary {
				if strings.HasPrefix(k, "total-") {
					delete(summary, k)
				}
			}
		}
		return json.Marshal(meta)
	})
	return err
}

// ManifestOf is the manifest at path in tbl's current manifest list.
func ManifestOf(ctx context.Context, tbl *table.Table, path string) (iceberg.ManifestFile, error) {
	fs, err := tbl.FS(ctx)
	if err != nil {
		return nil, err
	}
	list, err := tbl.CurrentSnapshot().Manifests(fs)
	if err != nil {
		return nil, err
	}
	for _, m := range list {
		if m.FilePath() == path {
			return m, nil
		}
	}
	return nil, fmt.Errorf("no manifest %s in the current snapshot of %s", path, tbl.Identifier())
}

// OldWriterTable makes tbl (format version 1) look written by an old
// writer: its current manifest list without counts and, unless totals,
// its snapshot summaries without total-*. Load the table again to see it.
func OldWriterTable(ctx context.Context, tbl *table.Table, totals bool) error {
	if err := SetListCounts(ctx, tbl, NullCounts); err != nil {
		return err
	}
	if totals {
		return nil
	}
	return StripSummaryTotals(ctx, tbl)
}
