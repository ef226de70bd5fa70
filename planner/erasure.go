// Erasure's planning: when each removed row version is due, which data
// files of the current snapshot are rewritten with their deletes applied,
// which snapshots expire because they still reach removed row versions,
// and which refs block that. The executor (package erasure) reads the
// delete manifests this needs and commits what it decides.
//
// A row version is removed at the commit that removes it from the main
// branch: the commit that added the delete (position, equality or
// deletion vector) masking it, or the first commit after a snapshot that
// dropped or replaced a file holding it. It is due DeadlineDays later.

package planner

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/apache/iceberg-go/table"

	"github.com/icekeeper/icekeeper/maintenance"
)

// ErasureSettings are erasure's, translated once per run.
type ErasureSettings struct {
	Deadline time.Duration `json:"deadline"`
}

// ErasureSettingsOf translates a table's resolved settings, or says what
// is missing.
func ErasureSettingsOf(s maintenance.Settings) (ErasureSettings, error) {
	c := s.For(maintenance.Erasure).Erasure()
	if c == nil || c.DeadlineDays == nil {
		return ErasureSettings{}, fmt.Errorf("%w: %s is enabled without settings.deadlineDays: say within how many days a deleted row must be gone from storage",
			maintenance.ErrInvalid, maintenance.Erasure)
	}
	return ErasureSettings{Deadline: time.Duration(*c.DeadlineDays) * 24 * time.Hour}, nil
}

// Lead is how long before its deadline erasure acts on a row version:
// the period of its default daily schedule plus two hours for the
// schedule's jitter and the run itself, so that the last daily run before
// a deadline meets it; at most half the deadline, so that a short
// deadline does not turn into erasure at once (a deadline under two days
// wants a schedule more frequent than daily).
func (s ErasureSettings) Lead() time.Duration { return min(26*time.Hour, s.Deadline/2) }

// Due is the deadline of a row version removed at removed.
func (s ErasureSettings) Due(removed time.Time) time.Time { return removed.Add(s.Deadline) }

// Acts says whether a run at now erases a row version removed at removed.
func (s ErasureSettings) Acts(removed, now time.Time) bool {
	return !now.Before(s.Due(removed).Add(-s.Lead()))
}

// ErasureFile is a data file of the current snapshot with deletes, and
// when the oldest of them was committed (Removed; zero when the commit is
// no longer in the metadata, which makes it due at once).
type ErasureFile struct {
	Task      table.FileScanTask
	Removed   time.Time
	Partition string
	Label     string
}

// ErasureGroup is data files of one partition rewritten together, with
// their deletes applied.
type ErasureGroup struct {
	Partition string
	Label     string
	Tasks     []table.FileScanTask
	Bytes     int64
	// Removed is the oldest removal among the group's files.
	Removed time.Time
}

// Pending is a removed row version's holder that a run left, and when it
// is due.
type Pending struct {
	// What is a data file's path or "snapshot N".
	What    string    `json:"what"`
	Removed time.Time `json:"removed"`
	Due     time.Time `json:"due"`
}

// PlanErasureRewrite decides which of files, the current snapshot's data
// files with deletes, are rewritten now: those whose oldest delete is
// within the lead of its deadline, grouped by partition into groups of
// about target input bytes, oldest removal first. The rest are pending.
func PlanErasureRewrite(s ErasureSettings, files []ErasureFile, target int64, now time.Time) (groups []ErasureGroup, pending []Pending) {
	due := map[string][]ErasureFile{}
	var parts []string
	for _, f := range files {
		if !s.Acts(f.Removed, now) {
			pending = append(pending, Pending{What: f.Task.File.FilePath(), Removed: f.Removed, Due: s.Due(f.Removed)})
			continue
		}
		if _, ok := due[f.Partition]; !ok {
			parts = append(parts, f.Partition)
		}
		due[f.Partition] = append(due[f.Partition], f)
	}
	slices.Sort(parts)
	for _, p := range parts {
		fs := due[p]
		slices.SortFunc(fs, func(a, b ErasureFile) int {
			return cmp.Or(a.Removed.Compare(b.Removed), cmp.Compare(a.Task.File.FilePath(), b.Task.File.FilePath()))
		})
		var g *ErasureGroup
		for _, f := range fs {
			size := f.Task.File.FileSizeBytes()
			if g == nil || (g.Bytes > 0 && g.Bytes+size > target) {
				groups = append(groups, ErasureGroup{Partition: p, Label: f.Label, Removed: f.Removed})
				g = &groups[len(groups)-1]
			}
			g.Tasks = append(g.Tasks, f.Task)
			g.Bytes += size
		}
	}
	slices.SortStableFunc(groups, func(a, b ErasureGroup) int { return a.Removed.Compare(b.Removed) })
	slices.SortFunc(pending, comparePending)
	return groups, pending
}

