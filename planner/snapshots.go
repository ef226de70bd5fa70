// Snapshot management's decision: which snapshots and refs of a table
// expire. Metadata, settings and a clock in; a decision with a reason for
// every expired snapshot and removed ref, and the rule that kept every
// other snapshot, out. Package expire loads the table, calls Snapshots,
// commits the decision with conflict handling and records the figures.
//
// Rules, as S3 Tables states them and extended to refs:
//   - On a branch, a snapshot expires only when it is older than the
//     maximum age AND not among the minimum number of most recent
//     snapshots of the branch's history. A branch's head never expires.
//   - Each branch and tag keeps what its own retention says
//     (min-snapshots-to-keep, max-snapshot-age-ms); a non-main ref older
//     than its max-ref-age-ms is removed; a tagged snapshot lives while its
//     tag does.
//   - A snapshot reachable from no ref expires by age alone.
//   - Table properties history.expire.* combine with the maintenance
//     settings: by default the more conservative value wins (keep more,
//     never less); in strict mode a table whose properties or refs ask for
//     more than the settings fails with S3 Tables' message instead.

package planner

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/apache/iceberg-go/table"

	"github.com/icekeeper/icekeeper/maintenance"
)

// Table property keys that carry the table's own retention.
const (
	PropMinSnapshotsToKeep = "history.expire.min-snapshots-to-keep"
	PropMaxSnapshotAgeMs   = "history.expire.max-snapshot-age-ms"
	PropMaxRefAgeMs        = "history.expire.max-ref-age-ms"
)

// Failure messages in S3 Tables' words, so that scripts written against
// S3 Tables recognise them.
const (
	MsgPropsConflict  = "Iceberg table maintenance configuration is incompatible with 'history.expire.max-snapshot-age-ms' and 'history.expire.min-snapshots-to-keep' table properties."
	MsgRefsNotAllowed = "Iceberg Snapshot management does not currently support user defined tags or references."
)

// Sentinel errors of Snapshots.
var (
	ErrPropsConflict  = errors.New(MsgPropsConflict)  // strict mode only
	ErrRefsNotAllowed = errors.New(MsgRefsNotAllowed) // strict mode only
	ErrBadProperty    = errors.New("invalid retention property")
)

// RetentionMode chooses how table retention properties combine with the
// settings.
type RetentionMode string

// Retention modes.
const (
	RetentionConservative RetentionMode = "conservative" // the value that keeps more wins
	RetentionStrict       RetentionMode = "strict"       // S3 Tables: conflicting properties or refs fail the run
)

// SnapshotSettings are snapshot management's settings, resolved.
type SnapshotSettings struct {
	MinSnapshotsToKeep int
	MaxSnapshotAge     time.Duration
	Mode               RetentionMode
	// The opt-ins: delete the files only expired snapshots referenced,
	// right after the commit; drop schemas and specs no snapshot left uses.
	DeleteExpiredFiles         bool
	PruneUnusedSchemasAndSpecs bool
}

// SnapshotSettingsOf picks snapshot management's settings out of a
// table's.
func SnapshotSettingsOf(s maintenance.Settings) SnapshotSettings {
	c := s.For(maintenance.SnapshotManagement).SnapshotManagement()
	out := SnapshotSettings{
		MinSnapshotsToKeep: *c.MinSnapshotsToKeep,
		MaxSnapshotAge:     time.Duration(*c.MaxSnapshotAgeHours) * time.Hour,
		Mode:               RetentionMode(s.Knobs.RetentionMode),
		// Erasure promises removed rows gone by a deadline: the files of
		// snapshots expired on the way must not wait for removal's
		// noncurrent window.
		DeleteExpiredFiles:         s.Knobs.DeleteExpiredFiles || s.For(maintenance.Erasure).Status == maintenance.Enabled,
		PruneUnusedSchemasAndSpecs: s.Knobs.PruneUnusedSchemasAndSpecs,
	}
	if out.Mode == "" {
		out.Mode = RetentionConservative
	}
	return out
}

// KeepRule names why a snapshot is kept.
type KeepRule string

// Keep rules.
const (
	KeptRefHead   KeepRule = "ref-head"              // a branch's head or a tagged snapshot
	KeptMinCount  KeepRule = "min-snapshots-to-keep" // among the most recent of a branch
	KeptBranchAge KeepRule = "branch-max-age"        // on a branch and younger than its max age
	KeptUnrefAge  KeepRule = "unreferenced-max-age"  // on no ref, younger than the max age
)

