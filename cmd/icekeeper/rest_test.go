package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/iceberg-go/table"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/icekeeper/icekeeper/configs"
	"github.com/icekeeper/icekeeper/internal/bucket"
	"github.com/icekeeper/icekeeper/internal/demo"
	"github.com/icekeeper/icekeeper/internal/testkit"
	"github.com/icekeeper/icekeeper/internal/testkit/servers"
	"github.com/icekeeper/icekeeper/internal/testkit/tablecheck"
)

// The three jobs end to end on a table bucket behind an Iceberg REST
// catalog with SigV4 and S3 (SeaweedFS), as `icekeeper run` runs them:
// compaction and snapshot expiration beside a writer committing every
// 100 ms, then unreferenced file removal marking the strays and the
// files only expired snapshots reached, and deleting them once their
// noncurrent days have passed. The rows stay exact throughout and no file
// the metadata reaches goes missing.
func TestRESTCatalogEndToEnd(t *testing.T) {
	srv := servers.REST(t)
	c := newCLI(t)
	ctx := context.Background()
	cfgPath, b := restConfig(t, srv.BucketARN, srv.Bucket, srv.Props(), `
    maintenance:
      icebergCompaction: {targetFileSizeMB: 64, strategy: binpack}
      icebergSnapshotManagement: {minSnapshotsToKeep: 1, maxSnapshotAgeHours: 1}
      icebergUnreferencedFileRemoval: {unreferencedDays: 1, nonCurrentDays: 1}`)

	// The table, created and filled through the REST catalog.
	tbl := testkit.NewTable(t, b, "db", "events", demo.Schema())
	rng := rand.New(rand.NewPCG(1, 2))
	var err error
	for i := 0; i < 40; i++ {
		if tbl, err = testkit.AppendRandom(ctx, tbl, 100, 0, rng); err != nil {
			t.Fatal(err)
		}
	}
	id := bucket.TableID{Namespace: []string{"db"}, Name: "events"}
	load := func() *table.Table {
		t.Helper()
		tbl, err := b.LoadTable(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		return tbl
	}
	want, err := tablecheck.Rows(ctx, load(), 0)
	if err != nil {
		t.Fatal(err)
	}
	// A crashed writer's files: under the table's data directory, in no
	// snapshot.
	s3c := s3.New(s3.Options{Region: "us-east-1", BaseEndpoint: aws.String(srv.S3Endpoint), UsePathStyle: true,
		Credentials: credentials.NewStaticCredentialsProvider(srv.Key, srv.Secret, "")})
	prefix := strings.TrimPrefix(tbl.Location(), "s3://"+srv.Bucket+"/") + "/data/"
	var strays []string
	for i := 0; i < 3; i++ {
		key := fmt.Sprintf("%sstray-%d.parquet", prefix, i)
		if _, err := s3c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(srv.Bucket), Key: aws.String(key), Body: bytes.NewReader([]byte("half a file"))}); err != nil {
			t.Fatal(err)
		}
		strays = append(strays, key)
	}

	run := func(job string, now time.Time) map[string]any {
		t.Helper()
		args := []string{"run", "--config", cfgPath, "--table", srv.Bucket + "/db/events", "--job", job, "--json"}
		if !now.IsZero() {
			args = append(args, "--now", now.UTC().Format(time.RFC3339), "--allow-clock-shift")
		}
		var res map[string]struct {
			Status         string         `json:"status"`
			FailureMessage string         `json:"failureMessage"`
			Figures        map[string]any `json:"figures"`
		}
		if err := json.Unmarshal([]byte(c.must(args...)), &res); err != nil {
			t.Fatal(err)
		}
		if r := res[job]; r.Status != "Successful" {
			t.Fatalf("%s: %s %s", job, r.Status, r.FailureMessage)
		}
		return res[job].Figures
	}

	// Compaction beside the writer.
	w := &testkit.Writer{Load: func(ctx context.Context) (*table.Table, error) { return b.LoadTable(ctx, id) },
		Interval: 100 * time.Millisecond, Rows: 20, Seed: 9}
	stop := w.Start(ctx)
	w.Await(3)
	fig := run("icebergCompaction", time.Time{})
	if fig["commits"].(float64) < 1 || fig["outputFiles"].(float64) >= fig["inputFiles"].(float64) {
		t.Fatalf("compaction did not compact: %v", fig)
	}
	t.Logf("compaction: %v files -> %v in %v attempts (%v lost)", fig["inputFiles"], fig["outputFiles"], fig["commitAttempts"], fig["conflicts"])
	// Two hours on, every snapshot but the newest is past its age; the
	// writer goes on meanwhile.
	now := time.Now()
	if fig := run("icebergSnapshotManagement", now.Add(2*time.Hour)); fig["snapshotsExpired"].(float64) < 40 {
		t.Fatalf("expired %v snapshots, want the 40 appends' at least", fig["snapshotsExpired"])
	}
	if err := stop(); err != nil {
		t.Fatalf("writer: %v", err)
	}
	t.Logf("writer: %+v", w.Stats())
	want.Add(w.Written())
	check := func(stage string) {
		t.Helper()
		after := load()
		if got, err := tablecheck.Rows(ctx, after, 0); err != nil || !got.Equal(want) {
			t.Fatalf("after %s: rows %v, want %v (%v)", stage, got, want, err)
		}
		if missing, err := tablecheck.MissingFiles(ctx, after); err != nil || len(missing) > 0 {
			t.Fatalf("after %s: reachable files missing: %v %v", stage, missing, err)
		}
	}
	check("compaction and snapshot expiration")

	// Two days on, the strays and what only expired snapshots reached are
	// marked; two days later still, they are deleted.
	fig = run("icebergUnreferencedFileRemoval", now.Add(48*time.Hour))
	if fig["marked"].(float64) < 3+40 {
		t.Fatalf("marked %v, want the 3 strays and the 40 compacted files at least: %v", fig["marked"], fig)
	}
	check("marking")
	fig = run("icebergUnreferencedFileRemoval", now.Add(96*time.Hour))
	if fig["deleted"].(float64) < 3+40 {
		t.Fatalf("deleted %v: %v", fig["deleted"], fig)
	}
	check("deletion")
	for _, key := range strays {
		_, err := s3c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(srv.Bucket), Key: aws.String(key)})
		var nf *types.NotFound
		if !errors.As(err, &nf) {
			t.Errorf("stray %s: %v, want it deleted", key, err)
		}
	}
}

