package bucket

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/icekeeper/icekeeper/internal/cost"
)

var quiet = slog.New(slog.DiscardHandler)

// refusingServer is a REST catalog that refuses the first refusals
// requests with status and Retry-After, then answers 200, keeping every
// body it was sent.
type refusingServer struct {
	status     int
	retryAfter string
	refusals   int

	mu     sync.Mutex
	bodies []string
}

func (s *refusingServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	s.bodies = append(s.bodies, string(body))
	n := len(s.bodies)
	s.mu.Unlock()
	if n <= s.refusals {
		if s.retryAfter != "" {
			w.Header().Set("Retry-After", s.retryAfter)
		}
		w.WriteHeader(s.status)
		fmt.Fprintf(w, `{"error":{"message":"slow down","type":"SlowDownException","code":%d}}`, s.status)
		return
	}
	w.Write([]byte(`{"metadata-location":"s3://b/t/metadata/2.metadata.json"}`))
}

func (s *refusingServer) sent() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.bodies)
}

const commitPath = "/v1/namespaces/db/tables/events"

// send makes one request with body through a REST catalog's transport
// chain to url, with a meter in its context.
func send(ctx context.Context, tr http.RoundTripper, method, url, body string) (*http.Response, *cost.Meter, error) {
	m := &cost.Meter{}
	var rd io.Reader
	if body != "" {
		rd = bytes.NewReader([]byte(body)) // sets GetBody, as iceberg-go's requests have it
	}
	req, err := http.NewRequestWithContext(cost.With(ctx, m), method, url, rd)
	if err != nil {
		return nil, m, err
	}
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err == nil {
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	return resp, m, err
}

// A commit the catalog refuses with 429 and Retry-After is sent again,
// whole, once the catalog's wait is over, and succeeds; every attempt is
// counted as a catalog request, and the refusals and the wait too.
func TestRefusedCommitIsSentAgain(t *testing.T) {
	srv := &refusingServer{status: http.StatusTooManyRequests, retryAfter: "1", refusals: 2}
	ts := httptest.NewServer(srv)
	defer ts.Close()
	tr := restTransport(http.DefaultTransport, "r2 at "+ts.URL, CommitRate{}, quiet)
	const commit = `{"identifier":{"namespace":["db"],"name":"events"},"requirements":[],"updates":[]}`
	start := time.Now()
	resp, m, err := send(context.Background(), tr, http.MethodPost, ts.URL+commitPath, commit)
	took := time.Since(start)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d after the refusals", resp.StatusCode)
	}
	if took < 2*time.Second {
		t.Errorf("answered after %v; the catalog asked for 1s twice", took)
	}
	sent := srv.sent()
	if len(sent) != 3 {
		t.Fatalf("the catalog saw %d requests, want 2 refused and 1 answered", len(sent))
	}
	for i, b := range sent {
		if b != commit {
			t.Errorf("attempt %d sent %q, want the whole commit", i+1, b)
		}
	}
	f := m.Figures(cost.DefaultPrices(), cost.Work{})
	if f.ByKind[cost.Catalog] != 3 || f.CatalogRefusals != 2 || f.CatalogWaitMs < 2000 {
		t.Errorf("figures %+v: want 3 catalog requests, 2 refusals, at least 2000 ms waited", f)
	}
}

