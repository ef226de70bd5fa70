// Package maintenance defines the S3 Tables maintenance job types (the
// three of the maintenance calls, and record expiration of its own calls),
// their settings, defaults and valid ranges, and how settings from several
// layers (API override, config-file bucket default, built-in default)
// combine.
//
// It is shared by the config loader, the state store, the API and the jobs,
// so it holds values and validation only: no I/O.
package maintenance

import (
	"errors"
	"fmt"
	"strings"
)

// JobType names a maintenance job exactly as S3 Tables does on the wire.
type JobType string

// The job types. The first three are S3 Tables' maintenance job types, by
// their wire names. Record expiration has calls of its own in S3 Tables
// (PutTableRecordExpirationConfiguration, …) and no name on the wire;
// icekeeper names it in the same style for its configuration file, CLI
// and history.
const (
	Compaction              JobType = "icebergCompaction"
	SnapshotManagement      JobType = "icebergSnapshotManagement"
	UnreferencedFileRemoval JobType = "icebergUnreferencedFileRemoval"
	RecordExpiration        JobType = "icebergRecordExpiration"
)

// JobTypes lists every job type in the order icekeeper runs them for
// `--job all`: record expiration first (it removes rows, so compaction
// does not rewrite them), then compaction (it creates garbage), then
// snapshot expiration (it makes garbage unreferenced), then removal (it
// collects it).
var JobTypes = []JobType{RecordExpiration, Compaction, SnapshotManagement, UnreferencedFileRemoval}

// MaintenanceTypes are the job types of S3 Tables' maintenance calls
// (GetTableMaintenanceJobStatus and the maintenance configurations).
var MaintenanceTypes = []JobType{Compaction, SnapshotManagement, UnreferencedFileRemoval}

// ParseJobType returns the job type named s, or an error listing the valid names.
func ParseJobType(s string) (JobType, error) {
	names := make([]string, len(JobTypes))
	for i, t := range JobTypes {
		if string(t) == s {
			return t, nil
		}
		names[i] = string(t)
	}
	return "", fmt.Errorf("unknown job type %q (want one of %s)", s, strings.Join(names, ", "))
}

// Status is the enabled/disabled switch of a job type's configuration.
type Status string

// Values of Status.
const (
	Enabled  Status = "enabled"
	Disabled Status = "disabled"
)

// Strategy selects how compaction orders rows in its output.
type Strategy string

// Compaction strategies as S3 Tables names them.
const (
	StrategyAuto    Strategy = "auto"
	StrategyBinpack Strategy = "binpack"
	StrategySort    Strategy = "sort"
	StrategyZOrder  Strategy = "z-order"
)

// Range limits, as S3 Tables documents them where it documents them.
const (
	// MinTargetFileSizeMB and MaxTargetFileSizeMB bound targetFileSizeMB.
	// AWS documents 64–512; icekeeper accepts down to 1 MB so that small
	// test and demo tables can be compacted meaningfully.
	MinTargetFileSizeMB = 1
	MaxTargetFileSizeMB = 512
	// MaxSnapshotAgeHoursLimit caps maxSnapshotAgeHours at about 100 years so
	// that the conversion to milliseconds can never overflow.
	MaxSnapshotAgeHoursLimit = 876000
	// MaxDays caps unreferencedDays and nonCurrentDays for the same reason.
	MaxDays = 36500
)

// CompactionSettings are the settings of icebergCompaction.
type CompactionSettings struct {
	TargetFileSizeMB *int     `json:"targetFileSizeMB,omitempty" yaml:"targetFileSizeMB"`
	Strategy         Strategy `json:"strategy,omitempty" yaml:"strategy"`
}

// SnapshotSettings are the settings of icebergSnapshotManagement.
type SnapshotSettings struct {
	MinSnapshotsToKeep  *int `json:"minSnapshotsToKeep,omitempty" yaml:"minSnapshotsToKeep"`
	MaxSnapshotAgeHours *int `json:"maxSnapshotAgeHours,omitempty" yaml:"maxSnapshotAgeHours"`
}

// RemovalSettings are the settings of icebergUnreferencedFileRemoval.
type RemovalSettings struct {
	UnreferencedDays *int `json:"unreferencedDays,omitempty" yaml:"unreferencedDays"`
	NonCurrentDays   *int `json:"nonCurrentDays,omitempty" yaml:"nonCurrentDays"`
}

