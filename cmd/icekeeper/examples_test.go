package main

import (
	"context"
	"encoding/json"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/icekeeper/icekeeper/configs"
	"github.com/icekeeper/icekeeper/internal/bucket"
	"github.com/icekeeper/icekeeper/internal/demo"
	"github.com/icekeeper/icekeeper/internal/testkit"
	"github.com/icekeeper/icekeeper/internal/testkit/servers"
	"github.com/icekeeper/icekeeper/internal/testkit/tablecheck"
)

// configs/seaweedfs.yaml as a user runs it: the file unchanged (copied
// beside its state store, so that the checkout stays clean), the server
// and table bucket given through the variables it documents, the bucket
// ARN as the warehouse. check --connect reaches everything, and a
// compaction through it compacts, keeps the rows, and says what it cost.
func TestSeaweedFSExample(t *testing.T) {
	srv := servers.REST(t)
	c := newCLI(t)
	ctx := context.Background()
	data, err := os.ReadFile(filepath.Join("..", "..", "configs", "seaweedfs.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	cfgPath := filepath.Join(t.TempDir(), "seaweedfs.yaml")
	if err := os.WriteFile(cfgPath, data, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("SEAWEEDFS_ICEBERG_URI", srv.URI)
	t.Setenv("SEAWEEDFS_S3_ENDPOINT", srv.S3Endpoint)
	t.Setenv("SEAWEEDFS_TABLE_BUCKET_ARN", srv.BucketARN)

	cfg, err := configs.Load(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.Buckets[0].Catalog["warehouse"]; got != srv.BucketARN {
		t.Fatalf("warehouse %q, want the bucket ARN %s", got, srv.BucketARN)
	}
	reg := cfg.Registry()
	defer reg.Close()
	b, err := reg.Bucket(srv.Bucket)
	if err != nil {
		t.Fatal(err)
	}
	tbl := testkit.NewTable(t, b, "db", "events", demo.Schema())
	rng := rand.New(rand.NewPCG(3, 4))
	for range 8 {
		if tbl, err = testkit.AppendRandom(ctx, tbl, 50, 0, rng); err != nil {
			t.Fatal(err)
		}
	}
	want, err := tablecheck.Rows(ctx, tbl, 0)
	if err != nil {
		t.Fatal(err)
	}

	out := c.must("check", "--config", cfgPath, "--connect")
	for _, line := range []string{"ok: 1 tables", "ok: s3://" + srv.Bucket} {
		if !strings.Contains(out, line) {
			t.Errorf("check --connect lacks %q:\n%s", line, out)
		}
	}

	var res map[string]struct {
		Status  string `json:"status"`
		Figures struct {
			InputFiles  int `json:"inputFiles"`
			OutputFiles int `json:"outputFiles"`
			Cost        struct {
				Requests       int64            `json:"requests"`
				ByKind         map[string]int64 `json:"byKind"`
				BytesRead      int64            `json:"bytesRead"`
				BytesWritten   int64            `json:"bytesWritten"`
				ProcessedBytes int64            `json:"processedBytes"`
				USD            float64          `json:"usd"`
				S3TablesUSD    float64          `json:"s3TablesUSD"`
			} `json:"cost"`
		} `json:"figures"`
	}
	if err := json.Unmarshal([]byte(c.must("run", "--config", cfgPath, "--table", srv.Bucket+"/db/events", "--job", "compaction", "--json")), &res); err != nil {
		t.Fatal(err)
	}
	r := res["icebergCompaction"]
	if r.Status != "Successful" || r.Figures.InputFiles != 8 || r.Figures.OutputFiles != 1 {
		t.Fatalf("compaction through the example: %+v", r)
	}
	id := bucket.TableID{Namespace: []string{"db"}, Name: "events"}
	after, err := b.LoadTable(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := tablecheck.Rows(ctx, after, 0); err != nil || !got.Equal(want) {
		t.Fatalf("rows %v, want %v (%v)", got, want, err)
	}
	// The run's requests, counted at icekeeper's own clients: the eight
	// inputs read (GET), one output and the commit's metadata written
	// (PUT), and the REST catalog's calls.
	cost := r.Figures.Cost
	t.Logf("cost: %+v", cost)
	if cost.ByKind["GET"] < 8 || cost.ByKind["PUT"] < 2 || cost.ByKind["CATALOG"] < 2 || cost.BytesRead == 0 ||
		cost.BytesWritten == 0 || cost.USD <= 0 || cost.S3TablesUSD <= 0 {
		t.Errorf("cost not counted: %+v", cost)
	}
}
