package status

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/icekeeper/icekeeper/compactor"
	"github.com/icekeeper/icekeeper/configs"
	"github.com/icekeeper/icekeeper/internal/demo"
	"github.com/icekeeper/icekeeper/internal/events"
	"github.com/icekeeper/icekeeper/internal/state"
	"github.com/icekeeper/icekeeper/internal/testkit"
	"github.com/icekeeper/icekeeper/jobs"
	"github.com/icekeeper/icekeeper/maintenance"
	"github.com/icekeeper/icekeeper/planner"
)

const eventToken = "webhook-token-0123456789"

// notifyLog is the scheduler as the event route sees it, with what it was
// asked to check recorded.
type notifyLog struct {
	*jobs.Scheduler
	mu      sync.Mutex
	checked []state.TableKey
}

func (n *notifyLog) Notify(keys []state.TableKey) {
	n.mu.Lock()
	n.checked = append(n.checked, keys...)
	n.mu.Unlock()
	n.Scheduler.Notify(keys)
}

func (n *notifyLog) take() []state.TableKey {
	n.mu.Lock()
	defer n.mu.Unlock()
	out := n.checked
	n.checked = nil
	return out
}

type eventFixture struct {
	*testkit.DemoTable
	srv      *Server
	url      string
	sink     *notifyLog
	fresh    *jobs.Freshness
	location string // the demo table's, without its scheme
}

// eventServer is the API with keys (an admin, a read-only one, one
// scoped to another bucket) and a webhook token, over the demo table,
// whose location the scheduler knows from a check.
func eventServer(t *testing.T) *eventFixture {
	d := testkit.NewDemoTable(t, demo.Options{Appends: 3})
	reg := configs.Embedded(d.Home).Registry()
	t.Cleanup(reg.Close)
	fresh := &jobs.Freshness{}
	runner := &jobs.Runner{Store: d.Store, Jobs: jobs.Map((&compactor.Job{}).Definition()), Freshness: fresh}
	queue := &jobs.Engine{Store: d.Store, Registry: reg}
	if err := queue.Init(); err != nil {
		t.Fatal(err)
	}
	sched := &jobs.Scheduler{Store: d.Store, Queue: queue, Tables: &jobs.Discovery{Registry: reg}, Needs: runner.Need,
		Freshness: fresh, FreshTypes: []maintenance.JobType{maintenance.Compaction}}
	if err := sched.Init(); err != nil {
		t.Fatal(err)
	}
	sched.Tables.Discover(d.Ctx)
	if _, err := runner.Need(d.Ctx, d.Target(), maintenance.Compaction, time.Now()); err != nil {
		t.Fatal(err)
	}
	sink := &notifyLog{Scheduler: sched}
	srv := &Server{Registry: reg, Store: d.Store, Runner: runner, Queue: queue, Freshness: fresh, Events: sink, EventTokens: []string{eventToken},
		Auth: NewAuth(configs.API{SigningName: "s3tables", Keys: []configs.APIKey{
			{AccessKeyID: "AKADMIN", SecretAccessKey: adminSecret},
			{AccessKeyID: "AKVIEW", SecretAccessKey: viewSecret, ReadOnly: true},
			{AccessKeyID: "AKOTHER", SecretAccessKey: "other-secret-0123456789", Scopes: []string{"elsewhere"}},
		}})}
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)
	_, loc, _ := strings.Cut(d.Load().Location(), "://")
	return &eventFixture{DemoTable: d, srv: srv, url: ts.URL, sink: sink, fresh: fresh, location: strings.Trim(loc, "/")}
}

// s3Notification is an S3 event notification of one object under path
// (bucket/key), the key encoded as S3 encodes it.
func s3Notification(path string) string {
	bucket, key, _ := strings.Cut(path, "/")
	return fmt.Sprintf(`{"Records":[{"eventVersion":"2.1","eventSource":"aws:s3","awsRegion":"us-east-1",
		"eventTime":"2026-12-04T10:00:00.000Z","eventName":"ObjectCreated:Put",
		"s3":{"s3SchemaVersion":"1.0","bucket":{"name":%q,"arn":"arn:aws:s3:::%s"},"object":{"key":%q,"size":1024}}}]}`,
		bucket, bucket, url.QueryEscape(key))
}

