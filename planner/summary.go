package planner

import (
	"fmt"
	"strconv"
	"time"

	"github.com/apache/iceberg-go/table"
)

// RuleSummary is the verdict of a run that the current snapshot's summary
// totals alone showed to have nothing to do: the table changed since its
// last full evaluation, but not into anything the job would act on.
const RuleSummary = "skip: summary totals"

// SummaryApplies reports whether the summary totals may stand in for a
// full evaluation under rule, the unchanged rule's verdict, when the last
// full evaluation is age old: only for a table that changed since a full
// evaluation younger than the backstop. A first evaluation, changed
// settings, the clock and the backstop still evaluate in full, so that a
// table the totals keep calling idle is read in full at least once per
// backstop.
func SummaryApplies(rule string, age, backstop time.Duration) bool {
	return (rule == RuleSnapshotChanged || rule == RuleMetadataChanged) && (backstop <= 0 || age < backstop)
}

// CompactionIdle reports whether compaction has nothing to do on meta's
// current snapshot by its summary totals alone, as Amoro's metadata-based
// evaluation does before it scans: no delete files (nothing to apply,
// convert or rewrite), fewer data files than both the minimum of small
// files a partition needs (minInputFiles) and the small manifests a
// manifest rewrite needs (minManifests, 0: off; every live data manifest
// holds a data file), all of them together no larger than the size above
// which one file is split (so none is), and one partition spec (so no
// file was written under an older one). Every condition is one the
// planner would reach from the manifests; a table it does not settle, or
// whose summary lacks a total, is evaluated in full. reason says why.
func CompactionIdle(meta table.Metadata, minInputFiles, minManifests int, targetBytes int64) (reason string, ok bool) {
	snap := meta.CurrentSnapshot()
	if snap == nil || snap.Summary == nil || len(meta.PartitionSpecs()) != 1 {
		return "", false
	}
	total := func(key string) (int64, bool) {
		v, err := strconv.ParseInt(snap.Summary.Properties[key], 10, 64)
		return v, err == nil && v >= 0
	}
	files, ok1 := total("total-data-files")
	deletes, ok2 := total("total-delete-files")
	size, ok3 := total("total-files-size")
	if !ok1 || !ok2 || !ok3 || deletes != 0 {
		return "", false
	}
	fewest := int64(minInputFiles)
	if minManifests > 0 {
		fewest = min(fewest, int64(minManifests))
	}
	if minInputFiles <= 0 || files >= fewest || size > int64(float64(targetBytes)*LargeRatio) {
		return "", false
	}
	return fmt.Sprintf("snapshot %d holds %d data files (%d bytes) and no delete files: fewer than the %d a rewrite needs, none too large, one partition spec",
		snap.SnapshotID, files, size, fewest), true
}