// `icekeeper run` on a REST catalog asks the catalog for the table once:
// finding the table and the run's load are the same request, whether or
// not the catalog advertises a HEAD route for existence checks.
func TestRunLoadsRESTTableOnce(t *testing.T) {
	srv := servers.REST(t)
	c := newCLI(t)
	ctx := context.Background()
	var mu sync.Mutex
	loads := map[string]int{}
	target, err := url.Parse(srv.URI)
	if err != nil {
		t.Fatal(err)
	}
	proxy := &httputil.ReverseProxy{Rewrite: func(r *httputil.ProxyRequest) {
		r.SetURL(target)
		r.Out.Host = r.In.Host // SigV4 signs the host the client saw
	}}
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/tables/events") {
			mu.Lock()
			loads[r.Method]++
			mu.Unlock()
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(front.Close)
	props := srv.Props()
	props["uri"] = front.URL + strings.TrimPrefix(srv.URI, target.Scheme+"://"+target.Host)
	cfgPath, b := restConfig(t, srv.BucketARN, srv.Bucket, props, "")
	tbl := testkit.NewTable(t, b, "db", "events", demo.Schema())
	if _, err := testkit.AppendRandom(ctx, tbl, 100, 0, rand.New(rand.NewPCG(1, 2))); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	clear(loads)
	mu.Unlock()
	c.must("run", "--config", cfgPath, "--table", srv.Bucket+"/db/events", "--job", "icebergSnapshotManagement")
	mu.Lock()
	defer mu.Unlock()
	if loads["GET"]+loads["HEAD"] != 1 {
		t.Fatalf("the catalog was asked for the table %v; want one load", loads)
	}
	// A table that is not there is still refused before anything runs.
	if code, _, errOut := c.run("run", "--config", cfgPath, "--table", srv.Bucket+"/db/nothing"); code == 0 || !strings.Contains(errOut, "nothing") {
		t.Fatalf("a missing table: exit %d, %q", code, errOut)
	}
}

// restConfig writes a configuration of one bucket on a REST catalog with
// catalog properties props, and extra after them (YAML of the bucket's),
// and returns its path and the bucket it opens, closed with the test.
func restConfig(t *testing.T, arn, name string, props map[string]string, extra string) (string, *bucket.Bucket) {
	t.Helper()
	var lines []string
	for k, v := range props {
		lines = append(lines, fmt.Sprintf("      %s: %q", k, v))
	}
	path := filepath.Join(t.TempDir(), "icekeeper.yaml")
	yaml := fmt.Sprintf("state: sqlite://state.db\nbuckets:\n  - arn: %s\n    catalog:\n%s%s\n", arn, strings.Join(lines, "\n"), extra)
	if err := os.WriteFile(path, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := configs.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	reg := cfg.Registry()
	t.Cleanup(reg.Close)
	b, err := reg.Bucket(name)
	if err != nil {
		t.Fatal(err)
	}
	return path, b
}
