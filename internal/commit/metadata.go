package commit

import (
	"errors"
	"fmt"
	"io/fs"
	"strings"

	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
)

// PruneMetadata is Iceberg's write.metadata.delete-after-commit for a
// commit that went from base to next: when next's properties enable it,
// the metadata files base's log held and next's no longer does (trimmed
// to write.metadata.previous-versions-max) are deleted. iceberg-go does
// this in Transaction.Commit only; icekeeper commits through the catalog
// directly. It returns how many files were removed; a file already gone
// is not an error, and a failed removal leaves the file to unreferenced
// file removal, which takes metadata files no log holds.
//
// Only a file directly in the table's metadata directory (location/metadata,
// or write.metadata.path) is deleted: a log entry is the table's own
// claim, and one naming a file elsewhere (another table's, or a path with
// "..", "//" or percent-escapes that storage might resolve elsewhere) is
// left alone, to unreferenced file removal and its checks.
//
// A trimmed file may be another table's current metadata file: Iceberg's
// register_table registers a table at an existing metadata file, and
// Spark's users do so to fork a table. current gives every table of the
// catalog's current metadata file; a file one of them holds stays, and
// when current fails nothing is deleted. It is asked only when there is a
// file to delete.
func PruneMetadata(files icebergio.IO, base, next table.Metadata, current func() (map[string]string, error)) (int, error) {
	if !next.Properties().GetBool(table.MetadataDeleteAfterCommitEnabledKey, table.MetadataDeleteAfterCommitEnabledDefault) {
		return 0, nil
	}
	kept := map[string]bool{}
	for e := range next.PreviousFiles() {
		kept[e.MetadataFile] = true
	}
	var trimmed []string
	for e := range base.PreviousFiles() {
		if !kept[e.MetadataFile] && inMetadataDir(next, e.MetadataFile) {
			trimmed = append(trimmed, e.MetadataFile)
		}
	}
	if len(trimmed) == 0 {
		return 0, nil
	}
	locs, err := current()
	if err != nil {
		return 0, fmt.Errorf("keep the trimmed metadata files: which other tables hold them is unknown: %w", err)
	}
	held := map[string]bool{}
	for _, l := range locs {
		held[l] = true
	}
	removed := 0
	var errs []error
	for _, f := range trimmed {
		if held[f] {
			continue // another table's current metadata file
		}
		switch err := files.Remove(f); {
		case err == nil:
			removed++
		case !errors.Is(err, fs.ErrNotExist):
			errs = append(errs, err)
		}
	}
	return removed, errors.Join(errs...)
}

// inMetadataDir reports whether p names a file directly in meta's metadata
// directory, spelled so that no storage can resolve it elsewhere.
func inMetadataDir(meta table.Metadata, p string) bool {
	dir := strings.TrimSuffix(meta.Properties().Get(table.WriteMetadataPathKey, strings.TrimSuffix(meta.Location(), "/")+"/metadata"), "/") + "/"
	name, ok := strings.CutPrefix(p, dir)
	return ok && name != "" && name != "." && name != ".." && !strings.ContainsAny(name, "/\\%")
}
