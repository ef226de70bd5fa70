package commit

import (
	"errors"
	"io/fs"

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
func PruneMetadata(files icebergio.IO, base, next table.Metadata) (int, error) {
	if !next.Properties().GetBool(table.MetadataDeleteAfterCommitEnabledKey, table.MetadataDeleteAfterCommitEnabledDefault) {
		return 0, nil
	}
	kept := map[string]bool{}
	for e := range next.PreviousFiles() {
		kept[e.MetadataFile] = true
	}
	removed := 0
	var errs []error
	for e := range base.PreviousFiles() {
		if kept[e.MetadataFile] {
			continue
		}
		switch err := files.Remove(e.MetadataFile); {
		case err == nil:
			removed++
		case !errors.Is(err, fs.ErrNotExist):
			errs = append(errs, err)
		}
	}
	return removed, errors.Join(errs...)
}
