package planner

import (
	"cmp"
	"fmt"
	"time"

	"github.com/apache/iceberg-go/table"
)

// Maintained is a snapshot another maintainer committed on a table: a
// rewrite by Spark's or Flink's maintenance, or a managed service's.
type Maintained struct {
	SnapshotID int64
	At         time.Time
	// Engine is the summary's engine-name ("spark", "flink"), else
	// "another engine".
	Engine string
	// What says how the snapshot was told apart: "replace" or
	// "equality-delete conversion".
	What string
}

// String is the snapshot as a status message names it.
func (m Maintained) String() string {
	return fmt.Sprintf("%s committed a %s (snapshot %d) at %s", m.Engine, m.What, m.SnapshotID, m.At.UTC().Format(time.RFC3339))
}

// OtherMaintainer returns the latest snapshot of meta, on any branch,
// committed at or after since by a maintainer that is not icekeeper: a
// REPLACE (rows unchanged: a rewrite of data, delete files or
// manifests), or a commit that removed equality delete files while adding
// position deletes or deletion vectors (a conversion, which Flink's maintenance stages through
// a branch and then commits as an overwrite). Writers do neither: an
// append, an upsert or a delete never removes equality delete files.
func OtherMaintainer(meta table.Metadata, since time.Time) (Maintained, bool) {
	var out Maintained
	found := false
	for _, s := range meta.Snapshots() {
		at := time.UnixMilli(s.TimestampMs)
		if at.Before(since) || ByIcekeeper(s) || s.Summary == nil || (found && !at.After(out.At)) {
			continue
		}
		what := ""
		switch {
		case s.Summary.Operation == table.OpReplace:
			what = "replace"
		case summaryInt(s, "removed-equality-delete-files") > 0 &&
			summaryInt(s, "added-position-delete-files")+summaryInt(s, "added-dvs") > 0:
			what = "equality-delete conversion"
		default:
			continue
		}
		out = Maintained{SnapshotID: s.SnapshotID, At: at, What: what,
			Engine: cmp.Or(s.Summary.Properties["engine-name"], "another engine")}
		found = true
	}
	return out, found
}
