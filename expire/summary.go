package expire

import (
	"fmt"
	"strings"

	"github.com/icekeeper/icekeeper/internal/human"
)

// summary is a run in one line (jobs.Definition.Summary), in Text's
// words.
func summary(f *Figures) string {
	expired, removed, deleted := "expired", "removed", "deleted"
	if f.DryRun {
		expired, removed, deleted = "would expire", "would remove", "would delete"
	}
	if f.SnapshotsExpired == 0 && f.RefsRemoved == 0 {
		return fmt.Sprintf("no snapshot expired, %d kept", f.SnapshotsKept)
	}
	parts := []string{fmt.Sprintf("%s %s of %d", expired, human.Count(int64(f.SnapshotsExpired), "snapshot"), f.SnapshotsBefore)}
	if f.RefsRemoved > 0 {
		parts = append(parts, removed+" "+human.Count(int64(f.RefsRemoved), "ref"))
	}
	if f.FilesDeleted > 0 {
		parts = append(parts, deleted+" "+human.Count(int64(f.FilesDeleted), "file"))
	}
	return strings.Join(parts, ", ")
}
