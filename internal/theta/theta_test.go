package theta

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"math"
	"math/big"
	"slices"
	"testing"
)

// TestMurmur3PublishedVectors checks the hash against values published
// outside this repository: the Python mmh3 package's documented example,
// mmh3.hash64("foo") == (-2129773440516405919, 9128664383759220103) (the
// two words of MurmurHash3_x64_128 with seed 0, as signed 64-bit
// integers), and the hash of nothing, which is zero for seed 0.
func TestMurmur3PublishedVectors(t *testing.T) {
	h1, h2 := Murmur3([]byte("foo"), 0)
	if int64(h1) != -2129773440516405919 || int64(h2) != 9128664383759220103 {
		t.Errorf("Murmur3(foo, 0) = (%d, %d), want (-2129773440516405919, 9128664383759220103)", int64(h1), int64(h2))
	}
	if h1, h2 := Murmur3(nil, 0); h1 != 0 || h2 != 0 {
		t.Errorf("Murmur3(empty, 0) = (%#x, %#x), want (0, 0)", h1, h2)
	}
}

// TestSeedHash: the default seed's 16-bit hash is 0x93cc, the bytes
// cc 93 at offset 6 of every sketch the Java library serializes with its
// default seed (its SingleItemSketch preamble is 0x93cc_3a00_0003_0301).
func TestSeedHash(t *testing.T) {
	if got := SeedHash(DefaultSeed); got != 0x93cc {
		t.Errorf("SeedHash(9001) = %#04x, want 0x93cc", got)
	}
}

// refHashLong is MurmurHash3_x64_128 of one 8-byte little-endian long,
// written out step by step from the algorithm's description rather than
// through Murmur3: sixteen-byte blocks, none here; the eight tail bytes
// form k1 (k2 stays zero and is not mixed); k1 is multiplied by c1,
// rotated left 31, multiplied by c2 and xored into h1; both words are
// xored with the length (8), added crosswise, finalised with fmix64 and
// added crosswise again. The sketch keeps h1 >> 1.
func refHashLong(v int64, seed uint64) uint64 {
	const c1, c2 = 0x87c37b91114253d5, 0x4cf5ad432745937f
	fmix := func(k uint64) uint64 {
		k ^= k >> 33
		k *= 0xff51afd7ed558ccd
		k ^= k >> 33
		k *= 0xc4ceb9fe1a85ec53
		return k ^ k>>33
	}
	h1, h2 := seed, seed
	k1 := uint64(v)
	k1 *= c1
	k1 = k1<<31 | k1>>33
	k1 *= c2
	h1 ^= k1
	h1 ^= 8
	h2 ^= 8
	h1 += h2
	h2 += h1
	h1, h2 = fmix(h1), fmix(h2)
	h1 += h2
	return h1 >> 1
}

// TestFixedVector is the sketch of the longs 1, 2 and 3, and of the long
// 42 alone, and of nothing, each assembled here by hand from the format's
// published description (DataSketches' theta serialization, serial
// version 3) and compared with MarshalBinary byte for byte:
//
//   - three values, exact mode: preamble longs 2; serial version 3;
//     family 3 (compact); lgNomLongs and lgArrLongs 0; flags 0x1a
//     (read-only 0x02 | compact 0x08 | ordered 0x10); seed hash cc 93;
//     then the retained count 3 (uint32) and four zero bytes (an update
//     sketch's p, unused in a compact one: the Java library writes
//     zeros, see TestJavaGeneratedFiles); then the three hashes ascending. Each hash is refHashLong's, with
//     the default seed 9001, of the value's Iceberg serialization (eight
//     bytes little-endian).
//   - one value: preamble longs 1, flags 0x3a (0x1a | single item 0x20),
//     the seed hash, then the hash.
//   - nothing: the library's canonical empty image 01 03 03 00 00 1e 00 00
//     (empty 0x04 set; its seed hash is zero).
func TestFixedVector(t *testing.T) {
	s := NewUpdateSketch()
	for _, v := range []int64{3, 1, 2, 2} {
		s.Update(Long(nil, v))
	}
	hs := []uint64{refHashLong(1, 9001), refHashLong(2, 9001), refHashLong(3, 9001)}
	slices.Sort(hs)
	want := []byte{2, 3, 3, 0, 0, 0x1a, 0xcc, 0x93, 3, 0, 0, 0, 0, 0, 0, 0}
	for _, h := range hs {
		want = binary.LittleEndian.AppendUint64(want, h)
	}
	got, err := s.Compact().MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("sketch of 1, 2, 3:\n got %s\nwant %s", hex.EncodeToString(got), hex.EncodeToString(want))
	}

	one := NewUpdateSketch()
	one.Update(Long(nil, 42))
	want = binary.LittleEndian.AppendUint64([]byte{1, 3, 3, 0, 0, 0x3a, 0xcc, 0x93}, refHashLong(42, 9001))
	if got, _ := one.Compact().MarshalBinary(); !bytes.Equal(got, want) {
		t.Errorf("sketch of 42:\n got %s\nwant %s", hex.EncodeToString(got), hex.EncodeToString(want))
	}

	empty := NewUpdateSketch()
	empty.Update(nil) // ignored, as the library ignores empty input
	if got, _ := empty.Compact().MarshalBinary(); !bytes.Equal(got, []byte{1, 3, 3, 0, 0, 0x1e, 0, 0}) {
		t.Errorf("empty sketch: got %s", hex.EncodeToString(got))
	}
}

