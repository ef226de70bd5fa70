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

// Status is the enabled/disabled switch of a job type's configuration.
type Status string

// Values of Status.
const (
	Enabled  Status = "enabled"
	Disabled Status = "disabled"
)

// Config is one job type's configuration: its status and, for the one type
// it belongs to, its settings. Zero fields mean "not set at this layer".
type Config struct {
	Status Status `json:"status,omitempty" yaml:"status"`
	// Settings are the type's own settings: a pointer to the settings
	// struct its settings file declares (*CompactionSettings, …), read
	// through that file's accessor (Config.Compaction, …); nil when the
	// layer sets none. The wire shape is wire.go's.
	Settings any `json:"-" yaml:"-"`
}

// settingsAs is c's settings when they are an S, else nil.
func settingsAs[S any](c Config) *S {
	s, _ := c.Settings.(*S)
	return s
}

// The hooks of a type row whose settings are an S.

func has[S any](c Config) bool { return settingsAs[S](c) != nil }

func newOf[S any]() any { return new(S) }

// section is the configuration file's section of a type whose
// settings are an S: its status and its settings, flat.
type section[S any] struct {
	Status   Status `yaml:"status"`
	Settings S      `yaml:",inline"`
}

func sectionOf[S any]() (any, func() Config) {
	var f section[S]
	return &f, func() Config { s := f.Settings; return Config{Status: f.Status, Settings: &s} }
}

// Defaults returns the built-in configuration of t, with every field set.
func Defaults(t JobType) Config {
	typ, ok := Lookup(t)
	if !ok {
		return Config{}
	}
	return typ.defaults()
}

// DefaultStatus is Defaults(t).Status, without building its settings.
func DefaultStatus(t JobType) Status {
	typ, _ := Lookup(t)
	return typ.defaultStatus
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
	for _, typ := range Types() {
		if typ.Name != t && typ.hasSettings(c) {
			add(typ.settingsKey, "does not belong to %s", t)
		}
	}
	if typ, ok := Lookup(t); ok {
		typ.validate(c, add)
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
func checkRange(add adder, key string, v *int, lo, hi int) {
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

// layer lays the settings S of a lower layer l under out's: fill keeps
// what out sets and takes the rest from l. A layer without the settings
// changes nothing; out's are always its own, never a layer's.
func layer[S any](out *Config, l Config, fill func(out, l *S)) {
	ls := settingsAs[S](l)
	if ls == nil {
		return
	}
	o := settingsAs[S](*out)
	if o == nil {
		o = new(S)
		out.Settings = o
	}
	fill(o, ls)
}

// Merge lays the layers over each other: for each field the first layer that
// sets it wins. Pass the most specific layer first and Defaults last.
func Merge(t JobType, layers ...Config) Config {
	out := Config{}
	typ, ok := Lookup(t)
	for _, l := range layers {
		if out.Status == "" {
			out.Status = l.Status
		}
		if ok {
			typ.merge(&out, l)
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
