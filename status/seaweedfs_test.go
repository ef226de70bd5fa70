//go:build unix

package status

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/icekeeper/icekeeper/internal/events"
	"github.com/icekeeper/icekeeper/internal/state"
	"github.com/icekeeper/icekeeper/internal/testkit/servers"
	"github.com/icekeeper/icekeeper/jobs"
	"github.com/icekeeper/icekeeper/maintenance"
)

// A real SeaweedFS's filer, its webhook pointed at the event route, gets
// a check of the table an object was put into, and of nothing else: not
// for an object beside the table, nor for the bucket's directories or the
// filer's own files. Every request it posts is accepted.
func TestSeaweedFSWebhookQueuesItsTable(t *testing.T) {
	f := eventServer(t)
	var route answerLog
	ts := httptest.NewServer(route.wrap(f.srv.Handler()))
	t.Cleanup(ts.Close)
	weed := servers.SeaweedFSWebhook(t, ts.URL+EventsPath, eventToken)

	// The demo table as if its warehouse were the SeaweedFS bucket: the
	// route knows a table's location from its last check.
	demoKey := f.Target().Key()
	f.fresh.Set(demoKey, "s3://"+weed.Bucket+"/warehouse/demo/events", maintenance.Compaction, jobs.Lag{Checked: time.Now()})

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	const (
		inTable = "warehouse/demo/events/data/part-00001.parquet"
		beside  = "warehouse/demo/other/data/part-00001.parquet"
	)
	for _, key := range []string{beside, inTable} {
		if _, err := weed.Client.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(weed.Bucket), Key: aws.String(key), Body: bytes.NewReader([]byte("PAR1"))}); err != nil {
			t.Fatalf("put %s: %v", key, err)
		}
	}

	// The filer posts from a pool of workers, out of order: wait for both
	// objects' events, then for the filer to fall quiet.
	answers := route.waitFor(t, 30*time.Second, func(evs []events.Event) bool {
		has := func(key string) bool {
			return slices.ContainsFunc(evs, func(ev events.Event) bool { return ev.Bucket == weed.Bucket && ev.Key == key })
		}
		return has(inTable) && has(beside)
	})
	for i, a := range answers {
		if a.status != http.StatusAccepted {
			t.Errorf("request %d (%d events): answered %d, want %d", i+1, len(a.events), a.status, http.StatusAccepted)
		}
	}
	if got := f.sink.take(); !slices.Equal(got, []state.TableKey{demoKey}) {
		t.Errorf("%d requests queued checks of %v, want one, of the demo table (%v)", len(answers), got, demoKey)
	}
}

// routeAnswer is one request the event route answered.
type routeAnswer struct {
	events []events.Event // as the route decodes them
	status int
	at     time.Time
}

// answerLog records the requests a handler answers.
type answerLog struct {
	mu      sync.Mutex
	answers []routeAnswer
}

func (l *answerLog) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		evs, _ := events.Parse(r.Header, body) // the status says whether the route could
		sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
		h.ServeHTTP(sw, r)
		l.mu.Lock()
		l.answers = append(l.answers, routeAnswer{events: evs, status: sw.status, at: time.Now()})
		l.mu.Unlock()
	})
}

// waitFor waits until the events answered so far satisfy done and no
// request has come for a second since, and returns the answers.
func (l *answerLog) waitFor(t *testing.T, within time.Duration, done func([]events.Event) bool) []routeAnswer {
	t.Helper()
	const quiet = time.Second
	deadline := time.Now().Add(within)
	for {
		l.mu.Lock()
		answers := slices.Clone(l.answers)
		l.mu.Unlock()
		var evs []events.Event
		for _, a := range answers {
			evs = append(evs, a.events...)
		}
		if done(evs) && time.Since(answers[len(answers)-1].at) >= quiet {
			return answers
		}
		if time.Now().After(deadline) {
			t.Fatalf("the awaited events are not among the %d of %d requests after %v: %+v", len(evs), len(answers), within, evs)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// statusWriter keeps the status a handler wrote.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	w.status = code
	w.ResponseWriter.WriteHeader(code)
}
