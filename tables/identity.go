package tables

import (
	"github.com/icekeeper/icekeeper/internal/state"
)

// Change is what an observation of a table under a name found.
type Change int

// What an observation can find (see the package doc).
const (
	// Known: the name holds the table recorded under it.
	Known Change = iota
	// New: a table the registry did not know. The first observation of
	// a name since the registry began is one: what the store holds
	// under the name (written by an earlier release) is this table's.
	New
	// Recreated: the name held another table, now recorded dropped.
	Recreated
	// Renamed: the table held another name, which no longer holds it.
	Renamed
	// Restored: the table was recorded dropped under this name, and is
	// back.
	Restored
)

func (c Change) String() string {
	switch c {
	case Known:
		return "known"
	case New:
		return "new"
	case Recreated:
		return "recreated"
	case Renamed:
		return "renamed"
	case Restored:
		return "restored"
	}
	return "unknown"
}

// Plan is what the registry does for one observation: Drop, when set, is
// the table the name held before, recorded dropped first; From, when set,
// is the record of the observed table whose state moves to the name.
type Plan struct {
	Change Change
	Drop   *state.TableRecord
	From   *state.TableRecord
}

// Decide says what finding the table uuid under the name key means.
// live is the record the registry holds under key (nil: none); same are
// the bucket's records of uuid, live and dropped; gone reports whether
// the catalog no longer has a name (asked only of the live records of
// uuid under other names, and only when the name's record is not uuid's).
func Decide(key state.TableKey, uuid string, live *state.TableRecord, same []state.TableRecord, gone func(state.TableKey) bool) Plan {
	if live != nil && live.UUID == uuid {
		return Plan{Change: Known}
	}
	p := Plan{Change: New, Drop: live}
	if live != nil {
		p.Change = Recreated
	}
	// The table's own past under this name first (an undrop), then a
	// name that lost it (a rename), then a dropped record under another
	// name (a rename the registry saw first as a drop).
	var renamed, droppedElsewhere *state.TableRecord
	for i := range same {
		r := &same[i]
		switch {
		case r.Key == key && !r.Live():
			p.Change, p.From = Restored, r
			return p
		case r.Key == key:
			// live under key with uuid: handled above.
		case r.Live():
			if renamed == nil && gone(r.Key) {
				renamed = r
			}
		case droppedElsewhere == nil || r.Dropped.After(droppedElsewhere.Dropped):
			droppedElsewhere = r
		}
	}
	switch {
	case renamed != nil:
		p.Change, p.From = Renamed, renamed
	case droppedElsewhere != nil:
		p.Change, p.From = Renamed, droppedElsewhere
	}
	return p
}