type eventAnswer struct {
	Events  int      `json:"events"`
	Checks  []string `json:"checks"`
	Ignored int      `json:"ignored"`
	Reasons []string `json:"reasons"`
	Message string   `json:"message"`
}

func (f *eventFixture) post(t *testing.T, body string, header map[string]string, sign string) (int, eventAnswer) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, f.url+EventsPath, strings.NewReader(body))
	for k, v := range header {
		req.Header.Set(k, v)
	}
	var resp *http.Response
	var err error
	if sign != "" {
		key, secret, _ := strings.Cut(sign, ":")
		resp, err = signedDo(req, key, secret)
	} else {
		resp, err = http.DefaultClient.Do(req)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var a eventAnswer
	if err := json.NewDecoder(resp.Body).Decode(&a); err != nil {
		t.Fatalf("answer is not JSON: %v", err)
	}
	return resp.StatusCode, a
}

// Events from a webhook (a bearer token) or a client with the API's keys
// queue a check of exactly their table; malformed, unauthenticated,
// cross-site and out-of-scope events queue none, and say why.
func TestEventRoute(t *testing.T) {
	f := eventServer(t)
	demoKey := f.Target().Key()
	bearer := map[string]string{"Authorization": "Bearer " + eventToken, "Content-Type": "application/json"}
	cloudEventOf := func(typ, ns, name string) string {
		return fmt.Sprintf(`{"specversion":"1.0","id":"0194","source":"uri:iceberg-catalog-service:host","type":%q,
			"datacontenttype":"application/json","namespace":%q,"name":%q,
			"data":{"identifier":{"namespace":[%q],"name":%q},"requirements":[],"updates":[]}}`, typ, ns, name, ns, name)
	}
	cloudEvent := func(ns, name string) string { return cloudEventOf("updateTable", ns, name) }
	ceHeader := map[string]string{"Authorization": "Bearer " + eventToken, "Content-Type": "application/cloudevents+json"}
	// What the route accepts, named in every refusal of credentials.
	accepts := "accepts Authorization: Bearer with a token of events.tokens (what a webhook sends), or a SigV4 signature (service s3tables) by a key of api.keys"
	for _, tc := range []struct {
		name    string
		body    string
		header  map[string]string
		sign    string
		status  int
		checks  []state.TableKey
		message string // in the error's message
		ignored int
		reason  string // in one of the answer's reasons
	}{
		{name: "S3 notification, webhook token", body: s3Notification(f.location + "/data/part-00001.parquet"), header: bearer,
			status: http.StatusAccepted, checks: []state.TableKey{demoKey}},
		{name: "S3 notification, signed by a key", body: s3Notification(f.location + "/metadata/snap-1.avro"), sign: "AKADMIN:" + adminSecret,
			status: http.StatusAccepted, checks: []state.TableKey{demoKey}},
		{name: "CloudEvent from Lakekeeper", body: cloudEvent("demo", "events"),
			header: map[string]string{"Authorization": "Bearer " + eventToken, "Content-Type": "application/cloudevents+json"},
			status: http.StatusAccepted, checks: []state.TableKey{demoKey}},
		{name: "CloudEvent of an unknown table", body: cloudEvent("demo", "nope"), header: ceHeader, status: http.StatusAccepted,
			ignored: 1, reason: "1 named no table to check"},
		{name: "CloudEvent of a type not acted on", body: cloudEventOf("com.example.build.finished", "demo", "events"), header: ceHeader,
			status: http.StatusAccepted, ignored: 1,
			reason: `cloudevent: type "com.example.build.finished" is not one icekeeper acts on; it acts on createTable, registerTable, updateTable, renameTable, undropTabulars and icekeeper.table.changed`},
		{name: "CloudEvent in a batch, of a type not acted on", body: "[" + cloudEvent("demo", "events") + "," + cloudEventOf("createView", "demo", "v") + "]",
			header: map[string]string{"Authorization": "Bearer " + eventToken, "Content-Type": "application/cloudevents-batch+json"},
			status: http.StatusAccepted, checks: []state.TableKey{demoKey}, ignored: 1, reason: `cloudevent 2 of 2: type "createView" is not one icekeeper acts on`},
		{name: "CloudEvent naming namespace ..", body: strings.Replace(cloudEvent("demo", "events"), `"namespace":["demo"]`, `"namespace":[".."]`, 1),
			header: ceHeader, status: http.StatusAccepted, ignored: 1,
			reason: `names table "events" in namespace [".."]: ".." is not a name a table can have here`},
		{name: "CloudEvent naming a table a/b", body: cloudEventOf(events.TypeTableChanged, "demo", "a/b"), header: ceHeader, status: http.StatusAccepted, ignored: 1,
			reason: `"a/b" holds a path separator`},
		{name: "object outside every table", body: s3Notification(f.location + "-other/data/x.parquet"), header: bearer, status: http.StatusAccepted,
			ignored: 1, reason: "1 named no table to check"},
		{name: "%2e%2e out of another prefix into the table", body: strings.Replace(s3Notification(f.location+"/data/x.parquet"), "%2Fdata%2F", "%2Fdata%2F%2e%2e%2F", 1),
			header: bearer, status: http.StatusAccepted, ignored: 1},
		{name: "scoped to another bucket", body: s3Notification(f.location + "/data/x.parquet"), sign: "AKOTHER:other-secret-0123456789", status: http.StatusAccepted,
			ignored: 1, reason: "1 named no table to check"},
		{name: "malformed", body: `{"Records":[{"eventName":"ObjectCreated:Put","s3":{"bucket":{"name":"b"}}}]}`, header: bearer,
			status: http.StatusBadRequest, message: "s3.object.key is missing"},
		{name: "not JSON", body: `Records=1`, header: bearer, status: http.StatusBadRequest, message: "not JSON"},
		{name: "wrong token", body: s3Notification(f.location + "/data/x.parquet"),
			header: map[string]string{"Authorization": "Bearer not-the-token", "Content-Type": "application/json"},
			status: http.StatusUnauthorized, message: "the bearer token is not one of events.tokens; POST /icekeeper/v1/events " + accepts},
		{name: "no credentials", body: s3Notification(f.location + "/data/x.parquet"), header: map[string]string{"Content-Type": "application/json"},
			status: http.StatusUnauthorized, message: "the request has no Authorization header; POST /icekeeper/v1/events " + accepts},
		{name: "empty token", body: s3Notification(f.location + "/data/x.parquet"),
			header: map[string]string{"Authorization": "Bearer ", "Content-Type": "application/json"},
			status: http.StatusUnauthorized, message: "the bearer token is empty; POST /icekeeper/v1/events " + accepts},
		{name: "read-only key", body: s3Notification(f.location + "/data/x.parquet"), sign: "AKVIEW:" + viewSecret,
			status: http.StatusForbidden, message: "read-only"},
		{name: "cross-site form", body: s3Notification(f.location + "/data/x.parquet"),
			header: map[string]string{"Content-Type": "text/plain", "Origin": "https://evil.example"}, status: http.StatusForbidden, message: "cross-site"},
		{name: "cross-site fetch with the token", body: s3Notification(f.location + "/data/x.parquet"),
			header: map[string]string{"Authorization": "Bearer " + eventToken, "Content-Type": "application/json", "Origin": "https://evil.example"},
			status: http.StatusForbidden, message: "cross-site"},
		{name: "too large", body: `{"Records":[` + strings.Repeat(" ", 1<<20) + `]}`, header: bearer, status: http.StatusRequestEntityTooLarge},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, a := f.post(t, tc.body, tc.header, tc.sign)
			got := f.sink.take()
			if status != tc.status {
				t.Fatalf("status %d (%+v), want %d", status, a, tc.status)
			}
			if !strings.Contains(a.Message, tc.message) {
				t.Errorf("message %q, want it to say %q", a.Message, tc.message)
			}
			if !slices.Equal(got, tc.checks) {
				t.Errorf("checks queued %v, want %v", got, tc.checks)
			}
			if status == http.StatusAccepted && len(a.Checks) != len(tc.checks) {
				t.Errorf("answer %+v, want %d checks", a, len(tc.checks))
			}
			if status == http.StatusAccepted && a.Ignored != tc.ignored {
				t.Errorf("answer %+v, want %d ignored", a, tc.ignored)
			}
			if tc.reason != "" && !slices.ContainsFunc(a.Reasons, func(r string) bool { return strings.Contains(r, tc.reason) }) {
				t.Errorf("reasons %q, want one saying %q", a.Reasons, tc.reason)
			}
			if len(a.Reasons) != min(a.Ignored, len(a.Reasons)) || a.Ignored > 0 && len(a.Reasons) == 0 {
				t.Errorf("answer %+v: ignored events without a reason", a)
			}
		})
	}
}

