package bucket

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/icekeeper/icekeeper/internal/cost"
)

// ErrRateLimited is returned for a request a REST catalog kept refusing
// for its rate (429 Too Many Requests, or 503 Service Unavailable with
// Retry-After), or refused with a wait longer than icekeeper waits.
var ErrRateLimited = errors.New("rate limited by the catalog")

// How long a request waits on a catalog that refuses it. R2 Data Catalog
// asks for 60 s; a wait past maxRetryAfter is an outage or a daily quota,
// better reported than slept through. The whole wait stays well within
// the 15 minutes a SigV4 signature is valid for: the signer runs above
// this transport, so a request sent again carries its first signature.
const (
	maxRetryAfter   = 2 * time.Minute
	maxRefusedWait  = 5 * time.Minute
	maxSendAttempts = 8
)

// rateTransport keeps icekeeper within a REST catalog's rates: a commit
// waits for its turn under the bucket's commit rate, and a request the
// catalog refuses for its rate is sent again when the catalog asks for it
// (Retry-After, in seconds or as an HTTP date), instead of failing the
// run.
//
// Sending a refused request again is safe for commits too. A 429 says the
// server did not act on the request (RFC 6585), and the REST spec answers
// a commit with 503 when "the service is not ready to handle the request.
// The client should wait and retry"; the commit states it cannot know (500,
// 502, 504) are not retried here. Were a refused commit applied all the
// same, its requirements (assert-ref-snapshot-id and the like) would no
// longer hold on the table it changed: the catalog answers the copy with
// 409, and the change is not applied twice.
//
// It sits above cost.Transport, so every attempt is counted as the
// request the catalog saw, and the waits are recorded in the run's meter.
// It sits below iceberg-go's signer (a custom transport is all iceberg-go
// lets in), so a commit's turn must come within SigV4's 15 minutes: at 20
// commits a minute, a queue of 300 commits to one table, far more than
// icekeeper's runs make at once.
type rateTransport struct {
	base    http.RoundTripper
	catalog string         // the catalog's name and address, for messages and logs
	commits *commitLimiter // nil: commits are not bounded
	log     *slog.Logger

	maxRetryAfter, maxWait time.Duration
	maxAttempts            int
}

func newRateTransport(base http.RoundTripper, catalog string, rate CommitRate, log *slog.Logger) *rateTransport {
	t := &rateTransport{base: base, catalog: catalog, log: log,
		maxRetryAfter: maxRetryAfter, maxWait: maxRefusedWait, maxAttempts: maxSendAttempts}
	if rate.on() {
		t.commits = newCommitLimiter(rate, time.Minute)
	}
	return t
}

func (t *rateTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	ctx := r.Context()
	var tables []string
	commit := false
	if t.commits != nil {
		tables, commit = commitTables(r)
	}
	what := r.Method + " " + r.URL.Path
	var refusedWait time.Duration
	for attempt := 1; ; attempt++ {
		// A commit sent again is a commit again for the catalog's count.
		if commit {
			waited, err := t.commits.wait(ctx, tables)
			cost.From(ctx).Waited(waited, false)
			if err != nil {
				return nil, fmt.Errorf("commit to %s waited %v for its turn under catalog %s's commit rate: %w",
					strings.Join(tables, ", "), waited.Round(time.Millisecond), t.catalog, err)
			}
			if waited > 0 {
				t.log.Debug("commit waited for its turn under the commit rate", "catalog", t.catalog,
					"tables", tables, "waited", waited)
			}
		}
		req := r
		if attempt > 1 {
			var err error
			if req, err = rewind(r); err != nil {
				return nil, err
			}
		}
		resp, err := t.base.RoundTrip(req)
		if err != nil {
			return nil, err
		}
		delay, refused := refusal(resp, attempt, time.Now())
		if !refused || !resendable(r) {
			return resp, nil
		}
		status := fmt.Sprintf("HTTP %d %s", resp.StatusCode, http.StatusText(resp.StatusCode))
		discard(resp)
		switch {
		case delay > t.maxRetryAfter:
			return nil, fmt.Errorf("%w: catalog %s refused %s (%s) and asked to wait %v, more than the %v icekeeper waits",
				ErrRateLimited, t.catalog, what, status, delay, t.maxRetryAfter)
		case attempt >= t.maxAttempts || refusedWait+delay > t.maxWait:
			return nil, fmt.Errorf("%w: catalog %s refused %s %d times (%s, last asking to wait %v); gave up after waiting %v",
				ErrRateLimited, t.catalog, what, attempt, status, delay, refusedWait)
		}
		if deadline, ok := ctx.Deadline(); ok && time.Until(deadline) < delay {
			return nil, fmt.Errorf("%w: catalog %s refused %s (%s) and asked to wait %v, past the request's deadline",
				ErrRateLimited, t.catalog, what, status, delay)
		}
		t.log.Info("catalog refused a request for its rate; sending it again", "catalog", t.catalog,
			"request", what, "status", resp.StatusCode, "wait", delay, "attempt", attempt)
		cost.From(ctx).Waited(delay, true)
		if err := sleep(ctx, delay); err != nil {
			return nil, fmt.Errorf("catalog %s refused %s (%s); waiting %v to send it again: %w", t.catalog, what, status, delay, err)
		}
		refusedWait += delay
	}
}

// refusal reports whether resp refuses its request for the server's rate
// and how long the server asked to wait: 429 with or without Retry-After
// (without, the wait doubles from a second at every attempt, up to a
// minute), 503 only
// with it (a 503 without is an outage, not a request to come back).
func refusal(resp *http.Response, attempt int, now time.Time) (time.Duration, bool) {
	after, ok := retryAfter(resp.Header.Get("Retry-After"), now)
	switch {
	case resp.StatusCode == http.StatusTooManyRequests && !ok:
		return min(time.Second<<min(attempt-1, 10), time.Minute), true
	case resp.StatusCode == http.StatusTooManyRequests, resp.StatusCode == http.StatusServiceUnavailable && ok:
		return after, true
	}
	return 0, false
}

// retryAfter parses a Retry-After value: delay-seconds or an HTTP date
// (RFC 9110, 10.2.3). A date in the past asks for no wait.
func retryAfter(v string, now time.Time) (time.Duration, bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	if secs, err := strconv.ParseUint(v, 10, 32); err == nil {
		return time.Duration(secs) * time.Second, true
	} else if errors.Is(err, strconv.ErrRange) {
		return time.Duration(1<<32-1) * time.Second, true // longer than any cap
	}
	at, err := http.ParseTime(v)
	if err != nil {
		return 0, false
	}
	return max(at.Sub(now), 0), true
}

// resendable reports whether r's body can be sent again.
func resendable(r *http.Request) bool {
	return r.Body == nil || r.Body == http.NoBody || r.GetBody != nil
}

// rewind is r with its body from the start.
func rewind(r *http.Request) (*http.Request, error) {
	c := r.Clone(r.Context())
	if r.Body == nil || r.Body == http.NoBody {
		return c, nil
	}
	body, err := r.GetBody()
	if err != nil {
		return nil, fmt.Errorf("send %s %s again: %w", r.Method, r.URL.Path, err)
	}
	c.Body = body
	return c, nil
}

// discard reads what is left of a response's body, so that its connection
// is reused, and closes it.
func discard(resp *http.Response) {
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
}
