// Unreferenced file removal's decision: for each object listed under a
// table's prefixes, whether it is marked noncurrent, unmarked, deleted or
// kept, and why (the plan's counters name the reason of every object
// kept). Two-phase, like Thanos' deletion marks: an unreferenced object
// older than UnreferencedAge is marked; a mark older than NonCurrentAge is
// deleted; a mark an operator protected (restored) is kept while the
// object stays unreferenced; a marked object referenced again is
// unmarked.
//
// What moved here and what stayed in package orphan: the decision above
// moved; the classification of a listed object against the table's
// metadata stayed. Whether an object is referenced, has a name storage may
// resolve to another object (an empty, "." or ".." segment), or lies under
// another table's prefix is orphan's location model — opaque keys, every
// form of a reference, scheme equivalence, hashed reference sets — and
// classifying an object also records that it was listed, for orphan's
// check that no file the snapshots need is missing from the listing.
// Moving that here would need the model rewritten and split that check
// from the listing it depends on. So the executor classifies each object
// (a Standing) and hands it in with the object; the planner never sees a
// reference, a location or the state store. Its Object and Mark are the
// values it decides on; orphan converts to and from its own and the
// store's.
//
// The safety rules the decision keeps: an object that is not
// StandingUnreferenced is never marked or deleted, and a mark left on one
// is dropped; only a mark already NonCurrentAge old and not protected is
// deleted; the zero Standing is StandingReferenced, so an object the
// executor did not classify is kept. The executor still re-checks every
// deletion against freshly loaded metadata before it deletes.
//
// The listing streams: a table may hold millions of objects, so Removal
// holds the existing marks, not the listing, and decides object by object
// (Observe) before Finish returns the plan.

package planner

import "time"

// ListedPaths bounds the paths a removal plan lists by name (UnsafePaths);
// its counts stay exact.
const ListedPaths = 200

// RemovalRules are the ages removal decides by.
type RemovalRules struct {
	UnreferencedAge time.Duration // an unreferenced object older than this is marked noncurrent
	NonCurrentAge   time.Duration // a mark older than this is deleted
}

// Standing is where a listed object stands against its table, as the
// executor classifies it.
type Standing uint8

// Standings, in the order the executor checks them: a referenced object
// is referenced whatever its name.
const (
	// StandingReferenced: the table's metadata references the object. The
	// zero value, so that an unclassified object is kept.
	StandingReferenced Standing = iota
	// StandingOtherReference: another table of the bucket references
	// it; kept.
	StandingOtherReference
	// StandingUnsafeName: its key has an empty, "." or ".." segment, which
	// storage may resolve to another object; never marked, never deleted.
	StandingUnsafeName
	// StandingOtherTable: it lies under another table's prefix inside this
	// table's (allowNestedTables); left alone.
	StandingOtherTable
	// StandingUnreferenced: nothing references it and it is this table's.
	StandingUnreferenced
)

// RemovalObject is one listed object as removal decides on it.
type RemovalObject struct {
	Path         string // as storage lists it, verbatim
	Size         int64
	LastModified time.Time
}

// Mark is a noncurrent mark: an object found unreferenced at MarkedAt,
// protected from deletion since ProtectedAt when an operator restored it.
type Mark struct {
	Path         string
	Size         int64
	LastModified time.Time
	MarkedAt     time.Time
	ProtectedAt  time.Time
}

// Protected reports whether an operator restored the object.
func (m Mark) Protected() bool { return !m.ProtectedAt.IsZero() }

// RemovalPlan is the outcome of one pass over a table's objects. Its JSON
// is part of removal's recorded figures.
type RemovalPlan struct {
	Listed       int   `json:"listed"`
	ListedBytes  int64 `json:"listedBytes"`
	Referenced   int   `json:"referenced"`
	Unreferenced int   `json:"unreferenced"`
	TooYoung     int   `json:"tooYoung"`     // unreferenced, younger than unreferencedDays
	StillPending int   `json:"stillPending"` // marked, younger than nonCurrentDays
	Protected    int   `json:"protected"`    // unreferenced, kept because an operator restored it
	// UnsafeNames are objects whose key storage may resolve to another
	// name (an empty, "." or ".." segment): never marked, never deleted.
	UnsafeNames int `json:"unsafeNames"`
	// OtherTables are objects under another table's prefix (with
	// allowNestedTables): left alone.
	OtherTables int `json:"otherTables"`
	// ReferencedByOthers are objects another table of the bucket
	// references: kept.
	ReferencedByOthers int `json:"referencedByOthers,omitempty"`

	UnsafePaths []string `json:"unsafePaths,omitempty"` // the first of UnsafeNames

	Mark     []Mark   `json:"-"` // newly unreferenced and old enough; MarkedAt is now
	Unmark   []string `json:"-"` // marked or protected, but referenced again (or never to be marked)
	Delete   []Mark   `json:"-"` // marked long enough and still unreferenced
	Vanished []string `json:"-"` // marked or protected, but no longer in storage
}

// Removal decides, object by object as the listing streams in, what
// happens to each.
type Removal struct {
	rules RemovalRules
	now   time.Time
	marks map[string]Mark // existing marks by path
	seen  map[string]bool // marked paths seen in the listing
	plan  RemovalPlan
}

// NewRemoval starts a pass at now over a table whose objects carry marks.
func NewRemoval(rules RemovalRules, now time.Time, marks []Mark) *Removal {
	p := &Removal{rules: rules, now: now, marks: make(map[string]Mark, len(marks)), seen: map[string]bool{}}
	for _, m := range marks {
		p.marks[m.Path] = m
	}
	return p
}

// Observe decides one listed object, standing where the executor found it.
func (p *Removal) Observe(o RemovalObject, where Standing) {
	p.plan.Listed++
	p.plan.ListedBytes += o.Size
	mark, marked := p.marks[o.Path]
	if marked {
		p.seen[o.Path] = true
	}
	// Only an unreferenced object of this table may carry a mark; one
	// left on any other by an earlier version is dropped.
	switch where {
	case StandingUnreferenced:
		p.unreferenced(o, mark, marked)
		return
	case StandingUnsafeName:
		p.plan.UnsafeNames++
		if len(p.plan.UnsafePaths) < ListedPaths {
			p.plan.UnsafePaths = append(p.plan.UnsafePaths, o.Path)
		}
	case StandingOtherTable:
		p.plan.OtherTables++
	case StandingOtherReference:
		p.plan.ReferencedByOthers++
	default:
		p.plan.Referenced++
	}
	if marked {
		p.plan.Unmark = append(p.plan.Unmark, o.Path)
	}
}

// unreferenced decides an object nothing references.
func (p *Removal) unreferenced(o RemovalObject, mark Mark, marked bool) {
	p.plan.Unreferenced++
	switch {
	case marked && mark.Protected():
		p.plan.Protected++
	case marked && p.now.Sub(mark.MarkedAt) >= p.rules.NonCurrentAge:
		p.plan.Delete = append(p.plan.Delete, mark)
	case marked:
		p.plan.StillPending++
	case p.now.Sub(o.LastModified) >= p.rules.UnreferencedAge:
		p.plan.Mark = append(p.plan.Mark, Mark{Path: o.Path, Size: o.Size, LastModified: o.LastModified, MarkedAt: p.now})
	default:
		p.plan.TooYoung++
	}
}

// Finish returns the plan; marks never seen in the listing have vanished.
func (p *Removal) Finish() RemovalPlan {
	for path := range p.marks {
		if !p.seen[path] {
			p.plan.Vanished = append(p.plan.Vanished, path)
		}
	}
	return p.plan
}
