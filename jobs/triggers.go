package jobs

import (
	"context"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/icekeeper/icekeeper/internal/events"
	"github.com/icekeeper/icekeeper/internal/state"
	"github.com/icekeeper/icekeeper/maintenance"
)

// Freshness scheduling. A table with a freshness target is not left to
// its type's cron fire: a check (Runner.Need, one metadata read) finds
// its oldest work not taken, and queues the run for half the target after
// that work appeared, so that the commits of that half are taken by one
// run and a run that waits for a budget, a lock or a retry still has the
// other half. Checks come from events (Notify: an object written under
// the table's location, a catalog change), debounced per table, and from
// polls that back them up (Backstop). A queued run goes through the
// engine like any other: leases, budgets and locks hold for it.

// Defaults of the freshness scheduling.
const (
	// DefaultDebounce is how long after a table's first event its check
	// waits, so that the several objects of one commit (data files,
	// manifests, a manifest list, a metadata file) cost one check.
	DefaultDebounce = 5 * time.Second
)

// freshState is the Scheduler's freshness scheduling state.
type freshState struct {
	mu sync.Mutex
	// notified holds the tables with events not yet checked, by the
	// time of the first.
	notified map[state.TableKey]time.Time
	// queued holds, per table, until when a run it was queued for has
	// not started: a check before then would queue nothing new.
	queued map[state.TableKey]time.Time
	// checking holds the tables whose check runs now.
	checking map[state.TableKey]bool
}

// Notify queues a check of each table, debounced: a table with a check
// pending takes no second one. Events call it, and so should the end of
// every run of a freshness type (Runner.Observe): a run changes what
// waits, and the writes it did not take need their own deadline.
func (s *Scheduler) Notify(keys []state.TableKey) {
	now := s.Now()
	s.fresh.mu.Lock()
	defer s.fresh.mu.Unlock()
	if s.fresh.notified == nil {
		s.fresh.notified = map[state.TableKey]time.Time{}
	}
	for _, k := range keys {
		if _, ok := s.fresh.notified[k]; !ok {
			s.fresh.notified[k] = now
		}
	}
}

// backstop is how long a table with target may go without a check.
func (s *Scheduler) backstop(target time.Duration) time.Duration {
	if s.Backstop > 0 {
		return s.Backstop
	}
	return max(target/4, time.Second)
}

// dueChecks are the tables to check at now: those whose first event is a
// debounce old, and those with a freshness target whose last check is a
// backstop old (or that were never checked, while FreshTypes are set).
func (s *Scheduler) dueChecks(now time.Time) []Target {
	byKey := map[state.TableKey]Target{}
	for _, t := range s.Tables.Tables() {
		byKey[t.Key()] = t
	}
	s.fresh.mu.Lock()
	defer s.fresh.mu.Unlock()
	var out []Target
	// take takes k for a check, unless one runs or, for an event, a
	// queued run has not started yet: that run takes what the check
	// would find, and the check waits for it. The backstop does not wait
	// for the run: what placed it (the table's target, the table under
	// the name) is looked at again once a backstop, so that a target
	// lowered since brings the run forward (Engine.EnqueueMany) rather
	// than waiting for the old target's deadline.
	take := func(k state.TableKey, backstop bool) (waits bool) {
		t, ok := byKey[k]
		if !ok {
			return false
		}
		if until, queued := s.fresh.queued[k]; s.fresh.checking[k] || queued && now.Before(until) && !backstop {
			return true
		}
		delete(byKey, k)
		out = append(out, t)
		return false
	}
	debounce := s.Debounce
	if debounce <= 0 {
		debounce = DefaultDebounce
	}
	for k, first := range s.fresh.notified {
		if now.Sub(first) >= debounce && !take(k, false) {
			delete(s.fresh.notified, k)
		}
	}
	if s.Freshness == nil {
		return out
	}
	for _, k := range s.Freshness.stale(slices.Collect(maps.Keys(byKey)), s.FreshTypes, now, s.backstop) {
		if !take(k, true) {
			delete(s.fresh.notified, k) // the check covers its events
		}
	}
	return out
}

// checkFresh checks the due tables, PollParallelism at a time, without
// waiting for them: a check that takes long holds back only its table.
func (s *Scheduler) checkFresh(ctx context.Context) {
	if len(s.FreshTypes) == 0 {
		return
	}
	due := s.dueChecks(s.Now())
	if len(due) == 0 {
		return
	}
	s.fresh.mu.Lock()
	if s.fresh.checking == nil {
		s.fresh.checking = map[state.TableKey]bool{}
	}
	for _, t := range due {
		s.fresh.checking[t.Key()] = true
	}
	s.fresh.mu.Unlock()
	sem := make(chan struct{}, s.PollParallelism)
	go func() {
		var wg sync.WaitGroup
		for _, t := range due {
			sem <- struct{}{}
			wg.Go(func() {
				defer func() { <-sem }()
				s.Check(ctx, t, "freshness")
				s.fresh.mu.Lock()
				delete(s.fresh.checking, t.Key())
				s.fresh.mu.Unlock()
			})
		}
		wg.Wait()
	}()
}

