// Record expiration's planning: which column rows expire by, what becomes
// of each data file by its column bounds, and the groups the executor
// (package expire/records) drops whole or rewrites.

package planner

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
)

// ExpirationColumnProperty is the table property that names the column
// record expiration goes by: a row expires when its value there is older
// than the configured days. S3 Tables' configuration has only the days;
// which column holds a row's age is the table's to say, so a table without
// the property is refused rather than guessed at.
const ExpirationColumnProperty = "icekeeper.record-expiration.column"

// ErrNoExpirationColumn is returned for a table record expiration cannot
// run on: no column named, no such column, or one of a type without time.
var ErrNoExpirationColumn = errors.New("no record expiration column")

// ExpiryColumn is the column rows expire by, and the cutoff in its unit:
// a value below Cut is expired.
type ExpiryColumn struct {
	Name string
	ID   int
	Type iceberg.Type
	Cut  int64 // days for a date, else micro- or nanoseconds since the epoch
}

// ExpiryColumnOf finds the table's expiration column and converts the
// cutoff instant to its unit. A date expires only once the whole day is
// older than the cutoff.
func ExpiryColumnOf(meta table.Metadata, cutoff time.Time) (ExpiryColumn, error) {
	name := strings.TrimSpace(meta.Properties()[ExpirationColumnProperty])
	sc := meta.CurrentSchema()
	if name == "" {
		var ts []string
		for _, f := range sc.Fields() {
			if expiryTimeType(f.Type) {
				ts = append(ts, f.Name)
			}
		}
		hint := "the table has no timestamp or date column"
		if len(ts) > 0 {
			hint = "its timestamp and date columns: " + strings.Join(ts, ", ")
		}
		return ExpiryColumn{}, fmt.Errorf("%w: set the table property %s to the column whose value is a row's age (%s)", ErrNoExpirationColumn, ExpirationColumnProperty, hint)
	}
	i := slices.IndexFunc(sc.Fields(), func(f iceberg.NestedField) bool { return f.Name == name })
	if i < 0 {
		if _, nested := sc.FindFieldByName(name); nested {
			return ExpiryColumn{}, fmt.Errorf("%w: column %q is nested in a struct; record expiration needs a top-level column", ErrNoExpirationColumn, name)
		}
		return ExpiryColumn{}, fmt.Errorf("%w: the table has no column %q (table property %s)", ErrNoExpirationColumn, name, ExpirationColumnProperty)
	}
	f := sc.Field(i)
	if !expiryTimeType(f.Type) {
		return ExpiryColumn{}, fmt.Errorf("%w: column %q is %s; record expiration needs a date, timestamp, timestamptz, timestamp_ns or timestamptz_ns column", ErrNoExpirationColumn, name, f.Type)
	}
	return ExpiryColumn{Name: name, ID: f.ID, Type: f.Type, Cut: expiryCut(f.Type, cutoff)}, nil
}

// expiryCut is the cutoff instant in the unit of a column of type t.
func expiryCut(t iceberg.Type, cutoff time.Time) int64 {
	switch t.(type) {
	case iceberg.DateType:
		return expiryFloorDiv(cutoff.UnixMicro(), 86_400_000_000)
	case iceberg.TimestampNsType, iceberg.TimestampTzNsType:
		return cutoff.UnixNano()
	}
	return cutoff.UnixMicro()
}

func expiryTimeType(t iceberg.Type) bool {
	switch t.(type) {
	case iceberg.DateType, iceberg.TimestampType, iceberg.TimestampTzType, iceberg.TimestampNsType, iceberg.TimestampTzNsType:
		return true
	}
	return false
}

func expiryFloorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && a < 0 {
		q--
	}
	return q
}

// Literal is the cutoff as a literal of the column's type.
func (c ExpiryColumn) Literal() iceberg.Literal {
	switch c.Type.(type) {
	case iceberg.DateType:
		return iceberg.NewLiteral(iceberg.Date(c.Cut))
	case iceberg.TimestampNsType, iceberg.TimestampTzNsType:
		return iceberg.NewLiteral(iceberg.TimestampNano(c.Cut))
	}
	return iceberg.NewLiteral(iceberg.Timestamp(c.Cut))
}

// Expired is the row filter of expired rows. A null is not expired: a
// row without an age is kept.
func (c ExpiryColumn) Expired() iceberg.BooleanExpression {
	ref := iceberg.Reference(c.Name)
	return iceberg.NewAnd(iceberg.NotNull(ref), iceberg.LiteralPredicate(iceberg.OpLT, ref, c.Literal()))
}

// Fate is what record expiration does with a data file.
type Fate int

// The fates of a data file.
const (
	FateKeep   Fate = iota // no row is expired
	FateDrop               // every row is expired: the file goes
	FateFilter             // some may be: the file is read and rewritten
)

// FateOf decides from the file's column metrics. Bounds of date and
// timestamp columns are exact (never truncated), so an upper bound below
// the cutoff with no nulls proves every row expired, and a lower bound at
// or above it proves none is. Without bounds (a writer that keeps no
// metrics, or a column added after the file was written) only a file of
// nulls is known to keep its rows; the rest must be read.
func (c ExpiryColumn) FateOf(df iceberg.DataFile) Fate {
	nulls, haveNulls := df.NullValueCounts()[c.ID]
	if haveNulls && nulls == df.Count() {
		return FateKeep
	}
	lo, hasLo := expiryBound(df.LowerBoundValues()[c.ID], c.Type)
	hi, hasHi := expiryBound(df.UpperBoundValues()[c.ID], c.Type)
	switch {
	case hasLo && lo >= c.Cut:
		return FateKeep
	case hasHi && hi < c.Cut && haveNulls && nulls == 0:
		return FateDrop
	}
	return FateFilter
}

