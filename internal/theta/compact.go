package theta

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
)

// The compact sketch's serial form (serial version 3), as the library
// writes it, little-endian:
//
//	byte 0      preamble longs: 1 (empty or one hash, theta 1.0),
//	            2 (exact: every hash, theta 1.0), 3 (estimating: theta < 1.0)
//	byte 1      serial version, 3
//	byte 2      family, 3 (compact)
//	bytes 3–4   lgNomLongs, lgArrLongs: 0 in a compact sketch
//	byte 5      flags (below)
//	bytes 6–7   seed hash (SeedHash), 0 in the canonical empty sketch
//	bytes 8–11  retained count            (preamble longs ≥ 2)
//	bytes 12–15 zero: an update sketch's p, unused in a compact one
//	            (the Java library writes zeros here, not 1.0f)
//	bytes 16–23 theta                     (preamble longs 3)
//	then the retained hashes, ascending, 8 bytes each.
const (
	serialVersion = 3
	familyCompact = 3

	flagReadOnly   = 1 << 1
	flagEmpty      = 1 << 2
	flagCompact    = 1 << 3
	flagOrdered    = 1 << 4
	flagSingleItem = 1 << 5
)

// emptyBytes is the library's one image of an empty compact sketch,
// whatever its seed.
var emptyBytes = [8]byte{1, serialVersion, familyCompact, 0, 0, flagReadOnly | flagEmpty | flagCompact | flagOrdered, 0, 0}

// Compact is a compact ordered theta sketch: the hashes below Theta,
// ascending. It is a value: methods never change it.
type Compact struct {
	Entries []uint64
	Theta   uint64
	Empty   bool
}

// Estimate is the sketch's distinct-count estimate.
func (c Compact) Estimate() float64 { return estimate(len(c.Entries), c.Theta, c.isEmpty()) }

// isEmpty follows the library: a sketch that kept nothing at theta 1.0 is
// empty, whatever it was offered.
func (c Compact) isEmpty() bool { return c.Empty || (len(c.Entries) == 0 && c.Theta == MaxTheta) }

// MarshalBinary is the sketch in the library's compact serial version 3,
// with the default seed's hash: the bytes of an apache-datasketches-theta-v1
// blob.
func (c Compact) MarshalBinary() ([]byte, error) {
	if c.isEmpty() {
		return slices.Clone(emptyBytes[:]), nil
	}
	n := len(c.Entries)
	flags := byte(flagReadOnly | flagCompact | flagOrdered)
	var pre int
	switch {
	case c.Theta < MaxTheta:
		pre = 3
	case n == 1:
		pre = 1
		flags |= flagSingleItem
	default:
		pre = 2
	}
	b := make([]byte, 8*(pre+n))
	b[0], b[1], b[2], b[5] = byte(pre), serialVersion, familyCompact, flags
	binary.LittleEndian.PutUint16(b[6:], SeedHash(DefaultSeed))
	if pre > 1 {
		binary.LittleEndian.PutUint32(b[8:], uint32(n))
	}
	if pre > 2 {
		binary.LittleEndian.PutUint64(b[16:], c.Theta)
	}
	for i, h := range c.Entries {
		binary.LittleEndian.PutUint64(b[8*(pre+i):], h)
	}
	return b, nil
}

// ErrFormat is bytes that are not a compact theta sketch this package
// reads.
var ErrFormat = errors.New("not a compact theta sketch of serial version 3 with the default seed")

// Parse reads a compact sketch in serial version 3 with the default seed
// (ordered or not). It is how a previous run's blob becomes the state the
// next run merges into; anything else is ErrFormat, and the caller
// computes afresh.
func Parse(b []byte) (Compact, error) {
	if len(b) < 8 {
		return Compact{}, fmt.Errorf("%w: %d bytes", ErrFormat, len(b))
	}
	pre, ver, fam, flags := int(b[0]&0x3f), b[1], b[2], b[5]
	if ver != serialVersion || fam != familyCompact || flags&flagCompact == 0 || pre < 1 || pre > 3 {
		return Compact{}, fmt.Errorf("%w: preamble %d, version %d, family %d, flags %#x", ErrFormat, pre, ver, fam, flags)
	}
	if flags&flagEmpty != 0 {
		return Compact{Theta: MaxTheta, Empty: true}, nil
	}
	if seed := binary.LittleEndian.Uint16(b[6:]); seed != SeedHash(DefaultSeed) {
		return Compact{}, fmt.Errorf("%w: seed hash %#04x", ErrFormat, seed)
	}
	c := Compact{Theta: MaxTheta}
	n := 1
	if pre > 1 {
		if len(b) < 16 {
			return Compact{}, fmt.Errorf("%w: %d bytes", ErrFormat, len(b))
		}
		n = int(binary.LittleEndian.Uint32(b[8:]))
	}
	if pre > 2 {
		if len(b) < 24 {
			return Compact{}, fmt.Errorf("%w: %d bytes", ErrFormat, len(b))
		}
		c.Theta = binary.LittleEndian.Uint64(b[16:])
	}
	if pre == 1 && len(b) == 8 {
		n = 0 // an empty sketch written without its flag
	}
	if want := 8 * (pre + n); n < 0 || len(b) != want {
		return Compact{}, fmt.Errorf("%w: %d bytes for %d hashes", ErrFormat, len(b), n)
	}
	c.Entries = make([]uint64, n)
	for i := range c.Entries {
		c.Entries[i] = binary.LittleEndian.Uint64(b[8*(pre+i):])
	}
	if flags&flagOrdered == 0 {
		slices.Sort(c.Entries)
	}
	return c, nil
}