// A read refused with 503 and Retry-After as an HTTP date is sent again;
// a 503 without Retry-After is an outage and is answered as it is; a
// body that cannot be read twice is not sent twice.
func TestRefusalsAndOutages(t *testing.T) {
	t.Run("503 with a date", func(t *testing.T) {
		srv := &refusingServer{status: http.StatusServiceUnavailable, retryAfter: time.Now().Add(2 * time.Second).UTC().Format(http.TimeFormat), refusals: 1}
		ts := httptest.NewServer(srv)
		defer ts.Close()
		resp, _, err := send(context.Background(), restTransport(http.DefaultTransport, "c", CommitRate{}, quiet), http.MethodGet, ts.URL+commitPath, "")
		if err != nil || resp.StatusCode != http.StatusOK || len(srv.sent()) != 2 {
			t.Fatalf("%v %v after %d requests; want 200 after 2", resp, err, len(srv.sent()))
		}
	})
	t.Run("503 without Retry-After", func(t *testing.T) {
		srv := &refusingServer{status: http.StatusServiceUnavailable, refusals: 1}
		ts := httptest.NewServer(srv)
		defer ts.Close()
		resp, _, err := send(context.Background(), restTransport(http.DefaultTransport, "c", CommitRate{}, quiet), http.MethodGet, ts.URL+commitPath, "")
		if err != nil || resp.StatusCode != http.StatusServiceUnavailable || len(srv.sent()) != 1 {
			t.Fatalf("%v %v after %d requests; want the 503 after 1", resp, err, len(srv.sent()))
		}
	})
	t.Run("a body read once", func(t *testing.T) {
		srv := &refusingServer{status: http.StatusTooManyRequests, retryAfter: "0", refusals: 1}
		ts := httptest.NewServer(srv)
		defer ts.Close()
		req, _ := http.NewRequest(http.MethodPost, ts.URL+commitPath, io.NopCloser(strings.NewReader("{}")))
		resp, err := restTransport(http.DefaultTransport, "c", CommitRate{}, quiet).RoundTrip(req)
		if err != nil || resp.StatusCode != http.StatusTooManyRequests || len(srv.sent()) != 1 {
			t.Fatalf("%v %v after %d requests; want the 429 after 1", resp, err, len(srv.sent()))
		}
		resp.Body.Close()
	})
}

// A catalog that asks for a longer wait than icekeeper's cap, or keeps
// refusing, fails the request at once with a message naming the catalog,
// the request and the wait; a wait ends with its context.
func TestRefusalLimits(t *testing.T) {
	t.Run("beyond the cap", func(t *testing.T) {
		srv := &refusingServer{status: http.StatusTooManyRequests, retryAfter: "3600", refusals: 100}
		ts := httptest.NewServer(srv)
		defer ts.Close()
		start := time.Now()
		_, _, err := send(context.Background(), restTransport(http.DefaultTransport, "r2 at "+ts.URL, CommitRate{}, quiet), http.MethodPost, ts.URL+commitPath, "{}")
		want := fmt.Sprintf("catalog r2 at %s refused POST %s (HTTP 429 Too Many Requests) and asked to wait 1h0m0s, more than the 2m0s icekeeper waits", ts.URL, commitPath)
		if !errors.Is(err, ErrRateLimited) || !strings.Contains(err.Error(), want) {
			t.Fatalf("got %v, want %q", err, want)
		}
		if took := time.Since(start); took > 5*time.Second || len(srv.sent()) != 1 {
			t.Errorf("failed after %v and %d requests; want at once, after one", took, len(srv.sent()))
		}
	})
	t.Run("refused every time", func(t *testing.T) {
		srv := &refusingServer{status: http.StatusTooManyRequests, retryAfter: "0", refusals: 100}
		ts := httptest.NewServer(srv)
		defer ts.Close()
		_, _, err := send(context.Background(), restTransport(http.DefaultTransport, "r2", CommitRate{}, quiet), http.MethodPost, ts.URL+commitPath, "{}")
		want := fmt.Sprintf("catalog r2 refused POST %s %d times (HTTP 429 Too Many Requests", commitPath, maxSendAttempts)
		if !errors.Is(err, ErrRateLimited) || !strings.Contains(err.Error(), want) || len(srv.sent()) != maxSendAttempts {
			t.Fatalf("after %d requests: %v, want %q", len(srv.sent()), err, want)
		}
	})
	t.Run("past the deadline", func(t *testing.T) {
		srv := &refusingServer{status: http.StatusTooManyRequests, retryAfter: "60", refusals: 100}
		ts := httptest.NewServer(srv)
		defer ts.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, _, err := send(ctx, restTransport(http.DefaultTransport, "r2", CommitRate{}, quiet), http.MethodPost, ts.URL+commitPath, "{}")
		if !errors.Is(err, ErrRateLimited) || !strings.Contains(err.Error(), "asked to wait 1m0s, past the request's deadline") {
			t.Fatalf("got %v", err)
		}
	})
	t.Run("cancelled while waiting", func(t *testing.T) {
		srv := &refusingServer{status: http.StatusTooManyRequests, retryAfter: "30", refusals: 100}
		ts := httptest.NewServer(srv)
		defer ts.Close()
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(100*time.Millisecond, cancel)
		start := time.Now()
		_, m, err := send(ctx, restTransport(http.DefaultTransport, "r2", CommitRate{}, quiet), http.MethodPost, ts.URL+commitPath, "{}")
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("got %v, want the context's error", err)
		}
		if took := time.Since(start); took > 5*time.Second || len(srv.sent()) != 1 {
			t.Errorf("returned after %v and %d requests; want promptly, after one", took, len(srv.sent()))
		}
		if f := m.Figures(cost.DefaultPrices(), cost.Work{}); f.CatalogRefusals != 1 {
			t.Errorf("figures %+v: the refusal is not counted", f)
		}
	})
}