// naiveSketch is the QuickSelect rule without a hash table: every distinct
// hash below theta is kept; past 7,680 kept (15/16 of the 8,192-slot
// table) theta becomes the 4,097th smallest and the 4,096 below it stay.
func naiveSketch(hashes []uint64) (theta uint64, kept []uint64) {
	theta = MaxTheta
	seen := map[uint64]bool{}
	for _, h := range hashes {
		if h == 0 || h >= theta || seen[h] {
			continue
		}
		seen[h] = true
		if len(seen) > 7680 {
			all := make([]uint64, 0, len(seen))
			for k := range seen {
				all = append(all, k)
			}
			slices.Sort(all)
			theta = all[4096]
			seen = map[uint64]bool{}
			for _, k := range all[:4096] {
				seen[k] = true
			}
		}
	}
	for k := range seen {
		kept = append(kept, k)
	}
	slices.Sort(kept)
	return theta, kept
}

// TestEstimationMode feeds many distinct values (with repeats) and checks
// the sketch against the naive rule, its serial form's estimation
// preamble, and its estimate against the exact count.
func TestEstimationMode(t *testing.T) {
	const distinct = 200_000
	s := NewUpdateSketch()
	var hashes []uint64
	for i := range distinct * 2 {
		b := String(nil, "value-"+string(rune('a'+(i%distinct)%7))+itoa(i%distinct))
		s.Update(b)
		hashes = append(hashes, Hash(b))
	}
	theta, kept := naiveSketch(hashes)
	c := s.Compact()
	if c.Theta != theta || !slices.Equal(c.Entries, kept) {
		t.Fatalf("sketch differs from the naive rule: theta %d vs %d, %d vs %d kept", c.Theta, theta, len(c.Entries), len(kept))
	}
	b, _ := c.MarshalBinary()
	if b[0] != 3 || binary.LittleEndian.Uint64(b[16:]) != theta || int(binary.LittleEndian.Uint32(b[8:])) != len(kept) {
		t.Errorf("estimation preamble wrong: % x", b[:24])
	}
	if len(b) != 24+8*len(kept) {
		t.Errorf("%d bytes for %d hashes", len(b), len(kept))
	}
	if e := c.Estimate(); math.Abs(e/distinct-1) > 0.03 {
		t.Errorf("estimate %.0f for %d distinct", e, distinct)
	}
	back, err := Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	if back.Theta != c.Theta || !slices.Equal(back.Entries, c.Entries) {
		t.Error("Parse does not give back the sketch")
	}
}

// TestJavaGeneratedFiles holds the sketches of the longs 0..n-1 to the
// files the Java library itself wrote for its cross-language tests:
// apache/datasketches-java, serialization_test_data/java_generated_files/
// theta_n{n}_java.sk at commit baba500196f2b23b7a60746f7b11d19f6fe084fe,
// written by ThetaSketchCrossLanguageTest.generateBinariesForCompatibilityTesting
// (a default UpdatableThetaSketch, update(i) for i < n, then
// compact().toByteArray()). The files are not copied here: the test
// compares the SHA-256 of its bytes with theirs, computed from those
// files with sha256sum. They cover the empty image, the single item, the
// exact mode and, from 10,000 values, the estimation mode after one or
// many rebuilds (5,324, 4,285 and 6,560 hashes kept: more than K, since
// an update sketch's compact form keeps every hash below theta). For
// n >= 10 the C++ library's files in the same directory are the same
// bytes (the same git blobs).
func TestJavaGeneratedFiles(t *testing.T) {
	for _, c := range []struct {
		n      int
		sha256 string
	}{
		{0, "b8c4f29742a5fdfb5d127bce574c5780bf7c3cf3fb0e09157312f06e6546e896"},
		{1, "e81d5c85bb25b760d465b1bb9b3447003816889278347d08c35d4cdaea3f271f"},
		{10, "f8a1ef24486887cd7eed7f7d3d7597adec302b84978c76bc234df4e95d65c1a3"},
		{100, "4c98b19c740b87c1d4d88bd2fc23129585029231ff8d548900540d98623df097"},
		{1_000, "1e24705880a180cbde32c9a7a53d47a1d43e523a87073bdeac48532376dccf43"},
		{10_000, "cc153d6d7a85c91270087246967072efc3645380d74f02320b39127255b2c0a6"},
		{100_000, "69126ea55d65f4bb20caa36caf2ce2aff73f766ff5aa04d3723ab6c8f6542f4c"},
		{1_000_000, "6d8182717c7736e7b67c537415dc9d620362b2129c2bcd94bb823e1a6b596d0c"},
	} {
		s := NewUpdateSketch()
		var buf []byte
		for i := range c.n {
			buf = Long(buf[:0], int64(i))
			s.Update(buf)
		}
		b, err := s.Compact().MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		if got := sha256.Sum256(b); hex.EncodeToString(got[:]) != c.sha256 {
			t.Errorf("n=%d: %d bytes, sha256 %x, want the Java library's %s", c.n, len(b), got, c.sha256)
		}
	}
}

