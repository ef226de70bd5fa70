package merge

import (
	"encoding/binary"
	"math"
	"testing"

	"github.com/apache/iceberg-go"
)

func TestBoundOrder(t *testing.T) {
	le32 := func(v uint32) []byte { return binary.LittleEndian.AppendUint32(nil, v) }
	le64 := func(v uint64) []byte { return binary.LittleEndian.AppendUint64(nil, v) }
	for _, tc := range []struct {
		typ  string
		a, b []byte // a < b
	}{
		{"int", le32(uint32(0xfffffffb)), le32(3)}, // -5 < 3
		{"date", le32(1), le32(256)},
		{"long", le64(uint64(0xfffffffffffffff6)), le64(1)}, // -10 < 1
		{"timestamp", le64(255), le64(256)},
		{"float", le32(math.Float32bits(-2.5)), le32(math.Float32bits(0.5))},
		{"double", le64(math.Float64bits(-1e10)), le64(math.Float64bits(-1))},
		{"float", le32(math.Float32bits(float32(math.Copysign(0, -1)))), le32(math.Float32bits(0))},
		{"double", le64(math.Float64bits(math.Copysign(0, -1))), le64(math.Float64bits(0))},
		{"string", []byte("ab"), []byte("b")},
		{"boolean", []byte{0}, []byte{1}},
	} {
		cmp := boundKinds[tc.typ].compare
		if cmp(tc.a, tc.b) >= 0 || cmp(tc.b, tc.a) <= 0 || cmp(tc.a, tc.a) != 0 {
			t.Errorf("%s: %x and %x compare wrongly", tc.typ, tc.a, tc.b)
		}
	}
	if validBound(iceberg.PrimitiveTypes.Float64, le64(math.Float64bits(math.NaN()))) || validBound(iceberg.PrimitiveTypes.Int32, []byte{1}) {
		t.Error("a NaN or short bound passed as valid")
	}
}
