package status

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3tables"
	"github.com/aws/aws-sdk-go-v2/service/s3tables/types"
	"github.com/aws/smithy-go"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/icekeeper/icekeeper/compactor"
	"github.com/icekeeper/icekeeper/configs"
	"github.com/icekeeper/icekeeper/expire"
	"github.com/icekeeper/icekeeper/expire/records"
	"github.com/icekeeper/icekeeper/internal/demo"
	"github.com/icekeeper/icekeeper/internal/state"
	"github.com/icekeeper/icekeeper/internal/testkit"
	"github.com/icekeeper/icekeeper/jobs"
	"github.com/icekeeper/icekeeper/maintenance"
	"github.com/icekeeper/icekeeper/statistics"
)

const bucketARN = configs.LocalBucketARN

type fixture struct {
	*testkit.DemoTable
	url    string
	runner *jobs.Runner
	// fresh is the server's table lags, empty until a test sets one.
	fresh *jobs.Freshness
}

func newServer(t *testing.T, api configs.API) *fixture {
	d := testkit.NewDemoTable(t, demo.Options{Appends: 5})
	cfg := configs.Embedded(d.Home)
	if api.SigningName == "" {
		api.SigningName = "s3tables"
	}
	reg := cfg.Registry()
	t.Cleanup(reg.Close)
	runner := &jobs.Runner{Store: d.Store, Jobs: jobs.Map((&expire.Job{}).Definition(), (&records.Job{}).Definition(), (&statistics.Job{}).Definition())}
	queue := &jobs.Engine{Store: d.Store, Registry: reg} // queues only: no worker runs here
	if err := queue.Init(); err != nil {
		t.Fatal(err)
	}
	fresh := &jobs.Freshness{}
	srv := &Server{Registry: reg, Store: d.Store, Runner: runner, Queue: queue, Auth: NewAuth(api), Freshness: fresh}
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)
	return &fixture{DemoTable: d, url: ts.URL, runner: runner, fresh: fresh}
}

func client(url, key, secret string) *s3tables.Client {
	return s3tables.New(s3tables.Options{
		BaseEndpoint: aws.String(url),
		Region:       "us-east-1",
		Credentials:  credentials.NewStaticCredentialsProvider(key, secret, ""),
	})
}

func jobStatus(t *testing.T, c *s3tables.Client) map[string]types.TableMaintenanceJobStatusValue {
	t.Helper()
	out, err := c.GetTableMaintenanceJobStatus(context.Background(), &s3tables.GetTableMaintenanceJobStatusInput{
		TableBucketARN: aws.String(bucketARN), Namespace: aws.String("demo"), Name: aws.String("events")})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(aws.ToString(out.TableARN), "/table/demo/events") {
		t.Fatalf("table ARN %q", aws.ToString(out.TableARN))
	}
	got := map[string]types.TableMaintenanceJobStatusValue{}
	for k, v := range out.Status {
		got[string(k)] = v
	}
	return got
}

