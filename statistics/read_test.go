package statistics

import (
	"encoding/hex"
	"testing"

	"github.com/apache/iceberg-go"
	"github.com/parquet-go/parquet-go"
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
