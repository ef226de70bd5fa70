package jobs

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/icekeeper/icekeeper/internal/state"
	"github.com/icekeeper/icekeeper/planner"
)

// DaemonScope names the daemon-wide budget in metrics and the API.
const DaemonScope = "daemon"

// Limits is one scope's rewrite budget; zero values leave a bound off.
type Limits struct {
	// MaxConcurrentRewrites bounds the compaction runs rewriting at once
	// in the scope, across replicas.
	MaxConcurrentRewrites int
	// RewriteBytesPerHour bounds the input bytes rewritten in the scope
	// over a sliding hour.
	RewriteBytesPerHour int64
	// TableSharePercent is the share of the smaller bytes limit one run
	// may take (planner.RewriteAllowance).
	TableSharePercent int
}

func (l Limits) bounded() bool { return l.MaxConcurrentRewrites > 0 || l.RewriteBytesPerHour > 0 }

// BucketLimits is a bucket's budget and the name it is shown by.
type BucketLimits struct {
	Name string
	Limits
}

// BudgetStore is what rewrite budgets keep in the state store: the ledger
// of bytes rewritten, and the leases that are the concurrency slots.
type BudgetStore interface {
	state.Ledger
	state.Leases
}

// Budgets are the daemon's rewrite budgets, shared by every replica
// through the state store: concurrency slots are leases named
// rewrite:BUCKET:i and rewrite:*:i, and bytes are summed from the ledger
// over the last hour.
type Budgets struct {
	Store  BudgetStore
	Daemon Limits
	// Buckets are the buckets' budgets by bucket ARN.
	Buckets map[string]BucketLimits
	// Observe, when set, is given the scopes' use after each Refresh
	// (Metrics.Budget).
	Observe func([]BudgetUse)
}

// slotLeases are the lease names of a scope's concurrency slots ("*":
// the daemon's).
func slotLeases(scope string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("rewrite:%s:%d", scope, i)
	}
	return out
}

// AcquireSlots takes a concurrency slot of the bucket and one of the
// daemon, where they are bounded, for holder until now+ttl. It returns
// the leases taken, to renew and release, and false (holding nothing)
// when a scope has no free slot.
func (b *Budgets) AcquireSlots(ctx context.Context, bucketARN, holder string, now time.Time, ttl time.Duration) ([]string, bool, error) {
	var taken []string
	scopes := []struct {
		name string
		n    int
	}{{bucketARN, b.Buckets[bucketARN].MaxConcurrentRewrites}, {"*", b.Daemon.MaxConcurrentRewrites}}
	for _, sc := range scopes {
		if sc.n <= 0 {
			continue
		}
		got := false
		for _, lease := range slotLeases(sc.name, sc.n) {
			ok, err := b.Store.AcquireLease(ctx, lease, holder, now, ttl)
			if err != nil {
				b.ReleaseSlots(ctx, taken, holder)
				return nil, false, fmt.Errorf("take a rewrite slot of %s: %w", sc.name, err)
			}
			if ok {
				taken, got = append(taken, lease), true
				break
			}
		}
		if !got {
			b.ReleaseSlots(ctx, taken, holder)
			return nil, false, nil
		}
	}
	return taken, true, nil
}

// ReleaseSlots gives up holder's slots; it runs on every path of a job,
// cancelled ones included, so it does not take the job's cancellation.
func (b *Budgets) ReleaseSlots(ctx context.Context, leases []string, holder string) {
	for _, l := range leases {
		b.Store.ReleaseLease(context.WithoutCancel(ctx), l, holder)
	}
}

// budget is the bytes budget that applies to a table of the bucket.
func (b *Budgets) budget(bucketARN string) planner.RewriteBudget {
	bl := b.Buckets[bucketARN]
	share := bl.TableSharePercent
	if bl.RewriteBytesPerHour <= 0 || (b.Daemon.RewriteBytesPerHour > 0 && b.Daemon.RewriteBytesPerHour < bl.RewriteBytesPerHour) {
		// The daemon's limit is the smaller one, so its share applies.
		share = b.Daemon.TableSharePercent
	}
	return planner.RewriteBudget{BucketBytesPerHour: bl.RewriteBytesPerHour, DaemonBytesPerHour: b.Daemon.RewriteBytesPerHour, SharePercent: share}
}