func itoa(i int) string { return big.NewInt(int64(i)).String() }

// TestUnion: the union of two overlapping halves estimates the whole, keeps
// at most K hashes, and its hashes are exactly those of the whole stream
// below the union's theta.
func TestUnion(t *testing.T) {
	a, b, whole := NewUpdateSketch(), NewUpdateSketch(), map[uint64]bool{}
	for i := range 60_000 {
		v := Long(nil, int64(i))
		whole[Hash(v)] = true
		if i < 40_000 {
			a.Update(v)
		}
		if i >= 20_000 {
			b.Update(v)
		}
	}
	u := NewUnion()
	u.Add(a.Compact())
	u.Add(b.Compact())
	r := u.Result()
	if len(r.Entries) > K {
		t.Errorf("union keeps %d hashes, more than %d", len(r.Entries), K)
	}
	var want []uint64
	for h := range whole {
		if h < r.Theta {
			want = append(want, h)
		}
	}
	slices.Sort(want)
	if !slices.Equal(r.Entries, want) {
		t.Errorf("union keeps %d hashes, the stream has %d below its theta", len(r.Entries), len(want))
	}
	if e := r.Estimate(); math.Abs(e/60_000-1) > 0.03 {
		t.Errorf("union estimates %.0f for 60000", e)
	}
	// Exact inputs stay exact.
	small := NewUnion()
	for _, v := range []int64{1, 2} {
		s := NewUpdateSketch()
		s.Update(Long(nil, v))
		small.Add(s.Compact())
	}
	if r := small.Result(); r.Theta != MaxTheta || len(r.Entries) != 2 || r.Estimate() != 2 {
		t.Errorf("union of two single values: %+v", r)
	}
	if r := NewUnion().Result(); !r.isEmpty() {
		t.Error("an empty union is not empty")
	}
}

// TestDecimal: Java's BigInteger.toByteArray, the minimal big-endian two's
// complement, for values around each byte boundary.
func TestDecimal(t *testing.T) {
	for _, c := range []struct {
		v    int64
		want string
	}{
		{0, "00"}, {1, "01"}, {127, "7f"}, {128, "0080"}, {255, "00ff"}, {256, "0100"},
		{-1, "ff"}, {-128, "80"}, {-129, "ff7f"}, {-32768, "8000"}, {-32769, "ff7fff"},
		{math.MaxInt64, "7fffffffffffffff"}, {math.MinInt64, "8000000000000000"},
	} {
		if got := hex.EncodeToString(Decimal(nil, big.NewInt(c.v))); got != c.want {
			t.Errorf("Decimal(%d) = %s, want %s", c.v, got, c.want)
		}
		if got := hex.EncodeToString(DecimalInt64(nil, c.v)); got != c.want {
			t.Errorf("DecimalInt64(%d) = %s, want %s", c.v, got, c.want)
		}
	}
	big := new(big.Int).Lsh(big.NewInt(1), 70) // 2^70: 00 40 00…
	if got := hex.EncodeToString(Decimal(nil, big)); got != "400000000000000000" {
		t.Errorf("Decimal(2^70) = %s", got)
	}
}

// TestParseRefuses: another seed, another version or a short buffer is
// ErrFormat, never a wrong sketch.
func TestParseRefuses(t *testing.T) {
	s := NewUpdateSketch()
	s.Update(Long(nil, 1))
	s.Update(Long(nil, 2))
	good, _ := s.Compact().MarshalBinary()
	for name, b := range map[string][]byte{
		"short":      good[:5],
		"version":    append([]byte{2, 4}, good[2:]...),
		"seed":       append(append(slices.Clone(good[:6]), 1, 2), good[8:]...),
		"truncated":  good[:len(good)-1],
		"not family": append([]byte{2, 3, 2}, good[3:]...),
	} {
		if _, err := Parse(b); err == nil {
			t.Errorf("%s: parsed", name)
		}
	}
}
