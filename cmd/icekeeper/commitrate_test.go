package main

import (
	"context"
	"encoding/json"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/icekeeper/icekeeper/internal/demo"
	"github.com/icekeeper/icekeeper/internal/testkit"
	"github.com/icekeeper/icekeeper/internal/testkit/servers"
)

// refusingProxy stands in front of a REST catalog as a managed catalog
// past its rate does: once armed, it answers the first commit of every
// run with 429 and Retry-After, and passes everything else on.
type refusingProxy struct {
	proxy *httputil.ReverseProxy

	mu       sync.Mutex
	armed    bool
	refused  bool
	commits  int // commits the catalog saw, refused ones not counted
	refusals int
}

func (p *refusingProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodPost && strings.Contains(r.URL.Path, "/tables/events") && !strings.HasSuffix(r.URL.Path, "/metrics") {
		p.mu.Lock()
		refuse := p.armed && !p.refused
		if refuse {
			p.refused = true
			p.refusals++
		} else {
			p.commits++
		}
		p.mu.Unlock()
		if refuse {
			w.Header().Set("Retry-After", "1")
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusTooManyRequests)
			w.Write([]byte(`{"error":{"message":"Too many updateTable requests for this table","type":"TooManyRequestsException","code":429}}`))
			return
		}
	}
	p.proxy.ServeHTTP(w, r)
}

// arm makes the proxy refuse the next commit.
func (p *refusingProxy) arm() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.armed, p.refused = true, false
}

// Compaction and snapshot expiration on a REST catalog that refuses each
// run's first commit with 429 and Retry-After (Cloudflare R2 Data
// Catalog's answer past its rate): the commit is sent again once the
// wait is over and both runs are Successful, with the refusal in their
// cost figures; the bucket's commitRate lets their commits through.
func TestRESTRefusedCommitRunSucceeds(t *testing.T) {
	srv := servers.REST(t)
	c := newCLI(t)
	ctx := context.Background()
	target, err := url.Parse(srv.URI)
	if err != nil {
		t.Fatal(err)
	}
	p := &refusingProxy{proxy: &httputil.ReverseProxy{Rewrite: func(r *httputil.ProxyRequest) {
		r.SetURL(target)
		r.Out.Host = r.In.Host // SigV4 signs the host the client saw
	}}}
	front := httptest.NewServer(p)
	t.Cleanup(front.Close)
	props := srv.Props()
	props["uri"] = front.URL + strings.TrimPrefix(srv.URI, target.Scheme+"://"+target.Host)
	cfgPath, _ := restConfig(t, srv.BucketARN, srv.Bucket, props, `
    commitRate: {perTablePerMinute: 20, perCatalogPerMinute: 120}
    maintenance:
      icebergCompaction: {targetFileSizeMB: 64, strategy: binpack}
      icebergSnapshotManagement: {minSnapshotsToKeep: 1, maxSnapshotAgeHours: 1}`)

	// The table is made through the catalog directly: the proxy is what
	// the runs go through, and its setup commits are no part of the test.
	_, direct := restConfig(t, srv.BucketARN, srv.Bucket, srv.Props(), "")
	tbl := testkit.NewTable(t, direct, "db", "events", demo.Schema())
	rng := rand.New(rand.NewPCG(3, 4))
	for i := 0; i < 8; i++ {
		if tbl, err = testkit.AppendRandom(ctx, tbl, 50, int64(i*50), rng); err != nil {
			t.Fatal(err)
		}
	}

	run := func(job string, now time.Time) map[string]any {
		t.Helper()
		p.arm()
		args := []string{"run", "--config", cfgPath, "--table", srv.Bucket + "/db/events", "--job", job, "--json"}
		if !now.IsZero() {
			args = append(args, "--now", now.UTC().Format(time.RFC3339), "--allow-clock-shift")
		}
		start := time.Now()
		var res map[string]struct {
			Status         string         `json:"status"`
			FailureMessage string         `json:"failureMessage"`
			Figures        map[string]any `json:"figures"`
		}
		if err := json.Unmarshal([]byte(c.must(args...)), &res); err != nil {
			t.Fatal(err)
		}
		r := res[job]
		if r.Status != "Successful" {
			t.Fatalf("%s: %s %s", job, r.Status, r.FailureMessage)
		}
		if took := time.Since(start); took < time.Second {
			t.Errorf("%s took %v; the catalog asked its commit to wait 1s", job, took)
		}
		if cost, _ := r.Figures["cost"].(map[string]any); cost["catalogRefusals"] != 1.0 || cost["catalogWaitMs"].(float64) < 1000 {
			t.Errorf("%s: cost figures %v, want the refusal and its wait", job, cost)
		}
		return r.Figures
	}
	if fig := run("icebergCompaction", time.Time{}); fig["commits"].(float64) < 1 {
		t.Fatalf("compaction did not commit: %v", fig)
	}
	if fig := run("icebergSnapshotManagement", time.Now().Add(2*time.Hour)); fig["snapshotsExpired"].(float64) < 8 {
		t.Fatalf("expired %v snapshots, want the appends' at least", fig["snapshotsExpired"])
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.refusals != 2 {
		t.Errorf("the proxy refused %d commits, want one a run", p.refusals)
	}
}