// Check looks at t's freshness types now and queues each whose oldest
// work not taken has a deadline: at half the target after that work
// appeared, or at once when that is past. A type the table sets no target
// for, one whose run would only skip, and one backed off are left to
// their schedule. It reports what it queued.
func (s *Scheduler) Check(ctx context.Context, t Target, trigger string) []maintenance.JobType {
	now := s.Now()
	var queued []maintenance.JobType
	for _, typ := range s.FreshTypes {
		if s.Skip != nil && s.Skip(t, typ) {
			continue
		}
		n, err := s.Needs(ctx, t, typ, now)
		if err != nil {
			s.Logger.Debug("freshness check failed; the schedule's poll reports it", "table", t.Key().String(), "job", typ, "err", err)
			continue
		}
		if n.Skip || n.Target <= 0 || n.Due.IsZero() {
			continue
		}
		at := n.Due.Add(-n.Target / 2)
		if at.Before(now) {
			at = now
		}
		added, err := s.Queue.EnqueueMany(ctx, []state.TableKey{t.Key()}, typ, trigger, func(state.TableKey) Placement { return Placement{At: at, Pending: pendingOf(n)} })
		if err != nil {
			s.Logger.Warn("freshness run not queued", "table", t.Key().String(), "job", typ, "err", err)
			continue
		}
		s.fresh.mu.Lock()
		if s.fresh.queued == nil {
			s.fresh.queued = map[state.TableKey]time.Time{}
		}
		if until, ok := s.fresh.queued[t.Key()]; !ok || at.Before(until) || now.After(until) {
			s.fresh.queued[t.Key()] = at
		}
		s.fresh.mu.Unlock()
		if added == 1 {
			queued = append(queued, typ)
			s.Logger.Debug("queued for freshness", "table", t.Key().String(), "job", typ, "at", at, "trigger", trigger)
		}
	}
	s.Logger.Debug("freshness checked", "table", t.Key().String(), "trigger", trigger, "queued", queued)
	return queued
}

// Route maps events to the tables they concern: an object under a
// table's location (as the table's last check loaded it) names that
// table, a catalog event names its table by identifier (and the bucket by
// its warehouse, where it says). A removal or a drop brings no work. An
// event that matches no table, or whose
// object key holds a segment that storage or a client could resolve
// into another path ("", ".", ".."), is ignored: a check is cheap, but
// one table's events must not stand for another's.
func (s *Scheduler) Route(evs []events.Event) (tables []state.TableKey, ignored int) {
	var locs map[state.TableKey]string
	if s.Freshness != nil {
		locs = s.Freshness.Locations()
	}
	seen := map[state.TableKey]bool{}
	for _, ev := range evs {
		ks := s.route(ev, locs)
		if len(ks) == 0 {
			ignored++
		}
		for _, k := range ks {
			if !seen[k] {
				seen[k] = true
				tables = append(tables, k)
			}
		}
	}
	return tables, ignored
}

// route is the tables ev concerns. Two buckets holding the table an
// identifier names, with no warehouse to tell them apart, are both
// checked: that costs a read, never a wrong run.
func (s *Scheduler) route(ev events.Event, locs map[state.TableKey]string) []state.TableKey {
	if ev.Kind == events.KindRemoved {
		return nil // nothing new to maintain
	}
	// A drop is checked too: the check finds the table gone, and the
	// registry records the drop then (Runner.Need).
	if ev.Name != "" {
		ns := strings.Join(ev.Namespace, ".")
		var found []state.TableKey
		for _, t := range s.Tables.Tables() {
			if t.Table.Name != ev.Name || t.Table.NamespaceString() != ns {
				continue
			}
			if w := ev.Warehouse; w != "" && w != t.Bucket.Name() && w != t.Bucket.Properties()["warehouse"] {
				continue
			}
			found = append(found, t.Key())
		}
		if len(found) > 0 {
			return found
		}
	}
	path, ok := uriPath(ev.Location)
	if !ok || !cleanPath(path) {
		return nil
	}
	var best state.TableKey
	bestLen := 0
	for k, tl := range locs {
		tp, ok := uriPath(strings.TrimRight(tl, "/"))
		// Schemes differ between writers (s3, s3a) where the object
		// store is one: the bucket and key decide.
		if ok && strings.HasPrefix(path, tp+"/") && len(tp) > bestLen {
			best, bestLen = k, len(tp)
		}
	}
	if bestLen == 0 {
		return nil
	}
	return []state.TableKey{best}
}

// uriPath is a URI without its scheme: "bucket/key" of s3://bucket/key,
// "/dir/file" of file:///dir/file.
func uriPath(uri string) (string, bool) {
	_, path, ok := strings.Cut(uri, "://")
	if strings.HasPrefix(path, "/") {
		path = path[1:] // file:///abs: the root is no segment
	}
	return path, ok
}

// cleanPath reports whether path ("bucket/key") has no empty, "." or ".."
// segment.
func cleanPath(path string) bool {
	for _, seg := range strings.Split(path, "/") {
		if seg == "" || seg == "." || seg == ".." {
			return false
		}
	}
	return true
}