// ExpiredSnapshot is a snapshot that goes, and why.
type ExpiredSnapshot struct {
	SnapshotID int64     `json:"snapshotId"`
	Timestamp  time.Time `json:"timestamp"`
	Reason     string    `json:"reason"`
}

// RemovedRef is a branch or tag that goes, and why.
type RemovedRef struct {
	Name   string `json:"name"`
	Type   string `json:"type"`
	Reason string `json:"reason"`
}

// AppliedRetention records which retention values were in force and where each
// came from ("setting", "table property" or "ref").
type AppliedRetention struct {
	MinSnapshotsToKeep       int           `json:"minSnapshotsToKeep"`
	MinSnapshotsToKeepSource string        `json:"minSnapshotsToKeepSource"`
	MaxSnapshotAgeHours      float64       `json:"maxSnapshotAgeHours"`
	MaxSnapshotAgeSource     string        `json:"maxSnapshotAgeSource"`
	MaxRefAgeHours           float64       `json:"maxRefAgeHours,omitempty"` // 0: refs never age out
	Mode                     RetentionMode `json:"mode"`
}

// SnapshotDecision is what Snapshots concluded.
type SnapshotDecision struct {
	Expire     []ExpiredSnapshot  `json:"expire"`
	RemoveRefs []RemovedRef       `json:"removeRefs"`
	Kept       map[int64]KeepRule `json:"-"`
	KeptByRule map[KeepRule]int   `json:"keptByRule"`
	Applied    AppliedRetention   `json:"applied"`
}

// Empty reports whether the decision changes nothing.
func (d SnapshotDecision) Empty() bool { return len(d.Expire) == 0 && len(d.RemoveRefs) == 0 }

// ExpireIDs returns the expiring snapshots' IDs.
func (d SnapshotDecision) ExpireIDs() []int64 {
	ids := make([]int64, len(d.Expire))
	for i, e := range d.Expire {
		ids[i] = e.SnapshotID
	}
	return ids
}

