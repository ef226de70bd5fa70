package theta

import (
	"math"
	"slices"
)

// The library's defaults, which Iceberg's writers use.
const (
	// LgK is log2 of the nominal entries: the library's default, 12.
	LgK = 12
	// K is the nominal entries: a sketch keeps at least K hashes once it
	// estimates, and its relative standard error is about 1/sqrt(K)
	// (1.6% at 4,096).
	K = 1 << LgK
	// MaxTheta is theta at 1.0: every hash is below it.
	MaxTheta = uint64(math.MaxInt64)

	// lgMaxTable is the hash table's final size, lgK+1, where it stops
	// growing and rebuilds instead.
	lgMaxTable = LgK + 1
	// rebuildAt is the distinct count past which a full-size table
	// rebuilds: 15/16 of 2^(lgK+1), the library's rebuild threshold
	// (7,680 at lgK 12). A rebuild sets theta to the (K+1)-th smallest
	// hash and keeps the K below it.
	rebuildAt = (1 << lgMaxTable) * 15 / 16
)

// UpdateSketch is the library's QuickSelect update sketch with its default
// size and sampling probability 1: the sketch a column's values are fed
// into. The zero value is not ready; use NewUpdateSketch.
type UpdateSketch struct {
	table set
	theta uint64
	// empty is false once any non-empty value was offered, kept or not:
	// the library clears it before its theta test.
	empty bool
}

// NewUpdateSketch is an empty sketch.
func NewUpdateSketch() *UpdateSketch {
	return &UpdateSketch{table: newSet(7), theta: MaxTheta, empty: true}
}

// Update offers one value's serialized bytes. Empty bytes are ignored, as
// the library ignores empty arrays and buffers: an empty string or binary
// value does not count as a distinct value.
func (s *UpdateSketch) Update(data []byte) {
	if len(data) == 0 {
		return
	}
	s.UpdateHash(Hash(data))
}

// UpdateHash offers a hash already computed with Hash.
func (s *UpdateSketch) UpdateHash(h uint64) {
	s.empty = false
	if h == 0 || h >= s.theta {
		return
	}
	if !s.table.insert(h) {
		return
	}
	if s.table.lg < lgMaxTable {
		// The library grows its table at half full; growing does not
		// change what is kept, only where.
		if s.table.n > len(s.table.slots)/2 {
			s.table = s.table.grown(lgMaxTable)
		}
		return
	}
	if s.table.n > rebuildAt {
		s.rebuild()
	}
}

// rebuild sets theta to the (K+1)-th smallest hash kept and keeps the K
// below it: the library's quick-select rebuild.
func (s *UpdateSketch) rebuild() {
	hs := s.table.values()
	slices.Sort(hs)
	s.theta = hs[K]
	t := newSet(s.table.lg)
	for _, h := range hs[:K] {
		t.insert(h)
	}
	s.table = t
}

// Retained is how many hashes the sketch keeps.
func (s *UpdateSketch) Retained() int { return s.table.n }

// Theta is the sketch's theta as a fraction of MaxTheta's 2^63-1.
func (s *UpdateSketch) Theta() uint64 { return s.theta }

// Compact is the sketch's compact ordered form, as the library's
// compact(true, null) gives it: every hash kept (below theta), sorted,
// which may be more than K (the table rebuilds only past 15/16 full).
func (s *UpdateSketch) Compact() Compact {
	hs := s.table.values()
	slices.Sort(hs)
	return Compact{Entries: hs, Theta: s.theta, Empty: s.empty}
}

// Estimate is the sketch's distinct-count estimate.
func (s *UpdateSketch) Estimate() float64 { return estimate(s.table.n, s.theta, s.empty) }

func estimate(n int, theta uint64, empty bool) float64 {
	if empty {
		return 0
	}
	if theta == MaxTheta {
		return float64(n)
	}
	return float64(n) / (float64(theta) / float64(MaxTheta))
}

// set is an open-addressing set of non-zero hashes (zero marks a free
// slot; the sketch never keeps a zero hash).
type set struct {
	slots []uint64
	lg    int
	n     int
}

func newSet(lg int) set { return set{slots: make([]uint64, 1<<lg), lg: lg} }

// insert adds h and says whether it was new.
func (t *set) insert(h uint64) bool {
	mask := uint64(len(t.slots) - 1)
	// The low bits of h are as random as any: h is a hash.
	for i := h & mask; ; i = (i + 1) & mask {
		switch t.slots[i] {
		case 0:
			t.slots[i] = h
			t.n++
			return true
		case h:
			return false
		}
	}
}

// grown is t in a table up to eight times larger (the library's default
// resize factor), but no larger than 2^maxLg.
func (t set) grown(maxLg int) set {
	g := newSet(min(t.lg+3, maxLg))
	for _, h := range t.slots {
		if h != 0 {
			g.insert(h)
		}
	}
	return g
}

func (t set) values() []uint64 {
	out := make([]uint64, 0, t.n)
	for _, h := range t.slots {
		if h != 0 {
			out = append(out, h)
		}
	}
	return out
}
