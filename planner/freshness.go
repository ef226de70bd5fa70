package planner

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/apache/iceberg-go/table"
)

// FreshnessProperty is the table property that sets a table's freshness
// target, over its bucket's: a Go duration ("2m", "90s") or a number of
// minutes ("2").
const FreshnessProperty = "icekeeper.freshness-target"

// FreshnessTarget is the table's freshness target: its property when set,
// else fallback (0: no target). A property that is not a positive
// duration is an error that names it; the caller keeps fallback.
func FreshnessTarget(props map[string]string, fallback time.Duration) (time.Duration, error) {
	v, ok := props[FreshnessProperty]
	if !ok {
		return fallback, nil
	}
	v = strings.TrimSpace(v)
	d, err := time.ParseDuration(v)
	if err != nil {
		if m, merr := strconv.ParseFloat(v, 64); merr == nil {
			d, err = time.Duration(m*float64(time.Minute)), nil
		}
	}
	if err != nil || d <= 0 {
		return fallback, fmt.Errorf("table property %s=%q is not a positive duration such as 2m or 90s", FreshnessProperty, v)
	}
	return d, nil
}

// Oldest is the oldest work a job type has not taken on a table: what
// the freshness target bounds. A job takes an item when a successful run
// evaluates it, whatever its rules then decide about it: a small file the
// rules leave alone is not late.
type Oldest struct {
	// Since is when the item became work: the commit that added a file,
	// the instant a snapshot became expirable.
	Since time.Time `json:"since"`
	// What names the item ("3 data files added by snapshot 123 (append)").
	What string `json:"what"`
	// SnapshotID is the snapshot the item belongs to.
	SnapshotID int64 `json:"snapshotId"`
}

// Base is the table as a successful run found it, recorded with the run,
// so that a later look can tell what the run took: every snapshot of a
// sequence number up to SequenceNumber.
type Base struct {
	SnapshotID     int64 `json:"snapshotId"`
	SequenceNumber int64 `json:"sequenceNumber"`
}

// BaseOf is meta's base, nil for a table without snapshots.
func BaseOf(meta table.Metadata) *Base {
	snap := meta.CurrentSnapshot()
	if snap == nil {
		return nil
	}
	return &Base{SnapshotID: snap.SnapshotID, SequenceNumber: snap.SequenceNumber}
}

// IcekeeperJobProperty is the snapshot summary property icekeeper's own
// commits carry: the job type that made them.
const IcekeeperJobProperty = "icekeeper.job"

// ByIcekeeper reports whether icekeeper committed snap.
func ByIcekeeper(snap table.Snapshot) bool {
	return snap.Summary != nil && snap.Summary.Properties[IcekeeperJobProperty] != ""
}

// PendingChanges is compaction's oldest pending item: the earliest
// snapshot after base (nil: no run took anything yet, so every snapshot
// counts) that added data or delete files, on any branch. icekeeper's own
// commits add only what replaces work already taken, and are not work.
func PendingChanges(meta table.Metadata, base *Base) (Oldest, bool) {
	var oldest *table.Snapshot
	snaps := meta.Snapshots()
	for i := range snaps {
		s := &snaps[i]
		if base != nil && s.SequenceNumber <= base.SequenceNumber || ByIcekeeper(*s) {
			continue
		}
		data, deletes := summaryInt(*s, "added-data-files"), summaryInt(*s, "added-delete-files")
		if data+deletes == 0 {
			continue
		}
		if oldest == nil || s.TimestampMs < oldest.TimestampMs {
			oldest = s
		}
	}
	if oldest == nil {
		return Oldest{}, false
	}
	var parts []string
	if n := summaryInt(*oldest, "added-data-files"); n > 0 {
		parts = append(parts, plural(n, "data file"))
	}
	if n := summaryInt(*oldest, "added-delete-files"); n > 0 {
		parts = append(parts, plural(n, "delete file"))
	}
	op := "commit"
	if oldest.Summary != nil {
		op = string(oldest.Summary.Operation)
	}
	return Oldest{Since: time.UnixMilli(oldest.TimestampMs), SnapshotID: oldest.SnapshotID,
		What: fmt.Sprintf("%s added by snapshot %d (%s)", strings.Join(parts, " and "), oldest.SnapshotID, op)}, true
}

// PendingExpiry is snapshot management's oldest pending item: of the
// snapshots that expire at now, the one that has been expirable longest.
// A snapshot becomes expirable once it is older than the max age and
// beyond the kept count: when the snapshot that pushed it past the count
// was committed, if that came later.
func PendingExpiry(meta table.Metadata, s SnapshotSettings, now time.Time) (Oldest, bool, error) {
	d, err := Snapshots(meta, s, now)
	if err != nil || len(d.Expire) == 0 {
		return Oldest{}, false, err
	}
	stamps := make([]int64, 0, len(meta.Snapshots()))
	for _, snap := range meta.Snapshots() {
		stamps = append(stamps, snap.TimestampMs)
	}
	slices.Sort(stamps)
	maxAge := time.Duration(d.Applied.MaxSnapshotAgeHours * float64(time.Hour))
	var out Oldest
	for _, e := range d.Expire {
		since := e.Timestamp.Add(maxAge)
		// The count: the snapshot MinSnapshotsToKeep places newer.
		at, _ := slices.BinarySearch(stamps, e.Timestamp.UnixMilli())
		if k := at + d.Applied.MinSnapshotsToKeep; k < len(stamps) {
			since = maxTime(since, time.UnixMilli(stamps[k]))
		}
		since = minTime(since, now)
		if out.Since.IsZero() || since.Before(out.Since) {
			out = Oldest{Since: since, SnapshotID: e.SnapshotID,
				What: fmt.Sprintf("snapshot %d expired (%s)", e.SnapshotID, e.Reason)}
		}
	}
	return out, true, nil
}

func summaryInt(s table.Snapshot, key string) int64 {
	if s.Summary == nil {
		return 0
	}
	n, err := strconv.ParseInt(s.Summary.Properties[key], 10, 64)
	if err != nil || n < 0 {
		return 0
	}
	return n
}

func plural(n int64, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}