// Snapshots decides which snapshots and refs of meta expire at now.
func Snapshots(meta table.Metadata, s SnapshotSettings, now time.Time) (SnapshotDecision, error) {
	props := meta.Properties()
	if err := maintenance.CheckGC(props); err != nil {
		return SnapshotDecision{}, err
	}
	propMin, hasPropMin, err := intProp(props, PropMinSnapshotsToKeep)
	if err != nil {
		return SnapshotDecision{}, err
	}
	propAge, hasPropAge, err := intProp(props, PropMaxSnapshotAgeMs)
	if err != nil {
		return SnapshotDecision{}, err
	}
	propRefAge, hasPropRefAge, err := intProp(props, PropMaxRefAgeMs)
	if err != nil {
		return SnapshotDecision{}, err
	}

	applied := AppliedRetention{
		MinSnapshotsToKeep: s.MinSnapshotsToKeep, MinSnapshotsToKeepSource: "setting",
		MaxSnapshotAgeHours: s.MaxSnapshotAge.Hours(), MaxSnapshotAgeSource: "setting",
		Mode: s.Mode,
	}
	minKeep, maxAgeMs := int64(s.MinSnapshotsToKeep), s.MaxSnapshotAge.Milliseconds()
	if s.Mode == RetentionStrict {
		// S3 Tables refuses tables whose own retention asks for more than
		// the maintenance settings, and tables with user-defined refs.
		if (hasPropMin && propMin > minKeep) || (hasPropAge && propAge > maxAgeMs) {
			return SnapshotDecision{}, ErrPropsConflict
		}
		for name := range meta.Refs() {
			if name != table.MainBranch {
				return SnapshotDecision{}, ErrRefsNotAllowed
			}
		}
	} else {
		if hasPropMin && propMin > minKeep {
			minKeep = propMin
			applied.MinSnapshotsToKeep, applied.MinSnapshotsToKeepSource = int(propMin), "table property"
		}
		if hasPropAge && propAge > maxAgeMs {
			maxAgeMs = propAge
			applied.MaxSnapshotAgeHours, applied.MaxSnapshotAgeSource = float64(propAge)/float64(time.Hour.Milliseconds()), "table property"
		}
	}
	// Refs never age out unless the table or the ref says so (the Iceberg
	// default max-ref-age-ms is "forever").
	defaultRefAge := int64(math.MaxInt64)
	if hasPropRefAge {
		defaultRefAge = propRefAge
		applied.MaxRefAgeHours = float64(propRefAge) / float64(time.Hour.Milliseconds())
	}

	nowMs := now.UnixMilli()
	lookup := func(id int64) *table.Snapshot { return meta.SnapshotByID(id) }
	d := SnapshotDecision{Kept: map[int64]KeepRule{}, KeptByRule: map[KeepRule]int{}, Applied: applied}
	keep := func(id int64, r KeepRule) {
		if _, ok := d.Kept[id]; !ok {
			d.Kept[id] = r
		}
	}

	// Sorted ref names make the decision deterministic.
	refs := map[string]table.SnapshotRef{}
	var names []string
	for name, ref := range meta.Refs() {
		refs[name] = ref
		names = append(names, name)
	}
	slices.Sort(names)

	onBranch := map[int64]string{} // ancestors of retained branches and tagged snapshots → first ref
	for _, name := range names {
		ref := refs[name]
		head := meta.SnapshotByID(ref.SnapshotID)
		if head == nil {
			return SnapshotDecision{}, fmt.Errorf("ref %q points at snapshot %d, which is not in the metadata", name, ref.SnapshotID)
		}
		if name != table.MainBranch {
			maxRefAge := defaultRefAge
			if ref.MaxRefAgeMs != nil {
				maxRefAge = *ref.MaxRefAgeMs
			}
			if age := nowMs - head.TimestampMs; age > maxRefAge {
				d.RemoveRefs = append(d.RemoveRefs, RemovedRef{Name: name, Type: string(ref.SnapshotRefType),
					Reason: fmt.Sprintf("%s is %s old, past its max-ref-age of %s", name, hours(age), hours(maxRefAge))})
				continue
			}
		}
		keep(head.SnapshotID, KeptRefHead)
		if onBranch[head.SnapshotID] == "" {
			onBranch[head.SnapshotID] = name
		}
		if ref.SnapshotRefType != table.BranchRef {
			continue
		}
		refMin, refAge := minKeep, maxAgeMs
		if ref.MinSnapshotsToKeep != nil {
			if name == table.MainBranch {
				refMin = max(refMin, int64(*ref.MinSnapshotsToKeep))
			} else {
				refMin = int64(*ref.MinSnapshotsToKeep)
			}
		}
		if ref.MaxSnapshotAgeMs != nil {
			if name == table.MainBranch {
				refAge = max(refAge, *ref.MaxSnapshotAgeMs)
			} else {
				refAge = *ref.MaxSnapshotAgeMs
			}
		}
		retaining := true
		for i, snap := range table.AncestorsOf(ref.SnapshotID, lookup) {
			if onBranch[snap.SnapshotID] == "" {
				onBranch[snap.SnapshotID] = name
			}
			if !retaining {
				continue
			}
			switch {
			case int64(i) < refMin:
				keep(snap.SnapshotID, KeptMinCount)
			case nowMs-snap.TimestampMs <= refAge:
				keep(snap.SnapshotID, KeptBranchAge)
			default:
				// The first snapshot both old and beyond the count ends
				// retention for the rest of this lineage.
				retaining = false
			}
		}
	}

	for _, snap := range meta.Snapshots() {
		if _, ok := d.Kept[snap.SnapshotID]; ok {
			continue
		}
		age := nowMs - snap.TimestampMs
		branch := onBranch[snap.SnapshotID]
		if branch == "" && age <= maxAgeMs {
			keep(snap.SnapshotID, KeptUnrefAge)
			continue
		}
		reason := fmt.Sprintf("on branch %s, %s old and beyond its retention", branch, hours(age))
		if branch == "" {
			reason = fmt.Sprintf("on no branch or tag and %s old (max %s)", hours(age), hours(maxAgeMs))
		}
		d.Expire = append(d.Expire, ExpiredSnapshot{SnapshotID: snap.SnapshotID, Timestamp: time.UnixMilli(snap.TimestampMs).UTC(), Reason: reason})
	}
	for _, r := range d.Kept {
		d.KeptByRule[r]++
	}
	if cur := meta.CurrentSnapshot(); cur != nil {
		for _, e := range d.Expire {
			if e.SnapshotID == cur.SnapshotID {
				return SnapshotDecision{}, fmt.Errorf("internal error: decided to expire the current snapshot %d", cur.SnapshotID)
			}
		}
	}
	return d, nil
}

func intProp(props map[string]string, key string) (int64, bool, error) {
	v, ok := props[key]
	if !ok {
		return 0, false, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 {
		return 0, false, fmt.Errorf("%w: table property %s=%q is not a non-negative whole number", ErrBadProperty, key, v)
	}
	return n, true, nil
}

func hours(ms int64) string {
	if ms == math.MaxInt64 {
		return "forever"
	}
	h := float64(ms) / float64(time.Hour.Milliseconds())
	if h >= 48 {
		return fmt.Sprintf("%.1fd", h/24)
	}
	return fmt.Sprintf("%.1fh", h)
}
