package status

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"riverqueue.com/riverui"

	"github.com/icekeeper/icekeeper/configs"
	"github.com/icekeeper/icekeeper/internal/state"
	"github.com/icekeeper/icekeeper/internal/testkit/servers"
	"github.com/icekeeper/icekeeper/jobs"
	"github.com/icekeeper/icekeeper/maintenance"
)

// River's UI on a PostgreSQL store: it lists the queued runs, behind the
// API's keys (HTTP Basic); scoped keys may not see it, read-only keys may
// not act. On SQLite it is not served, and says why.
func TestRiverUI(t *testing.T) {
	ctx := context.Background()
	store, err := state.Open(ctx, servers.Postgres(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	reg := configs.Embedded(t.TempDir()).Registry()
	t.Cleanup(reg.Close)
	engine := &jobs.Engine{Store: store, Registry: reg}
	if err := engine.Init(); err != nil {
		t.Fatal(err)
	}
	k := state.TableKey{Bucket: configs.LocalBucketARN, Namespace: "demo", Name: "events"}
	if _, err := engine.Enqueue(ctx, k, maintenance.Compaction, "test", time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	ui, err := riverui.NewHandler(&riverui.HandlerOpts{Endpoints: riverui.NewEndpoints(engine.Client(), nil), Logger: slog.New(slog.DiscardHandler), Prefix: "/river"})
	if err != nil {
		t.Fatal(err)
	}
	uiCtx, stopUI := context.WithCancel(ctx)
	t.Cleanup(stopUI)
	if err := ui.Start(uiCtx); err != nil {
		t.Fatal(err)
	}
	srv := &Server{Registry: reg, Store: store, Queue: engine, RiverUI: ui, Auth: NewAuth(configs.API{SigningName: "s3tables", Keys: []configs.APIKey{
		{AccessKeyID: "AKADMIN", SecretAccessKey: "admin-secret-0123456789"},
		{AccessKeyID: "AKVIEW", SecretAccessKey: "view-secret-0123456789", ReadOnly: true},
		{AccessKeyID: "AKTEAM", SecretAccessKey: "team-secret-0123456789", Scopes: []string{"local/team"}},
	}})}
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)
	do := func(method, path, id, secret string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest(method, ts.URL+path, strings.NewReader(`{"ids":["1"]}`))
		req.Header.Set("Sec-Fetch-Site", "same-origin") // as River's UI in a browser sends it
		if id != "" {
			req.SetBasicAuth(id, secret)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	if code, _ := do("GET", "/river/", "", ""); code != http.StatusUnauthorized {
		t.Fatalf("without credentials: %d", code)
	}
	if code, body := do("GET", "/river/", "AKADMIN", "admin-secret-0123456789"); code != http.StatusOK || !strings.Contains(body, "<html") {
		t.Fatalf("the UI's page: %d %.200s", code, body)
	}
	if code, body := do("GET", "/river/api/jobs?state=scheduled", "AKVIEW", "view-secret-0123456789"); code != http.StatusOK || !strings.Contains(body, `"kind":"icekeeper.run"`) || !strings.Contains(body, `\"name\": \"events\"`) {
		t.Fatalf("the queued run in River's UI: %d %.300s", code, body)
	}
	if code, body := do("GET", "/river/api/jobs?state=scheduled", "AKTEAM", "team-secret-0123456789"); code != http.StatusForbidden || !strings.Contains(body, "scoped") {
		t.Fatalf("a scoped key: %d %s", code, body)
	}
	if code, body := do("POST", "/river/api/jobs/delete", "AKVIEW", "view-secret-0123456789"); code != http.StatusForbidden || !strings.Contains(body, "read-only") {
		t.Fatalf("a read-only key deleting: %d %s", code, body)
	}
	if n, _ := store.QueueDepth(ctx); n != 1 {
		t.Fatalf("queue depth %d after a refused delete", n)
	}

	sqlite := &Server{Registry: reg, Store: store}
	rec := httptest.NewRecorder()
	req := httptest.NewRequest("GET", "http://127.0.0.1/river/", nil) // no keys: only a loopback Host is served
	sqlite.Handler().ServeHTTP(rec, req)
	if rec.Code != http.StatusNotFound || !strings.Contains(rec.Body.String(), "PostgreSQL") {
		t.Fatalf("without River's UI: %d %s", rec.Code, rec.Body)
	}
}
