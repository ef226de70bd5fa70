package erasure

import (
	"fmt"
	"strings"

	"github.com/icekeeper/icekeeper/internal/human"
	"github.com/icekeeper/icekeeper/planner"
)

// summary is a run in one line (jobs.Definition.Summary), in Text's
// words: what it rewrote, expired and deleted, then what still holds
// removed rows (blocked first: it needs a person).
func summary(f *Figures) string {
	rewrote, expired, deleted := "rewrote", "expired", "deleted"
	if f.DryRun {
		rewrote, expired, deleted = "would rewrite", "would expire", "would delete"
	}
	var parts []string
	if f.FilesRewritten > 0 {
		parts = append(parts, fmt.Sprintf("%s %s into %d", rewrote, human.Count(int64(f.FilesRewritten), "data file"), f.FilesWritten))
	}
	if len(f.Expired) > 0 {
		parts = append(parts, fmt.Sprintf("%s %s", expired, human.Count(int64(len(f.Expired)), "snapshot")))
	}
	if f.ObjectsDeleted > 0 {
		parts = append(parts, fmt.Sprintf("%s %s", deleted, human.Count(int64(f.ObjectsDeleted), "object")))
	}
	refs, files := 0, 0
	for _, bl := range f.Blocked {
		if bl.Type == planner.BlockTable {
			files++
		} else {
			refs++
		}
	}
	if refs > 0 {
		parts = append(parts, fmt.Sprintf("blocked by %s", human.Count(int64(refs), "ref")))
	}
	if files > 0 {
		parts = append(parts, fmt.Sprintf("%s blocked by another table", human.Count(int64(files), "file")))
	}
	if len(f.Pending) > 0 {
		parts = append(parts, fmt.Sprintf("%d pending", len(f.Pending)))
	}
	if f.Overdue > 0 {
		parts = append(parts, fmt.Sprintf("%d overdue", f.Overdue))
	}
	if len(parts) == 0 {
		return "nothing due"
	}
	return strings.Join(parts, ", ")
}