// KeptUntil is when the clock alone may change FateKeep for one of
// files, all of which it keeps at a cutoff days before now: the earliest
// instant at which the cutoff, moving with now, passes a file's lower
// bound. Zero means never (only files of nulls). A file whose bound
// cannot be read gives now: it was not kept by its bounds, so no later
// run may rest on this one.
func (c ExpiryColumn) KeptUntil(files []ExpiryFile, days int, now time.Time) time.Time {
	var until time.Time
	for _, f := range files {
		df := f.Task.File
		if nulls, ok := df.NullValueCounts()[c.ID]; ok && nulls == df.Count() {
			continue
		}
		lo, ok := expiryBound(df.LowerBoundValues()[c.ID], c.Type)
		if !ok {
			return now
		}
		// The cutoff passes lo once a row at lo is older than it: for a
		// date, once the whole day is.
		var at time.Time
		switch c.Type.(type) {
		case iceberg.DateType:
			at = time.UnixMicro((lo + 1) * 86_400_000_000)
		case iceberg.TimestampNsType, iceberg.TimestampTzNsType:
			at = time.Unix(0, lo)
		default:
			at = time.UnixMicro(lo)
		}
		at = at.Add(time.Duration(days) * 24 * time.Hour)
		if until.IsZero() || at.Before(until) {
			until = at
		}
	}
	return until
}

// expiryBound decodes a single-value serialized bound of a date (4 bytes) or
// timestamp (8 bytes) column.
func expiryBound(b []byte, t iceberg.Type) (int64, bool) {
	if _, date := t.(iceberg.DateType); date {
		if len(b) != 4 {
			return 0, false
		}
		return int64(int32(binary.LittleEndian.Uint32(b))), true
	}
	if len(b) != 8 {
		return 0, false
	}
	return int64(binary.LittleEndian.Uint64(b)), true
}

// ExpiryTargetBytes is the size record expiration groups the files it
// rewrites toward, and writes its outputs toward: the table's
// write.target-file-size-bytes, else Iceberg's default of 512 MiB. It is
// the table's own setting for the files its writers produce — record
// expiration rewrites files, it does not compact them, so compaction's
// target is not its to use — and a table without the property gets what
// Iceberg's writers would write.
func ExpiryTargetBytes(props iceberg.Properties) int64 {
	if n := props.GetInt(table.WriteTargetFileSizeBytesKey, 0); n > 0 {
		return int64(n)
	}
	return table.WriteTargetFileSizeBytesDefault
}

// ExpiryFile is a scanned data file with its partition: Partition the key
// that groups files (spec ID included), Label as people read it.
type ExpiryFile struct {
	Task      table.FileScanTask
	Partition string
	Label     string
}

// ExpiryGroup is a unit of record expiration: files of one partition that
// are dropped whole (Drop), or read and rewritten without their expired
// rows. Partition is the partition's label; Bytes the files' size.
type ExpiryGroup struct {
	Partition string
	Tasks     []table.FileScanTask
	Drop      bool
	Bytes     int64
}

// PlanExpiry sorts the files by fate into groups: per partition, one
// group of the files dropped whole and groups of files to rewrite of at
// most target input bytes each (the first file always fits), so that a
// rewrite also packs the small files it reads. Groups come in partition
// order; kept is how many files stay as they are.
func PlanExpiry(c ExpiryColumn, files []ExpiryFile, target int64) (groups []ExpiryGroup, kept int) {
	type part struct {
		label        string
		drop, filter []table.FileScanTask
	}
	parts := map[string]*part{}
	for _, f := range files {
		fate := c.FateOf(f.Task.File)
		if fate == FateKeep {
			kept++
			continue
		}
		p := parts[f.Partition]
		if p == nil {
			p = &part{label: f.Label}
			parts[f.Partition] = p
		}
		if fate == FateDrop {
			p.drop = append(p.drop, f.Task)
		} else {
			p.filter = append(p.filter, f.Task)
		}
	}
	keys := make([]string, 0, len(parts))
	for k := range parts {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		p := parts[k]
		if len(p.drop) > 0 {
			groups = append(groups, ExpiryGroup{Partition: p.label, Tasks: p.drop, Drop: true, Bytes: expiryInputBytes(p.drop)})
		}
		cur := ExpiryGroup{Partition: p.label}
		for _, t := range p.filter {
			size := t.File.FileSizeBytes()
			if len(cur.Tasks) > 0 && cur.Bytes+size > target {
				groups = append(groups, cur)
				cur = ExpiryGroup{Partition: p.label}
			}
			cur.Tasks = append(cur.Tasks, t)
			cur.Bytes += size
		}
		if len(cur.Tasks) > 0 {
			groups = append(groups, cur)
		}
	}
	return groups, kept
}

func expiryInputBytes(tasks []table.FileScanTask) (n int64) {
	for _, t := range tasks {
		n += t.File.FileSizeBytes()
	}
	return n
}
