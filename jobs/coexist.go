package jobs

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/apache/iceberg-go/table"

	"github.com/icekeeper/icekeeper/internal/flinklock"
	"github.com/icekeeper/icekeeper/internal/state"
	"github.com/icekeeper/icekeeper/planner"
)

// ErrOtherMaintainer marks a run that did nothing because another
// maintainer holds the table: Flink's maintenance lock is held, or another
// engine rewrote the table within the cool-down. The run is Skipped with
// the reason.
var ErrOtherMaintainer = errors.New("another maintainer")

// Coexist is how runs share tables with other maintainers (Flink's
// in-job maintenance, Spark procedures, a managed service). Nil fields
// leave a rule off.
type Coexist struct {
	// StepAside is how long, after another maintainer rewrote a table
	// (planner.OtherMaintainer), the rewriting job types (those under the
	// rewrite budgets: compaction) leave it alone; 0: they never do.
	StepAside func(t Target) time.Duration
	// Lock is Flink's maintenance lock of a table's bucket; nil: the
	// bucket has none configured.
	Lock func(t Target) *FlinkLock
}

// stepAside returns the error of a rewriting run that must leave tbl to
// the maintainer that rewrote it within the cool-down, or nil.
func (c *Coexist) stepAside(t Target, tbl *table.Table, now time.Time) error {
	if c == nil || c.StepAside == nil {
		return nil
	}
	cool := c.StepAside(t)
	if cool <= 0 {
		return nil
	}
	m, ok := planner.OtherMaintainer(tbl.Metadata(), now.Add(-cool))
	if !ok {
		return nil
	}
	return fmt.Errorf("%w: %s; icekeeper steps aside until %s (coexistence.stepAside %v)", ErrOtherMaintainer,
		m, m.At.Add(cool).UTC().Format(time.RFC3339), cool)
}

// FlinkLock is Flink's maintenance lock (JdbcLockFactory) on one lock
// database: a run holds the lock of its table while it works, as a Flink
// job's maintenance tasks do, so that neither rewrites under the other.
//
// A lock row names only a random instance ID; nothing in it tells a dead
// holder from a slow one. icekeeper keeps its own proof in its state
// store, as two leases per instance it inserts: one that says the
// instance is icekeeper's (kept a week) and one that says it is alive
// (renewed every third of TTL while the run works). A row whose instance
// is icekeeper's and no longer alive was left by a process that died:
// it is removed through Flink's recovery lock. A row of any other
// instance is Flink's, or another tool's, and is honoured until its owner
// removes it.
type FlinkLock struct {
	Locks *flinklock.Locks
	// ID is the lock ID of a table, the one the table's Flink job uses.
	ID func(t Target) string
	// Leases keep icekeeper's proof of its own instances.
	Leases state.Leases
	// TTL is how long an instance lives without renewal (default 1m).
	TTL    time.Duration
	Logger *slog.Logger
	// Now is the leases' clock (default time.Now).
	Now func() time.Time
}

// ownedFor is how long the proof that an instance is icekeeper's lives:
// long enough for any crashed process to be found by a later run.
const ownedFor = 7 * 24 * time.Hour

func ownedLease(instance string) string { return "flink-lock-owned:" + instance }
func aliveLease(instance string) string { return "flink-lock-alive:" + instance }

func (l *FlinkLock) now() time.Time {
	if l.Now != nil {
		return l.Now()
	}
	return time.Now()
}

func (l *FlinkLock) ttl() time.Duration {
	if l.TTL > 0 {
		return l.TTL
	}
	return time.Minute
}