func TestRetryAfter(t *testing.T) {
	now := time.Date(2026, 12, 5, 1, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		v    string
		want time.Duration
		ok   bool
	}{
		{"", 0, false},
		{"0", 0, true},
		{" 60 ", time.Minute, true},
		{"Sat, 05 Dec 2026 01:00:30 GMT", 30 * time.Second, true},
		{"Sat, 05 Dec 2026 00:59:00 GMT", 0, true}, // past: no wait
		{"-1", 0, false},
		{"soon", 0, false},
		{"99999999999", (1<<32 - 1) * time.Second, true},
	} {
		if got, ok := retryAfter(c.v, now); got != c.want || ok != c.ok {
			t.Errorf("Retry-After %q: %v %v, want %v %v", c.v, got, ok, c.want, c.ok)
		}
	}
	// A 429 without Retry-After waits a second, doubling, up to a minute.
	resp := &http.Response{StatusCode: http.StatusTooManyRequests, Header: http.Header{}}
	for attempt, want := range map[int]time.Duration{1: time.Second, 3: 4 * time.Second, 7: time.Minute, 50: time.Minute} {
		if got, ok := refusal(resp, attempt, now); !ok || got != want {
			t.Errorf("attempt %d: %v %v, want %v", attempt, got, ok, want)
		}
	}
}

// handlerTransport serves requests in-process, so that in a synctest
// bubble the clock moves only while every request waits.
type handlerTransport struct{ h http.Handler }

func (t handlerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	rec := httptest.NewRecorder()
	t.h.ServeHTTP(rec, r)
	if r.Body != nil {
		r.Body.Close()
	}
	resp := rec.Result()
	resp.Request = r
	return resp, nil
}

// commitCounter is a REST catalog that notes when each request arrived:
// commits by table, and everything else.
type commitCounter struct {
	mu      sync.Mutex
	commits map[string][]time.Time
	others  []time.Time
}

func (c *commitCounter) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	io.Copy(io.Discard, r.Body)
	c.mu.Lock()
	defer c.mu.Unlock()
	if r.Method == http.MethodPost && tableLoadPath.MatchString(r.URL.Path) {
		if c.commits == nil {
			c.commits = map[string][]time.Time{}
		}
		c.commits[r.URL.Path] = append(c.commits[r.URL.Path], time.Now())
	} else {
		c.others = append(c.others, time.Now())
	}
	w.Write([]byte(`{}`))
}

