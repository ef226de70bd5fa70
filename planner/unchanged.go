package planner

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"time"

	"github.com/apache/iceberg-go/table"
)

// The unchanged rule: a job whose last full evaluation of a table saw the
// same current snapshot, the same metadata file and the same settings, and
// whose decision the clock alone cannot have changed since, decides what
// it decided then. It reads nothing beyond the table's metadata, and says
// so. A full evaluation is still forced once the last one is older than a
// backstop age, so that nothing the rule cannot see (a file replaced under
// the same path, a bug) is left standing for ever.
//
// It applies to job types whose decision is a function of the table's
// metadata, the settings and thresholds of the clock that the job can name
// (ValidUntil): compaction and snapshot management. Unreferenced file
// removal ages its marks by the clock and lists storage, which writers
// change without a commit; record expiration compares rows with the clock.
// Neither is covered.

// Unchanged-rule names, as runs and dry runs show them.
const (
	RuleUnchanged       = "skip: unchanged"
	RuleFirst           = "full: no earlier evaluation"
	RuleSnapshotChanged = "full: snapshot changed"
	RuleMetadataChanged = "full: metadata changed"
	RuleSettingsChanged = "full: settings changed"
	RuleClock           = "full: due by the clock"
	RuleBackstop        = "full: backstop"
)

// Seen is what identifies a table and its settings for the rule.
type Seen struct {
	SnapshotID       int64  // -1: no current snapshot
	MetadataLocation string // "" where the catalog gives none
	SettingsHash     string
}

// Evaluation is the last full evaluation a verdict may rest on.
type Evaluation struct {
	RunID int64
	At    time.Time
	Seen  Seen
	// ValidUntil is the last instant at which the decision made at At
	// is still the decision; zero when the clock cannot change it.
	ValidUntil time.Time
}

// UnchangedVerdict is the rule's verdict on one run.
type UnchangedVerdict struct {
	Skip bool `json:"skip,omitempty"`
	// Rule is one of the Rule names.
	Rule   string `json:"rule"`
	Reason string `json:"reason"`
	// SinceRun is the run of the last full evaluation (0: none).
	SinceRun int64 `json:"sinceRun,omitempty"`
}

// Text is the verdict as `icekeeper run` prints it, before a job's own
// lines: skipped reports that the run read nothing more, so the job has
// nothing else to print. A dry run always plans; what says so is the job's
// word for its plan (planned, decided).
func (v *UnchangedVerdict) Text(dryRun bool, what string) (line string, skipped bool) {
	if v == nil {
		return "", false
	}
	if v.Skip && !dryRun {
		return fmt.Sprintf("  skipped (%s): %s; nothing read beyond the table's metadata", v.Rule, v.Reason), true
	}
	would := ""
	if dryRun && v.Skip {
		would = ", a run would skip; " + what + " anyway for this dry run"
	}
	return fmt.Sprintf("  unchanged rule: %s: %s%s\n", v.Rule, v.Reason, would), false
}

// CurrentSnapshotID is the table's current snapshot ID, -1 when it has none.
func CurrentSnapshotID(meta table.Metadata) int64 {
	if s := meta.CurrentSnapshot(); s != nil {
		return s.SnapshotID
	}
	return -1
}