// ExpirationSettings are the settings of record expiration: rows older
// than Days, by the table's expiration column, are removed.
type ExpirationSettings struct {
	Days *int `json:"days,omitempty" yaml:"days"`
}

// Config is one job type's configuration: its status and, for the one type
// it belongs to, its settings. Zero fields mean "not set at this layer".
type Config struct {
	Status             Status              `json:"status,omitempty" yaml:"status"`
	Compaction         *CompactionSettings `json:"-" yaml:"-"`
	SnapshotManagement *SnapshotSettings   `json:"-" yaml:"-"`
	Removal            *RemovalSettings    `json:"-" yaml:"-"`
	RecordExpiration   *ExpirationSettings `json:"-" yaml:"-"`
}

// Defaults returns the built-in configuration of t, with every field set.
func Defaults(t JobType) Config {
	c := Config{Status: Enabled}
	switch t {
	case Compaction:
		c.Compaction = &CompactionSettings{TargetFileSizeMB: Int(512), Strategy: StrategyAuto}
	case SnapshotManagement:
		c.SnapshotManagement = &SnapshotSettings{MinSnapshotsToKeep: Int(1), MaxSnapshotAgeHours: Int(120)}
	case UnreferencedFileRemoval:
		c.Removal = &RemovalSettings{UnreferencedDays: Int(3), NonCurrentDays: Int(10)}
	case RecordExpiration:
		// Off until asked for, as in S3 Tables: it deletes rows. Days has
		// no default; enabling it without days is refused.
		c.Status = Disabled
		c.RecordExpiration = &ExpirationSettings{}
	}
	return c
}

// FieldError is a validation failure of one setting. Key is the setting's
// name relative to the job type (for example "targetFileSizeMB"), so callers
// can prefix it with where the value came from.
type FieldError struct {
	Key    string
	Reason string
}

func (e *FieldError) Error() string { return e.Key + ": " + e.Reason }

// ErrInvalid is wrapped by every validation error, for callers that must
// tell bad input from other failures (the API maps it to BadRequestException).
var ErrInvalid = errors.New("invalid maintenance configuration")

// Validate checks the fields that are set. It does not require any field:
// a layer may set only some of them.
func (c Config) Validate(t JobType) error {
	var errs []error
	add := func(key, format string, args ...any) {
		errs = append(errs, &FieldError{Key: key, Reason: fmt.Sprintf(format, args...)})
	}
	switch c.Status {
	case "", Enabled, Disabled:
	default:
		add("status", "%q is not one of enabled, disabled", c.Status)
	}
	if t != Compaction && c.Compaction != nil {
		add("settings.icebergCompaction", "does not belong to %s", t)
	}
	if t != SnapshotManagement && c.SnapshotManagement != nil {
		add("settings.icebergSnapshotManagement", "does not belong to %s", t)
	}
	if t != UnreferencedFileRemoval && c.Removal != nil {
		add("settings.icebergUnreferencedFileRemoval", "does not belong to %s", t)
	}
	if t != RecordExpiration && c.RecordExpiration != nil {
		add("settings.days", "does not belong to %s", t)
	}
	if s := c.Compaction; s != nil {
		checkRange(add, "targetFileSizeMB", s.TargetFileSizeMB, MinTargetFileSizeMB, MaxTargetFileSizeMB)
		switch s.Strategy {
		case "", StrategyAuto, StrategyBinpack, StrategySort, StrategyZOrder:
		default:
			add("strategy", "%q is not one of auto, binpack, sort, z-order", s.Strategy)
		}
	}
	if s := c.SnapshotManagement; s != nil {
		checkRange(add, "minSnapshotsToKeep", s.MinSnapshotsToKeep, 1, 1<<31-1)
		checkRange(add, "maxSnapshotAgeHours", s.MaxSnapshotAgeHours, 1, MaxSnapshotAgeHoursLimit)
	}
	if s := c.Removal; s != nil {
		checkRange(add, "unreferencedDays", s.UnreferencedDays, 1, MaxDays)
		checkRange(add, "nonCurrentDays", s.NonCurrentDays, 1, MaxDays)
	}
	if s := c.RecordExpiration; s != nil {
		checkRange(add, "days", s.Days, 1, MaxDays)
	}
	if len(errs) == 0 {
		return nil
	}
	return errors.Join(append([]error{ErrInvalid}, errs...)...)
}