// checkWindows fails t if any window of the given length holds more
// than n of times.
func checkWindows(t *testing.T, what string, times []time.Time, n int, window time.Duration) {
	t.Helper()
	times = slices.SortedFunc(slices.Values(times), time.Time.Compare)
	for i := 0; i+n < len(times); i++ {
		if d := times[i+n].Sub(times[i]); d < window {
			t.Errorf("%s: %d commits within %v", what, n+1, d)
		}
	}
}

// However many commits are fired at once, no table gets more than its
// bound and the catalog no more than its own in any minute (as the
// catalog sees them arrive), and loads and metrics reports never wait.
// The clock is synctest's: a minute's wait takes no time, and the times
// are exact.
func TestCommitRateNeverExceeded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := &commitCounter{}
		rate := CommitRate{PerTable: 3, PerCatalog: 5}
		tr := restTransport(handlerTransport{srv}, "r2", rate, quiet)
		start := time.Now()
		var wg sync.WaitGroup
		fail := make(chan error, 100)
		do := func(method, path string) {
			wg.Go(func() {
				resp, _, err := send(context.Background(), tr, method, "http://catalog"+path, "{}")
				if err == nil && resp.StatusCode != http.StatusOK {
					err = fmt.Errorf("%s %s: %s", method, path, resp.Status)
				}
				if err != nil {
					fail <- err
				}
			})
		}
		const tables, each = 4, 6
		for i := range tables {
			for range each {
				do(http.MethodPost, fmt.Sprintf("/v1/namespaces/db/tables/t%d", i))
			}
		}
		for i := range 10 {
			do(http.MethodGet, fmt.Sprintf("/v1/namespaces/db/tables/t%d", i%tables))
			do(http.MethodPost, fmt.Sprintf("/v1/namespaces/db/tables/t%d/metrics", i%tables))
		}
		wg.Wait()
		close(fail)
		for err := range fail {
			t.Error(err)
		}
		var all []time.Time
		for tbl, times := range srv.commits {
			if len(times) != each {
				t.Errorf("%s: %d commits arrived, want %d", tbl, len(times), each)
			}
			checkWindows(t, tbl, times, rate.PerTable, time.Minute)
			all = append(all, times...)
		}
		checkWindows(t, "the catalog", all, rate.PerCatalog, time.Minute)
		for _, at := range srv.others {
			if !at.Equal(start) {
				t.Errorf("a load or metrics report waited %v", at.Sub(start))
			}
		}
		// 24 commits at 5 a minute: the last one cannot go before 4
		// minutes, and the bound is used, not wasted.
		last := slices.MaxFunc(all, time.Time.Compare).Sub(start)
		if last < 4*time.Minute || last > 5*time.Minute {
			t.Errorf("the last commit went after %v, want 4m to 5m", last)
		}
	})
}

// One table's commits one after another are spaced by its own bound
// alone; the catalog's bound, unset, holds nothing back.
func TestCommitRatePerTableOnly(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := &commitCounter{}
		tr := restTransport(handlerTransport{srv}, "r2", CommitRate{PerTable: 2}, quiet)
		start := time.Now()
		for range 5 {
			if _, _, err := send(context.Background(), tr, http.MethodPost, "http://catalog"+commitPath, "{}"); err != nil {
				t.Fatal(err)
			}
		}
		// Another table is not held back by the first one's.
		if _, _, err := send(context.Background(), tr, http.MethodPost, "http://catalog/v1/namespaces/db/tables/other", "{}"); err != nil {
			t.Fatal(err)
		}
		got := srv.commits[commitPath]
		want := []time.Duration{0, 0, time.Minute, time.Minute, 2 * time.Minute}
		for i, at := range got {
			if at.Sub(start) != want[i] {
				t.Errorf("commit %d went after %v, want %v", i+1, at.Sub(start), want[i])
			}
		}
		if other := srv.commits["/v1/namespaces/db/tables/other"]; len(other) != 1 || other[0].Sub(start) != 2*time.Minute {
			t.Errorf("the other table's commit: %v", other)
		}
	})
}