// Every method but POST on the event route is answered 405 with Allow,
// before credentials are asked for.
func TestEventRouteMethods(t *testing.T) {
	f := eventServer(t)
	for _, method := range []string{http.MethodGet, http.MethodPut, http.MethodDelete, http.MethodHead} {
		req, _ := http.NewRequest(method, f.url+EventsPath, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var a eventAnswer
		json.NewDecoder(resp.Body).Decode(&a)
		resp.Body.Close()
		if resp.StatusCode != http.StatusMethodNotAllowed || resp.Header.Get("Allow") != http.MethodPost {
			t.Errorf("%s: %d, Allow %q; want 405, Allow POST", method, resp.StatusCode, resp.Header.Get("Allow"))
		}
		if method != http.MethodHead && !strings.Contains(a.Message, "takes POST only") {
			t.Errorf("%s: message %q", method, a.Message)
		}
	}
	if got := f.sink.take(); len(got) != 0 {
		t.Errorf("checks queued %v", got)
	}
}

// The job status carries each type's lag as the last check found it.
func TestJobStatusFreshness(t *testing.T) {
	f := eventServer(t)
	since := time.Now().Add(-3 * time.Minute)
	f.fresh.Set(f.Target().Key(), "", maintenance.Compaction, jobs.Lag{Target: 2 * time.Minute, Checked: time.Now(),
		Oldest: &planner.Oldest{Since: since, What: "3 data files added by snapshot 7 (append)", SnapshotID: 7}, Waits: "budget: the last run left 10 bytes for the rewrite budget"})
	req, _ := http.NewRequest(http.MethodGet, f.url+"/tables/"+url.PathEscape(configs.LocalBucketARN)+"/demo/events/maintenance-job-status", strings.NewReader(""))
	resp, err := signedDo(req, "AKVIEW", viewSecret)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct {
		Status map[string]struct {
			Freshness *jobs.LagView `json:"freshness"`
		} `json:"status"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatal(err)
	}
	lag := out.Status[string(maintenance.Compaction)].Freshness
	if lag == nil || !lag.Late || lag.TargetSeconds != 120 || lag.LagSeconds < 179 || !strings.HasPrefix(lag.Waits, "budget") || !strings.Contains(lag.Oldest, "snapshot 7") {
		t.Fatalf("compaction's freshness %+v, want 3 minutes late on a 2-minute target, waiting for the budget", lag)
	}
	if other := out.Status[string(maintenance.UnreferencedFileRemoval)].Freshness; other != nil {
		t.Errorf("removal's freshness %+v, want none", other)
	}
}
