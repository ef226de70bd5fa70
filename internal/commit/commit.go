// Package commit runs catalog commits that must win against concurrent
// writers: a retry loop bounded by time, configured by the table's
// commit.retry.* properties as Iceberg configures its own committers, that
// retries only true conflicts and keeps the cause of every other failure.
//
// Both jobs that commit (compaction and snapshot management) use it, so a
// conflict reads the same everywhere: ErrStaleMetadata, with S3 Tables'
// message.
package commit

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
)

// MsgStaleMetadata is S3 Tables' failure message for maintenance that lost
// every commit attempt to concurrent writers.
const MsgStaleMetadata = "Failed to commit because of out of date metadata. Maintenance will be retried at the next available opportunity."

// ErrStaleMetadata is returned when every attempt within the retry budget
// lost to a concurrent commit. Its message is MsgStaleMetadata; the last
// conflict is wrapped beside it.
var ErrStaleMetadata = errors.New(MsgStaleMetadata)

// The table properties that configure retries, as Iceberg names them.
const (
	PropNumRetries   = "commit.retry.num-retries"
	PropMinWaitMs    = "commit.retry.min-wait-ms"
	PropMaxWaitMs    = "commit.retry.max-wait-ms"
	PropTotalTimeout = "commit.retry.total-timeout-ms"
)

// Policy bounds the attempts of one commit.
type Policy struct {
	Retries int           // attempts after the first
	MinWait time.Duration // wait before the first retry; doubled per retry
	MaxWait time.Duration // cap of one wait
	Timeout time.Duration // the whole budget, first attempt included
}

// DefaultPolicy is icekeeper's policy where a table sets no commit.retry.*
// property. Iceberg's own defaults (4 retries, 100 ms doubling) are made for
// writers that rarely meet; maintenance meets a streaming writer on every
// commit, so the budget is set by time: a rebased attempt costs a metadata
// load and a few small files, and against a writer committing every 100 ms
// it wins within a handful of tries if it retries at once.
func DefaultPolicy() Policy {
	return Policy{Retries: 1000, MinWait: 10 * time.Millisecond, MaxWait: time.Second, Timeout: 5 * time.Minute}
}

// TablePolicy is PolicyFor over def, or over DefaultPolicy where def is
// nil: a job's retry knob, overridden per table.
func TablePolicy(props iceberg.Properties, def *Policy) (Policy, error) {
	p := DefaultPolicy()
	if def != nil {
		p = *def
	}
	return PolicyFor(props, p)
}

// PolicyFor reads the table's commit.retry.* properties over defaults. A
// property that is not a non-negative integer, or a minimum wait above the
// maximum, is an error naming it: a table's bad property must not silently
// turn into some other behaviour.
func PolicyFor(props iceberg.Properties, defaults Policy) (Policy, error) {
	p := defaults
	for _, f := range []struct {
		key string
		set func(int64)
	}{
		{PropNumRetries, func(v int64) { p.Retries = int(min(v, 1<<31-1)) }},
		{PropMinWaitMs, func(v int64) { p.MinWait = time.Duration(v) * time.Millisecond }},
		{PropMaxWaitMs, func(v int64) { p.MaxWait = time.Duration(v) * time.Millisecond }},
		{PropTotalTimeout, func(v int64) { p.Timeout = time.Duration(v) * time.Millisecond }},
	} {
		s, ok := props[f.key]
		if !ok {
			continue
		}
		v, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
		if err != nil || v < 0 || v > math.MaxInt64/int64(time.Millisecond) {
			return Policy{}, fmt.Errorf("table property %s=%q is not a non-negative integer in range", f.key, s)
		}
		f.set(v)
	}
	if p.MinWait > p.MaxWait {
		return Policy{}, fmt.Errorf("table properties %s (%v) exceeds %s (%v)", PropMinWaitMs, p.MinWait, PropMaxWaitMs, p.MaxWait)
	}
	return p, nil
}

// wait is the pause before retry n (1-based): MinWait doubled per retry up to
// MaxWait, as Iceberg's exponential backoff, then drawn uniformly from its
// upper half so that two committers that collided do not collide again in
// step.
func (p Policy) wait(n int) time.Duration {
	d := p.MinWait
	for i := 1; i < n && d < p.MaxWait; i++ {
		d *= 2
	}
	d = min(d, p.MaxWait)
	if d <= 0 {
		return 0
	}
	return d/2 + rand.N(d/2+1)
}

// IsConflict reports whether a catalog's commit error means the table moved
// and the commit was not applied: iceberg-go's table.ErrCommitFailed (REST
// 409, the SQL catalog's compare-and-swap), or a commit requirement that the
// catalog found violated. iceberg-go's SQL, Glue and Hive catalogs report
// the latter as plain errors beginning "requirement failed", so the text is
// what there is to go by. Any other error — a timeout, a 5xx, a storage
// failure — leaves the commit's fate unknown and is not a conflict.
func IsConflict(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, table.ErrCommitFailed) {
		return true
	}
	return strings.HasPrefix(strings.ToLower(err.Error()), "requirement failed")
}

// Stats counts what a commit loop did.
type Stats struct {
	Attempts  int `json:"attempts"`
	Conflicts int `json:"conflicts"` // attempts that lost to a concurrent commit
}

// Add accumulates other into s.
func (s *Stats) Add(other Stats) {
	s.Attempts += other.Attempts
	s.Conflicts += other.Conflicts
}

// Do calls attempt (with its 1-based number) until it returns nil, an error
// that is not a conflict (returned as it is), or the policy's budget is
// spent (ErrStaleMetadata). attempt is expected to rebuild its commit on the
// table's current state each time: Do only decides whether and when to call
// it again.
func Do(ctx context.Context, p Policy, attempt func(ctx context.Context, n int) error) (Stats, error) {
	var st Stats
	deadline := time.Now().Add(p.Timeout)
	for n := 1; ; n++ {
		st.Attempts++
		err := attempt(ctx, n)
		if err == nil || !IsConflict(err) {
			return st, err
		}
		st.Conflicts++
		if n > p.Retries {
			return st, stale(err)
		}
		w := p.wait(n)
		if time.Now().Add(w).After(deadline) {
			return st, stale(err)
		}
		t := time.NewTimer(w)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return st, ctx.Err()
		}
	}
}

func stale(last error) error { return &staleError{last: last} }

type staleError struct{ last error }

func (e *staleError) Error() string   { return MsgStaleMetadata }
func (e *staleError) Unwrap() []error { return []error{ErrStaleMetadata, e.last} }
