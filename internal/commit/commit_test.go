package commit

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
)

func TestPolicyFor(t *testing.T) {
	def := DefaultPolicy()
	p, err := PolicyFor(iceberg.Properties{PropNumRetries: "10", PropMinWaitMs: "5", PropMaxWaitMs: "50", PropTotalTimeout: "2000"}, def)
	if err != nil {
		t.Fatal(err)
	}
	if want := (Policy{Retries: 10, MinWait: 5 * time.Millisecond, MaxWait: 50 * time.Millisecond, Timeout: 2 * time.Second}); p != want {
		t.Fatalf("%+v, want %+v", p, want)
	}
	// Each property unset keeps its default.
	if p, err := PolicyFor(iceberg.Properties{PropNumRetries: "3"}, def); err != nil || p.Retries != 3 || p.Timeout != def.Timeout || p.MinWait != def.MinWait {
		t.Fatalf("%+v %v", p, err)
	}
	for _, bad := range []iceberg.Properties{
		{PropNumRetries: "-1"},
		{PropMinWaitMs: "soon"},
		{PropTotalTimeout: "99999999999999999999"},
		{PropMinWaitMs: "2000", PropMaxWaitMs: "100"},
	} {
		_, err := PolicyFor(bad, def)
		var key string
		for k := range bad {
			key = k
		}
		if err == nil || !strings.Contains(err.Error(), key) {
			t.Errorf("%v: error %v, want one naming %s", bad, err, key)
		}
	}
}

func TestWait(t *testing.T) {
	p := Policy{MinWait: 10 * time.Millisecond, MaxWait: 100 * time.Millisecond}
	for n, ceiling := range map[int]time.Duration{1: 10 * time.Millisecond, 2: 20 * time.Millisecond, 4: 80 * time.Millisecond, 5: 100 * time.Millisecond, 30: 100 * time.Millisecond} {
		for i := 0; i < 50; i++ {
			if w := p.wait(n); w < ceiling/2 || w > ceiling {
				t.Fatalf("retry %d waited %v, want within [%v, %v]", n, w, ceiling/2, ceiling)
			}
		}
	}
	if w := (Policy{}).wait(3); w != 0 {
		t.Fatalf("zero policy waited %v", w)
	}
}

func TestIsConflict(t *testing.T) {
	for err, want := range map[error]bool{
		fmt.Errorf("commit: %w", table.ErrCommitFailed):                                     true,
		errors.New(`requirement failed: branch "main" has changed: expected id 1, found 2`): true,
		errors.New("Requirement failed: current table metadata does not exist"):             true,
		errors.New("connection reset by peer"):                                              false,
		context.DeadlineExceeded:                                                            false,
		nil:                                                                                 false,
	} {
		if got := IsConflict(err); got != want {
			t.Errorf("IsConflict(%v) = %v, want %v", err, got, want)
		}
	}
}

func TestDo(t *testing.T) {
	ctx := context.Background()
	conflict := fmt.Errorf("lost: %w", table.ErrCommitFailed)
	quick := Policy{Retries: 5, Timeout: time.Minute}

	// Conflicts are retried until an attempt wins.
	st, err := Do(ctx, quick, func(_ context.Context, n int) error {
		if n < 3 {
			return conflict
		}
		return nil
	})
	if err != nil || st != (Stats{Attempts: 3, Conflicts: 2}) {
		t.Fatalf("%+v %v", st, err)
	}

	// Any other error ends the loop at once and keeps its cause.
	cause := errors.New("disk full")
	st, err = Do(ctx, quick, func(context.Context, int) error { return cause })
	if !errors.Is(err, cause) || errors.Is(err, ErrStaleMetadata) || st.Attempts != 1 {
		t.Fatalf("%+v %v", st, err)
	}

	// A table that never holds still: Retries+1 attempts, then the stale
	// metadata error in S3 Tables' words, the last conflict wrapped.
	st, err = Do(ctx, quick, func(context.Context, int) error { return conflict })
	if !errors.Is(err, ErrStaleMetadata) || !errors.Is(err, table.ErrCommitFailed) || err.Error() != MsgStaleMetadata || st.Attempts != 6 {
		t.Fatalf("%+v %v", st, err)
	}

	// The time budget ends the loop before the count does.
	slow := Policy{Retries: 1000, MinWait: 20 * time.Millisecond, MaxWait: 20 * time.Millisecond, Timeout: 100 * time.Millisecond}
	begin := time.Now()
	st, err = Do(ctx, slow, func(context.Context, int) error { return conflict })
	if !errors.Is(err, ErrStaleMetadata) || st.Attempts > 12 || time.Since(begin) > time.Second {
		t.Fatalf("%+v %v after %v", st, err, time.Since(begin))
	}

	// Cancellation ends the wait.
	cctx, cancel := context.WithCancel(ctx)
	_, err = Do(cctx, Policy{Retries: 10, MinWait: time.Hour, MaxWait: time.Hour, Timeout: 2 * time.Hour}, func(context.Context, int) error {
		cancel()
		return conflict
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("%v", err)
	}
}