// FieldErrors returns the FieldErrors inside an error returned by Validate.
func FieldErrors(err error) []*FieldError {
	var out []*FieldError
	var multi interface{ Unwrap() []error }
	if errors.As(err, &multi) {
		for _, e := range multi.Unwrap() {
			var fe *FieldError
			if errors.As(e, &fe) {
				out = append(out, fe)
			}
		}
	}
	return out
}

// checkRange reports v when it is set and out of range.
func checkRange(add func(string, string, ...any), key string, v *int, lo, hi int) {
	switch {
	case v == nil:
	case *v < lo:
		add(key, "%d is below the minimum %d", *v, lo)
	case *v > hi:
		add(key, "%d is above the maximum %d", *v, hi)
	}
}

// Int returns a pointer to v, for building settings literals.
func Int(v int) *int { return &v }

func firstInt(a, b *int) *int {
	if a != nil {
		return a
	}
	return b
}

// Merge lays the layers over each other: for each field the first layer that
// sets it wins. Pass the most specific layer first and Defaults last.
func Merge(t JobType, layers ...Config) Config {
	out := Config{}
	for _, l := range layers {
		if out.Status == "" {
			out.Status = l.Status
		}
		switch t {
		case Compaction:
			if l.Compaction == nil {
				continue
			}
			if out.Compaction == nil {
				out.Compaction = &CompactionSettings{}
			}
			out.Compaction.TargetFileSizeMB = firstInt(out.Compaction.TargetFileSizeMB, l.Compaction.TargetFileSizeMB)
			if out.Compaction.Strategy == "" {
				out.Compaction.Strategy = l.Compaction.Strategy
			}
		case SnapshotManagement:
			if l.SnapshotManagement == nil {
				continue
			}
			if out.SnapshotManagement == nil {
				out.SnapshotManagement = &SnapshotSettings{}
			}
			out.SnapshotManagement.MinSnapshotsToKeep = firstInt(out.SnapshotManagement.MinSnapshotsToKeep, l.SnapshotManagement.MinSnapshotsToKeep)
			out.SnapshotManagement.MaxSnapshotAgeHours = firstInt(out.SnapshotManagement.MaxSnapshotAgeHours, l.SnapshotManagement.MaxSnapshotAgeHours)
		case UnreferencedFileRemoval:
			if l.Removal == nil {
				continue
			}
			if out.Removal == nil {
				out.Removal = &RemovalSettings{}
			}
			out.Removal.UnreferencedDays = firstInt(out.Removal.UnreferencedDays, l.Removal.UnreferencedDays)
			out.Removal.NonCurrentDays = firstInt(out.Removal.NonCurrentDays, l.Removal.NonCurrentDays)
		case RecordExpiration:
			if l.RecordExpiration == nil {
				continue
			}
			if out.RecordExpiration == nil {
				out.RecordExpiration = &ExpirationSettings{}
			}
			out.RecordExpiration.Days = firstInt(out.RecordExpiration.Days, l.RecordExpiration.Days)
		}
	}
	return out
}

// Resolve merges layers over the built-in defaults, so every field is set.
func Resolve(t JobType, layers ...Config) Config {
	return Merge(t, append(layers, Defaults(t))...)
}

// GCDisabledMessage is S3 Tables' failure message for tables with
// gc.enabled=false, on which every deleting job refuses to run.
const GCDisabledMessage = "Iceberg snapshot management and unreferenced file removal is not supported when the 'gc.enabled' table property is false. Ensure this property is unset or explicitly set to true."

// ErrGCDisabled is returned by jobs that refuse a table with gc.enabled=false.
var ErrGCDisabled = errors.New(GCDisabledMessage)

// CheckGC returns ErrGCDisabled when the table properties set gc.enabled
// to false (any case, as Iceberg parses booleans).
func CheckGC(props map[string]string) error {
	if v, ok := props["gc.enabled"]; ok && strings.EqualFold(strings.TrimSpace(v), "false") {
		return ErrGCDisabled
	}
	return nil
}
