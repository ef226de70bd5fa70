package compactor

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

// expiryColumn is the column rows expire by, and the cutoff in its unit:
// a value below cut is expired.
type expiryColumn struct {
	name string
	id   int
	typ  iceberg.Type
	cut  int64 // days for a date, else micro- or nanoseconds since the epoch
}

// expirationColumn finds the table's expiration column and converts the
// cutoff instant to its unit. A date expires only once the whole day is
// older than the cutoff.
func expirationColumn(meta table.Metadata, cutoff time.Time) (expiryColumn, error) {
	name := strings.TrimSpace(meta.Properties()[ExpirationColumnProperty])
	sc := meta.CurrentSchema()
	if name == "" {
		var ts []string
		for _, f := range sc.Fields() {
			if timeType(f.Type) {
				ts = append(ts, f.Name)
			}
		}
		hint := "the table has no timestamp or date column"
		if len(ts) > 0 {
			hint = "its timestamp and date columns: " + strings.Join(ts, ", ")
		}
		return expiryColumn{}, fmt.Errorf("%w: set the table property %s to the column whose value is a row's age (%s)", ErrNoExpirationColumn, ExpirationColumnProperty, hint)
	}
	i := slices.IndexFunc(sc.Fields(), func(f iceberg.NestedField) bool { return f.Name == name })
	if i < 0 {
		if _, nested := sc.FindFieldByName(name); nested {
			return expiryColumn{}, fmt.Errorf("%w: column %q is nested in a struct; record expiration needs a top-level column", ErrNoExpirationColumn, name)
		}
		return expiryColumn{}, fmt.Errorf("%w: the table has no column %q (table property %s)", ErrNoExpirationColumn, name, ExpirationColumnProperty)
	}
	f := sc.Field(i)
	if !timeType(f.Type) {
		return expiryColumn{}, fmt.Errorf("%w: column %q is %s; record expiration needs a date, timestamp, timestamptz, timestamp_ns or timestamptz_ns column", ErrNoExpirationColumn, name, f.Type)
	}
	c := expiryColumn{name: name, id: f.ID, typ: f.Type}
	switch f.Type.(type) {
	case iceberg.DateType:
		c.cut = floorDiv(cutoff.UnixMicro(), 86_400_000_000)
	case iceberg.TimestampNsType, iceberg.TimestampTzNsType:
		c.cut = cutoff.UnixNano()
	default:
		c.cut = cutoff.UnixMicro()
	}
	return c, nil
}

func timeType(t iceberg.Type) bool {
	switch t.(type) {
	case iceberg.DateType, iceberg.TimestampType, iceberg.TimestampTzType, iceberg.TimestampNsType, iceberg.TimestampTzNsType:
		return true
	}
	return false
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && a < 0 {
		q--
	}
	return q
}

// literal is the cutoff as a literal of the column's type.
func (c expiryColumn) literal() iceberg.Literal {
	switch c.typ.(type) {
	case iceberg.DateType:
		return iceberg.NewLiteral(iceberg.Date(c.cut))
	case iceberg.TimestampNsType, iceberg.TimestampTzNsType:
		return iceberg.NewLiteral(iceberg.TimestampNano(c.cut))
	}
	return iceberg.NewLiteral(iceberg.Timestamp(c.cut))
}

// expired is the row filter of expired rows. A null is not expired: a
// row without an age is kept.
func (c expiryColumn) expired() iceberg.BooleanExpression {
	ref := iceberg.Reference(c.name)
	return iceberg.NewAnd(iceberg.NotNull(ref), iceberg.LiteralPredicate(iceberg.OpLT, ref, c.literal()))
}

// fate is what record expiration does with a data file.
type fate int

const (
	keep   fate = iota // no row is expired
	drop               // every row is expired: the file goes
	filter             // some may be: the file is read and rewritten
)

// fateOf decides from the file's column metrics. Bounds of date and
// timestamp columns are exact (never truncated), so an upper bound below
// the cutoff with no nulls proves every row expired, and a lower bound at
// or above it proves none is. Without bounds (a writer that keeps no
// metrics, or a column added after the file was written) only a file of
// nulls is known to keep its rows; the rest must be read.
func (c expiryColumn) fateOf(df iceberg.DataFile) fate {
	nulls, haveNulls := df.NullValueCounts()[c.id]
	if haveNulls && nulls == df.Count() {
		return keep
	}
	lo, hasLo := bound(df.LowerBoundValues()[c.id], c.typ)
	hi, hasHi := bound(df.UpperBoundValues()[c.id], c.typ)
	switch {
	case hasLo && lo >= c.cut:
		return keep
	case hasHi && hi < c.cut && haveNulls && nulls == 0:
		return drop
	}
	return filter
}

// bound decodes a single-value serialized bound of a date (4 bytes) or
// timestamp (8 bytes) column.
func bound(b []byte, t iceberg.Type) (int64, bool) {
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

// expiryGroup is a unit of record expiration: files of one partition that
// are dropped whole, or read and rewritten without their expired rows.
type expiryGroup struct {
	partition string
	tasks     []table.FileScanTask
	drop      bool
	bytes     int64
}

// planExpiry sorts the scanned files by fate into groups: per partition
// (and spec), one group of the files dropped whole and groups of files to
// rewrite of at most target input bytes each (the first file always
// fits), so that a rewrite also packs the small files it reads. Groups
// come in partition order; kept is how many files stay as they are.
func planExpiry(c expiryColumn, meta table.Metadata, tasks []table.FileScanTask, target int64) (groups []expiryGroup, kept int) {
	type part struct {
		label        string
		drop, filter []table.FileScanTask
	}
	parts := map[string]*part{}
	for _, t := range tasks {
		f := c.fateOf(t.File)
		if f == keep {
			kept++
			continue
		}
		key := fmt.Sprintf("%d/%s", t.File.SpecID(), partitionKey(t.File))
		p := parts[key]
		if p == nil {
			p = &part{label: partitionLabel(meta, t.File)}
			parts[key] = p
		}
		if f == drop {
			p.drop = append(p.drop, t)
		} else {
			p.filter = append(p.filter, t)
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
			groups = append(groups, expiryGroup{partition: p.label, tasks: p.drop, drop: true, bytes: inputBytes(p.drop)})
		}
		cur := expiryGroup{partition: p.label}
		for _, t := range p.filter {
			size := t.File.FileSizeBytes()
			if len(cur.tasks) > 0 && cur.bytes+size > target {
				groups = append(groups, cur)
				cur = expiryGroup{partition: p.label}
			}
			cur.tasks = append(cur.tasks, t)
			cur.bytes += size
		}
		if len(cur.tasks) > 0 {
			groups = append(groups, cur)
		}
	}
	return groups, kept
}

func inputBytes(tasks []table.FileScanTask) (n int64) {
	for _, t := range tasks {
		n += t.File.FileSizeBytes()
	}
	return n
}
