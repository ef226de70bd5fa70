package theta

import (
	"encoding/binary"
	"math/bits"
)

// DefaultSeed is DataSketches' default update seed. Every sketch Iceberg
// writes uses it: sketches built with different seeds cannot be merged.
const DefaultSeed uint64 = 9001

const (
	murmurC1 = 0x87c37b91114253d5
	murmurC2 = 0x4cf5ad432745937f
)

// Murmur3 is MurmurHash3_x64_128 of data with seed, as its two 64-bit
// words (h1, h2). The seed initialises both words whole: for seeds below
// 2^32 this is the reference C function, and for any seed it is what the
// DataSketches Java library computes.
func Murmur3(data []byte, seed uint64) (h1, h2 uint64) {
	h1, h2 = seed, seed
	n := len(data)
	blocks := n / 16
	for i := 0; i < blocks; i++ {
		b := data[i*16:]
		k1 := binary.LittleEndian.Uint64(b)
		k2 := binary.LittleEndian.Uint64(b[8:])
		h1 ^= mixK1(k1)
		h1 = bits.RotateLeft64(h1, 27) + h2
		h1 = h1*5 + 0x52dce729
		h2 ^= mixK2(k2)
		h2 = bits.RotateLeft64(h2, 31) + h1
		h2 = h2*5 + 0x38495ab5
	}
	tail := data[blocks*16:]
	var k1, k2 uint64
	// The tail's bytes are read little-endian into k1 (bytes 0–7) and
	// k2 (bytes 8–14), as the reference does with its fall-through switch.
	for i := len(tail) - 1; i >= 8; i-- {
		k2 = k2<<8 | uint64(tail[i])
	}
	for i := min(len(tail), 8) - 1; i >= 0; i-- {
		k1 = k1<<8 | uint64(tail[i])
	}
	if len(tail) > 8 {
		h2 ^= mixK2(k2)
	}
	if len(tail) > 0 {
		h1 ^= mixK1(k1)
	}
	h1 ^= uint64(n)
	h2 ^= uint64(n)
	h1 += h2
	h2 += h1
	h1 = fmix64(h1)
	h2 = fmix64(h2)
	h1 += h2
	h2 += h1
	return h1, h2
}

func mixK1(k uint64) uint64 {
	k *= murmurC1
	k = bits.RotateLeft64(k, 31)
	return k * murmurC2
}

func mixK2(k uint64) uint64 {
	k *= murmurC2
	k = bits.RotateLeft64(k, 33)
	return k * murmurC1
}

func fmix64(k uint64) uint64 {
	k ^= k >> 33
	k *= 0xff51afd7ed558ccd
	k ^= k >> 33
	k *= 0xc4ceb9fe1a85ec53
	k ^= k >> 33
	return k
}

// SeedHash is the 16-bit fingerprint of seed that every serialized sketch
// carries, so that a reader refuses to merge sketches of another seed:
// the low 16 bits of the first word of MurmurHash3 (seed 0) of the seed's
// eight little-endian bytes, as the library computes it.
func SeedHash(seed uint64) uint16 {
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], seed)
	h1, _ := Murmur3(b[:], 0)
	return uint16(h1)
}

// Hash is the sketch's hash of one value's bytes: the first word of
// MurmurHash3 with the default seed, shifted right by one (the library
// keeps hashes positive as Java longs). Empty input has no hash: the
// library ignores empty arrays and buffers.
func Hash(data []byte) uint64 {
	h1, _ := Murmur3(data, DefaultSeed)
	return h1 >> 1
}