func comparePending(a, b Pending) int {
	return cmp.Or(a.Due.Compare(b.Due), cmp.Compare(a.What, b.What))
}

// ErasedSnapshot is a snapshot erasure expires: it reaches row versions
// removed at Removed, due at Due.
type ErasedSnapshot struct {
	SnapshotID int64     `json:"snapshotId"`
	Timestamp  time.Time `json:"timestamp"`
	Removed    time.Time `json:"removed"`
	Due        time.Time `json:"due"`
}

// ErasureBlock is what keeps removed row versions past the lead of their
// deadline: a ref whose snapshot reaches them, or another table that
// references a file holding them. Erasure never moves or drops a ref, nor
// deletes another table's file: the versions stay until the ref's owner
// removes it, or the other table no longer references the file.
type ErasureBlock struct {
	// Ref names the tag or branch, or the table (namespace.name, in the
	// same bucket) when Type is BlockTable.
	Ref        string    `json:"ref"`
	Type       string    `json:"type"` // "tag", "branch" or "table"
	SnapshotID int64     `json:"snapshotId,omitempty"`
	Removed    time.Time `json:"removed"`
	Due        time.Time `json:"due"`
	// Path is the file another table references, and Since when a run
	// first found it there (BlockTable only).
	Path  string    `json:"path,omitempty"`
	Since time.Time `json:"since,omitzero"`
}

// BlockTable is the Type of an ErasureBlock by another table.
const BlockTable = "table"

// ErasureSnapshotPlan is what erasure does with a table's snapshots.
type ErasureSnapshotPlan struct {
	Expire  []ErasedSnapshot `json:"expire,omitempty"`
	Blocked []ErasureBlock   `json:"blocked,omitempty"`
	Pending []Pending        `json:"pending,omitempty"`
}

// ExpireIDs are the snapshots the plan expires.
func (p ErasureSnapshotPlan) ExpireIDs() []int64 {
	ids := make([]int64, len(p.Expire))
	for i, e := range p.Expire {
		ids[i] = e.SnapshotID
	}
	return ids
}

// SnapshotRemovals is when the oldest row version each snapshot of meta
// reaches, and the main branch no longer shows, was removed; a snapshot
// that reaches none is absent. oldestDelete holds, for each snapshot with
// live deletes, when the oldest of them was committed (zero: before the
// oldest snapshot the metadata keeps).
//
//   - On the main branch, a snapshot reaches the versions its own deletes
//     mask, and those the first later commit that is not an append removed
//     (an append adds files and masks nothing). The current snapshot is
//     left out: its files are the rewrite's.
//   - A snapshot on no ref's ancestry (rolled back, or staged and never
//     published) reaches versions main never showed or no longer shows:
//     it counts as removed when it was made.
//   - A snapshot only on another branch's ancestry is that branch's; it
//     is judged through the branch's head (ErasureBlock).
//   - A ref's head whose ancestry meets main at no snapshot the metadata
//     keeps (main's history there expired) counts as removed when it was
//     made if holds, which reads its manifests, says it reaches a data
//     file the current snapshot does not, or a delete.
func SnapshotRemovals(meta table.Metadata, oldestDelete map[int64]time.Time, holds func(snapshotID int64) bool) map[int64]time.Time {
	out := map[int64]time.Time{}
	at := func(id int64, t time.Time) {
		if old, ok := out[id]; !ok || t.Before(old) {
			out[id] = t
		}
	}
	for id, t := range oldestDelete {
		at(id, t)
	}
	main := mainAncestry(meta)
	onMain := map[int64]bool{}
	for _, s := range main {
		onMain[s.SnapshotID] = true
	}
	// Walk main from the current snapshot back: next is the time of the
	// oldest commit after the snapshot at hand that was not an append.
	var next *time.Time
	for i, s := range main {
		if i > 0 && next != nil {
			at(s.SnapshotID, *next)
		}
		if s.Summary == nil || s.Summary.Operation != table.OpAppend {
			t := time.UnixMilli(s.TimestampMs).UTC()
			next = &t
		}
	}
	onRef := maps.Clone(onMain)
	for name, ref := range meta.Refs() {
		if name == table.MainBranch {
			continue
		}
		head := ref.SnapshotID
		forked := onMain[head]
		for id := head; ; {
			if onMain[id] && id != head {
				// A head off main reaches what its fork point on main
				// reaches, as long as its own commits kept the files.
				forked = true
				if t, ok := out[id]; ok {
					at(head, t)
				}
				break
			}
			onRef[id] = true
			s := meta.SnapshotByID(id)
			if s == nil || s.ParentSnapshotID == nil {
				break
			}
			id = *s.ParentSnapshotID
		}
		if !forked {
			if s := meta.SnapshotByID(head); s != nil && holds(head) {
				at(head, time.UnixMilli(s.TimestampMs).UTC())
			}
		}
	}
	for _, s := range meta.Snapshots() {
		if !onRef[s.SnapshotID] {
			at(s.SnapshotID, time.UnixMilli(s.TimestampMs).UTC())
		}
	}
	if cur := meta.CurrentSnapshot(); cur != nil {
		delete(out, cur.SnapshotID)
	}
	for id := range out {
		if !onMain[id] && onRef[id] && !isRefHead(meta, id) {
			delete(out, id)
		}
	}
	return out
}