// Unchanged decides whether a run at now on a table that looks like cur
// may rest on last (nil: no earlier evaluation), a full evaluation being
// due at least every backstop (0: never forced).
func Unchanged(last *Evaluation, cur Seen, now time.Time, backstop time.Duration) UnchangedVerdict {
	if last == nil {
		return UnchangedVerdict{Rule: RuleFirst, Reason: "no earlier successful run recorded what it saw"}
	}
	v := UnchangedVerdict{SinceRun: last.RunID}
	switch {
	case last.Seen.SnapshotID != cur.SnapshotID:
		v.Rule, v.Reason = RuleSnapshotChanged, fmt.Sprintf("current snapshot %d, run %d saw %d", cur.SnapshotID, last.RunID, last.Seen.SnapshotID)
	case last.Seen.MetadataLocation != "" && cur.MetadataLocation != "" && last.Seen.MetadataLocation != cur.MetadataLocation:
		// Same snapshot, new metadata file: properties, refs, the sort
		// order or the schema changed, and each may change a decision.
		v.Rule, v.Reason = RuleMetadataChanged, fmt.Sprintf("metadata file changed since run %d", last.RunID)
	case last.Seen.SettingsHash != cur.SettingsHash:
		v.Rule, v.Reason = RuleSettingsChanged, fmt.Sprintf("settings changed since run %d", last.RunID)
	case !last.ValidUntil.IsZero() && now.After(last.ValidUntil):
		v.Rule, v.Reason = RuleClock, fmt.Sprintf("run %d's decision held until %s", last.RunID, last.ValidUntil.UTC().Format(time.RFC3339))
	case backstop > 0 && now.Sub(last.At) >= backstop:
		v.Rule, v.Reason = RuleBackstop, fmt.Sprintf("last full evaluation (run %d) is %s old, at least %s", last.RunID, now.Sub(last.At).Round(time.Second), backstop)
	default:
		v.Skip, v.Rule = true, RuleUnchanged
		v.Reason = fmt.Sprintf("unchanged since run %d (snapshot %d, same settings)", last.RunID, cur.SnapshotID)
	}
	return v
}

// SettingsHash is the identity of what steers a job besides its table:
// a hash of the JSON of parts (maps encode in key order, so equal
// settings hash equal).
func SettingsHash(parts ...any) (string, error) {
	b, err := json.Marshal(parts)
	if err != nil {
		return "", fmt.Errorf("hash settings: %w", err)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:16]), nil
}

// CompactionValidUntil is the last instant at which compaction's plan made
// at now over files still stands: a file left for being younger than
// minAge is due once it is old enough. Zero when no file waits for age.
func CompactionValidUntil(files []File, minAge time.Duration, now time.Time) time.Time {
	var until time.Time
	if minAge <= 0 {
		return until
	}
	for _, f := range files {
		if f.AddedAt.IsZero() || now.Sub(f.AddedAt) >= minAge {
			continue
		}
		// Planned once its age reaches minAge: the plan stands up to the
		// instant before.
		if t := f.AddedAt.Add(minAge - time.Nanosecond); until.IsZero() || t.Before(until) {
			until = t
		}
	}
	return until
}

// SnapshotsValidUntil is the last instant at which the snapshot decision
// made at now on meta with s still stands. Snapshots compares the age of
// a snapshot (now - its timestamp, in milliseconds) with a max age taken
// from the settings, the table's properties or a ref, so its decision
// changes only when now passes timestamp + age for one of those ages: the
// earliest such instant at or after now bounds it. Zero when none lies
// ahead.
func SnapshotsValidUntil(meta table.Metadata, s SnapshotSettings, now time.Time) time.Time {
	ages := []int64{s.MaxSnapshotAge.Milliseconds()}
	props := meta.Properties()
	for _, k := range []string{PropMaxSnapshotAgeMs, PropMaxRefAgeMs} {
		if v, ok, err := intProp(props, k); err == nil && ok {
			ages = append(ages, v)
		}
	}
	for _, ref := range meta.Refs() {
		if ref.MaxRefAgeMs != nil {
			ages = append(ages, *ref.MaxRefAgeMs)
		}
		if ref.MaxSnapshotAgeMs != nil {
			ages = append(ages, *ref.MaxSnapshotAgeMs)
		}
	}
	nowMs := now.UnixMilli()
	until := int64(math.MaxInt64)
	for _, snap := range meta.Snapshots() {
		for _, a := range ages {
			if a > 0 && snap.TimestampMs > math.MaxInt64-a {
				continue // never reached
			}
			// age > a flips once now > timestamp + a: the decision at
			// now stands through timestamp + a.
			if t := snap.TimestampMs + a; t >= nowMs && t < until {
				until = t
			}
		}
	}
	if until == math.MaxInt64 {
		return time.Time{}
	}
	return time.UnixMilli(until).Add(999 * time.Microsecond)
}
