package rowdigest

import (
	"encoding/binary"
	"math/rand/v2"
	"testing"

	"github.com/cespare/xxhash/v2"
)

// The one-shot forms are XXH64 as the reference Go implementation
// computes it, for every length around the 4-, 8- and 32-byte steps and
// for random seeds.
func TestXXH64(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	d := xxhash.New()
	for n := 0; n <= 100; n++ {
		for range 20 {
			b := make([]byte, n)
			for i := range b {
				b[i] = byte(rng.Uint32())
			}
			seed := rng.Uint64()
			if rng.IntN(4) == 0 {
				seed = uint64(rng.IntN(1000))
			}
			d.ResetWithSeed(seed)
			d.Write(b)
			if got, want := XXH64(seed, b), d.Sum64(); got != want {
				t.Fatalf("XXH64(seed %d, %d bytes) = %016x, the reference %016x", seed, n, got, want)
			}
			switch n {
			case 4:
				if got := XXH64Uint32(seed, binary.LittleEndian.Uint32(b)); got != d.Sum64() {
					t.Fatalf("XXH64Uint32 = %016x, the reference %016x", got, d.Sum64())
				}
			case 8:
				if got := XXH64Uint64(seed, binary.LittleEndian.Uint64(b)); got != d.Sum64() {
					t.Fatalf("XXH64Uint64 = %016x, the reference %016x", got, d.Sum64())
				}
			}
		}
	}
	if XXH64(0, nil) != 0xef46db3751d8e999 {
		t.Fatal("the published vector for the empty input")
	}
}
