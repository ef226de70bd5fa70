// Package rowdigest computes icekeeper's row digest: an order-independent
// fingerprint of a multiset of table rows, equal for two sets of rows
// exactly when they hold the same rows the same number of times (but for
// a 2^-64-scale collision). A rewrite that keeps the visible rows must
// give its replaced rows (minus what their deletes remove) and its written
// rows the same digest, whatever the files, row groups and order.
//
// The definition, version 1 (the README gives it with a worked example,
// so that another tool can compute it):
//
//   - A non-null value v of a top-level primitive field with field ID f
//     hashes to XXH64(seed = f, Iceberg's binary single-value
//     serialization of v): booleans one byte 0 or 1; int and date 4 bytes
//     little-endian; long, time and the timestamps 8 bytes little-endian
//     in their own unit; float and double their IEEE 754 bits, 4 or 8
//     bytes little-endian; string UTF-8; binary and fixed as they are;
//     uuid its 16 bytes big-endian; decimal the unscaled value's minimal
//     two's-complement big-endian bytes. A null hashes to 0, the same as
//     a field a file does not hold (an older schema), as readers see it.
//   - A row hashes to fmix64 (MurmurHash3's 64-bit finalizer) of the
//     wrapping sum of its values' hashes. The sum makes the row hash
//     independent of column order; the finalizer makes it non-linear, so
//     that rows exchanging values do not keep the set's sums.
//   - A set of rows is (count, wrapping sum of its row hashes, xor of its
//     row hashes), written "count:sum:xor" with sum and xor as 16 hex
//     digits.
//
// Nested fields (struct, list, map) and the format-version-3 types
// without a single-value serialization (variant, geometry, geography,
// unknown) are not covered by version 1: their values do not enter the
// row hash, and Covered says which fields did.
package rowdigest

import (
	"errors"
	"fmt"
	"math"
	"math/big"
	"slices"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/iceberg-go"
)

// Version is the definition's version, written beside every digest.
const Version = 1

// Digest is the fingerprint of a multiset of rows.
type Digest struct {
	Count    int64
	Sum, Xor uint64
}

// Add folds one row hash in.
func (d *Digest) Add(row uint64) {
	d.Count++
	d.Sum += row
	d.Xor ^= row
}

// Merge folds the rows of e in: the digest of the union of two multisets.
func (d *Digest) Merge(e Digest) {
	d.Count += e.Count
	d.Sum += e.Sum
	d.Xor ^= e.Xor
}

// Minus is the digest of d's rows without e's, where e's are among them.
func (d Digest) Minus(e Digest) Digest {
	return Digest{Count: d.Count - e.Count, Sum: d.Sum - e.Sum, Xor: d.Xor ^ e.Xor}
}

// String is the digest as summaries and the CLI write it.
func (d Digest) String() string {
	return fmt.Sprintf("%d:%016x:%016x", d.Count, d.Sum, d.Xor)
}

// Parse reads a digest written by String.
func Parse(s string) (Digest, error) {
	parts := strings.Split(s, ":")
	if len(parts) != 3 || len(parts[1]) != 16 || len(parts[2]) != 16 {
		return Digest{}, fmt.Errorf("row digest %q: want count:sum:xor with 16 hex digits each for sum and xor", s)
	}
	var d Digest
	var err error
	if d.Count, err = strconv.ParseInt(parts[0], 10, 64); err != nil || d.Count < 0 {
		return Digest{}, fmt.Errorf("row digest %q: bad count", s)
	}
	if d.Sum, err = strconv.ParseUint(parts[1], 16, 64); err != nil {
		return Digest{}, fmt.Errorf("row digest %q: bad sum", s)
	}
	if d.Xor, err = strconv.ParseUint(parts[2], 16, 64); err != nil {
		return Digest{}, fmt.Errorf("row digest %q: bad xor", s)
	}
	return d, nil
}

// Fmix64 is MurmurHash3's 64-bit finalizer.
func Fmix64(k uint64) uint64 {
	k ^= k >> 33
	k *= 0xff51afd7ed558ccd
	k ^= k >> 33
	k *= 0xc4ceb9fe1a85ec53
	k ^= k >> 33
	return k
}

