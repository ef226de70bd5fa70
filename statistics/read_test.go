package statistics

import (
	"encoding/hex"
	"testing"

	"github.com/apache/iceberg-go"
	"github.com/parquet-go/parquet-go"

	"github.com/icekeeper/icekeeper/planner"
)

// serialize gives Iceberg's single-value serialization of each type from
// the Parquet value a file stores it as, the table's type deciding: an
// int stored for a long column (a promotion) hashes as the long, a float
// for a double as the double, and a decimal hashes as its unscaled
// value's minimal two's complement whether stored as an int32, an int64 or
// fixed bytes.
func TestSerialize(t *testing.T) {
	for _, c := range []struct {
		name string
		typ  iceberg.PrimitiveType
		v    parquet.Value
		want string
	}{
		{"boolean", iceberg.PrimitiveTypes.Bool, parquet.BooleanValue(true), "01"},
		{"int", iceberg.PrimitiveTypes.Int32, parquet.Int32Value(-2), "feffffff"},
		{"date", iceberg.PrimitiveTypes.Date, parquet.Int32Value(19_000), "384a0000"},
		{"long", iceberg.PrimitiveTypes.Int64, parquet.Int64Value(1), "0100000000000000"},
		{"long from a promoted int", iceberg.PrimitiveTypes.Int64, parquet.Int32Value(1), "0100000000000000"},
		{"timestamp", iceberg.PrimitiveTypes.TimestampTz, parquet.Int64Value(1_700_000_000_000_000), "00401e18240a0600"},
		{"float", iceberg.PrimitiveTypes.Float32, parquet.FloatValue(1.5), "0000c03f"},
		{"double", iceberg.PrimitiveTypes.Float64, parquet.DoubleValue(1.5), "000000000000f83f"},
		{"double from a promoted float", iceberg.PrimitiveTypes.Float64, parquet.FloatValue(1.5), "000000000000f83f"},
		{"string", iceberg.PrimitiveTypes.String, parquet.ByteArrayValue([]byte("é")), "c3a9"},
		{"binary", iceberg.PrimitiveTypes.Binary, parquet.ByteArrayValue([]byte{0, 0xff}), "00ff"},
		{"uuid", iceberg.PrimitiveTypes.UUID, parquet.FixedLenByteArrayValue(make([]byte, 16)), "00000000000000000000000000000000"},
		{"decimal as int32", iceberg.DecimalTypeOf(9, 2), parquet.Int32Value(-129), "ff7f"},
		{"decimal as int64", iceberg.DecimalTypeOf(18, 2), parquet.Int64Value(128), "0080"},
		{"decimal as fixed bytes", iceberg.DecimalTypeOf(30, 2), parquet.FixedLenByteArrayValue([]byte{0xff, 0xff, 0xff, 0x7f}), "ff7f"},
		{"decimal zero as fixed bytes", iceberg.DecimalTypeOf(30, 2), parquet.FixedLenByteArrayValue([]byte{0, 0, 0}), "00"},
	} {
		got, err := serialize(nil, c.typ, c.v)
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if hex.EncodeToString(got) != c.want {
			t.Errorf("%s: %x, want %s", c.name, got, c.want)
		}
	}
}

// A data file is read with one request when it is small, or when the
// chosen columns are at least half its bytes by its manifest entry;
// otherwise in ranges, so that the columns left out are not read.
func TestReadWhole(t *testing.T) {
	const mib = 1 << 20
	s := newSketcher([]planner.StatisticsColumn{{FieldID: 1, Name: "id"}, {FieldID: 3, Name: "day"}})
	for _, c := range []struct {
		name  string
		size  int64
		sizes map[int]int64
		want  bool
	}{
		{"small, the chosen columns a sliver", 900 << 10, map[int]int64{1: 10 << 10, 2: 880 << 10, 3: 10 << 10}, true},
		{"the chosen columns most of it", 4 * mib, map[int]int64{1: 2 * mib, 2: mib, 3: mib}, true},
		{"the chosen columns half of it", 4 * mib, map[int]int64{1: mib, 2: 2 * mib, 3: mib}, true},
		{"the chosen columns a sliver", 4 * mib, map[int]int64{1: 100 << 10, 2: 3900 << 10, 3: 100 << 10}, false},
		{"no column sizes", 4 * mib, nil, true},
		{"larger than a whole read", 9 * mib, map[int]int64{1: 5 * mib, 3: 4 * mib}, false},
	} {
		b, err := iceberg.NewDataFileBuilder(*iceberg.UnpartitionedSpec, iceberg.EntryContentData, "file:///t/data/f.parquet",
			iceberg.ParquetFile, nil, nil, nil, 1000, c.size)
		if err != nil {
			t.Fatal(err)
		}
		if c.sizes != nil {
			b.ColumnSizes(c.sizes)
		}
		if got := s.readWhole(b.Build()); got != c.want {
			t.Errorf("%s: read whole %v, want %v", c.name, got, c.want)
		}
	}
}
