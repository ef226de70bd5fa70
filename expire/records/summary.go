package records

import (
	"fmt"

	"github.com/icekeeper/icekeeper/internal/human"
)

// summary is a run in one line (jobs.Definition.Summary), in Text's
// words.
func summary(f *ExpirationFigures) string {
	switch {
	case f.Column == "":
		return "nothing to expire"
	case f.DeletedRecords == 0:
		return fmt.Sprintf("no record older than %s", human.Count(int64(f.Days), "day"))
	case f.DryRun:
		return fmt.Sprintf("%s would be removed from %s (%s)", human.Count(f.DeletedRecords, "record"),
			human.Count(f.DeletedDataFiles, "data file"), human.Bytes(f.RemovedFilesSize))
	default:
		return fmt.Sprintf("removed %s from %s (%s)", human.Count(f.DeletedRecords, "record"),
			human.Count(f.DeletedDataFiles, "data file"), human.Bytes(f.RemovedFilesSize))
	}
}
