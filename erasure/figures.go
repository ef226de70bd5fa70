package erasure

import (
	"fmt"
	"strings"
	"time"

	"github.com/icekeeper/icekeeper/internal/textlist"
	"github.com/icekeeper/icekeeper/jobs"
	"github.com/icekeeper/icekeeper/planner"
)

// Figures are a run's proof: what held removed row versions, what the run
// did with each and when, what is gone from storage, and what is pending
// or blocked with its deadline.
type Figures struct {
	// Common: a run the unchanged rule skipped reports nothing else.
	jobs.Common
	Now          time.Time `json:"now"`
	DeadlineDays int       `json:"deadlineDays"`

	// Rewritten are the groups of data files rewritten with their
	// deletes applied, each with the delete commit it settled.
	Rewritten []Rewrite `json:"rewritten,omitempty"`
	// Expired are the snapshots expired because they reached removed
	// row versions within the lead of their deadline.
	Expired []planner.ErasedSnapshot `json:"expired,omitempty"`
	// Gone are the data and delete files of the snapshots the run
	// expired and of its own rewrites that it found absent from storage
	// after deleting them, at GoneAt. Kept are files the run took out of
	// the current snapshot that are still stored: a ref holds them (see
	// Blocked), or their snapshot is not due yet (see Pending).
	Gone   []string  `json:"gone,omitempty"`
	GoneAt time.Time `json:"goneAt,omitzero"`
	Kept   []string  `json:"kept,omitempty"`
	// ObjectsDeleted counts every object deleted: data and delete files,
	// manifests and manifest lists.
	ObjectsDeleted int `json:"objectsDeleted"`
	// Blocked are the refs, and the other tables' references to files,
	// that keep removed row versions past the lead of their deadline; a
	// block by another table is reported by every run until it is
	// resolved. Pending is what is not due yet.
	Blocked []planner.ErasureBlock `json:"blocked,omitempty"`
	Pending []planner.Pending      `json:"pending,omitempty"`
	// NextDue is the deadline of the oldest pending or blocked version
	// (zero: none).
	NextDue time.Time `json:"nextDue,omitzero"`
	// Overdue counts what this run settled after its deadline had
	// passed: the schedule ran too rarely, or an earlier run failed.
	Overdue int `json:"overdue"`

	FilesRewritten int   `json:"filesRewritten"`
	BytesRewritten int64 `json:"bytesRewritten"`
	FilesWritten   int   `json:"filesWritten"`
	BytesWritten   int64 `json:"bytesWritten"`
	DeletesRemoved int   `json:"deleteFilesRemoved"`
	// Dropped are groups a concurrent commit took from the run:
	// "partition: why"; the next run rewrites them.
	Dropped        []string `json:"dropped,omitempty"`
	Commits        int      `json:"commits"`
	CommitAttempts int      `json:"commitAttempts"`
	Conflicts      int      `json:"conflicts"`
}

// Rewrite is one group of data files rewritten with its deletes applied.
type Rewrite struct {
	Partition string `json:"partition"`
	// DeleteCommit is the snapshot that added the oldest delete of the
	// group (0: one no longer in the metadata), at Removed; Due is its
	// deadline.
	DeleteCommit int64     `json:"deleteCommit"`
	Removed      time.Time `json:"removed"`
	Due          time.Time `json:"due"`
	DataFiles    []string  `json:"dataFiles"`
	DeleteFiles  []string  `json:"deleteFiles,omitempty"`
	Into         []string  `json:"into,omitempty"`
	At           time.Time `json:"at"`
}

// Text is the readable form `icekeeper run` and `icekeeper erasure`
// print, with the first few items of each list.
func (f *Figures) Text() string { return f.TextItems(textlist.Short) }

