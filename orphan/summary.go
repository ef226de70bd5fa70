package orphan

import (
	"fmt"
	"strings"

	"github.com/icekeeper/icekeeper/internal/human"
)

// summary is a run in one line (jobs.Definition.Summary), in Text's
// words: what was marked noncurrent and what was deleted, always both,
// since "deleted 0" is news too for files marked days ago.
func summary(f *Figures) string {
	mark, unmark, del := "marked", "unmarked", "deleted"
	if f.DryRun {
		mark, unmark, del = "would mark", "would unmark", "would delete"
	}
	parts := []string{fmt.Sprintf("%s %s noncurrent", mark, human.Count(int64(f.Marked), "file"))}
	if f.Unmarked > 0 {
		parts = append(parts, fmt.Sprintf("%s %d", unmark, f.Unmarked))
	}
	deleted := fmt.Sprintf("%s %d", del, f.Deleted)
	if f.DeletedBytes > 0 {
		deleted += " (" + human.Bytes(f.DeletedBytes) + ")"
	}
	parts = append(parts, deleted)
	if f.CappedDeletes > 0 {
		parts = append(parts, fmt.Sprintf("%d left by the per-run cap", f.CappedDeletes))
	}
	if f.DeleteFailed > 0 {
		parts = append(parts, fmt.Sprintf("%d deletes failed", f.DeleteFailed))
	}
	return strings.Join(parts, ", ")
}