// The real AWS SDK client against the server: both Puts and both Gets
// round-trip, job status follows runs, listings work.
func TestSDKRoundTrip(t *testing.T) {
	f := newServer(t, configs.API{})
	ctx := context.Background()
	c := client(f.url, "any", "any")

	st := jobStatus(t, c)
	if len(st) != len(maintenance.MaintenanceTypes()) {
		t.Errorf("job status has %d types, want S3 Tables' %d: %v", len(st), len(maintenance.MaintenanceTypes()), st)
	}
	for _, typ := range maintenance.MaintenanceTypes() {
		want := types.JobStatusNotYetRun
		if maintenance.Defaults(typ).Status == maintenance.Disabled {
			want = types.JobStatusDisabled // erasure, off until asked for
		}
		if st[string(typ)].Status != want {
			t.Fatalf("%s before any run: %+v", typ, st[string(typ)])
		}
	}
	before := time.Now().Add(-time.Second)
	if out, err := f.runner.Run(ctx, f.Target(), maintenance.SnapshotManagement, "test", jobs.Options{}); err != nil || out.Status != "Successful" {
		t.Fatalf("run: %+v %v", out, err)
	}
	st = jobStatus(t, c)
	sm := st[string(maintenance.SnapshotManagement)]
	if sm.Status != types.JobStatusSuccessful || sm.LastRunTimestamp == nil || sm.LastRunTimestamp.Before(before.Truncate(time.Second)) {
		t.Fatalf("after a run: %+v", sm)
	}

	// Table configuration: put compaction settings, read them back.
	_, err := c.PutTableMaintenanceConfiguration(ctx, &s3tables.PutTableMaintenanceConfigurationInput{
		TableBucketARN: aws.String(bucketARN), Namespace: aws.String("demo"), Name: aws.String("events"),
		Type: types.TableMaintenanceTypeIcebergCompaction,
		Value: &types.TableMaintenanceConfigurationValue{Status: types.MaintenanceStatusEnabled,
			Settings: &types.TableMaintenanceSettingsMemberIcebergCompaction{Value: types.IcebergCompactionSettings{TargetFileSizeMB: aws.Int32(256)}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.PutTableMaintenanceConfiguration(ctx, &s3tables.PutTableMaintenanceConfigurationInput{
		TableBucketARN: aws.String(bucketARN), Namespace: aws.String("demo"), Name: aws.String("events"),
		Type:  types.TableMaintenanceTypeIcebergSnapshotManagement,
		Value: &types.TableMaintenanceConfigurationValue{Status: types.MaintenanceStatusDisabled},
	})
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := c.GetTableMaintenanceConfiguration(ctx, &s3tables.GetTableMaintenanceConfigurationInput{
		TableBucketARN: aws.String(bucketARN), Namespace: aws.String("demo"), Name: aws.String("events")})
	if err != nil {
		t.Fatal(err)
	}
	comp := cfg.Configuration[string(types.TableMaintenanceTypeIcebergCompaction)]
	cs, ok := comp.Settings.(*types.TableMaintenanceSettingsMemberIcebergCompaction)
	if !ok || comp.Status != types.MaintenanceStatusEnabled || aws.ToInt32(cs.Value.TargetFileSizeMB) != 256 || cs.Value.Strategy != types.IcebergCompactionStrategyAuto {
		t.Fatalf("compaction config %+v %+v", comp, cs)
	}
	if snap := cfg.Configuration[string(types.TableMaintenanceTypeIcebergSnapshotManagement)]; snap.Status != types.MaintenanceStatusDisabled {
		t.Fatalf("snapshot config %+v", snap)
	}
	// The stored configuration is what the next run uses.
	if c := f.Settings().For(maintenance.Compaction); *c.Compaction().TargetFileSizeMB != 256 {
		t.Fatalf("runner sees %d", *c.Compaction().TargetFileSizeMB)
	}
	if st := jobStatus(t, c); st[string(maintenance.SnapshotManagement)].Status != types.JobStatusDisabled {
		t.Fatalf("disabled type reports %+v", st[string(maintenance.SnapshotManagement)])
	}

	// Bucket configuration.
	_, err = c.PutTableBucketMaintenanceConfiguration(ctx, &s3tables.PutTableBucketMaintenanceConfigurationInput{
		TableBucketARN: aws.String(bucketARN), Type: types.TableBucketMaintenanceTypeIcebergUnreferencedFileRemoval,
		Value: &types.TableBucketMaintenanceConfigurationValue{Status: types.MaintenanceStatusEnabled,
			Settings: &types.TableBucketMaintenanceSettingsMemberIcebergUnreferencedFileRemoval{Value: types.IcebergUnreferencedFileRemovalSettings{
				UnreferencedDays: aws.Int32(5), NonCurrentDays: aws.Int32(20)}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	bc, err := c.GetTableBucketMaintenanceConfiguration(ctx, &s3tables.GetTableBucketMaintenanceConfigurationInput{TableBucketARN: aws.String(bucketARN)})
	if err != nil {
		t.Fatal(err)
	}
	rm := bc.Configuration[string(types.TableBucketMaintenanceTypeIcebergUnreferencedFileRemoval)]
	rs, ok := rm.Settings.(*types.TableBucketMaintenanceSettingsMemberIcebergUnreferencedFileRemoval)
	if !ok || aws.ToInt32(rs.Value.UnreferencedDays) != 5 || aws.ToInt32(rs.Value.NonCurrentDays) != 20 || aws.ToString(bc.TableBucketARN) != bucketARN {
		t.Fatalf("bucket config %+v", bc)
	}

	// Listings.
	lb, err := c.ListTableBuckets(ctx, &s3tables.ListTableBucketsInput{})
	if err != nil || len(lb.TableBuckets) != 1 || aws.ToString(lb.TableBuckets[0].Name) != "local" {
		t.Fatalf("buckets %+v %v", lb, err)
	}
	ln, err := c.ListNamespaces(ctx, &s3tables.ListNamespacesInput{TableBucketARN: aws.String(bucketARN)})
	if err != nil || len(ln.Namespaces) != 1 || ln.Namespaces[0].Namespace[0] != "demo" {
		t.Fatalf("namespaces %+v %v", ln, err)
	}
	lt, err := c.ListTables(ctx, &s3tables.ListTablesInput{TableBucketARN: aws.String(bucketARN), Namespace: aws.String("demo")})
	if err != nil || len(lt.Tables) != 1 || aws.ToString(lt.Tables[0].Name) != "events" {
		t.Fatalf("tables %+v %v", lt, err)
	}
}

// Every error comes back as the SDK's typed exception.
func TestSDKErrors(t *testing.T) {
	f := newServer(t, configs.API{})
	ctx := context.Background()
	c := client(f.url, "any", "any")
	var nf *types.NotFoundException
	var br *types.BadRequestException
	_, err := c.GetTableMaintenanceJobStatus(ctx, &s3tables.GetTableMaintenanceJobStatusInput{
		TableBucketARN: aws.String("arn:aws:s3tables:us-east-1:111122223333:bucket/nope"), Namespace: aws.String("demo"), Name: aws.String("events")})
	if !errors.As(err, &nf) {
		t.Fatalf("unknown bucket: %v", err)
	}
	_, err = c.GetTableMaintenanceConfiguration(ctx, &s3tables.GetTableMaintenanceConfigurationInput{
		TableBucketARN: aws.String(bucketARN), Namespace: aws.String("demo"), Name: aws.String("missing")})
	if !errors.As(err, &nf) {
		t.Fatalf("unknown table: %v", err)
	}
	put := func(typ types.TableMaintenanceType, v *types.TableMaintenanceConfigurationValue) error {
		_, err := c.PutTableMaintenanceConfiguration(ctx, &s3tables.PutTableMaintenanceConfigurationInput{
			TableBucketARN: aws.String(bucketARN), Namespace: aws.String("demo"), Name: aws.String("events"), Type: typ, Value: v})
		return err
	}
	err = put(types.TableMaintenanceTypeIcebergCompaction, &types.TableMaintenanceConfigurationValue{Status: types.MaintenanceStatusEnabled,
		Settings: &types.TableMaintenanceSettingsMemberIcebergCompaction{Value: types.IcebergCompactionSettings{TargetFileSizeMB: aws.Int32(0)}}})
	if !errors.As(err, &br) || !strings.Contains(br.ErrorMessage(), "targetFileSizeMB: 0 is below the minimum 1") {
		t.Fatalf("out of range: %v", err)
	}
	err = put(types.TableMaintenanceTypeIcebergCompaction, &types.TableMaintenanceConfigurationValue{Status: types.MaintenanceStatusEnabled,
		Settings: &types.TableMaintenanceSettingsMemberIcebergSnapshotManagement{Value: types.IcebergSnapshotManagementSettings{MinSnapshotsToKeep: aws.Int32(2)}}})
	if !errors.As(err, &br) || !strings.Contains(br.ErrorMessage(), "does not belong to icebergCompaction") {
		t.Fatalf("settings for another type: %v", err)
	}
	// Nothing was stored by the rejected calls.
	if cfg, _ := f.Store.TableConfig(ctx, f.Target().Key()); len(cfg) != 0 {
		t.Fatalf("rejected puts stored %v", cfg)
	}
	_, err = c.PutTableBucketMaintenanceConfiguration(ctx, &s3tables.PutTableBucketMaintenanceConfigurationInput{
		TableBucketARN: aws.String(bucketARN), Type: types.TableBucketMaintenanceTypeIcebergUnreferencedFileRemoval,
		Value: &types.TableBucketMaintenanceConfigurationValue{Status: "sometimes"}})
	if !errors.As(err, &br) {
		t.Fatalf("bad status: %v", err)
	}
}

// signedDo signs req with SigV4 for s3tables, as the SDK would, and sends it.
func signedDo(req *http.Request, key, secret string) (*http.Response, error) {
	body, _ := io.ReadAll(req.Body)
	req.Body = io.NopCloser(bytes.NewReader(body))
	sum := sha256.Sum256(body)
	payload := hex.EncodeToString(sum[:])
	req.Header.Set("X-Amz-Content-Sha256", payload)
	req.Header.Set("Content-Type", "application/json")
	creds := aws.Credentials{AccessKeyID: key, SecretAccessKey: secret}
	if err := v4.NewSigner().SignHTTP(context.Background(), creds, req, payload, "s3tables", "us-east-1", time.Now()); err != nil {
		return nil, err
	}
	return http.DefaultClient.Do(req)
}

func TestSigV4(t *testing.T) {
	api := configs.API{Keys: []configs.APIKey{
		{AccessKeyID: "AKADMIN", SecretAccessKey: "admin-secret-0123456789"},
		{AccessKeyID: "AKTEAM", SecretAccessKey: "team-secret-0123456789", Scopes: []string{"local/other"}},
	}}
	f := newServer(t, api)
	if st := jobStatus(t, client(f.url, "AKADMIN", "admin-secret-0123456789")); len(st) != len(maintenance.MaintenanceTypes()) {
		t.Fatalf("signed request: %v", st)
	}
	var fb *types.ForbiddenException
	for name, c := range map[string]*s3tables.Client{
		"wrong secret": client(f.url, "AKADMIN", "guess"),
		"unknown key":  client(f.url, "AKNOBODY", "x"),
		"out of scope": client(f.url, "AKTEAM", "team-secret-0123456789"),
	} {
		_, err := c.GetTableMaintenanceJobStatus(context.Background(), &s3tables.GetTableMaintenanceJobStatusInput{
			TableBucketARN: aws.String(bucketARN), Namespace: aws.String("demo"), Name: aws.String("events")})
		if !errors.As(err, &fb) {
			t.Errorf("%s: %v", name, err)
		}
	}
	// A key scoped to a namespace cannot change bucket-wide settings.
	_, err := client(f.url, "AKTEAM", "team-secret-0123456789").PutTableBucketMaintenanceConfiguration(context.Background(), &s3tables.PutTableBucketMaintenanceConfigurationInput{
		TableBucketARN: aws.String(bucketARN), Type: types.TableBucketMaintenanceTypeIcebergUnreferencedFileRemoval,
		Value: &types.TableBucketMaintenanceConfigurationValue{Status: types.MaintenanceStatusDisabled}})
	if !errors.As(err, &fb) {
		t.Fatalf("scoped key changed bucket settings: %v", err)
	}
	// Nor read them: they are the bucket's, not the namespace's.
	_, err = client(f.url, "AKTEAM", "team-secret-0123456789").GetTableBucketMaintenanceConfiguration(context.Background(), &s3tables.GetTableBucketMaintenanceConfigurationInput{
		TableBucketARN: aws.String(bucketARN)})
	if !errors.As(err, &fb) {
		t.Fatalf("scoped key read bucket settings: %v", err)
	}
	if _, err := client(f.url, "AKADMIN", "admin-secret-0123456789").GetTableBucketMaintenanceConfiguration(context.Background(), &s3tables.GetTableBucketMaintenanceConfigurationInput{
		TableBucketARN: aws.String(bucketARN)}); err != nil {
		t.Fatalf("unscoped key: %v", err)
	}
	// A client that signs content-length (botocore, http.NewRequest with a
	// body) is verified too.
	req0, _ := http.NewRequest(http.MethodPut, f.url+"/tables/"+url.PathEscape(bucketARN)+"/demo/events/maintenance/icebergSnapshotManagement",
		strings.NewReader(`{"value":{"status":"disabled"}}`))
	resp0, err := signedDo(req0, "AKADMIN", "admin-secret-0123456789")
	if err != nil {
		t.Fatal(err)
	}
	resp0.Body.Close()
	if resp0.StatusCode != http.StatusNoContent {
		t.Fatalf("signed PUT with content-length: %d %s", resp0.StatusCode, resp0.Header.Get("X-Amzn-ErrorType"))
	}
	// A correctly signed body over the limit is a bad request, not a bad
	// signature.
	req, _ := http.NewRequest(http.MethodPut, f.url+"/tables/"+url.PathEscape(bucketARN)+"/demo/events/maintenance/icebergSnapshotManagement",
		strings.NewReader(`{"value":{"status":"enabled","x":"`+strings.Repeat("x", 70<<10)+`"}}`))
	resp, err := signedDo(req, "AKADMIN", "admin-secret-0123456789")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest || resp.Header.Get("X-Amzn-ErrorType") != "BadRequestException" {
		t.Fatalf("signed oversized body: %d %s", resp.StatusCode, resp.Header.Get("X-Amzn-ErrorType"))
	}
	// Unsigned and replayed-late requests.
	resp, err = http.Get(f.url + "/buckets")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden || resp.Header.Get("X-Amzn-ErrorType") != "ForbiddenException" {
		t.Fatalf("unsigned: %d %s", resp.StatusCode, resp.Header.Get("X-Amzn-ErrorType"))
	}
}

// Raw requests the SDK would never send: malformed JSON, wrong shapes,
// oversized bodies, unknown routes. AWS-style errors, nothing stored.
func TestRawBadInput(t *testing.T) {
	f := newServer(t, configs.API{})
	base := f.url + "/tables/" + url.PathEscape(bucketARN) + "/demo/events/maintenance/icebergCompaction"
	for name, tc := range map[string]struct {
		method, url, body string
		status            int
		kind              string
	}{
		"malformed json":    {"PUT", base, `{"value":`, 400, "BadRequestException"},
		"no value":          {"PUT", base, `{"status":"enabled"}`, 400, "BadRequestException"},
		"wrong type":        {"PUT", base, `{"value":{"status":"enabled","settings":{"icebergCompaction":{"targetFileSizeMB":"big"}}}}`, 400, "BadRequestException"},
		"unknown field":     {"PUT", base, `{"value":{"status":"enabled","color":"red"}}`, 400, "BadRequestException"},
		"huge body":         {"PUT", base, `{"value":"` + strings.Repeat("x", 100<<10) + `"}`, 400, "BadRequestException"},
		"unknown type":      {"PUT", strings.Replace(base, "icebergCompaction", "icebergVacuum", 1), `{}`, 400, "BadRequestException"},
		"unknown route":     {"GET", f.url + "/frobnicate", "", 404, "NotFoundException"},
		"removal per table": {"PUT", strings.Replace(base, "icebergCompaction", "icebergUnreferencedFileRemoval", 1), `{"value":{"status":"enabled"}}`, 400, "BadRequestException"},
		// Record expiration has calls of its own, as in S3 Tables.
		"records as maintenance": {"PUT", strings.Replace(base, "icebergCompaction", "icebergRecordExpiration", 1), `{"value":{"status":"enabled","settings":{"days":3}}}`, 400, "BadRequestException"},
		"records per bucket":     {"PUT", f.url + "/buckets/" + url.PathEscape(bucketARN) + "/maintenance/icebergRecordExpiration", `{"value":{"status":"enabled","settings":{"days":3}}}`, 400, "BadRequestException"},
	} {
		req, _ := http.NewRequest(tc.method, tc.url, strings.NewReader(tc.body))
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.status || resp.Header.Get("X-Amzn-ErrorType") != tc.kind {
			t.Errorf("%s: %d %q, want %d %q", name, resp.StatusCode, resp.Header.Get("X-Amzn-ErrorType"), tc.status, tc.kind)
		}
	}
	if cfg, _ := f.Store.TableConfig(context.Background(), f.Target().Key()); len(cfg) != 0 {
		t.Fatalf("bad requests stored %v", cfg)
	}
	if cfg, _ := f.Store.BucketConfig(context.Background(), bucketARN); len(cfg) != 0 {
		t.Fatalf("bad requests stored %v for the bucket", cfg)
	}
}

// A configuration the table cannot take is refused with the reason when it
// is written, and nothing is stored.
func TestPutChecksTable(t *testing.T) {
	f := newServer(t, configs.API{})
	f.runner.Jobs[maintenance.Compaction] = (&compactor.Job{}).Definition()
	ctx := context.Background()
	c := client(f.url, "any", "any")
	put := func(s types.IcebergCompactionStrategy) error {
		_, err := c.PutTableMaintenanceConfiguration(ctx, &s3tables.PutTableMaintenanceConfigurationInput{
			TableBucketARN: aws.String(bucketARN), Namespace: aws.String("demo"), Name: aws.String("events"),
			Type: types.TableMaintenanceTypeIcebergCompaction,
			Value: &types.TableMaintenanceConfigurationValue{Status: types.MaintenanceStatusEnabled,
				Settings: &types.TableMaintenanceSettingsMemberIcebergCompaction{Value: types.IcebergCompactionSettings{Strategy: s}}},
		})
		return err
	}
	var br *types.BadRequestException
	for _, s := range []types.IcebergCompactionStrategy{types.IcebergCompactionStrategySort, types.IcebergCompactionStrategyZorder} {
		if err := put(s); !errors.As(err, &br) || !strings.Contains(err.Error(), "needs a table sort order") {
			t.Errorf("%s on a table without a sort order: %v", s, err)
		}
	}
	if cfg, _ := f.Store.TableConfig(ctx, f.Target().Key()); len(cfg) != 0 {
		t.Fatalf("refused configuration stored: %v", cfg)
	}
	if err := put(types.IcebergCompactionStrategyBinpack); err != nil {
		t.Fatalf("binpack: %v", err)
	}
}

// api.metricsAuth: /metrics wants the bearer token; unset, it is open.
func TestMetricsAuth(t *testing.T) {
	d := testkit.NewDemoTable(t, demo.Options{Appends: 1})
	reg := configs.Embedded(d.Home).Registry()
	t.Cleanup(reg.Close)
	get := func(srv *Server, token string) int {
		ts := httptest.NewServer(srv.Handler())
		defer ts.Close()
		req, _ := http.NewRequest(http.MethodGet, ts.URL+"/metrics", nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	open := &Server{Registry: reg, Store: d.Store, Metrics: prometheus.NewRegistry()}
	if code := get(open, ""); code != http.StatusOK {
		t.Fatalf("open /metrics: %d", code)
	}
	guarded := &Server{Registry: reg, Store: d.Store, Metrics: prometheus.NewRegistry(), MetricsToken: "m-token"}
	for token, want := range map[string]int{"": 401, "wrong": 401, "m-token": 200} {
		if code := get(guarded, token); code != want {
			t.Errorf("token %q: %d, want %d", token, code, want)
		}
	}
}

func TestCheckListen(t *testing.T) {
	for addr, ok := range map[string]bool{"127.0.0.1:8080": true, "localhost:1": true, "[::1]:80": true, "0.0.0.0:8080": false, ":8080": false, "10.0.0.1:80": false} {
		if err := CheckListen(addr, false); (err == nil) != ok {
			t.Errorf("CheckListen(%s) = %v", addr, err)
		}
	}
	if CheckListen("0.0.0.0:8080", true) != nil {
		t.Error("authenticated API refused a public address")
	}
}

// The routes beyond S3 Tables: history, trigger, noncurrent, restore.
func TestExtraRoutes(t *testing.T) {
	f := newServer(t, configs.API{})
	ctx := context.Background()
	if out, err := f.runner.Run(ctx, f.Target(), maintenance.SnapshotManagement, "test", jobs.Options{}); err != nil || out.Status != "Successful" {
		t.Fatalf("run: %+v %v", out, err)
	}
	base := f.url + "/icekeeper/v1/tables/" + url.PathEscape(bucketARN) + "/demo/events"
	do := func(method, u, body string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest(method, u, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		data, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, resp.Header.Get("X-Amzn-ErrorType") + string(data)
	}
	if code, body := do("GET", base+"/runs?type=icebergSnapshotManagement", ""); code != 200 || !strings.Contains(body, `"status":"Successful"`) || !strings.Contains(body, `"snapshotsExpired"`) {
		t.Fatalf("runs: %d %s", code, body)
	}
	if code, body := do("GET", base+"/runs?limit=0", ""); code != 400 {
		t.Fatalf("bad limit: %d %s", code, body)
	}
	if code, body := do("POST", base+"/runs/icebergCompaction", ""); code != 202 || !strings.Contains(body, `"queued":true`) {
		t.Fatalf("trigger: %d %s", code, body)
	}
	if code, body := do("POST", base+"/runs/icebergCompaction", ""); code != 202 || !strings.Contains(body, `"alreadyQueued":true`) {
		t.Fatalf("second trigger: %d %s", code, body)
	}
	if n, _ := f.Store.QueueDepth(ctx); n != 1 {
		t.Fatalf("queue depth %d", n)
	}
	mark := state.Mark{Table: f.Target().Key(), Path: "file:///x/stray.parquet", Size: 1, MarkedAt: time.Now()}
	if err := f.Store.PutMarks(ctx, []state.Mark{mark}); err != nil {
		t.Fatal(err)
	}
	if code, body := do("GET", base+"/noncurrent", ""); code != 200 || !strings.Contains(body, "stray.parquet") || !strings.Contains(body, "deleteAfter") {
		t.Fatalf("noncurrent: %d %s", code, body)
	}
	if code, body := do("POST", base+"/restore", `{"paths":["file:///x/other.parquet"]}`); code != 404 || !strings.HasPrefix(body, "NotFoundException") {
		t.Fatalf("restore of an unmarked path: %d %s", code, body)
	}
	if code, body := do("POST", base+"/restore", `{"paths":["a"],"all":true}`); code != 400 {
		t.Fatalf("restore with both: %d %s", code, body)
	}
	if code, body := do("POST", base+"/restore", `{"all":true}`); code != 200 || !strings.Contains(body, `"restored":1`) {
		t.Fatalf("restore all: %d %s", code, body)
	}
	if code, body := do("GET", base+"/noncurrent", ""); code != 200 || !strings.Contains(body, `"protectedAt"`) || strings.Contains(body, "deleteAfter") {
		t.Fatalf("noncurrent after restore: %d %s", code, body)
	}
	if code, body := do("POST", base+"/release", `{"paths":["file:///x/other.parquet"]}`); code != 404 {
		t.Fatalf("release of an unprotected path: %d %s", code, body)
	}
	if code, body := do("POST", base+"/release", `{"paths":["file:///x/stray.parquet"]}`); code != 200 || !strings.Contains(body, `"released":1`) {
		t.Fatalf("release: %d %s", code, body)
	}
	if m, _ := f.Store.Marks(ctx, f.Target().Key()); len(m) != 0 {
		t.Fatalf("released mark kept: %+v", m)
	}
	if code, _ := do("GET", base+"/schedule", ""); code != 404 {
		t.Fatalf("schedule without a scheduler: %d", code)
	}
}

// The read routes through the AWS SDK: GetTableBucket, GetNamespace,
// GetTable (both ways of naming the table), GetTableMetadataLocation; and
// the errors AWS gives for what is not there or not an ARN.
func TestReadRoutes(t *testing.T) {
	f := newServer(t, configs.API{})
	ctx := context.Background()
	c := client(f.url, "any", "any")
	tbl := f.Load()

	tb, err := c.GetTableBucket(ctx, &s3tables.GetTableBucketInput{TableBucketARN: aws.String(bucketARN)})
	if err != nil || aws.ToString(tb.Arn) != bucketARN || aws.ToString(tb.Name) != "local" || tb.CreatedAt == nil {
		t.Fatalf("GetTableBucket: %+v %v", tb, err)
	}
	ns, err := c.GetNamespace(ctx, &s3tables.GetNamespaceInput{TableBucketARN: aws.String(bucketARN), Namespace: aws.String("demo")})
	if err != nil || len(ns.Namespace) != 1 || ns.Namespace[0] != "demo" {
		t.Fatalf("GetNamespace: %+v %v", ns, err)
	}
	got, err := c.GetTable(ctx, &s3tables.GetTableInput{TableBucketARN: aws.String(bucketARN), Namespace: aws.String("demo"), Name: aws.String("events")})
	if err != nil || aws.ToString(got.MetadataLocation) != tbl.MetadataLocation() || aws.ToString(got.WarehouseLocation) != tbl.Location() ||
		got.Format != types.OpenTableFormatIceberg || aws.ToString(got.VersionToken) == "" || got.Namespace[0] != "demo" {
		t.Fatalf("GetTable: %+v %v", got, err)
	}
	byARN, err := c.GetTable(ctx, &s3tables.GetTableInput{TableArn: got.TableARN})
	if err != nil || aws.ToString(byARN.MetadataLocation) != tbl.MetadataLocation() {
		t.Fatalf("GetTable by ARN %s: %+v %v", aws.ToString(got.TableARN), byARN, err)
	}
	loc, err := c.GetTableMetadataLocation(ctx, &s3tables.GetTableMetadataLocationInput{TableBucketARN: aws.String(bucketARN),
		Namespace: aws.String("demo"), Name: aws.String("events")})
	if err != nil || aws.ToString(loc.MetadataLocation) != tbl.MetadataLocation() || aws.ToString(loc.VersionToken) != aws.ToString(got.VersionToken) {
		t.Fatalf("GetTableMetadataLocation: %+v %v", loc, err)
	}

	var nf *types.NotFoundException
	if _, err := c.GetNamespace(ctx, &s3tables.GetNamespaceInput{TableBucketARN: aws.String(bucketARN), Namespace: aws.String("nope")}); !errors.As(err, &nf) {
		t.Errorf("missing namespace: %v", err)
	}
	if _, err := c.GetTable(ctx, &s3tables.GetTableInput{TableBucketARN: aws.String(bucketARN), Namespace: aws.String("demo"), Name: aws.String("nope")}); !errors.As(err, &nf) {
		t.Errorf("missing table: %v", err)
	}
	if _, err := c.GetTableBucket(ctx, &s3tables.GetTableBucketInput{TableBucketARN: aws.String("arn:aws:s3tables:us-east-1:1:bucket/other")}); !errors.As(err, &nf) {
		t.Errorf("unknown bucket: %v", err)
	}
	var br *types.BadRequestException
	for name, call := range map[string]func() error{
		"GetTableBucket": func() error {
			_, err := c.GetTableBucket(ctx, &s3tables.GetTableBucketInput{TableBucketARN: aws.String("not-an-arn")})
			return err
		},
		"GetTableMaintenanceJobStatus": func() error {
			_, err := c.GetTableMaintenanceJobStatus(ctx, &s3tables.GetTableMaintenanceJobStatusInput{TableBucketARN: aws.String("arn:aws:s3:::bucket"),
				Namespace: aws.String("demo"), Name: aws.String("events")})
			return err
		},
		"GetTable by a bad table ARN": func() error {
			_, err := c.GetTable(ctx, &s3tables.GetTableInput{TableArn: aws.String(bucketARN + "/events")})
			return err
		},
	} {
		if err := call(); !errors.As(err, &br) {
			t.Errorf("%s with a malformed ARN: %v", name, err)
		}
	}
}

// Every S3 Tables operation icekeeper does not implement answers AWS's
// UnknownOperationException naming it, through the SDK as on the wire, and
// changes nothing.
func TestUnsupportedOperations(t *testing.T) {
	f := newServer(t, configs.API{})
	ctx := context.Background()
	c := client(f.url, "any", "any")
	want := func(op string, err error) {
		t.Helper()
		var ae smithy.APIError
		if !errors.As(err, &ae) || ae.ErrorCode() != "UnknownOperationException" || !strings.Contains(ae.ErrorMessage(), op) {
			t.Fatalf("%s: %v", op, err)
		}
	}
	_, err := c.DeleteTable(ctx, &s3tables.DeleteTableInput{TableBucketARN: aws.String(bucketARN), Namespace: aws.String("demo"), Name: aws.String("events")})
	want("DeleteTable", err)
	_, err = c.CreateTable(ctx, &s3tables.CreateTableInput{TableBucketARN: aws.String(bucketARN), Namespace: aws.String("demo"), Name: aws.String("other"), Format: types.OpenTableFormatIceberg})
	want("CreateTable", err)
	_, err = c.GetTableReplication(ctx, &s3tables.GetTableReplicationInput{TableArn: aws.String(bucketARN + "/table/demo/events")})
	want("GetTableReplication", err)
	_, err = c.TagResource(ctx, &s3tables.TagResourceInput{ResourceArn: aws.String(bucketARN), Tags: map[string]string{"a": "b"}})
	want("TagResource", err)
	if _, err := c.GetTable(ctx, &s3tables.GetTableInput{TableBucketARN: aws.String(bucketARN), Namespace: aws.String("demo"), Name: aws.String("events")}); err != nil {
		t.Fatalf("the table after a refused DeleteTable: %v", err)
	}

	arn := url.PathEscape(bucketARN)
	for _, u := range unsupported {
		method, path, _ := strings.Cut(u.pattern, " ")
		path = strings.NewReplacer("{arn}", arn, "{namespace}", "demo", "{name}", "events").Replace(path)
		req, _ := http.NewRequest(method, f.url+path, strings.NewReader("{}"))
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest || resp.Header.Get("X-Amzn-ErrorType") != "UnknownOperationException" || !strings.Contains(string(body), u.op) {
			t.Errorf("%s %s: %d %s %s", method, path, resp.StatusCode, resp.Header.Get("X-Amzn-ErrorType"), body)
		}
	}
}

// namingFigures name objects; they count nothing.
type namingFigures struct {
	jobs.Common
	Files  []string `json:"files"`
	Source string   `json:"source"`
}

func (*namingFigures) Counters() map[string]float64 { return nil }
func (*namingFigures) Text() string                 { return "" }

// figuresJob reports fig: figures naming objects with quotes,
// backslashes, non-ASCII letters and percent signs, and a presigned URI.
func figuresJob(fig *namingFigures) jobs.Job {
	return &jobs.Definition[struct{}, *namingFigures]{
		Name:     maintenance.Compaction,
		Settings: func(maintenance.Settings) (struct{}, error) { return struct{}{}, nil },
		Figures:  func(struct{}, jobs.Options) *namingFigures { return fig },
		Run:      func(context.Context, *jobs.Run[struct{}], *namingFigures) error { return nil },
	}
}

// A run's figures go through the runner, the store and the runs route
// intact: the route answers valid JSON, each object name as it was, the
// credential masked.
func TestRunFiguresRoundTrip(t *testing.T) {
	f := newServer(t, configs.API{})
	names := []string{`s3://b/ns/t/data/q"uote.parquet`, `s3://b/ns/t/data/back\slash`, "s3://b/ns/t/data/café-日本 100%.parquet"}
	f.runner.Jobs[maintenance.Compaction] = figuresJob(&namingFigures{Files: names, Source: "https://h/o?X-Amz-Signature=s1gn&a=1"})
	if out, err := f.runner.Run(context.Background(), f.Target(), maintenance.Compaction, "test", jobs.Options{}); err != nil || out.Status != state.Successful {
		t.Fatalf("run: %+v %v", out, err)
	}
	resp, err := http.Get(f.url + "/icekeeper/v1/tables/" + url.PathEscape(bucketARN) + "/demo/events/runs?type=icebergCompaction")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	var got struct {
		Runs map[string][]struct {
			Metrics namingFigures `json:"metrics"`
		} `json:"runs"`
	}
	if err := json.Unmarshal(body, &got); resp.StatusCode != 200 || err != nil {
		t.Fatalf("runs: %d %v %q", resp.StatusCode, err, body)
	}
	runs := got.Runs["icebergCompaction"]
	if len(runs) != 1 {
		t.Fatalf("runs: %s", body)
	}
	m := runs[0].Metrics
	if strings.Join(m.Files, "|") != strings.Join(names, "|") || m.Source != "https://h/o?X-Amz-Signature=***&a=1" || bytes.Contains(body, []byte("s1gn")) {
		t.Fatalf("figures after the store: %+v", m)
	}
}
