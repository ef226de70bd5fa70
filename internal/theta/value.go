package theta

import (
	"encoding/binary"
	"math"
	"math/big"
)

// The bytes each Iceberg type's value is hashed as: Iceberg's single-value
// serialization (the Java Conversions.toByteBuffer), which the table
// statistics spec names as the theta blob's input. Each function appends
// to buf and returns it, so that a column's loop reuses one buffer.

// Bool is a boolean: one byte, 0 or 1.
func Bool(buf []byte, v bool) []byte {
	if v {
		return append(buf, 1)
	}
	return append(buf, 0)
}

// Int is an int or a date (days from 1970-01-01): four bytes
// little-endian.
func Int(buf []byte, v int32) []byte { return binary.LittleEndian.AppendUint32(buf, uint32(v)) }

// Long is a long, a time (microseconds from midnight) or a timestamp
// (microseconds, or nanoseconds for the _ns types, from 1970-01-01 UTC):
// eight bytes little-endian.
func Long(buf []byte, v int64) []byte { return binary.LittleEndian.AppendUint64(buf, uint64(v)) }

// Float is a float: its IEEE 754 bits, four bytes little-endian.
func Float(buf []byte, v float32) []byte {
	return binary.LittleEndian.AppendUint32(buf, math.Float32bits(v))
}

// Double is a double: its IEEE 754 bits, eight bytes little-endian.
func Double(buf []byte, v float64) []byte {
	return binary.LittleEndian.AppendUint64(buf, math.Float64bits(v))
}

// String is a string: its UTF-8 bytes.
func String(buf []byte, v string) []byte { return append(buf, v...) }

// Binary is a binary or fixed value: its bytes as they are.
func Binary(buf []byte, v []byte) []byte { return append(buf, v...) }

// UUID is a uuid: its 16 bytes, most significant first.
func UUID(buf []byte, v [16]byte) []byte { return append(buf, v[:]...) }

// Decimal is a decimal: its unscaled value in big-endian two's complement
// in the fewest bytes that hold it (Java's BigInteger.toByteArray: zero is
// one zero byte, 128 is 0x00 0x80, -1 is 0xff).
func Decimal(buf []byte, unscaled *big.Int) []byte {
	switch unscaled.Sign() {
	case 0:
		return append(buf, 0)
	case 1:
		b := unscaled.Bytes()
		if b[0]&0x80 != 0 {
			buf = append(buf, 0)
		}
		return append(buf, b...)
	}
	// Negative: the two's complement of |v| in n bytes is 2^(8n) - |v|,
	// for the least n whose top bit is then set.
	abs := new(big.Int).Neg(unscaled)
	n := (abs.BitLen() + 7) / 8
	for {
		t := new(big.Int).Lsh(big.NewInt(1), uint(8*n))
		t.Sub(t, abs)
		b := t.FillBytes(make([]byte, n))
		if b[0]&0x80 != 0 {
			return append(buf, b...)
		}
		n++
	}
}

// DecimalInt64 is Decimal of an unscaled value that fits in 64 bits, the
// common case (precision up to 18), without allocating.
func DecimalInt64(buf []byte, unscaled int64) []byte {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], uint64(unscaled))
	i := 0
	// Drop leading bytes that only repeat the sign of the next one.
	for i < 7 && ((b[i] == 0 && b[i+1]&0x80 == 0) || (b[i] == 0xff && b[i+1]&0x80 != 0)) {
		i++
	}
	return append(buf, b[i:]...)
}
