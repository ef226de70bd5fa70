package tables

import (
	"testing"
	"time"

	"github.com/icekeeper/icekeeper/internal/state"
)

func TestDecide(t *testing.T) {
	key := func(name string) state.TableKey { return state.TableKey{Bucket: "arn:b", Namespace: "ns", Name: name} }
	rec := func(name, uuid string, dropped int) state.TableRecord {
		r := state.TableRecord{Key: key(name), UUID: uuid}
		if dropped > 0 {
			r.Dropped = time.Unix(int64(dropped), 0)
		}
		return r
	}
	ptr := func(r state.TableRecord) *state.TableRecord { return &r }
	for _, c := range []struct {
		name     string
		live     *state.TableRecord
		same     []state.TableRecord
		gone     map[string]bool
		want     Change
		drop     string // UUID of the record dropped first
		from     string // name of the record whose state moves here
		fromLive bool
	}{
		{name: "known", live: ptr(rec("a", "X", 0)), want: Known},
		{name: "first sight", want: New},
		{name: "recreated", live: ptr(rec("a", "Y", 0)), want: Recreated, drop: "Y"},
		{name: "renamed", same: []state.TableRecord{rec("b", "X", 0)}, gone: map[string]bool{"b": true}, want: Renamed, from: "b", fromLive: true},
		{name: "fork: the old name still holds it", same: []state.TableRecord{rec("b", "X", 0)}, want: New},
		{name: "renamed onto a name that held another table", live: ptr(rec("a", "Y", 0)), same: []state.TableRecord{rec("b", "X", 0)},
			gone: map[string]bool{"b": true}, want: Renamed, drop: "Y", from: "b", fromLive: true},
		{name: "undrop", same: []state.TableRecord{rec("a", "X", 5)}, want: Restored, from: "a"},
		{name: "undrop before a fork's rename", same: []state.TableRecord{rec("b", "X", 0), rec("a", "X", 5)}, gone: map[string]bool{"b": true},
			want: Restored, from: "a"},
		{name: "renamed, seen first as a drop: the latest drop", same: []state.TableRecord{rec("b", "X", 3), rec("c", "X", 7)}, want: Renamed, from: "c"},
		{name: "a live rename beats a dropped record", same: []state.TableRecord{rec("c", "X", 7), rec("b", "X", 0)}, gone: map[string]bool{"b": true},
			want: Renamed, from: "b", fromLive: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			asked := map[string]bool{}
			p := Decide(key("a"), "X", c.live, c.same, func(k state.TableKey) bool {
				asked[k.Name] = true
				if k.Name == "a" {
					t.Errorf("asked whether the observed name is gone")
				}
				return c.gone[k.Name]
			})
			if p.Change != c.want {
				t.Errorf("change %v, want %v", p.Change, c.want)
			}
			if got := p.Drop; (got == nil) != (c.drop == "") || got != nil && got.UUID != c.drop {
				t.Errorf("drop %+v, want %q", got, c.drop)
			}
			if got := p.From; (got == nil) != (c.from == "") || got != nil && (got.Key.Name != c.from || got.Live() != c.fromLive) {
				t.Errorf("from %+v, want %q (live %v)", got, c.from, c.fromLive)
			}
			if c.want == Known && len(asked) > 0 {
				t.Errorf("a known table asked the catalog about %v", asked)
			}
		})
	}
}