// PlanErasureSnapshots decides which snapshots of meta a run at now
// expires: those reaching removed row versions within the lead of their
// deadline (removals is SnapshotRemovals), whatever minSnapshotsToKeep
// and the max age say. A ref's head is never expired: it blocks.
func PlanErasureSnapshots(s ErasureSettings, meta table.Metadata, removals map[int64]time.Time, now time.Time) ErasureSnapshotPlan {
	var p ErasureSnapshotPlan
	heads := map[int64][]string{}
	types := map[string]table.RefType{}
	for name, ref := range meta.Refs() {
		if name != table.MainBranch {
			heads[ref.SnapshotID] = append(heads[ref.SnapshotID], name)
			types[name] = ref.SnapshotRefType
		}
	}
	for id, removed := range removals {
		snap := meta.SnapshotByID(id)
		if snap == nil {
			continue
		}
		due := s.Due(removed)
		if !s.Acts(removed, now) {
			p.Pending = append(p.Pending, Pending{What: fmt.Sprintf("snapshot %d", id), Removed: removed, Due: due})
			continue
		}
		if names := heads[id]; len(names) > 0 {
			slices.Sort(names)
			for _, name := range names {
				p.Blocked = append(p.Blocked, ErasureBlock{Ref: name, Type: string(types[name]), SnapshotID: id, Removed: removed, Due: due})
			}
			continue
		}
		p.Expire = append(p.Expire, ErasedSnapshot{SnapshotID: id, Timestamp: time.UnixMilli(snap.TimestampMs).UTC(), Removed: removed, Due: due})
	}
	slices.SortFunc(p.Expire, func(a, b ErasedSnapshot) int { return cmp.Compare(a.SnapshotID, b.SnapshotID) })
	slices.SortFunc(p.Blocked, func(a, b ErasureBlock) int { return cmp.Or(a.Due.Compare(b.Due), cmp.Compare(a.Ref, b.Ref)) })
	slices.SortFunc(p.Pending, comparePending)
	return p
}

// NextErasure is when a run next has something to do of what pending
// holds (zero: never, until the table changes).
func (s ErasureSettings) NextErasure(pending ...[]Pending) time.Time {
	var next time.Time
	for _, ps := range pending {
		for _, p := range ps {
			if at := p.Due.Add(-s.Lead()); next.IsZero() || at.Before(next) {
				next = at
			}
		}
	}
	return next
}

// ErasureIdle tells from the metadata alone that no row version was
// removed from the table while it kept its snapshots: every snapshot is
// an append, and appends carry no deletes.
func ErasureIdle(meta table.Metadata) (string, bool) {
	for _, s := range meta.Snapshots() {
		if s.Summary == nil || s.Summary.Operation != table.OpAppend {
			return "", false
		}
	}
	return "every snapshot is an append: no row was removed", true
}

// mainAncestry is the main branch's snapshots, the current one first,
// as far back as the metadata keeps them.
func mainAncestry(meta table.Metadata) []table.Snapshot {
	var out []table.Snapshot
	seen := map[int64]bool{}
	for s := meta.CurrentSnapshot(); s != nil && !seen[s.SnapshotID]; {
		seen[s.SnapshotID] = true
		out = append(out, *s)
		if s.ParentSnapshotID == nil {
			break
		}
		s = meta.SnapshotByID(*s.ParentSnapshotID)
	}
	return out
}

func isRefHead(meta table.Metadata, id int64) bool {
	for _, ref := range meta.Refs() {
		if ref.SnapshotID == id {
			return true
		}
	}
	return false
}
