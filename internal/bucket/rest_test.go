package bucket_test

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/icekeeper/icekeeper/internal/arn"
	"github.com/icekeeper/icekeeper/internal/bucket"
	"github.com/icekeeper/icekeeper/internal/testkit/servers"
)

// The REST catalog's SigV4 requests are signed with the keys in the
// configuration, not the host's: with no AWS_* variable and no profile,
// rest.access-key-id (or, as a fallback, s3.access-key-id) reaches the
// catalog, and without either the failure says no credentials were found.
func TestRESTSignsWithConfiguredKeys(t *testing.T) {
	srv := servers.REST(t)
	dir := t.TempDir()
	for k, v := range map[string]string{
		"AWS_ACCESS_KEY_ID": "", "AWS_SECRET_ACCESS_KEY": "", "AWS_SESSION_TOKEN": "", "AWS_PROFILE": "",
		"AWS_CONFIG_FILE": filepath.Join(dir, "none"), "AWS_SHARED_CREDENTIALS_FILE": filepath.Join(dir, "none"),
		"AWS_EC2_METADATA_DISABLED": "true",
	} {
		t.Setenv(k, v)
	}
	base := srv.Props()
	delete(base, "s3.access-key-id")
	delete(base, "s3.secret-access-key")
	parsed, err := arn.Parse("arn:aws:s3tables:us-east-1:000000000000:bucket/" + srv.Bucket)
	if err != nil {
		t.Fatal(err)
	}
	open := func(t *testing.T, extra map[string]string) error {
		props := map[string]string{}
		for k, v := range base {
			props[k] = v
		}
		for k, v := range extra {
			props[k] = v
		}
		reg := bucket.New(bucket.Options{ARN: parsed.String(), Parsed: parsed, CatalogName: "rest", Catalog: props})
		defer reg.Close()
		b, _ := reg.Bucket(srv.Bucket)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_, err := b.Tables(ctx)
		return err
	}
	t.Run("rest keys", func(t *testing.T) {
		if err := open(t, map[string]string{"rest.access-key-id": srv.Key, "rest.secret-access-key": srv.Secret}); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("s3 keys as the fallback", func(t *testing.T) {
		if err := open(t, map[string]string{"s3.access-key-id": srv.Key, "s3.secret-access-key": srv.Secret}); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("wrong rest keys beat right s3 keys", func(t *testing.T) {
		err := open(t, map[string]string{"rest.access-key-id": "nobody", "rest.secret-access-key": "wrong-secret-wrong",
			"s3.access-key-id": srv.Key, "s3.secret-access-key": srv.Secret})
		if err == nil {
			t.Fatal("a catalog signed with unknown keys answered")
		}
	})
	t.Run("no keys", func(t *testing.T) {
		err := open(t, nil)
		if err == nil || !strings.Contains(strings.ToLower(err.Error()), "credential") {
			t.Fatalf("without keys: %v", err)
		}
	})
}

// A REST catalog's error names the request and the HTTP status, with the
// server's own message or body after them.
func TestRESTErrorsKeepStatus(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/ok/v1/config":
			w.Write([]byte(`{"defaults":{},"overrides":{}}`))
		case "/ok/v1/namespaces":
			w.WriteHeader(http.StatusForbidden)
			w.Write([]byte(`{"error":{"message":"the key may not list","type":"ForbiddenException","code":403}}`))
		default:
			http.Error(w, "<html>no such route</html>", http.StatusNotFound)
		}
	}))
	defer srv.Close()
	a, err := arn.Parse("arn:aws:s3tables:us-east-1:000000000000:bucket/rest-errors")
	if err != nil {
		t.Fatal(err)
	}
	list := func(path string) error {
		reg := bucket.New(bucket.Options{ARN: a.String(), Parsed: a, CatalogName: "r", Catalog: map[string]string{"type": "rest", "uri": srv.URL + path}})
		defer reg.Close()
		_, err := reg.Buckets()[0].Tables(context.Background())
		return err
	}
	if err := list("/wrong"); err == nil || !strings.Contains(err.Error(), "GET /wrong/v1/config: HTTP 404 Not Found: <html>no such route</html>") {
		t.Errorf("a 404 of a wrong path: %v", err)
	}
	if err := list("/ok"); err == nil || !strings.Contains(err.Error(), "GET /ok/v1/namespaces: HTTP 403 Forbidden: the key may not list") {
		t.Errorf("a server's error: %v", err)
	}
}

// A REST catalog that refuses a listing for its rate (429, Retry-After: 1)
// is waited out: the listing succeeds a second later, and the bucket's
// logger says what was waited for.
func TestRESTRefusalIsWaitedOut(t *testing.T) {
	var mu sync.Mutex
	refused := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/v1/config":
			w.Write([]byte(`{"defaults":{},"overrides":{}}`))
		case r.URL.Path == "/v1/namespaces" && r.URL.Query().Get("parent") == "":
			mu.Lock()
			refused++
			first := refused == 1
			mu.Unlock()
			if first {
				w.Header().Set("Retry-After", "1")
				w.WriteHeader(http.StatusTooManyRequests)
				w.Write([]byte(`{"error":{"message":"rate limited","type":"TooManyRequestsException","code":429}}`))
				return
			}
			w.Write([]byte(`{"namespaces":[["db"]]}`))
		case r.URL.Path == "/v1/namespaces":
			w.Write([]byte(`{"namespaces":[]}`))
		case r.URL.Path == "/v1/namespaces/db/tables":
			w.Write([]byte(`{"identifiers":[{"namespace":["db"],"name":"events"}]}`))
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	a, err := arn.Parse("arn:aws:s3tables:us-east-1:000000000000:bucket/limited")
	if err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	reg := bucket.New(bucket.Options{ARN: a.String(), Parsed: a, CatalogName: "r2", Catalog: map[string]string{"type": "rest", "uri": srv.URL},
		CommitRate: bucket.CommitRate{PerTable: 20, PerCatalog: 120}}).
		WithLogger(slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})))
	defer reg.Close()
	start := time.Now()
	tables, err := reg.Buckets()[0].Tables(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(tables) != 1 || tables[0].String() != "db.events" {
		t.Fatalf("tables %v", tables)
	}
	if took := time.Since(start); took < time.Second {
		t.Errorf("listed after %v; the catalog asked for 1s", took)
	}
	if !strings.Contains(logs.String(), "catalog refused a request for its rate") || !strings.Contains(logs.String(), "catalog=\"r2 at "+srv.URL+"\"") {
		t.Errorf("logs:\n%s", logs.String())
	}
}
