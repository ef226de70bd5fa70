package merge

import (
	"bytes"
	"encoding/binary"
	"math"

	"github.com/apache/iceberg-go"
	"github.com/parquet-go/parquet-go"
)

// boundKind is how a column type of the merge path is stored in Parquet
// and how its Iceberg bound bytes (the single-value serialization) compare.
type boundKind struct {
	kind    parquet.Kind
	compare func(a, b []byte) int
}

// boundKinds are the column types the merge path handles, by Iceberg type
// name. Decimal, UUID, fixed and nested types take the general path.
var boundKinds = map[string]boundKind{
	"boolean":        {parquet.Boolean, bytes.Compare},
	"int":            {parquet.Int32, compareInt32},
	"date":           {parquet.Int32, compareInt32},
	"long":           {parquet.Int64, compareInt64},
	"time":           {parquet.Int64, compareInt64},
	"timestamp":      {parquet.Int64, compareInt64},
	"timestamptz":    {parquet.Int64, compareInt64},
	"timestamp_ns":   {parquet.Int64, compareInt64},
	"timestamptz_ns": {parquet.Int64, compareInt64},
	"float":          {parquet.Float, compareFloat32},
	"double":         {parquet.Double, compareFloat64},
	"string":         {parquet.ByteArray, bytes.Compare},
	"binary":         {parquet.ByteArray, bytes.Compare},
}

func compareInt32(a, b []byte) int {
	return cmpOrdered(int32(binary.LittleEndian.Uint32(a)), int32(binary.LittleEndian.Uint32(b)))
}

func compareInt64(a, b []byte) int {
	return cmpOrdered(int64(binary.LittleEndian.Uint64(a)), int64(binary.LittleEndian.Uint64(b)))
}

func compareFloat32(a, b []byte) int {
	return compareFloat(float64(math.Float32frombits(binary.LittleEndian.Uint32(a))), float64(math.Float32frombits(binary.LittleEndian.Uint32(b))))
}

func compareFloat64(a, b []byte) int {
	return compareFloat(math.Float64frombits(binary.LittleEndian.Uint64(a)), math.Float64frombits(binary.LittleEndian.Uint64(b)))
}

// compareFloat orders -0.0 before 0.0, as Java's Double.compare does for
// Iceberg's metrics: a bound of 0.0 for a file holding -0.0 would let
// readers prune it for x < 0.0. (NaN bounds are refused by validBound.)
func compareFloat(x, y float64) int {
	if c := cmpOrdered(x, y); c != 0 {
		return c
	}
	switch sx, sy := math.Signbit(x), math.Signbit(y); {
	case sx && !sy:
		return -1
	case !sx && sy:
		return 1
	}
	return 0
}

func cmpOrdered[T int32 | int64 | float64](a, b T) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// mergeBounds gives the bounds of the union of the inputs' rows: the least
// lower and the greatest upper bound per column. The inputs' bounds may be
// truncated (string prefixes), and the least of truncated lower bounds is
// still a lower bound, the greatest truncated upper bound still an upper
// one. A column keeps no bound when an input with non-null values has none
// (metrics off for it): an absent bound is safe, a wrong one loses rows.
func mergeBounds(sc *iceberg.Schema, inputs []iceberg.DataFile) (lower, upper map[int][]byte) {
	// iceberg-go's accessors copy the whole map at every call: each
	// input's are taken once, not once per column.
	type metrics struct{ lower, upper map[int][]byte }
	ms := make([]metrics, len(inputs))
	for i, df := range inputs {
		ms[i] = metrics{df.LowerBoundValues(), df.UpperBoundValues()}
	}
	lower, upper = map[int][]byte{}, map[int][]byte{}
	for _, f := range sc.Fields() {
		cmp := boundKinds[f.Type.String()].compare
		lo, up, ok := []byte(nil), []byte(nil), true
		for i, df := range inputs {
			l, hasL := ms[i].lower[f.ID]
			u, hasU := ms[i].upper[f.ID]
			if !hasL || !hasU {
				if allNull(df, f.ID) {
					continue
				}
				ok = false
				break
			}
			if !validBound(f.Type, l) || !validBound(f.Type, u) {
				ok = false
				break
			}
			if lo == nil || cmp(l, lo) < 0 {
				lo = l
			}
			if up == nil || cmp(u, up) > 0 {
				up = u
			}
		}
		if ok && lo != nil {
			lower[f.ID], upper[f.ID] = lo, up
		}
	}
	return lower, upper
}

// validBound guards the fixed-width comparisons against malformed bytes,
// and refuses NaN, which no order can place.
func validBound(t iceberg.Type, b []byte) bool {
	switch boundKinds[t.String()].kind {
	case parquet.Int32:
		return len(b) == 4
	case parquet.Int64:
		return len(b) == 8
	case parquet.Float:
		return len(b) == 4 && !math.IsNaN(float64(math.Float32frombits(binary.LittleEndian.Uint32(b))))
	case parquet.Double:
		return len(b) == 8 && !math.IsNaN(math.Float64frombits(binary.LittleEndian.Uint64(b)))
	case parquet.Boolean:
		return len(b) == 1
	}
	return true
}

// allNull reports whether a file's metrics say the column holds only nulls.
func allNull(df iceberg.DataFile, id int) bool {
	v, okV := df.ValueCounts()[id]
	n, okN := df.NullValueCounts()[id]
	return okV && okN && v == n
}

// sumCounts sums a per-column count over the inputs, for the columns every
// input has it for.
func sumCounts(inputs []iceberg.DataFile, get func(iceberg.DataFile) map[int]int64) map[int]int64 {
	out := map[int]int64{}
	for i, df := range inputs {
		m := get(df)
		for id := range out {
			if _, ok := m[id]; !ok {
				delete(out, id)
			}
		}
		for id, v := range m {
			if _, ok := out[id]; ok || i == 0 {
				out[id] += v
			}
		}
	}
	return out
}

// CompareBound orders two Iceberg single-value bounds of type t as the
// merge path orders them; ok is false for a type the merge path does not
// take.
func CompareBound(t iceberg.Type, a, b []byte) (c int, ok bool) {
	k, ok := boundKinds[t.String()]
	if !ok {
		return 0, false
	}
	return k.compare(a, b), true
}
