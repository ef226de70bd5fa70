package rowdigest

import (
	"encoding/binary"
	"math/bits"
)

// XXH64, one shot, as its specification (xxhash's doc/xxhash_spec.md)
// defines it: the row digest hashes millions of values of a few bytes
// each, where a streaming digest's state and buffering cost more than the
// hash. The fixed-width forms are the general one unrolled for 4 and 8
// bytes; TestXXH64 holds all three to the reference implementation.
const (
	prime1 uint64 = 0x9E3779B185EBCA87
	prime2 uint64 = 0xC2B2AE3D27D4EB4F
	prime3 uint64 = 0x165667B19E3779F9
	prime4 uint64 = 0x85EBCA77C2B2AE63
	prime5 uint64 = 0x27D4EB2F165667C5
)

func round(acc, input uint64) uint64 {
	acc += input * prime2
	acc = bits.RotateLeft64(acc, 31)
	return acc * prime1
}

func mergeRound(acc, val uint64) uint64 {
	acc ^= round(0, val)
	return acc*prime1 + prime4
}

func avalanche(h uint64) uint64 {
	h ^= h >> 33
	h *= prime2
	h ^= h >> 29
	h *= prime3
	h ^= h >> 32
	return h
}

// XXH64 is the 64-bit xxHash of b with seed.
func XXH64(seed uint64, b []byte) uint64 {
	n := len(b)
	var h uint64
	if n >= 32 {
		v1, v2, v3, v4 := seed+prime1+prime2, seed+prime2, seed, seed-prime1
		for len(b) >= 32 {
			v1 = round(v1, binary.LittleEndian.Uint64(b[0:8]))
			v2 = round(v2, binary.LittleEndian.Uint64(b[8:16]))
			v3 = round(v3, binary.LittleEndian.Uint64(b[16:24]))
			v4 = round(v4, binary.LittleEndian.Uint64(b[24:32]))
			b = b[32:]
		}
		h = bits.RotateLeft64(v1, 1) + bits.RotateLeft64(v2, 7) + bits.RotateLeft64(v3, 12) + bits.RotateLeft64(v4, 18)
		h = mergeRound(h, v1)
		h = mergeRound(h, v2)
		h = mergeRound(h, v3)
		h = mergeRound(h, v4)
	} else {
		h = seed + prime5
	}
	h += uint64(n)
	for ; len(b) >= 8; b = b[8:] {
		h ^= round(0, binary.LittleEndian.Uint64(b))
		h = bits.RotateLeft64(h, 27)*prime1 + prime4
	}
	if len(b) >= 4 {
		h ^= uint64(binary.LittleEndian.Uint32(b)) * prime1
		h = bits.RotateLeft64(h, 23)*prime2 + prime3
		b = b[4:]
	}
	for _, c := range b {
		h ^= uint64(c) * prime5
		h = bits.RotateLeft64(h, 11) * prime1
	}
	return avalanche(h)
}

// XXH64Uint32 is XXH64 of v's 4 little-endian bytes.
func XXH64Uint32(seed uint64, v uint32) uint64 {
	h := seed + prime5 + 4
	h ^= uint64(v) * prime1
	h = bits.RotateLeft64(h, 23)*prime2 + prime3
	return avalanche(h)
}

// XXH64Uint64 is XXH64 of v's 8 little-endian bytes.
func XXH64Uint64(seed uint64, v uint64) uint64 {
	h := seed + prime5 + 8
	h ^= round(0, v)
	h = bits.RotateLeft64(h, 27)*prime1 + prime4
	return avalanche(h)
}
