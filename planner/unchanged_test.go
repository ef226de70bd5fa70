package planner

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

func TestUnchanged(t *testing.T) {
	seen := Seen{SnapshotID: 7, MetadataLocation: "s3://b/t/metadata/00003-a.metadata.json", SettingsHash: "h1"}
	at := now.Add(-time.Hour)
	last := &Evaluation{RunID: 12, At: at, Seen: seen}
	with := func(f func(*Evaluation)) *Evaluation { e := *last; f(&e); return &e }
	cur := func(f func(*Seen)) Seen { s := seen; f(&s); return s }
	for _, c := range []struct {
		name string
		last *Evaluation
		cur  Seen
		back time.Duration
		want string
	}{
		{"same table and settings", last, seen, 24 * time.Hour, RuleUnchanged},
		{"no earlier evaluation", nil, seen, 24 * time.Hour, RuleFirst},
		{"a writer committed", last, cur(func(s *Seen) { s.SnapshotID = 8; s.MetadataLocation = "s3://b/t/metadata/00004-b.metadata.json" }), 0, RuleSnapshotChanged},
		{"an empty table got its first snapshot", with(func(e *Evaluation) { e.Seen.SnapshotID = -1 }), seen, 0, RuleSnapshotChanged},
		{"a property changed, same snapshot", last, cur(func(s *Seen) { s.MetadataLocation = "s3://b/t/metadata/00004-b.metadata.json" }), 0, RuleMetadataChanged},
		{"no metadata location on one side", with(func(e *Evaluation) { e.Seen.MetadataLocation = "" }), cur(func(s *Seen) { s.MetadataLocation = "x" }), 0, RuleUnchanged},
		{"settings changed", last, cur(func(s *Seen) { s.SettingsHash = "h2" }), 0, RuleSettingsChanged},
		{"decision held until now", with(func(e *Evaluation) { e.ValidUntil = now }), seen, 0, RuleUnchanged},
		{"decision due by the clock", with(func(e *Evaluation) { e.ValidUntil = now.Add(-time.Millisecond) }), seen, 0, RuleClock},
		{"backstop reached", last, seen, time.Hour, RuleBackstop},
		{"backstop not reached", last, seen, time.Hour + time.Second, RuleUnchanged},
		{"no backstop", with(func(e *Evaluation) { e.At = now.Add(-1000 * time.Hour) }), seen, 0, RuleUnchanged},
	} {
		t.Run(c.name, func(t *testing.T) {
			v := Unchanged(c.last, c.cur, now, c.back)
			if v.Rule != c.want || v.Skip != (c.want == RuleUnchanged) || v.Reason == "" {
				t.Fatalf("verdict %+v, want rule %q", v, c.want)
			}
			if c.last != nil && v.SinceRun != 12 {
				t.Fatalf("verdict names run %d, want 12", v.SinceRun)
			}
		})
	}
}

func TestSettingsHash(t *testing.T) {
	a, err := SettingsHash(map[string]int{"a": 1, "b": 2}, 3)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := SettingsHash(map[string]int{"b": 2, "a": 1}, 3)
	c, _ := SettingsHash(map[string]int{"a": 1, "b": 2}, 4)
	if a != b || a == c || a == "" {
		t.Fatalf("hashes %q %q %q: equal settings must hash equal, others not", a, b, c)
	}
}

func TestCompactionValidUntil(t *testing.T) {
	f := func(ageMin int) File { return File{AddedAt: now.Add(-time.Duration(ageMin) * time.Minute)} }
	for _, c := range []struct {
		name   string
		files  []File
		minAge time.Duration
		want   time.Time
	}{
		{"no minimum age", []File{f(1)}, 0, time.Time{}},
		{"every file old enough", []File{f(60), f(30)}, 30 * time.Minute, time.Time{}},
		{"the youngest waits longest, the oldest young one bounds", []File{f(5), f(20), f(90)}, 30 * time.Minute, now.Add(10*time.Minute - time.Nanosecond)},
		{"ages unknown", []File{{}}, 30 * time.Minute, time.Time{}},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := CompactionValidUntil(c.files, c.minAge, now); !got.Equal(c.want) {
				t.Fatalf("valid until %v, want %v", got, c.want)
			}
		})
	}
}

// SnapshotsValidUntil bounds the instants at which Snapshots decides as
// it did at now: at every instant up to it the decision is the same.
// Where the bound is tight (a snapshot ages out), the next millisecond
// changes it.
func TestSnapshotsValidUntil(t *testing.T) {
	decide := func(t *testing.T, h history, s SnapshotSettings, at time.Time) []int64 {
		t.Helper()
		d, err := Snapshots(h.build(t), s, at)
		if err != nil {
			t.Fatal(err)
		}
		ids := expiredIDs(d)
		for _, r := range d.RemoveRefs {
			ids = append(ids, -int64(len(r.Name))) // refs removed count too
		}
		return ids
	}

	// Tight: the 2 h old snapshot ages past 24 h in 22 h.
	h := linear(30, 2, 1, 0)
	s := snapSettings(1, 24)
	until := SnapshotsValidUntil(h.build(t), s, now)
	if want := now.Add(22 * time.Hour); until.Before(want) || until.After(want.Add(time.Millisecond)) {
		t.Fatalf("valid until %v, want %v", until, want)
	}
	if before, after := decide(t, h, s, until), decide(t, h, s, until.Add(time.Millisecond)); slices.Equal(before, after) {
		t.Fatalf("the decision at the bound %v equals the one a millisecond after %v: the bound is not tight", before, after)
	}
	// Nothing ahead: every snapshot is past every age.
	if u := SnapshotsValidUntil(linear(300, 200).build(t), snapSettings(5, 24), now); !u.IsZero() {
		t.Fatalf("valid until %v, want zero: no age lies ahead", u)
	}

	// Random histories with branches, tags and ref ages: the decision
	// holds at every sampled instant up to the bound.
	rng := rand.New(rand.NewPCG(3, 4))
	for i := range 200 {
		h := linear(func() []float64 {
			ages := make([]float64, 2+rng.IntN(6))
			for j := range ages {
				ages[len(ages)-1-j] = float64(j) * rng.Float64() * 40
			}
			return ages
		}()...)
		if rng.IntN(2) == 0 {
			h.refs["b"] = href{id: 1 + rng.Int64N(int64(len(h.snaps))), maxAgeMs: ptr(int64(1+rng.IntN(48)) * time.Hour.Milliseconds()),
				maxRefMs: ptr(int64(1+rng.IntN(96)) * time.Hour.Milliseconds())}
		}
		if rng.IntN(3) == 0 {
			h.refs["tag"] = href{id: 1, tag: true, maxRefMs: ptr(int64(1+rng.IntN(200)) * time.Hour.Milliseconds())}
		}
		if rng.IntN(3) == 0 {
			h.props[PropMaxSnapshotAgeMs] = "90000000" // 25 h
		}
		s := snapSettings(1+rng.IntN(3), 1+rng.IntN(48))
		want := decide(t, h, s, now)
		until := SnapshotsValidUntil(h.build(t), s, now)
		end := until
		if end.IsZero() {
			end = now.Add(1000 * time.Hour)
		}
		for _, at := range []time.Time{now, end, now.Add(time.Duration(rng.Int64N(int64(end.Sub(now)) + 1)))} {
			if got := decide(t, h, s, at); !slices.Equal(got, want) {
				t.Fatalf("history %d: decision at %v is %v, at now %v, yet valid until %v", i, at, got, want, until)
			}
		}
	}
}
