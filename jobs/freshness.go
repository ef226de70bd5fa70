package jobs

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/apache/iceberg-go/table"

	"github.com/icekeeper/icekeeper/internal/commit"
	"github.com/icekeeper/icekeeper/internal/state"
	"github.com/icekeeper/icekeeper/maintenance"
	"github.com/icekeeper/icekeeper/planner"
	"github.com/icekeeper/icekeeper/tables"
)

// Lag is how far one job type's maintenance of a table is behind: the
// oldest work it has not taken, and why that work waits.
type Lag struct {
	// Target is the table's freshness target (0: none).
	Target time.Duration
	// Oldest is the oldest work not taken (nil: none waits).
	Oldest *planner.Oldest
	// Waits says why the oldest work waits, when something other than
	// its turn holds it: "budget: …", "lock: …", "another maintainer: …",
	// "failure: …", "backoff: …". "" while it waits only for its run.
	Waits string
	// Checked is when Need computed it.
	Checked time.Time
}

// Seconds is the lag at now: the age of the oldest work (0: none).
func (l Lag) Seconds(now time.Time) float64 {
	if l.Oldest == nil {
		return 0
	}
	return max(now.Sub(l.Oldest.Since), 0).Seconds()
}

// Late reports whether the oldest work at now is older than the target.
func (l Lag) Late(now time.Time) bool {
	return l.Target > 0 && l.Oldest != nil && now.Sub(l.Oldest.Since) > l.Target
}

// LagView is a Lag as the API and the dashboard show it at one instant.
type LagView struct {
	TargetSeconds float64    `json:"targetSeconds,omitempty"`
	LagSeconds    float64    `json:"lagSeconds"`
	Late          bool       `json:"late,omitempty"`
	Oldest        string     `json:"oldest,omitempty"`
	Since         *time.Time `json:"since,omitempty"`
	Waits         string     `json:"waits,omitempty"`
	Checked       time.Time  `json:"checked"`
}

// View is l at now.
func (l Lag) View(now time.Time) LagView {
	v := LagView{TargetSeconds: l.Target.Seconds(), LagSeconds: l.Seconds(now), Late: l.Late(now), Waits: l.Waits, Checked: l.Checked.UTC()}
	if l.Oldest != nil {
		since := l.Oldest.Since.UTC()
		v.Oldest, v.Since = l.Oldest.What, &since
	}
	return v
}

// Freshness is the latest lag of every table and job type Need looked
// at, in this process, with each table's location and target: what the
// metrics, the API and the event route read. Every replica polls, so
// each keeps its own.
type Freshness struct {
	mu     sync.Mutex
	tables map[state.TableKey]*freshTable
}

type freshTable struct {
	location string
	lags     map[maintenance.JobType]Lag
}

// Set records t's lag of typ, and the table's location.
func (f *Freshness) Set(k state.TableKey, location string, typ maintenance.JobType, l Lag) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.tables == nil {
		f.tables = map[state.TableKey]*freshTable{}
	}
	t := f.tables[k]
	if t == nil {
		t = &freshTable{lags: map[maintenance.JobType]Lag{}}
		f.tables[k] = t
	}
	if location != "" {
		t.location = location
	}
	t.lags[typ] = l
}

// Lags returns t's lags by job type (nil: never looked at).
func (f *Freshness) Lags(k state.TableKey) map[maintenance.JobType]Lag {
	f.mu.Lock()
	defer f.mu.Unlock()
	t := f.tables[k]
	if t == nil {
		return nil
	}
	out := make(map[maintenance.JobType]Lag, len(t.lags))
	for typ, l := range t.lags {
		out[typ] = l
	}
	return out
}

// Lag returns t's lag of typ, if one was recorded: one lookup, no copy,
// for the API's request path.
func (f *Freshness) Lag(k state.TableKey, typ maintenance.JobType) (Lag, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if t := f.tables[k]; t != nil {
		l, ok := t.lags[typ]
		return l, ok
	}
	return Lag{}, false
}

// TableLag is one table's lag of one job type.
type TableLag struct {
	Table state.TableKey
	Type  maintenance.JobType
	Lag
}

// All returns every recorded lag, by table then type.
func (f *Freshness) All() []TableLag {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []TableLag
	for k, t := range f.tables {
		for typ, l := range t.lags {
			out = append(out, TableLag{Table: k, Type: typ, Lag: l})
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if a, b := out[i].Table.String(), out[j].Table.String(); a != b {
			return a < b
		}
		return out[i].Type < out[j].Type
	})
	return out
}

// Locations returns every known table location.
func (f *Freshness) Locations() map[state.TableKey]string {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make(map[state.TableKey]string, len(f.tables))
	for k, t := range f.tables {
		if t.location != "" {
			out[k] = t.location
		}
	}
	return out
}

