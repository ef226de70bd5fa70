//go:build unix

package events

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/icekeeper/icekeeper/internal/testkit/servers"
)

// TestSeaweedFSWebhook puts an object through a real SeaweedFS's S3 API
// and decodes what its filer posts to the webhook: the shape Parse reads
// is the one SeaweedFS sends, the filer's own files and the directories
// above the object yield nothing, and the bearer token is sent.
func TestSeaweedFSWebhook(t *testing.T) {
	const token = "icekeeper-webhook-token"
	hooks := newHookRecorder(t)
	srv := servers.SeaweedFSWebhook(t, hooks.url+"/icekeeper/v1/events", token)

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// A key as a writer might name it: a space, "+", "=" and non-ASCII
	// are written into the filer's path as they are, not encoded.
	const key = "wh/sales/orders/data/ts_day=2024-05-01/part 00001+é.parquet"
	if _, err := srv.Client.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(srv.Bucket), Key: aws.String(key), Body: bytes.NewReader([]byte("PAR1"))}); err != nil {
		t.Fatalf("put %s: %v", key, err)
	}

	// The filer posts from a pool of workers, out of order; wait for the
	// object's event, then for the filer to fall quiet, so that a second
	// event for the object would be seen too.
	want := Event{Source: SourceS3, Kind: KindCreated, Type: "seaweedfs:create", Bucket: srv.Bucket, Key: key, Location: "s3://" + srv.Bucket + "/" + key}
	reqs := hooks.waitFor(t, 20*time.Second, func(evs []Event) bool {
		return slices.ContainsFunc(evs, func(ev Event) bool { return reflect.DeepEqual(ev, want) })
	})

	var got []Event
	for i, r := range reqs {
		if h := r.header.Get("Authorization"); h != "Bearer "+token {
			t.Errorf("request %d: Authorization %q, want the bearer token", i+1, h)
		}
		evs, err := Parse(r.header, r.body)
		if err != nil {
			t.Errorf("request %d: %v\n%s", i+1, err, r.body)
			continue
		}
		if len(evs) > 0 && !reflect.DeepEqual(evs, []Event{want}) {
			t.Errorf("request %d: got %+v from\n%s", i+1, evs, r.body)
		}
		got = append(got, evs...)
	}
	if len(got) != 1 {
		t.Errorf("%d requests gave %d events, want the object's one: %+v", len(reqs), len(got), got)
	}
}

// hookRequest is one request the webhook received.
type hookRequest struct {
	header http.Header
	body   []byte
	at     time.Time
}

// hookRecorder is an HTTP server on 127.0.0.1 that keeps every request
// posted to it and answers 200, as the event route does.
type hookRecorder struct {
	url string

	mu   sync.Mutex
	reqs []hookRequest
}

func newHookRecorder(t *testing.T) *hookRecorder {
	h := &hookRecorder{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(io.LimitReader(r.Body, MaxBody+1))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		h.mu.Lock()
		h.reqs = append(h.reqs, hookRequest{header: r.Header.Clone(), body: body, at: time.Now()})
		h.mu.Unlock()
	}))
	t.Cleanup(srv.Close)
	h.url = srv.URL
	return h
}

// waitFor waits until the events of the requests so far satisfy done and
// no request has come for a second since, and returns the requests.
func (h *hookRecorder) waitFor(t *testing.T, within time.Duration, done func([]Event) bool) []hookRequest {
	t.Helper()
	const quiet = time.Second
	deadline := time.Now().Add(within)
	for {
		h.mu.Lock()
		reqs := append([]hookRequest(nil), h.reqs...)
		h.mu.Unlock()
		var evs []Event
		for _, r := range reqs {
			e, _ := Parse(r.header, r.body) // errors are reported by the caller
			evs = append(evs, e...)
		}
		if done(evs) && time.Since(reqs[len(reqs)-1].at) >= quiet {
			return reqs
		}
		if time.Now().After(deadline) {
			for _, r := range reqs {
				t.Logf("received: %s", r.body)
			}
			t.Fatalf("no awaited event in %d webhook requests after %v", len(reqs), within)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
