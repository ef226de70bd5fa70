package status

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/icekeeper/icekeeper/configs"
	"github.com/icekeeper/icekeeper/internal/state"
	"github.com/icekeeper/icekeeper/internal/testkit"
	"github.com/icekeeper/icekeeper/jobs"
	"github.com/icekeeper/icekeeper/maintenance"
)

const viewKey, viewSecret2 = "AKVIEW", "view-secret-0123456789"

// historyFixture is the demo table behind a server with keys: one that
// may write, a read-only one, and one scoped to another bucket.
func historyFixture(t *testing.T) (*fixture, func(path, id, secret string) (int, []byte)) {
	f := newServer(t, configs.API{Keys: []configs.APIKey{
		{AccessKeyID: "AKADMIN", SecretAccessKey: "admin-secret-0123456789"},
		{AccessKeyID: viewKey, SecretAccessKey: viewSecret2, ReadOnly: true},
		{AccessKeyID: "AKOTHER", SecretAccessKey: "other-secret-0123456789", Scopes: []string{"elsewhere"}},
	}})
	get := func(path, id, secret string) (int, []byte) {
		t.Helper()
		req, err := http.NewRequest("GET", f.url+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		if id != "" {
			req.SetBasicAuth(id, secret)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var body json.RawMessage
		_ = json.NewDecoder(resp.Body).Decode(&body)
		return resp.StatusCode, body
	}
	return f, get
}

type historyBody struct {
	Samples []struct {
		At         time.Time
		DataFiles  int
		TotalBytes int64
		Score      float64
	}
	CostPerDay []struct {
		Day         string
		Runs        int
		USD         float64
		S3TablesUSD float64
	}
	Cost struct {
		Runs        int
		USD         float64
		S3TablesUSD float64
	}
	SnapshotLog []struct {
		At         time.Time
		DataFiles  *int64
		TotalBytes *int64
		Snapshots  int
	}
	SnapshotLogError string
}

// The health the overview computes is recorded once per metadata file
// and served by the history route with the cost of the table's runs per
// day; a read-only key may read it, a key scoped to another bucket may
// not, and neither may a path that climbs out of its namespace.
func TestHistoryRoute(t *testing.T) {
	f, get := historyFixture(t)
	history := "/icekeeper/v1/tables/" + url.PathEscape(bucketARN) + "/demo/events/history"
	overview := func() {
		t.Helper()
		if code, body := get("/icekeeper/v1/overview", viewKey, viewSecret2); code != http.StatusOK {
			t.Fatalf("overview: %d %s", code, body)
		}
	}
	read := func(query string) historyBody {
		t.Helper()
		code, body := get(history+query, viewKey, viewSecret2)
		if code != http.StatusOK {
			t.Fatalf("history%s, read-only key: %d %s", query, code, body)
		}
		var h historyBody
		if err := json.Unmarshal(body, &h); err != nil {
			t.Fatal(err)
		}
		return h
	}
	if h := read(""); len(h.Samples) != 0 || h.Cost.Runs != 0 {
		t.Fatalf("history before any health was computed: %+v", h)
	}
	// Before any sample, the demo's snapshot log already holds its three
	// weeks: every point with the summary's totals, counted in order.
	h0 := read("")
	if h0.SnapshotLogError != "" || len(h0.SnapshotLog) < 3 || time.Since(h0.SnapshotLog[0].At) < 14*24*time.Hour {
		t.Fatalf("snapshot log of a first visit: %+v %q, want three weeks of points", h0.SnapshotLog, h0.SnapshotLogError)
	}
	for i, p := range h0.SnapshotLog {
		if p.DataFiles == nil || p.TotalBytes == nil || *p.TotalBytes <= 0 || p.Snapshots != i+1 || i > 0 && p.At.Before(h0.SnapshotLog[i-1].At) {
			t.Fatalf("snapshot log point %d: %+v, want totals from the summary, oldest first", i, p)
		}
	}
	if h := read("?days=1"); len(h.SnapshotLog) >= len(h0.SnapshotLog) {
		t.Fatalf("snapshot log of the last day: %d points of %d", len(h.SnapshotLog), len(h0.SnapshotLog))
	}
	overview()
	overview() // the same metadata file: no second sample
	if err := testkit.AppendRows(context.Background(), f.Bucket, f.ID, 10); err != nil {
		t.Fatal(err)
	}
	overview()
	// Two runs that cost something today, one long ago, one without a
	// cost.
	ctx, now := context.Background(), time.Now()
	for _, r := range []struct {
		started time.Time
		metrics string
	}{
		{now.Add(-time.Minute), `{"cost":{"usd":0.25,"s3TablesUSD":1.5}}`},
		{now, `{"cost":{"usd":0.5}}`},
		{now.Add(-40 * 24 * time.Hour), `{"cost":{"usd":100}}`},
		{now, `{"snapshotsExpired":0}`},
	} {
		run := state.Run{Table: f.Target().Key(), Type: maintenance.Compaction, Trigger: "test", Started: r.started}
		id, err := f.Store.StartRun(ctx, run)
		if err != nil {
			t.Fatal(err)
		}
		run.ID, run.Status, run.Finished, run.Metrics = id, state.Successful, r.started.Add(time.Second), json.RawMessage(r.metrics)
		if err := f.Store.FinishRun(ctx, run); err != nil {
			t.Fatal(err)
		}
	}
	h := read("?days=30")
	if len(h.Samples) != 2 || h.Samples[1].DataFiles != h.Samples[0].DataFiles+1 || h.Samples[1].TotalBytes <= h.Samples[0].TotalBytes ||
		h.Samples[0].Score == 0 || !h.Samples[0].At.Before(h.Samples[1].At) && !h.Samples[0].At.Equal(h.Samples[1].At) {
		t.Fatalf("samples: %+v, want two, the second with the file appended", h.Samples)
	}
	if h.Cost.USD != 0.75 || h.Cost.S3TablesUSD != 1.5 || h.Cost.Runs != 3 || len(h.CostPerDay) < 1 || len(h.CostPerDay) > 2 {
		t.Fatalf("cost: %+v per day %+v, want $0.75 and $1.50 over today's three runs", h.Cost, h.CostPerDay)
	}
	if h := read("?days=1"); len(h.Samples) != 2 {
		t.Fatalf("samples of the last day: %+v", h.Samples)
	}

	for _, c := range []struct {
		what, path, id, secret string
		want                   int
	}{
		{"no key", history, "", "", http.StatusForbidden},
		{"another bucket's key", history, "AKOTHER", "other-secret-0123456789", http.StatusForbidden},
		{"a wrong secret", history, viewKey, "wrong", http.StatusForbidden},
		{"days 0", history + "?days=0", viewKey, viewSecret2, http.StatusBadRequest},
		{"days 31", history + "?days=31", viewKey, viewSecret2, http.StatusBadRequest},
		{"days not a number", history + "?days=x", viewKey, viewSecret2, http.StatusBadRequest},
		{"%2e%2e namespace", "/icekeeper/v1/tables/" + url.PathEscape(bucketARN) + "/%2e%2e/events/history", viewKey, viewSecret2, http.StatusBadRequest},
		{"%2e%2e name", "/icekeeper/v1/tables/" + url.PathEscape(bucketARN) + "/demo/%2e%2e/history", viewKey, viewSecret2, http.StatusNotFound},
		{"a table that does not exist", "/icekeeper/v1/tables/" + url.PathEscape(bucketARN) + "/demo/nope/history", viewKey, viewSecret2, http.StatusNotFound},
	} {
		if code, body := get(c.path, c.id, c.secret); code != c.want {
			t.Errorf("%s: %d %s, want %d", c.what, code, body, c.want)
		}
	}
	if code, body := get(history, "AKADMIN", "admin-secret-0123456789"); code != http.StatusOK {
		t.Errorf("the admin key: %d %s", code, body)
	}
}

// Each run the runs route serves carries its summary, the same line
// jobs.RunSummary gives.
func TestRunsHaveSummaries(t *testing.T) {
	f, get := historyFixture(t)
	out, err := f.runner.Run(context.Background(), f.Target(), maintenance.SnapshotManagement, "test", jobs.Options{})
	if err != nil || out.Status != state.Successful {
		t.Fatalf("run: %+v %v", out, err)
	}
	code, body := get("/icekeeper/v1/tables/"+url.PathEscape(bucketARN)+"/demo/events/runs", viewKey, viewSecret2)
	if code != http.StatusOK {
		t.Fatalf("runs: %d %s", code, body)
	}
	var got struct {
		Runs map[maintenance.JobType][]struct {
			ID      int64
			Summary string
		}
	}
	if err := json.Unmarshal(body, &got); err != nil {
		t.Fatal(err)
	}
	runs := got.Runs[maintenance.SnapshotManagement]
	stored, err := f.Store.Runs(context.Background(), f.Target().Key(), maintenance.SnapshotManagement, 1)
	if err != nil || len(runs) != 1 || len(stored) != 1 {
		t.Fatalf("runs %s, stored %+v %v", body, stored, err)
	}
	want := jobs.RunSummary(f.runner.Jobs[maintenance.SnapshotManagement], stored[0])
	if runs[0].Summary != want || !strings.HasPrefix(want, "expired ") && !strings.HasPrefix(want, "no snapshot expired") {
		t.Fatalf("summary %q, want %q", runs[0].Summary, want)
	}
}