// ValueHash is the hash of a non-null value of field id whose single-value
// serialization is b.
func ValueHash(id int, b []byte) uint64 { return XXH64(Seed(id), b) }

// Seed is the XXH64 seed of field id's values.
func Seed(id int) uint64 { return uint64(uint32(id)) }

// ErrRowsDiffer is a rewrite whose written rows are not the rows it read:
// it must not be committed.
var ErrRowsDiffer = errors.New("the rows written differ from the rows read")

// ErrSchema is a record that does not match the schema it was read with.
var ErrSchema = errors.New("record does not match its schema")

// Hasher digests records of one schema, column by column.
type Hasher struct {
	sc   *iceberg.Schema
	acc  []uint64 // per row of the record at hand: the sum of its value hashes
	buf  []byte
	rows Digest
}

// NewHasher returns a Hasher of records whose columns are sc's top-level
// fields, in order (what an iceberg-go scan projected to sc yields).
func NewHasher(sc *iceberg.Schema) *Hasher {
	return &Hasher{sc: sc}
}

// Covered are the field IDs whose values enter the row hash: sc's
// top-level fields of the types with a single-value serialization.
func Covered(sc *iceberg.Schema) []int {
	var ids []int
	for _, f := range sc.Fields() {
		if covers(f.Type) {
			ids = append(ids, f.ID)
		}
	}
	return ids
}

// covers reports whether values of type t enter the row hash: the
// primitive types Iceberg's single-value serialization defines. Nested
// types, and the format-version-3 types without one (variant, geometry,
// geography, unknown), are left out.
func covers(t iceberg.Type) bool {
	switch t.(type) {
	case iceberg.BooleanType, iceberg.Int32Type, iceberg.Int64Type, iceberg.Float32Type, iceberg.Float64Type,
		iceberg.DateType, iceberg.TimeType, iceberg.TimestampType, iceberg.TimestampTzType,
		iceberg.TimestampNsType, iceberg.TimestampTzNsType, iceberg.StringType, iceberg.BinaryType,
		iceberg.UUIDType, iceberg.FixedType, iceberg.DecimalType:
		return true
	}
	return false
}

// Digest is what was added so far.
func (h *Hasher) Digest() Digest { return h.rows }

// Add folds every row of rec in.
func (h *Hasher) Add(rec arrow.RecordBatch) error {
	fields := h.sc.Fields()
	// Columns past the schema's (row lineage's metadata columns, which
	// follow the table's) are not the table's rows and are left out.
	if int(rec.NumCols()) < len(fields) {
		return fmt.Errorf("%w: %d columns, schema %d has %d fields", ErrSchema, rec.NumCols(), h.sc.ID, len(fields))
	}
	for c, f := range fields {
		if name := rec.ColumnName(c); name != f.Name {
			return fmt.Errorf("%w: column %d is %s, schema %d has %s", ErrSchema, c, name, h.sc.ID, f.Name)
		}
	}
	n := int(rec.NumRows())
	h.acc = slices.Grow(h.acc[:0], n)[:n]
	clear(h.acc)
	for c, f := range fields {
		if !covers(f.Type) {
			continue
		}
		if err := h.column(f, rec.Column(c)); err != nil {
			return fmt.Errorf("column %s (field %d): %w", f.Name, f.ID, err)
		}
	}
	for _, a := range h.acc {
		h.rows.Add(Fmix64(a))
	}
	return nil
}