// stale returns those of keys never looked at, and those whose lag of
// one of types has a target and was checked longer ago than every(target):
// what a backstop poll checks. One pass under the lock: it runs every
// second over every table.
func (f *Freshness) stale(keys []state.TableKey, types []maintenance.JobType, now time.Time, every func(time.Duration) time.Duration) []state.TableKey {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []state.TableKey
	for _, k := range keys {
		t := f.tables[k]
		if t == nil {
			out = append(out, k)
			continue
		}
		for _, typ := range types {
			if l, ok := t.lags[typ]; ok && l.Target > 0 && now.Sub(l.Checked) >= every(l.Target) {
				out = append(out, k)
				break
			}
		}
	}
	return out
}

// Forget drops tables that are no longer maintained.
func (f *Freshness) Forget(keep func(state.TableKey) bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for k := range f.tables {
		if !keep(k) {
			delete(f.tables, k)
		}
	}
}

// Lags records, from a table another reader loaded (the health refresh
// of /metrics: Metrics.Loaded), the lag of each job type a freshness
// target applies to, for a table without a target: a table that sets
// none has its lag from the daemon's first refresh on, not only from the
// type's first fire, at no read of its metadata of its own. A table with
// a target is left to the scheduler's checks, which queue its run when
// due; a lag recorded here would count as such a check and postpone it.
func (r *Runner) Lags(ctx context.Context, t Target, tbl *table.Table, settings maintenance.Settings, now time.Time) {
	if r.Freshness == nil {
		return
	}
	target, err := planner.FreshnessTarget(tbl.Metadata().Properties(), time.Duration(settings.Knobs.FreshnessTargetSeconds)*time.Second)
	if err != nil || target > 0 {
		return
	}
	// The name may hold another table than the one whose runs the lag
	// reads: Need sorts that out at the next poll.
	if ch, err := r.Tables.Observe(ctx, t.Bucket, t.Table, tbl); err != nil || ch != tables.Known && ch != tables.New {
		return
	}
	for _, typ := range r.FreshTypes() {
		if settings.For(typ).Status == maintenance.Disabled {
			continue // never polled either
		}
		var need planner.Need
		r.freshness(ctx, t, r.Jobs[typ], tbl, settings, now, &need)
	}
}

// historyLen is how many recent runs of a type Need reads for its
// freshness and back-off.
const historyLen = 20

// recent is what a type's recent runs on a table say.
type recent struct {
	// base is the table as the latest successful run that left nothing
	// for its budget found it (nil: none of the runs read).
	base *planner.Base
	// conflicts counts the latest runs in a row that lost every commit
	// attempt to concurrent ones; lastConflict is when the newest ended.
	conflicts    int
	lastConflict time.Time
	// waits is why work waits, by the latest run.
	waits string
}

// readRecent reads runs, newest first.
func readRecent(job Job, runs []state.Run) recent {
	var r recent
	counting := true
	for i, run := range runs {
		if counting && run.Status == state.Failed && strings.HasPrefix(run.FailureMessage, commit.MsgStaleMetadata) {
			if r.conflicts == 0 {
				r.lastConflict = run.Finished
			}
			r.conflicts++
		} else {
			counting = false
		}
		if i == 0 {
			switch run.Status {
			case state.Failed:
				r.waits = "failure: " + run.FailureMessage
			case state.Skipped:
				r.waits = run.FailureMessage
			case state.Successful:
				if deferred, _ := job.pending(run.Metrics); deferred > 0 {
					r.waits = fmt.Sprintf("budget: the last run left %d bytes for the rewrite budget", deferred)
				}
			}
		}
		if r.base == nil && run.Status == state.Successful {
			if deferred, _ := job.pending(run.Metrics); deferred == 0 {
				var fig struct {
					Base *planner.Base `json:"base"`
				}
				if json.Unmarshal(run.Metrics, &fig) == nil && fig.Base != nil {
					r.base = fig.Base
				}
			}
		}
	}
	return r
}

// Back-off of a table whose commits keep losing to concurrent ones: after
// BackoffAfter such runs in a row, the next waits BackoffFirst, doubled
// for every further one up to BackoffMax, so that a table a writer or
// another maintainer keeps busy is not retried in a tight loop.
const (
	BackoffAfter = 2
	BackoffFirst = 5 * time.Minute
	BackoffMax   = 6 * time.Hour
)

// backoffUntil is when a table with r's history may run again (zero: at
// once).
func (r recent) backoffUntil() time.Time {
	if r.conflicts < BackoffAfter {
		return time.Time{}
	}
	wait := BackoffFirst
	for i := BackoffAfter; i < r.conflicts && wait < BackoffMax; i++ {
		wait *= 2
	}
	return r.lastConflict.Add(min(wait, BackoffMax))
}

// NeedBackoff is the rule of a table left out because its commits kept
// losing to concurrent ones.
const NeedBackoff = "backoff: commits lost to concurrent ones"
