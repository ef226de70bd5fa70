package tablecheck

import (
	"context"
	"errors"
	"fmt"
	"io/fs"

	"github.com/apache/iceberg-go/table"
)

// ReachableFiles lists every file the table's metadata reaches: the current
// and logged metadata files, and for every snapshot its manifest list,
// manifests and live data and delete files, plus statistics files. It is
// written independently of the orphan package so that tests of removal
// check it against a second implementation.
func ReachableFiles(ctx context.Context, tbl *table.Table) ([]string, error) {
	meta := tbl.Metadata()
	fsys, err := tbl.FS(ctx)
	if err != nil {
		return nil, err
	}
	set := map[string]bool{tbl.MetadataLocation(): true}
	for e := range meta.PreviousFiles() {
		set[e.MetadataFile] = true
	}
	for s := range meta.Statistics() {
		set[s.StatisticsPath] = true
	}
	for _, snap := range meta.Snapshots() {
		set[snap.ManifestList] = true
		manifests, err := snap.Manifests(fsys)
		if err != nil {
			return nil, fmt.Errorf("manifest list %s: %w", snap.ManifestList, err)
		}
		for _, m := range manifests {
			if set[m.FilePath()] {
				continue // manifests are immutable: its entries are in already
			}
			set[m.FilePath()] = true
			entries, err := m.FetchEntries(fsys, true)
			if err != nil {
				return nil, fmt.Errorf("manifest %s: %w", m.FilePath(), err)
			}
			for _, e := range entries {
				set[e.DataFile().FilePath()] = true
			}
		}
	}
	out := make([]string, 0, len(set))
	for p := range set {
		out = append(out, p)
	}
	return out, nil
}

// MissingFiles returns the reachable files that do not exist. Metadata
// files in the log may have been cleaned up by the writer's own
// write.metadata.delete-after-commit; they are checked too, because
// icekeeper must never be the one that removed them.
func MissingFiles(ctx context.Context, tbl *table.Table) ([]string, error) {
	files, err := ReachableFiles(ctx, tbl)
	if err != nil {
		return nil, err
	}
	fsys, err := tbl.FS(ctx)
	if err != nil {
		return nil, err
	}
	var missing []string
	for _, p := range files {
		f, err := fsys.Open(p)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				missing = append(missing, p)
				continue
			}
			return nil, fmt.Errorf("open %s: %w", p, err)
		}
		f.Close()
	}
	return missing, nil
}