// Acquire takes t's maintenance lock, and returns the func that releases
// it, which must be called on every path, and a context for the work
// under it. A lock another maintainer holds is an error wrapping
// ErrOtherMaintainer that names it; a lock left by a dead icekeeper is
// recovered first.
//
// Flink's lock remover deletes whatever row it finds when a Flink job
// starts without state, so a lock once taken can be lost: the row is
// checked at every renewal, and the context is cancelled, with the
// reason, once it no longer names this instance.
func (l *FlinkLock) Acquire(ctx context.Context, t Target) (_ context.Context, release func(), err error) {
	id := l.ID(t)
	if holder, held, err := l.Locks.Holder(ctx, flinklock.Recovery, id); err != nil {
		return nil, nil, fmt.Errorf("read Flink's recovery lock %q: %w", id, err)
	} else if held {
		return nil, nil, fmt.Errorf("%w: Flink's recovery lock %q is held by instance %s: a maintainer is recovering; icekeeper rewrites nothing until it is released", ErrOtherMaintainer, id, holder)
	}
	holder, held, err := l.Locks.Holder(ctx, flinklock.Maintenance, id)
	if err != nil {
		return nil, nil, fmt.Errorf("read Flink's maintenance lock %q: %w", id, err)
	}
	me := flinklock.NewInstanceID()
	if held {
		if err := l.recoverDead(ctx, id, holder, me); err != nil {
			return nil, nil, err
		}
	}
	now := l.now()
	// The proof comes first: a crash after it and before the row leaves
	// only leases that expire; the other way round would leave a row
	// nothing proves dead.
	if _, err := l.Leases.AcquireLease(ctx, ownedLease(me), me, now, ownedFor); err != nil {
		return nil, nil, fmt.Errorf("record Flink lock instance %s: %w", me, err)
	}
	if _, err := l.Leases.AcquireLease(ctx, aliveLease(me), me, now, l.ttl()); err != nil {
		l.forget(ctx, me)
		return nil, nil, fmt.Errorf("record Flink lock instance %s: %w", me, err)
	}
	ok, err := l.Locks.TryLock(ctx, flinklock.Maintenance, id, me)
	if err != nil || !ok {
		l.forget(ctx, me)
		if err != nil {
			return nil, nil, fmt.Errorf("take Flink's maintenance lock %q: %w", id, err)
		}
		return nil, nil, fmt.Errorf("%w: Flink's maintenance lock %q was taken by another instance a moment ago; icekeeper rewrites nothing until it is released", ErrOtherMaintainer, id)
	}
	work, lost := context.WithCancelCause(ctx)
	done := make(chan struct{})
	var beats sync.WaitGroup
	beats.Go(func() {
		tick := time.NewTicker(l.ttl() / 3)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
			}
			if _, err := l.Leases.AcquireLease(ctx, aliveLease(me), me, l.now(), l.ttl()); err != nil && l.Logger != nil {
				l.Logger.Warn("Flink lock instance not renewed", "lock", id, "instance", me, "err", err)
			}
			if holder, held, err := l.Locks.Holder(ctx, flinklock.Maintenance, id); err == nil && (!held || holder != me) {
				lost(fmt.Errorf("%w: Flink's maintenance lock %q was removed while icekeeper held it (now held by %q): the run stops",
					ErrOtherMaintainer, id, holder))
				if l.Logger != nil {
					l.Logger.Error("lost Flink's maintenance lock; stopping the run", "lock", id, "instance", me, "holder", holder)
				}
				return
			}
		}
	})
	var once sync.Once
	return work, func() {
		once.Do(func() {
			close(done)
			beats.Wait()
			lost(nil)
			ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
			defer cancel()
			// The row goes before the proof: a failure here leaves a row
			// a later run can still prove dead.
			if _, err := l.Locks.Unlock(ctx, flinklock.Maintenance, id, me); err != nil {
				if l.Logger != nil {
					l.Logger.Error("Flink's maintenance lock not released; a later run recovers it once this instance's lease lapses",
						"lock", id, "instance", me, "err", err)
				}
				return
			}
			l.forget(ctx, me)
		})
	}, nil
}

// recoverDead removes the maintenance lock row of holder when holder is
// an icekeeper instance that died, and refuses otherwise.
func (l *FlinkLock) recoverDead(ctx context.Context, id, holder, me string) error {
	now := l.now()
	owned, err := l.Leases.LeaseHolder(ctx, ownedLease(holder), now)
	if err != nil {
		return fmt.Errorf("read Flink lock instance %s: %w", holder, err)
	}
	if owned != holder {
		return fmt.Errorf("%w: Flink's maintenance lock %q is held by instance %s; icekeeper rewrites nothing on this table until it is released", ErrOtherMaintainer, id, holder)
	}
	alive, err := l.Leases.LeaseHolder(ctx, aliveLease(holder), now)
	if err != nil {
		return fmt.Errorf("read Flink lock instance %s: %w", holder, err)
	}
	if alive == holder {
		return fmt.Errorf("%w: Flink's maintenance lock %q is held by another icekeeper run (instance %s)", ErrOtherMaintainer, id, holder)
	}
	ok, err := l.Locks.Recover(ctx, id, holder, me)
	if err != nil {
		return fmt.Errorf("recover Flink's maintenance lock %q from a stopped icekeeper (instance %s): %w", id, holder, err)
	}
	if !ok {
		return fmt.Errorf("%w: Flink's recovery lock %q was taken by another instance a moment ago", ErrOtherMaintainer, id)
	}
	l.forget(ctx, holder)
	if l.Logger != nil {
		l.Logger.Warn("recovered Flink's maintenance lock left by a stopped icekeeper", "lock", id, "instance", holder)
	}
	return nil
}

// forget drops icekeeper's proof of instance.
func (l *FlinkLock) forget(ctx context.Context, instance string) {
	_ = l.Leases.ReleaseLease(ctx, aliveLease(instance), instance)
	_ = l.Leases.ReleaseLease(ctx, ownedLease(instance), instance)
}

// LockID fills a lock ID template: {catalog} (the bucket's catalog
// name), {namespace} (dot-separated levels), {table} and {bucket} (the
// bucket's name) name the table. Flink's sink locks by Table.name() —
// "catalog.namespace.table" — unless its job sets
// flink-maintenance.lock.lock-id.
func LockID(template string, t Target) string {
	return strings.NewReplacer("{catalog}", t.Bucket.CatalogName(), "{namespace}", t.Table.NamespaceString(),
		"{table}", t.Table.Name, "{bucket}", t.Bucket.Name()).Replace(template)
}
