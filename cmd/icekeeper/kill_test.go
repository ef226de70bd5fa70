package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	_ "github.com/jackc/pgx/v5/stdlib"

	"github.com/icekeeper/icekeeper/configs"
	"github.com/icekeeper/icekeeper/internal/bucket"
	"github.com/icekeeper/icekeeper/internal/demo"
	"github.com/icekeeper/icekeeper/internal/state"
	"github.com/icekeeper/icekeeper/internal/testkit"
	"github.com/icekeeper/icekeeper/internal/testkit/servers"
	"github.com/icekeeper/icekeeper/internal/testkit/tablecheck"
	"github.com/icekeeper/icekeeper/maintenance"
)

// A daemon is killed with SIGKILL in the middle of a compaction. The
// table stays loadable with the same rows; a restarted daemon takes the
// job over once the dead one's lease expires, records the dead run as
// Failed, and finishes the job.
func TestKillDuringJobAndRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := buildBinary(t)
	home := t.TempDir()
	ctx := context.Background()
	// Enough small files that a compaction takes seconds; made by the
	// binary, which (unlike this test under -race) is not instrumented.
	mk := exec.Command(bin, "demo", "--appends", "400")
	mk.Env = append(os.Environ(), "ICEKEEPER_HOME="+home, "ICEKEEPER_CONFIG=")
	if out, err := mk.CombinedOutput(); err != nil {
		t.Fatalf("demo: %v\n%s", err, out)
	}
	reg := configs.Embedded(home).Registry()
	defer reg.Close()
	b, _ := reg.Bucket("local")
	id := bucket.TableID{Namespace: []string{"demo"}, Name: "events"}
	tbl, err := b.LoadTable(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	before, err := tablecheck.Rows(ctx, tbl, 0)
	if err != nil {
		t.Fatal(err)
	}
	cfgFile := filepath.Join(home, "icekeeper.yaml")
	writeHomeConfig(t, cfgFile, home, "127.0.0.1:0", `{icebergSnapshotManagement: {status: disabled}, icebergUnreferencedFileRemoval: {status: disabled}}`,
		`{icebergCompaction: "@every 1s", icebergSnapshotManagement: "@daily", icebergUnreferencedFileRemoval: "@daily"}`)
	start := func() *exec.Cmd {
		cmd := exec.Command(bin, "serve", "--config", cfgFile, "--listen", servers.FreeAddr(t), "--lease-ttl", "3s")
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		return cmd
	}
	store, err := state.Open(ctx, "sqlite://"+filepath.Join(home, "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	key := state.TableKey{Bucket: configs.LocalBucketARN, Namespace: "demo", Name: "events"}
	waitFor := func(what string, within time.Duration, cond func([]state.Run) bool) []state.Run {
		t.Helper()
		deadline := time.Now().Add(within)
		for time.Now().Before(deadline) {
			runs, _ := store.Runs(ctx, key, maintenance.Compaction, 10)
			if cond(runs) {
				return runs
			}
			time.Sleep(50 * time.Millisecond)
		}
		t.Fatalf("timed out waiting for %s", what)
		return nil
	}

	a := start()
	waitFor("a running compaction", time.Minute, func(r []state.Run) bool { return len(r) > 0 && r[0].Status == state.Running })
	time.Sleep(100 * time.Millisecond) // inside the run: planning and rewriting take seconds
	if err := a.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	a.Wait()

	// Right after the kill: the table loads and reads the same rows.
	tbl, err = b.LoadTable(ctx, id)
	if err != nil {
		t.Fatalf("table after kill: %v", err)
	}
	if fp, err := tablecheck.Rows(ctx, tbl, 0); err != nil || !fp.Equal(before) {
		t.Fatalf("rows after kill: %v %v, want %v", fp, err, before)
	}

	bproc := start()
	defer func() { bproc.Process.Signal(syscall.SIGTERM); bproc.Wait() }()
	runs := waitFor("the job to be taken over and succeed", 2*time.Minute, func(r []state.Run) bool {
		return len(r) >= 2 && r[0].Status == state.Successful
	})
	dead := runs[len(runs)-1]
	if dead.Status != state.Failed || dead.FailureMessage == "" {
		t.Fatalf("the killed run is %+v", dead)
	}
	tbl, err = b.LoadTable(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if fp, err := tablecheck.Rows(ctx, tbl, 0); err != nil || !fp.Equal(before) {
		t.Fatalf("rows after takeover: %v %v, want %v", fp, err, before)
	}
	if missing, err := tablecheck.MissingFiles(ctx, tbl); err != nil || len(missing) > 0 {
		t.Fatalf("missing files %v %v", missing, err)
	}
}

// buildBinary builds icekeeper for tests that run and kill it.
func buildBinary(t testing.TB) string {
	t.Helper()
	binary.once.Do(func() {
		if binary.dir, binary.err = os.MkdirTemp("", "icekeeper-test-bin-"); binary.err != nil {
			return
		}
		binary.path = filepath.Join(binary.dir, "icekeeper")
		build := exec.Command("go", "build", "-o", binary.path, ".")
		build.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := build.CombinedOutput(); err != nil {
			binary.err = fmt.Errorf("build: %v\n%s", err, out)
		}
	})
	if binary.err != nil {
		t.Fatal(binary.err)
	}
	return binary.path
}

// binary is the icekeeper binary that the tests running it share: built
// once per test process (a link of the whole program each time cost more
// than most of those tests), removed by TestMain.
var binary struct {
	once      sync.Once
	dir, path string
	err       error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if binary.dir != "" {
		os.RemoveAll(binary.dir)
	}
	os.Exit(code)
}

// A one-shot compaction is killed with SIGKILL inside its commit: the
// catalog row is locked from another PostgreSQL session, so the process
// has written its outputs, manifests and new metadata file and waits in
// the catalog's UPDATE when it dies. The table keeps its metadata and rows,
// and the next run compacts it.
func TestKillDuringCommit(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	dsn := servers.Postgres(t)
	bin := buildBinary(t)
	home := t.TempDir()
	ctx := context.Background()
	cfg := configs.Embedded(home)
	cfg.Buckets[0].Catalog = iceberg.Properties{"type": "sql", "uri": dsn, "warehouse": "file://" + filepath.Join(home, "warehouse")}
	reg := cfg.Registry()
	defer reg.Close()
	b, _ := reg.Bucket("local")
	tbl := testkit.NewTable(t, b, "demo", "events", demo.Schema())
	var err error
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 20; i++ {
		if tbl, err = testkit.AppendRandom(ctx, tbl, 200, int64(i*200), rng); err != nil {
			t.Fatal(err)
		}
	}
	id := bucket.TableID{Namespace: []string{"demo"}, Name: "events"}
	before, err := tablecheck.Rows(ctx, tbl, 0)
	if err != nil {
		t.Fatal(err)
	}
	cfgFile := filepath.Join(home, "icekeeper.yaml")
	yaml := fmt.Sprintf("state: sqlite://%s\nbuckets:\n  - arn: %s\n    catalog: {type: sql, uri: %q, warehouse: %q}\n",
		filepath.Join(home, "state.db"), configs.LocalBucketARN, dsn, "file://"+filepath.Join(home, "warehouse"))
	if err := os.WriteFile(cfgFile, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	run := func() *exec.Cmd {
		return exec.Command(bin, "run", "--config", cfgFile, "--table", "local/demo/events", "--job", "icebergCompaction")
	}

	db := openDB(t, dsn)
	lock, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lock.ExecContext(ctx, "SELECT 1 FROM iceberg_tables WHERE table_namespace = $1 AND table_name = $2 FOR UPDATE", "demo", "events"); err != nil {
		t.Fatal(err)
	}
	cmd := run()
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(2 * time.Minute)
	for {
		var waiting int
		if err := db.QueryRowContext(ctx, "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE 'UPDATE%iceberg_tables%'").Scan(&waiting); err != nil {
			t.Fatal(err)
		}
		if waiting > 0 {
			break
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatal("the compaction never reached its catalog commit")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	if err := lock.Rollback(); err != nil {
		t.Fatal(err)
	}

	after, err := b.LoadTable(ctx, id)
	if err != nil {
		t.Fatalf("table after kill: %v", err)
	}
	if after.MetadataLocation() != tbl.MetadataLocation() {
		t.Fatalf("metadata moved to %s although the commit was killed", after.MetadataLocation())
	}
	if fp, err := tablecheck.Rows(ctx, after, 0); err != nil || !fp.Equal(before) {
		t.Fatalf("rows after kill: %v %v, want %v", fp, err, before)
	}
	if out, err := run().CombinedOutput(); err != nil || !strings.Contains(string(out), "icebergCompaction: Successful") {
		t.Fatalf("next run: %v\n%s", err, out)
	}
	after, err = b.LoadTable(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if after.MetadataLocation() == tbl.MetadataLocation() {
		t.Fatal("the next run did not compact")
	}
	if fp, err := tablecheck.Rows(ctx, after, 0); err != nil || !fp.Equal(before) {
		t.Fatalf("rows after the next run: %v %v, want %v", fp, err, before)
	}
	if missing, err := tablecheck.MissingFiles(ctx, after); err != nil || len(missing) > 0 {
		t.Fatalf("missing files %v %v", missing, err)
	}
}
