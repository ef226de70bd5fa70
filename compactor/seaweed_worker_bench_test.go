package compactor

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/icekeeper/icekeeper/configs"
	"github.com/icekeeper/icekeeper/internal/bucket"
	"github.com/icekeeper/icekeeper/internal/testkit/child"
	"github.com/icekeeper/icekeeper/internal/testkit/servers"
	"github.com/icekeeper/icekeeper/internal/testkit/tablecheck"
)

// The two copies of each input in the SeaweedFS worker comparison
// (scripts/bench-seaweed-worker.sh): one for SeaweedFS's maintenance
// worker, one for `icekeeper run`.
var seaweedSides = []string{"worker", "icekeeper"}

// seaweedRows is the rows of one append in the worker comparison; the
// partitioned input spreads about as many over its 16 partitions.
const seaweedRows = 5000

// TestSeaweedWorkerBenchChild is the table side of
// scripts/bench-seaweed-worker.sh, run as a benchmark child with the
// arguments
//
//	build DIR flat|partitioned   a table bucket on the REST catalog of
//	                             ICEKEEPER_TEST_REST*, with bench.worker and
//	                             bench.icekeeper built alike; DIR gets the
//	                             icekeeper.yaml that reaches it and the
//	                             bucket's name
//	check DIR                    both tables' rows against the input's,
//	                             and their data files, as one JSON line
func TestSeaweedWorkerBenchChild(t *testing.T) {
	args := child.Args()
	if len(args) < 2 || (args[0] != "build" && args[0] != "check") {
		t.Skip("benchmark child only")
	}
	ctx := context.Background()
	dir := args[1]
	switch args[0] {
	case "build":
		if len(args) != 3 || (args[2] != "flat" && args[2] != "partitioned") {
			t.Fatalf("build wants DIR flat|partitioned, got %q", args[1:])
		}
		appends := 200
		if v, err := strconv.Atoi(os.Getenv("ICEKEEPER_BENCH_COMPACT_FILES")); err == nil && v > 0 {
			appends = v
		}
		partitioned, rows := args[2] == "partitioned", seaweedRows
		if partitioned {
			rows = seaweedRows / 16
		}
		srv := servers.REST(t)
		cfgPath, err := writeSeaweedConfig(dir, srv)
		if err != nil {
			t.Fatal(err)
		}
		b := seaweedBucket(t, cfgPath)
		inputBytes, err := buildBenchTables(ctx, b, seaweedSides, appends, rows, partitioned, "zstd", nil)
		if err != nil {
			t.Fatalf("build tables in %s: %v", srv.Bucket, err)
		}
		fmt.Printf("built bench.worker and bench.icekeeper in table bucket %s: %d appends, %d input bytes each\n", srv.Bucket, appends, inputBytes)
	case "check":
		b := seaweedBucket(t, filepath.Join(dir, "icekeeper.yaml"))
		out, err := checkSeaweedSides(ctx, b)
		if err != nil {
			t.Fatal(err)
		}
		data, _ := json.Marshal(out)
		fmt.Println(string(data))
		if !out.Equal {
			t.Fatalf("the sides' rows differ: %s", data)
		}
	}
}

