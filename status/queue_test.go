package status

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/icekeeper/icekeeper/configs"
	"github.com/icekeeper/icekeeper/internal/state"
	"github.com/icekeeper/icekeeper/jobs"
	"github.com/icekeeper/icekeeper/maintenance"
	"github.com/icekeeper/icekeeper/planner"
)

// GET /icekeeper/v1/queue with keys on: the queued runs in their order
// with why and how much, and the budgets; a key scoped elsewhere sees
// neither, and no key gets nothing.
func TestQueueRoute(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	store, err := state.Open(ctx, "sqlite://"+filepath.Join(dir, "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	reg := configs.Embedded(dir).Registry()
	t.Cleanup(reg.Close)
	engine := &jobs.Engine{Store: store, Registry: reg}
	if err := engine.Init(); err != nil {
		t.Fatal(err)
	}
	later := state.TableKey{Bucket: bucketARN, Namespace: "demo", Name: "later"}
	first := state.TableKey{Bucket: bucketARN, Namespace: "demo", Name: "first"}
	gone := state.TableKey{Bucket: "arn:aws:s3tables:us-east-1:1:bucket/gone", Namespace: "demo", Name: "x"}
	now := time.Now()
	for _, q := range []struct {
		k   state.TableKey
		typ maintenance.JobType
		at  time.Time
		why jobs.Pending
	}{
		{later, maintenance.Compaction, now.Add(time.Hour), jobs.Pending{Reason: planner.RuleSnapshotChanged}},
		{first, maintenance.Compaction, now, jobs.Pending{Reason: planner.NeedBudget, Estimate: 4096}},
		{first, maintenance.SnapshotManagement, now.Add(time.Minute), jobs.Pending{}},
		{gone, maintenance.Compaction, now, jobs.Pending{}},
	} {
		place := func(state.TableKey) jobs.Placement { return jobs.Placement{At: q.at, Pending: q.why} }
		if _, err := engine.EnqueueMany(ctx, []state.TableKey{q.k}, q.typ, "schedule", place); err != nil {
			t.Fatal(err)
		}
	}
	if err := store.RecordRewrite(ctx, bucketARN, now.Add(-time.Minute), 700); err != nil {
		t.Fatal(err)
	}
	budgets := &jobs.Budgets{Store: store, Daemon: jobs.Limits{RewriteBytesPerHour: 5000, TableSharePercent: 25},
		Buckets: map[string]jobs.BucketLimits{bucketARN: {Name: "local", Limits: jobs.Limits{MaxConcurrentRewrites: 2, RewriteBytesPerHour: 1000, TableSharePercent: 50}}}}
	srv := &Server{Registry: reg, Store: store, Queue: engine, Budgets: budgets, Auth: NewAuth(configs.API{SigningName: "s3tables", Keys: []configs.APIKey{
		{AccessKeyID: "AKVIEW", SecretAccessKey: viewSecret, ReadOnly: true},
		{AccessKeyID: "AKOTHER", SecretAccessKey: "other-secret-0123456789", Scopes: []string{"elsewhere"}},
	}})}
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)
	get := func(path, id, secret string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest("GET", ts.URL+path, nil)
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
	if code, _ := get("/icekeeper/v1/queue", "", ""); code != http.StatusForbidden && code != http.StatusUnauthorized {
		t.Fatalf("without a key: %d", code)
	}
	if code, body := get("/icekeeper/v1/queue?limit=0", "AKVIEW", viewSecret); code != http.StatusBadRequest {
		t.Fatalf("limit 0: %d %s", code, body)
	}
	code, body := get("/icekeeper/v1/queue", "AKVIEW", viewSecret)
	if code != http.StatusOK {
		t.Fatalf("queue: %d %s", code, body)
	}
	var got struct {
		Queue []struct {
			Table, Bucket, Reason string
			Type                  maintenance.JobType
			EstimatedBytes        *int64
			Due                   string
		}
		Budgets []jobs.BudgetUse
	}
	if err := json.Unmarshal([]byte(body), &got); err != nil {
		t.Fatal(err)
	}
	// The bucket no longer configured is left out; the rest by due time.
	if len(got.Queue) != 3 {
		t.Fatalf("queue %s", body)
	}
	q0, q1, q2 := got.Queue[0], got.Queue[1], got.Queue[2]
	if q0.Table != "first" || q0.Type != maintenance.Compaction || q0.Reason != planner.NeedBudget || q0.EstimatedBytes == nil || *q0.EstimatedBytes != 4096 || q0.Bucket != "local" {
		t.Fatalf("first in the queue: %+v", q0)
	}
	if q1.Table != "first" || q1.Type != maintenance.SnapshotManagement || q1.Reason != "" || q1.EstimatedBytes != nil {
		t.Fatalf("second in the queue: %+v", q1)
	}
	if q2.Table != "later" || q2.Reason != planner.RuleSnapshotChanged || q2.EstimatedBytes != nil || !strings.Contains(body, `"estimatedBytes":null`) {
		t.Fatalf("last in the queue: %+v", q2)
	}
	if len(got.Budgets) != 2 || got.Budgets[0] != (jobs.BudgetUse{Scope: jobs.DaemonScope, BytesPerHour: 5000, Used: 700, TableSharePercent: 25}) ||
		got.Budgets[1] != (jobs.BudgetUse{Scope: "local", BytesPerHour: 1000, Used: 700, MaxConcurrent: 2, TableSharePercent: 50}) {
		t.Fatalf("budgets %+v", got.Budgets)
	}
	code, body = get("/icekeeper/v1/queue", "AKOTHER", "other-secret-0123456789")
	if code != http.StatusOK || body != `{"budgets":[],"queue":[]}`+"\n" {
		t.Fatalf("a key scoped to another bucket: %d %s", code, body)
	}
}
