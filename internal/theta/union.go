package theta

import "slices"

// Union merges sketches as the library's union of default size does: its
// result keeps at most K hashes, below the smallest theta of its inputs
// and of its own gadget sketch. Merging is what lets a run add the
// sketches of new files to the previous run's without reading old data.
type Union struct {
	gadget *UpdateSketch
	theta  uint64
	empty  bool
}

// NewUnion is a union of nothing.
func NewUnion() *Union { return &Union{gadget: NewUpdateSketch(), theta: MaxTheta, empty: true} }

// Add merges c into the union.
func (u *Union) Add(c Compact) {
	if c.isEmpty() {
		return
	}
	if len(c.Entries) == 1 && c.Theta == MaxTheta {
		// The library feeds a single-item sketch straight to its gadget,
		// leaving its own theta and emptiness alone.
		u.gadget.UpdateHash(c.Entries[0])
		return
	}
	u.theta = min(u.theta, c.Theta, u.gadget.theta)
	u.empty = false
	for _, h := range c.Entries {
		if h >= u.theta {
			break // ordered: the rest are above theta too
		}
		u.gadget.UpdateHash(h)
	}
	u.theta = min(u.theta, u.gadget.theta)
}

// Result is the union as a compact ordered sketch, cut back to K hashes.
func (u *Union) Result() Compact {
	hs := u.gadget.table.values()
	slices.Sort(hs)
	theta := min(u.theta, u.gadget.theta)
	if len(hs) > K {
		theta = min(theta, hs[K])
	}
	i, _ := slices.BinarySearch(hs, theta)
	return Compact{Entries: hs[:i], Theta: theta, Empty: u.gadget.empty && u.empty}
}