// TextItems is Text with at most limit items of each list (textlist.All:
// every one), the rest counted.
func (f *Figures) TextItems(limit int) string {
	var b strings.Builder
	line, skipped := f.Unchanged.Text(f.DryRun, "read")
	b.WriteString(line)
	if skipped {
		return b.String()
	}
	would := ""
	if f.DryRun {
		would = "would be "
	}
	fmt.Fprintf(&b, "  deadline %d days, now %s: %d data files (%d bytes) %srewritten with their deletes into %d, %d delete files dropped, %d snapshots %sexpired, %d objects deleted",
		f.DeadlineDays, stamp(f.Now), f.FilesRewritten, f.BytesRewritten, would, f.FilesWritten, f.DeletesRemoved, len(f.Expired), would, f.ObjectsDeleted)
	textlist.Lines(&b, limit, f.Rewritten, 0, func(r Rewrite) string {
		return fmt.Sprintf("rewrote %d data files of %s (%d delete files) for the delete of %s, due %s", len(r.DataFiles), r.Partition, len(r.DeleteFiles), removedText(r.DeleteCommit, r.Removed), stamp(r.Due))
	})
	textlist.Lines(&b, limit, f.Expired, 0, func(e planner.ErasedSnapshot) string {
		return fmt.Sprintf("expired snapshot %d (%s): reaches rows removed %s, due %s", e.SnapshotID, stamp(e.Timestamp), removedText(0, e.Removed), stamp(e.Due))
	})
	if len(f.Gone)+len(f.Kept) > 0 {
		fmt.Fprintf(&b, "\n  %d files checked gone from storage at %s, %d still stored", len(f.Gone), stamp(f.GoneAt), len(f.Kept))
	}
	textlist.Lines(&b, limit, f.Blocked, 0, func(bl planner.ErasureBlock) string {
		if bl.Type == planner.BlockTable {
			return fmt.Sprintf("blocked: table %q references %s (since %s) until it no longer does; rows removed %s, due %s", bl.Ref, bl.Path, stamp(bl.Since), removedText(0, bl.Removed), stamp(bl.Due))
		}
		return fmt.Sprintf("blocked: held by %s %q (snapshot %d) until you remove it; rows removed %s, due %s", bl.Type, bl.Ref, bl.SnapshotID, removedText(0, bl.Removed), stamp(bl.Due))
	})
	if len(f.Pending) > 0 {
		fmt.Fprintf(&b, "\n  %d pending, the first due %s", len(f.Pending), stamp(f.Pending[0].Due))
	}
	if f.Overdue > 0 {
		fmt.Fprintf(&b, "\n  %d settled after their deadline", f.Overdue)
	}
	return b.String()
}

func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339) }

func removedText(commit int64, t time.Time) string {
	if t.IsZero() {
		return "before the oldest snapshot the metadata keeps"
	}
	if commit != 0 {
		return fmt.Sprintf("by snapshot %d at %s", commit, stamp(t))
	}
	return "at " + stamp(t)
}

// Empty reports whether the run stopped before it read the table: a
// failed run's figures are then only zeros, not worth printing.
func (f *Figures) Empty() bool {
	return f.Unchanged == nil && len(f.Rewritten)+len(f.Expired)+len(f.Blocked)+len(f.Pending)+len(f.Gone)+len(f.Kept) == 0 &&
		f.ObjectsDeleted == 0 && f.Commits == 0
}

// Counters implements jobs.Counter.
func (f *Figures) Counters() map[string]float64 {
	return map[string]float64{
		"erasure_files_rewritten":   float64(f.FilesRewritten),
		"erasure_snapshots_expired": float64(len(f.Expired)),
		"erasure_objects_deleted":   float64(f.ObjectsDeleted),
		"erasure_blocked_snapshots": float64(len(f.Blocked)),
		"erasure_overdue":           float64(f.Overdue),
	}
}

// run rewrites, expires, deletes, proves — each step on the table as the
// one before left it.

// overdue counts an item settled after its deadline; one removed at an
// unknown time (before the oldest snapshot kept) is not counted.
func (f *Figures) overdue(removed, due, now time.Time) {
	if !removed.IsZero() && now.After(due) {
		f.Overdue++
	}
}