func (h *Hasher) column(f iceberg.NestedField, col arrow.Array) error {
	id, seed := f.ID, Seed(f.ID)
	add := func(i int, b []byte) { h.acc[i] += ValueHash(id, b) }
	le32 := func(i int, v uint32) { h.acc[i] += XXH64Uint32(seed, v) }
	le64 := func(i int, v uint64) { h.acc[i] += XXH64Uint64(seed, v) }
	switch a := col.(type) {
	case *array.Boolean:
		each(a, func(i int, v bool) {
			b := byte(0)
			if v {
				b = 1
			}
			h.buf = append(h.buf[:0], b)
			add(i, h.buf)
		})
	case *array.Int32:
		each(a, func(i int, v int32) { le32(i, uint32(v)) })
	case *array.Date32:
		each(a, func(i int, v arrow.Date32) { le32(i, uint32(v)) })
	case *array.Int64:
		each(a, func(i int, v int64) { le64(i, uint64(v)) })
	case *array.Time64:
		each(a, func(i int, v arrow.Time64) { le64(i, uint64(v)) })
	case *array.Timestamp:
		each(a, func(i int, v arrow.Timestamp) { le64(i, uint64(v)) })
	case *array.Float32:
		each(a, func(i int, v float32) { le32(i, math.Float32bits(v)) })
	case *array.Float64:
		each(a, func(i int, v float64) { le64(i, math.Float64bits(v)) })
	case *array.String:
		// Offsets into the bytes, without a string copy per value.
		offs, data := a.ValueOffsets(), a.ValueBytes()
		for i := range a.Len() {
			if a.IsValid(i) {
				add(i, data[offs[i]-offs[0]:offs[i+1]-offs[0]])
			}
		}
	case *array.LargeString:
		each(a, func(i int, v string) { add(i, []byte(v)) })
	case *array.Binary:
		each(a, add)
	case *array.LargeBinary:
		each(a, add)
	case *array.FixedSizeBinary:
		each(a, add)
	case *array.Decimal128:
		each(a, func(i int, v decimal128.Num) {
			h.buf = decimalBytes(h.buf[:0], v.BigInt())
			add(i, h.buf)
		})
	case array.ExtensionArray: // uuid: 16 bytes in a fixed-size binary
		st, ok := a.Storage().(*array.FixedSizeBinary)
		if !ok {
			return fmt.Errorf("%w: extension type %s", ErrSchema, a.DataType())
		}
		each(st, add)
	default:
		return fmt.Errorf("%w: Arrow type %s for %s", ErrSchema, col.DataType(), f.Type)
	}
	return nil
}

// valuer is an Arrow array of T values.
type valuer[T any] interface {
	Len() int
	IsValid(i int) bool
	Value(i int) T
}

// each calls fn with every valid value of a and its row.
func each[T any](a valuer[T], fn func(i int, v T)) {
	for i := range a.Len() {
		if a.IsValid(i) {
			fn(i, a.Value(i))
		}
	}
}

// decimalBytes appends v's minimal two's-complement big-endian bytes.
func decimalBytes(dst []byte, v *big.Int) []byte {
	if v.Sign() >= 0 {
		b := v.Bytes()
		if len(b) == 0 || b[0]&0x80 != 0 {
			dst = append(dst, 0)
		}
		return append(dst, b...)
	}
	// -v-1 has v's bits inverted: write it, then invert.
	m := new(big.Int).Neg(v)
	m.Sub(m, big.NewInt(1))
	b := m.Bytes()
	start := len(dst)
	if len(b) == 0 || b[0]&0x80 != 0 {
		dst = append(dst, 0)
	}
	dst = append(dst, b...)
	for i := start; i < len(dst); i++ {
		dst[i] = ^dst[i]
	}
	return dst
}

// Claim is what a rewrite proved of one group, or of every group of a
// commit: the digest of the rows it read (deletes applied) and of the rows
// it wrote, which agree. Row groups copied byte for byte are not decoded:
// CopiedRows rows went over in them, and Copied digests their column
// chunks' bytes (one XXH64 of a row group's chunks, in column order, per
// copied row group), equal as read and as written.
//
// A rewrite meant to remove rows (record expiration) claims Removed too,
// the rows it chose to drop: Read is then Written and Removed together.
type Claim struct {
	Read, Written Digest
	Removed       Digest
	CopiedRows    int64
	Copied        Digest
}

// Merge folds the claim of another group in.
func (c *Claim) Merge(d Claim) {
	c.Read.Merge(d.Read)
	c.Written.Merge(d.Written)
	c.Removed.Merge(d.Removed)
	c.CopiedRows += d.CopiedRows
	c.Copied.Merge(d.Copied)
}

// Holds reports whether the claim adds up: what was read is what was
// written and what was removed.
func (c Claim) Holds() bool {
	w := c.Written
	w.Merge(c.Removed)
	return c.Read == w
}
