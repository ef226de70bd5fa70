package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/icekeeper/icekeeper/configs"
	"github.com/icekeeper/icekeeper/internal/bucket"
	"github.com/icekeeper/icekeeper/internal/maintenance"
	"github.com/icekeeper/icekeeper/internal/state"
	"github.com/icekeeper/icekeeper/internal/tablecheck"
)

// A daemon is killed with SIGKILL in the middle of a compaction. The
// table stays loadable with the same rows; a restarted daemon takes the
// job over once the dead one's lease expires, records the dead run as
// Failed, and finishes the job.
func TestKillDuringJobAndRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := filepath.Join(t.TempDir(), "icekeeper")
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	home := t.TempDir()
	ctx := context.Background()
	// Enough small files that a compaction takes seconds; made by the
	// binary, which (unlike this test under -race) is not instrumented.
	mk := exec.Command(bin, "demo", "--appends", "400")
	mk.Env = append(os.Environ(), "ICEKEEPER_HOME="+home, "ICEKEEPER_CONFIG=")
	if out, err := mk.CombinedOutput(); err != nil {
		t.Fatalf("demo: %v\n%s", err, out)
	}
	reg := bucket.New(configs.Embedded(home))
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
		cmd := exec.Command(bin, "serve", "--config", cfgFile, "--listen", freeAddr(t), "--lease-ttl", "3s")
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
