package rebase

import (
	"context"
	"slices"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
)

// Deletes is what the scan at the start attached deletes to: what a data
// rewrite needs to know which delete files its commit may remove.
type Deletes struct {
	// Covers maps each position and equality delete file to the data
	// files the scan attached it to: every live file it may apply to.
	Covers map[string][]string
	// Equality maps each data file to its equality delete files.
	Equality map[string][]iceberg.DataFile
	// Dangling are live position and equality delete files the scan
	// attached to no data file: they apply to nothing, and nothing written
	// later can bring them back into play (position deletes name files
	// that are gone; new data files get higher sequence numbers than an
	// equality delete's). The run's first commit removes them.
	Dangling []iceberg.DataFile
}

// Attachments indexes the deletes the scan attached to tasks' files.
// Dangling is left for the caller (DanglingDeletes).
func Attachments(tasks []table.FileScanTask) Deletes {
	idx := Deletes{Covers: map[string][]string{}, Equality: map[string][]iceberg.DataFile{}}
	for _, t := range tasks {
		p := t.File.FilePath()
		for _, d := range t.DeleteFiles {
			if d.ContentType() == iceberg.EntryContentPosDeletes {
				idx.Covers[d.FilePath()] = append(idx.Covers[d.FilePath()], p)
			}
		}
		for _, d := range t.EqualityDeleteFiles {
			idx.Covers[d.FilePath()] = append(idx.Covers[d.FilePath()], p)
			idx.Equality[p] = append(idx.Equality[p], d)
		}
	}
	return idx
}

// safeDeletes sets each result's SafePosDeletes — the delete files the
// commit removes — to the position and equality delete files whose every
// attached data file is replaced by this batch. A delete file that may
// still apply to a file outside the batch stays. An equality delete is
// dead once its files are replaced: the outputs carry the start's data
// sequence number, which is not lower than the delete's, so it no longer
// applies to them, and files committed later have higher numbers still.
// Each removed file is listed on one result only.
func safeDeletes(batch []table.CompactionGroupResult, idx Deletes) []table.CompactionGroupResult {
	replaced := map[string]bool{}
	for _, r := range batch {
		for _, df := range r.OldDataFiles {
			replaced[df.FilePath()] = true
		}
	}
	out := make([]table.CompactionGroupResult, len(batch))
	taken := map[string]bool{}
	for _, d := range idx.Dangling {
		taken[d.FilePath()] = true
	}
	for i, r := range batch {
		candidates := batch[i].SafePosDeletes
		for _, df := range r.OldDataFiles {
			candidates = append(candidates, idx.Equality[df.FilePath()]...)
		}
		r.SafePosDeletes = nil
		for _, d := range candidates {
			if taken[d.FilePath()] {
				continue
			}
			covers := idx.Covers[d.FilePath()]
			all := len(covers) > 0
			for _, p := range covers {
				all = all && replaced[p]
			}
			if all {
				r.SafePosDeletes = append(r.SafePosDeletes, d)
				taken[d.FilePath()] = true
			}
		}
		out[i] = r
	}
	if len(out) > 0 {
		out[0].SafePosDeletes = append(out[0].SafePosDeletes, idx.Dangling...)
	}
	return out
}

// plannedDeletes keeps the delete files each group of batch planned to
// remove (a delete rewrite checked them against the same scan) and adds
// the dangling ones to the first group: a dangling delete is attached to
// no data file, so no group lists it.
func plannedDeletes(batch []table.CompactionGroupResult, idx Deletes) []table.CompactionGroupResult {
	out := slices.Clone(batch)
	if len(out) > 0 {
		out[0].SafePosDeletes = slices.Concat(out[0].SafePosDeletes, idx.Dangling)
	}
	return out
}

// DanglingDeletes lists the live position and equality delete files of
// tbl's current snapshot that the scan attached to no data file (covers
// is Deletes.Covers). Deletion vectors are left alone: several share one
// Puffin file.
func DanglingDeletes(ctx context.Context, tbl *table.Table, covers map[string][]string) ([]iceberg.DataFile, error) {
	var out []iceberg.DataFile
	seen := map[string]bool{}
	for e, err := range LiveEntries(ctx, tbl, iceberg.ManifestContentDeletes) {
		if err != nil {
			return nil, err
		}
		df := e.DataFile()
		p := df.FilePath()
		if df.FileFormat() == iceberg.PuffinFile || len(covers[p]) > 0 || seen[p] {
			continue
		}
		seen[p] = true
		out = append(out, df)
	}
	return out, nil
}