// A commit waiting for its turn gives up when its context ends, at once
// and with the context's error, and never reaches the catalog.
func TestCommitRateWaitEndsWithContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := &commitCounter{}
		tr := restTransport(handlerTransport{srv}, "r2", CommitRate{PerTable: 1, PerCatalog: 10}, quiet)
		if _, _, err := send(context.Background(), tr, http.MethodPost, "http://catalog"+commitPath, "{}"); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		start := time.Now()
		_, m, err := send(ctx, tr, http.MethodPost, "http://catalog"+commitPath, "{}")
		if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "commit to db.events waited 10s for its turn under catalog r2's commit rate") {
			t.Fatalf("got %v", err)
		}
		if took := time.Since(start); took != 10*time.Second {
			t.Errorf("gave up after %v, want the context's 10s", took)
		}
		if n := len(srv.commits[commitPath]); n != 1 {
			t.Errorf("the catalog saw %d commits, want only the first", n)
		}
		if f := m.Figures(cost.DefaultPrices(), cost.Work{}); f.CatalogWaitMs != 10000 || f.Requests != 0 {
			t.Errorf("figures %+v: want 10000 ms waited and no request", f)
		}
	})
}

// A commit refused by the catalog takes a turn again when it is sent
// again: the catalog counts the attempt as a commit.
func TestRefusedCommitTakesATurnAgain(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		var arrived []time.Time
		srv := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			arrived = append(arrived, time.Now())
			n := len(arrived)
			mu.Unlock()
			if n == 1 {
				w.Header().Set("Retry-After", "1")
				w.WriteHeader(http.StatusTooManyRequests)
				return
			}
			w.Write([]byte(`{}`))
		})
		tr := restTransport(handlerTransport{srv}, "r2", CommitRate{PerTable: 1}, quiet)
		start := time.Now()
		if _, _, err := send(context.Background(), tr, http.MethodPost, "http://catalog"+commitPath, "{}"); err != nil {
			t.Fatal(err)
		}
		if len(arrived) != 2 || arrived[1].Sub(start) != time.Minute {
			t.Fatalf("arrivals %v after %v; want the second a minute after the first", len(arrived), arrived[len(arrived)-1].Sub(start))
		}
	})
}

// commitTables tells commits from other requests, and names their tables.
func TestCommitTables(t *testing.T) {
	for _, c := range []struct {
		method, path, body string
		want               []string
		commit             bool
	}{
		{"POST", "/v1/namespaces/db/tables/events", "", []string{"db.events"}, true},
		{"POST", "/v1/warehouse/namespaces/a%1Fb/tables/t", "", []string{"a.b.t"}, true},
		{"GET", "/v1/namespaces/db/tables/events", "", nil, false},
		{"HEAD", "/v1/namespaces/db/tables/events", "", nil, false},
		{"POST", "/v1/namespaces/db/tables/events/metrics", "", nil, false},
		{"POST", "/v1/namespaces/db/tables/events/plan", "", nil, false},
		{"POST", "/v1/namespaces/db/tables", "", nil, false},
		{"POST", "/v1/transactions/commit", `{"table-changes":[{"identifier":{"namespace":["db"],"name":"a"}},{"identifier":{"namespace":["db"],"name":"b"}}]}`, []string{"db.a", "db.b"}, true},
		{"POST", "/v1/transactions/commit", `not json`, nil, true},
	} {
		req := httptest.NewRequest(c.method, "http://catalog"+c.path, strings.NewReader(c.body))
		req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(strings.NewReader(c.body)), nil }
		got, commit := commitTables(req)
		if commit != c.commit || !slices.Equal(got, c.want) {
			t.Errorf("%s %s: %v %v, want %v %v", c.method, c.path, got, commit, c.want, c.commit)
		}
	}
}
