package jobs

import (
	"slices"
	"testing"
	"time"

	"github.com/icekeeper/icekeeper/configs"
	"github.com/icekeeper/icekeeper/internal/bucket"
	"github.com/icekeeper/icekeeper/internal/state"
	"github.com/icekeeper/icekeeper/maintenance"
)

// dueChecks takes a table for a check once its first event is a debounce
// old, once its last check with a target is a backstop old (whether or
// not a run is queued for it: the backstop looks at what placed the run
// again), and when it was never checked; it leaves one whose queued run
// has not started waiting for its event (kept for after the run), and a
// table without a target to its schedule.
func TestDueChecks(t *testing.T) {
	reg := configs.Embedded(t.TempDir()).Registry()
	t.Cleanup(reg.Close)
	b, _ := reg.Bucket("local")
	names := []string{"polled", "fresh", "never", "untargeted", "evented", "early", "waiting", "overdue"}
	d := &Discovery{Registry: reg}
	d.init()
	var ids []bucket.TableID
	for _, n := range names {
		ids = append(ids, bucket.TableID{Namespace: []string{"ns"}, Name: n})
	}
	d.listed[b.ARN()] = ids
	key := func(n string) state.TableKey {
		return Target{Bucket: b, Table: bucket.TableID{Namespace: []string{"ns"}, Name: n}}.Key()
	}

	now := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	f := &Freshness{}
	lag := func(target time.Duration, checked time.Duration) Lag {
		return Lag{Target: target, Checked: now.Add(-checked)}
	}
	f.Set(key("polled"), "", maintenance.Compaction, lag(20*time.Second, 10*time.Second)) // backstop 5 s: due
	f.Set(key("fresh"), "", maintenance.Compaction, lag(20*time.Second, time.Second))     // checked a second ago
	f.Set(key("untargeted"), "", maintenance.Compaction, lag(0, time.Hour))               // no target: its schedule
	for _, n := range []string{"evented", "early", "waiting"} {
		f.Set(key(n), "", maintenance.Compaction, lag(20*time.Second, time.Second))
	}
	f.Set(key("overdue"), "", maintenance.Compaction, lag(20*time.Second, 10*time.Second)) // a backstop old, its run queued
	s := &Scheduler{Tables: d, Freshness: f, FreshTypes: []maintenance.JobType{maintenance.Compaction}, Debounce: 5 * time.Second}
	s.fresh.notified = map[state.TableKey]time.Time{
		key("evented"): now.Add(-6 * time.Second), key("early"): now.Add(-time.Second), key("waiting"): now.Add(-6 * time.Second),
		key("overdue"): now.Add(-6 * time.Second)}
	s.fresh.queued = map[state.TableKey]time.Time{key("waiting"): now.Add(10 * time.Second), key("overdue"): now.Add(10 * time.Second)}

	var got []string
	for _, tt := range s.dueChecks(now) {
		got = append(got, tt.Table.Name)
	}
	slices.Sort(got)
	if want := []string{"evented", "never", "overdue", "polled"}; !slices.Equal(got, want) {
		t.Fatalf("due %v, want %v", got, want)
	}
	if _, ok := s.fresh.notified[key("waiting")]; !ok {
		t.Error("the event of the table whose run waits was dropped; it must be checked after the run")
	}
	for _, n := range []string{"evented", "overdue"} {
		if _, ok := s.fresh.notified[key(n)]; ok {
			t.Errorf("the event of %s, taken for a check, is still pending", n)
		}
	}
	// Past the queued run's start, the kept event is checked.
	got = got[:0]
	for _, tt := range s.dueChecks(now.Add(11 * time.Second)) {
		got = append(got, tt.Table.Name)
	}
	if !slices.Contains(got, "waiting") {
		t.Errorf("after the queued run's start: due %v, want waiting among them", got)
	}
}
