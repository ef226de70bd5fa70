package orphan

import (
	"time"

	"github.com/icekeeper/icekeeper/internal/state"
	"github.com/icekeeper/icekeeper/maintenance"
)

// Rules are the removal settings, resolved.
type Rules struct {
	UnreferencedAge time.Duration // an unreferenced object older than this is marked noncurrent
	NonCurrentAge   time.Duration // a mark older than this is deleted
	Equivalence     Equivalence   // schemes that name the same storage
	MaxDeletes      int           // deletions per run at most
	// AllowNested runs removal on a table whose location holds other
	// tables, leaving their prefixes alone; without it such a table fails.
	AllowNested bool
}

// RulesOf picks unreferenced file removal's rules out of a table's settings.
func RulesOf(s maintenance.Settings) Rules {
	c := s.For(maintenance.UnreferencedFileRemoval).Removal
	r := Rules{
		UnreferencedAge: time.Duration(*c.UnreferencedDays) * 24 * time.Hour,
		NonCurrentAge:   time.Duration(*c.NonCurrentDays) * 24 * time.Hour,
		Equivalence:     Equivalence(s.Knobs.SchemeEquivalence),
		MaxDeletes:      s.Knobs.MaxDeletesPerRun,
		AllowNested:     s.Knobs.AllowNestedTables,
	}
	if r.MaxDeletes <= 0 {
		r.MaxDeletes = DefaultMaxDeletesPerRun
	}
	return r
}

// planner decides, object by object as the listing streams in, what
// happens to each: it holds the existing marks, not the listing.
type planner struct {
	rules   Rules
	now     time.Time
	refs    *refSet
	exclude []loc                 // other tables' prefixes inside this table's
	marks   map[string]state.Mark // existing marks by path
	seen    map[string]bool       // marked paths seen in the listing

	plan Plan
}

// Plan is the outcome of one pass over a table's objects.
type Plan struct {
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

	UnsafePaths []string `json:"unsafePaths,omitempty"` // the first of UnsafeNames

	Mark     []state.Mark `json:"-"` // newly unreferenced and old enough
	Unmark   []string     `json:"-"` // marked or protected, but referenced again
	Delete   []state.Mark `json:"-"` // marked long enough and still unreferenced
	Vanished []string     `json:"-"` // marked or protected, but no longer in storage
}

func newPlanner(rules Rules, now time.Time, refs *refSet, exclude []loc, marks []state.Mark) *planner {
	p := &planner{rules: rules, now: now, refs: refs, exclude: exclude, marks: map[string]state.Mark{}, seen: map[string]bool{}}
	for _, m := range marks {
		p.marks[m.Path] = m
	}
	return p
}

// observe decides one listed object.
func (p *planner) observe(o Object) {
	path := o.Loc.String()
	p.plan.Listed++
	p.plan.ListedBytes += o.Size
	mark, marked := p.marks[path]
	if marked {
		p.seen[path] = true
	}
	if p.refs.see(o.Loc) {
		p.plan.Referenced++
		if marked {
			p.plan.Unmark = append(p.plan.Unmark, path)
		}
		return
	}
	// Neither kind may carry a mark; one left by an earlier version is
	// dropped.
	switch {
	case !o.Loc.clean():
		p.plan.UnsafeNames++
		if len(p.plan.UnsafePaths) < listedPaths {
			p.plan.UnsafePaths = append(p.plan.UnsafePaths, path)
		}
	case under(o.Loc, p.exclude):
		p.plan.OtherTables++
	default:
		p.unreferenced(o, path, mark, marked)
		return
	}
	if marked {
		p.plan.Unmark = append(p.plan.Unmark, path)
	}
}

// unreferenced decides an object nothing references.
func (p *planner) unreferenced(o Object, path string, mark state.Mark, marked bool) {
	p.plan.Unreferenced++
	switch {
	case marked && mark.Protected():
		p.plan.Protected++
	case marked && p.now.Sub(mark.MarkedAt) >= p.rules.NonCurrentAge:
		p.plan.Delete = append(p.plan.Delete, mark)
	case marked:
		p.plan.StillPending++
	case p.now.Sub(o.LastModified) >= p.rules.UnreferencedAge:
		p.plan.Mark = append(p.plan.Mark, state.Mark{Path: path, Size: o.Size, LastModified: o.LastModified, MarkedAt: p.now})
	default:
		p.plan.TooYoung++
	}
}

// finish returns the plan; marks never seen in the listing have vanished.
func (p *planner) finish() Plan {
	for path := range p.marks {
		if !p.seen[path] {
			p.plan.Vanished = append(p.plan.Vanished, path)
		}
	}
	return p.plan
}