// Allowance is how many input bytes a run on a table of the bucket may
// rewrite at now (Options.RewriteBytes): nil when no bytes limit applies.
func (b *Budgets) Allowance(ctx context.Context, bucketARN string, now time.Time) (*int64, error) {
	budget := b.budget(bucketARN)
	if !budget.Bounded() {
		return nil, nil
	}
	used, all, err := b.lastHour(ctx, now)
	if err != nil {
		return nil, err
	}
	allow, _ := planner.RewriteAllowance(budget, used[bucketARN], all)
	return &allow, nil
}

// lastHour is what the ledger holds of the hour before now: the bytes
// rewritten by bucket ARN, and in all.
func (b *Budgets) lastHour(ctx context.Context, now time.Time) (byBucket map[string]int64, all int64, err error) {
	byBucket, err = b.Store.RewrittenSince(ctx, now.Add(-time.Hour))
	for _, n := range byBucket {
		all += n
	}
	return byBucket, all, err
}

// Record adds a finished run's rewritten bytes to the ledger.
func (b *Budgets) Record(ctx context.Context, bucketARN string, at time.Time, out Outcome) error {
	if out.Rewritten <= 0 {
		return nil
	}
	return b.Store.RecordRewrite(context.WithoutCancel(ctx), bucketARN, at, out.Rewritten)
}

// BudgetUse is one scope's budget and its use.
type BudgetUse struct {
	// Scope is the bucket's name, or DaemonScope.
	Scope string `json:"scope"`
	// BytesPerHour is the scope's hourly bytes limit (0: none), Used
	// the bytes rewritten in it over the last hour.
	BytesPerHour int64 `json:"rewriteBytesPerHour"`
	Used         int64 `json:"rewriteBytesUsed"`
	// MaxConcurrent is the scope's bound on concurrent rewrites (0:
	// none), Running the slots held now.
	MaxConcurrent int `json:"maxConcurrentRewrites"`
	Running       int `json:"rewritesRunning"`
	// TableSharePercent is the share of the hourly bytes one run may take.
	TableSharePercent int `json:"tableSharePercent,omitempty"`
}

// Use is every bounded scope's budget and use at now, the daemon first,
// then the buckets by name.
func (b *Budgets) Use(ctx context.Context, now time.Time) ([]BudgetUse, error) {
	used, all, err := b.lastHour(ctx, now)
	if err != nil {
		return nil, err
	}
	running := func(scope string, n int) (int, error) {
		held := 0
		for _, l := range slotLeases(scope, n) {
			h, err := b.Store.LeaseHolder(ctx, l, now)
			if err != nil {
				return 0, err
			}
			if h != "" {
				held++
			}
		}
		return held, nil
	}
	use := func(name, slots string, l Limits, bytes int64) (BudgetUse, error) {
		n, err := running(slots, l.MaxConcurrentRewrites)
		return BudgetUse{Scope: name, BytesPerHour: l.RewriteBytesPerHour, Used: bytes, MaxConcurrent: l.MaxConcurrentRewrites,
			Running: n, TableSharePercent: l.TableSharePercent}, err
	}
	d, err := use(DaemonScope, "*", b.Daemon, all)
	if err != nil {
		return nil, err
	}
	out := []BudgetUse{d}
	var buckets []BudgetUse
	for arn, bl := range b.Buckets {
		if !bl.bounded() {
			continue
		}
		u, err := use(bl.Name, arn, bl.Limits, used[arn])
		if err != nil {
			return nil, err
		}
		buckets = append(buckets, u)
	}
	slices.SortFunc(buckets, func(x, y BudgetUse) int { return cmp.Compare(x.Scope, y.Scope) })
	return append(out, buckets...), nil
}

// Refresh hands the scopes' use at now to Observe.
func (b *Budgets) Refresh(ctx context.Context, now time.Time) error {
	if b.Observe == nil {
		return nil
	}
	use, err := b.Use(ctx, now)
	if err != nil {
		return fmt.Errorf("read rewrite budgets: %w", err)
	}
	b.Observe(use)
	return nil
}