// writeSeaweedConfig writes DIR/icekeeper.yaml for the table bucket
// (compaction toward 128 MB, bin-pack, state beside it) and DIR/bucket.
func writeSeaweedConfig(dir string, srv servers.RESTServer) (string, error) {
	var props []string
	for k, v := range srv.Props() {
		props = append(props, fmt.Sprintf("      %s: %q", k, v))
	}
	// ICEKEEPER_BENCH_SKIP_ROW_CHECK measures the run without its row
	// check, as BenchmarkCompaction's does: what the check's read-back
	// costs the storage server.
	skip := os.Getenv("ICEKEEPER_BENCH_SKIP_ROW_CHECK") != ""
	// ICEKEEPER_BENCH_UNSIGNED_PAYLOAD sends icekeeper's uploads unsigned
	// (s3UnsignedPayload), as weed on loopback allows.
	unsigned := os.Getenv("ICEKEEPER_BENCH_UNSIGNED_PAYLOAD") != ""
	yaml := fmt.Sprintf(`state: sqlite://state.db
buckets:
  - arn: %s
    catalog:
%s
    maintenance:
      icebergCompaction: {targetFileSizeMB: 128, strategy: binpack}
    compaction: {skipRowCheck: %t}
    s3UnsignedPayload: %t
`, srv.BucketARN, strings.Join(props, "\n"), skip, unsigned)
	path := filepath.Join(dir, "icekeeper.yaml")
	if err := os.WriteFile(path, []byte(yaml), 0o644); err != nil {
		return "", fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.WriteFile(filepath.Join(dir, "bucket"), []byte(srv.Bucket+"\n"), 0o644); err != nil {
		return "", fmt.Errorf("write bucket name: %w", err)
	}
	return path, nil
}

// seaweedBucket opens the one bucket of the configuration at path; the
// registry lives as long as the test.
func seaweedBucket(t *testing.T, path string) *bucket.Bucket {
	t.Helper()
	cfg, err := configs.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	reg := cfg.Registry()
	t.Cleanup(func() { reg.Close() })
	return reg.Buckets()[0]
}

// seaweedSide is one table's state after its compaction.
type seaweedSide struct {
	Snapshots int    `json:"snapshots"` // snapshots after the input's last append
	Rows      int64  `json:"rows"`
	Files     int    `json:"dataFiles"`
	Bytes     int64  `json:"dataBytes"`
	SameRows  bool   `json:"sameRowsAsInput"`
	Operation string `json:"operation"` // the current snapshot's
}

type seaweedCheck struct {
	InputRows  int64                  `json:"inputRows"`
	InputFiles int                    `json:"inputFiles"`
	InputBytes int64                  `json:"inputBytes"`
	Sides      map[string]seaweedSide `json:"sides"`
	// Equal is true when both sides compacted (a snapshot after the input)
	// and read back the input's multiset of rows.
	Equal bool `json:"equal"`
}

// checkSeaweedSides fingerprints the input once (bench.icekeeper at its
// last append; both copies were built alike) and each side's current
// rows, in one process, since fingerprints are comparable only there.
func checkSeaweedSides(ctx context.Context, b *bucket.Bucket) (seaweedCheck, error) {
	var out seaweedCheck
	out.Sides = map[string]seaweedSide{}
	var input tablecheck.Fingerprint
	out.Equal = true
	for _, name := range []string{"icekeeper", "worker"} {
		id := bucket.TableID{Namespace: []string{"bench"}, Name: name}
		tbl, err := b.LoadTable(ctx, id)
		if err != nil {
			return out, fmt.Errorf("load bench.%s: %w", name, err)
		}
		var side seaweedSide
		cur := tbl.CurrentSnapshot()
		if cur == nil {
			return out, fmt.Errorf("bench.%s has no snapshot", name)
		}
		side.Operation = string(cur.Summary.Operation)
		last := cur
		for last != nil && last.Summary.Operation != table.OpAppend {
			side.Snapshots++
			if last.ParentSnapshotID == nil {
				last = nil
				break
			}
			last = tbl.Metadata().SnapshotByID(*last.ParentSnapshotID)
		}
		if last == nil {
			return out, fmt.Errorf("bench.%s: no append snapshot below the current one", name)
		}
		if name == "icekeeper" {
			if input, err = tablecheck.Rows(ctx, tbl, last.SnapshotID); err != nil {
				return out, err
			}
			out.InputRows = input.Rows
			if out.InputFiles, out.InputBytes, err = dataFiles(ctx, tbl, last.SnapshotID); err != nil {
				return out, fmt.Errorf("bench.%s input files: %w", name, err)
			}
		}
		fp, err := tablecheck.Rows(ctx, tbl, 0)
		if err != nil {
			return out, err
		}
		side.Rows, side.SameRows = fp.Rows, fp.Equal(input)
		if side.Files, side.Bytes, err = dataFiles(ctx, tbl, 0); err != nil {
			return out, fmt.Errorf("bench.%s files: %w", name, err)
		}
		out.Equal = out.Equal && side.SameRows && side.Snapshots > 0
		out.Sides[name] = side
	}
	return out, nil
}

// dataFiles counts the data files of a snapshot (the current one when
// snapshotID is 0) and their bytes. A file over the scan's split size is
// planned as several tasks, so files are counted by path.
func dataFiles(ctx context.Context, tbl *table.Table, snapshotID int64) (int, int64, error) {
	var opts []table.ScanOption
	if snapshotID != 0 {
		opts = append(opts, table.WithSnapshotID(snapshotID))
	}
	tasks, err := tbl.Scan(opts...).PlanFiles(ctx)
	if err != nil {
		return 0, 0, err
	}
	seen := map[string]bool{}
	var n int64
	for _, task := range tasks {
		if task.File.ContentType() != iceberg.EntryContentData || seen[task.File.FilePath()] {
			continue
		}
		seen[task.File.FilePath()] = true
		n += task.File.FileSizeBytes()
	}
	return len(seen), n, nil
}
