package main

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/icekeeper/icekeeper/configs"
	"github.com/icekeeper/icekeeper/internal/bucket"
	"github.com/icekeeper/icekeeper/internal/demo"
	"github.com/icekeeper/icekeeper/internal/state"
	"github.com/icekeeper/icekeeper/internal/testkit"
	"github.com/icekeeper/icekeeper/internal/testkit/servers"
	"github.com/icekeeper/icekeeper/internal/testkit/tablecheck"
	"github.com/icekeeper/icekeeper/maintenance"
)

// Three `icekeeper serve` processes share one PostgreSQL state store (and
// River's queue in it) and compact tables of a PostgreSQL catalog on S3.
// The replica running a compaction is killed with SIGKILL mid-run. Every
// table ends compacted with the same rows and no referenced file missing,
// the killed run is taken over by a survivor and recorded as Failed, and
// no two compactions of one table ever overlapped in time.
func TestReplicasShareOnePostgres(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	ctx := context.Background()
	catalogDSN, stateDSN := servers.Postgres(t), servers.Postgres(t)
	s3srv := servers.S3(t)
	bin := buildBinary(t)
	home := t.TempDir()

	catalog := map[string]string{"type": "sql", "uri": catalogDSN, "warehouse": "s3://" + s3srv.Bucket + "/warehouse"}
	for k, v := range s3srv.Props() {
		catalog[k] = v
	}
	b := catalogBucket(t, home, catalog)
	const tables = 4
	rng := rand.New(rand.NewPCG(7, 8))
	before := map[string]tablecheck.Fingerprint{}
	for i := range tables {
		name := fmt.Sprintf("t%d", i)
		tbl := testkit.NewTable(t, b, "demo", name, demo.Schema())
		var err error
		if tbl, err = testkit.AppendCommits(ctx, tbl, 30, 100, int64(i)*10000, rng); err != nil {
			t.Fatal(err)
		}
		if before[name], err = tablecheck.Rows(ctx, tbl, 0); err != nil {
			t.Fatal(err)
		}
	}
	replicas, addrs := startReplicas(t, bin, home, stateDSN, catalog, 3, 1)
	defer stopReplicas(replicas)

	// River records which replica works a job; a replica's River ID is
	// host-pid-random.
	db := openDB(t, stateDSN)
	var victim *exec.Cmd
	var victimJob int64
	deadline := time.Now().Add(2 * time.Minute)
	for victim == nil && time.Now().Before(deadline) {
		// A job running, whose run is recorded: the compaction is under way.
		rows, err := db.QueryContext(ctx, `SELECT j.id, j.attempted_by[array_upper(j.attempted_by, 1)] FROM river_job j
			JOIN runs r ON r.namespace = j.args->>'namespace' AND r.name = j.args->>'name' AND r.status = 'Running'
			WHERE j.state = 'running' AND j.kind = 'icekeeper.run'`)
		if err == nil {
			for rows.Next() && victim == nil {
				var id int64
				var by string
				if rows.Scan(&id, &by) != nil {
					continue
				}
				if cmd := replicaOf(replicas, by); cmd != nil {
					victim, victimJob = cmd, id
				}
			}
			rows.Close()
		}
		time.Sleep(10 * time.Millisecond)
	}
	if victim == nil {
		t.Fatal("no replica was seen running a compaction")
	}
	kill(t, replicas, victim)

	store, err := state.Open(ctx, stateDSN)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	keyOf := func(name string) state.TableKey {
		return state.TableKey{Bucket: configs.LocalBucketARN, Namespace: "demo", Name: name}
	}
	// The killed replica's job is finished by a survivor, which recorded
	// the dead run as Failed; every table has a successful compaction.
	var takenOver bool
	var jobState string
	deadline = time.Now().Add(3 * time.Minute)
	for {
		takenOver = false
		done := 0
		for name := range before {
			runs, _ := store.Runs(ctx, keyOf(name), maintenance.Compaction, 100)
			for _, r := range runs {
				if r.Status == state.Failed && strings.Contains(r.FailureMessage, "stopped before it finished") {
					takenOver = true
				}
			}
			if slices.ContainsFunc(runs, func(r state.Run) bool { return r.Status == state.Successful }) {
				done++
			}
		}
		_ = db.QueryRowContext(ctx, `SELECT state FROM river_job WHERE id = $1`, victimJob).Scan(&jobState)
		if takenOver && done == tables && jobState == "completed" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after the kill: taken over %v, %d of %d tables compacted, the killed job %q", takenOver, done, tables, jobState)
		}
		time.Sleep(200 * time.Millisecond)
	}

	// River's UI on a survivor (no keys: loopback) lists the finished runs.
	for pid := range replicas {
		resp, err := http.Get("http://" + addrs[pid] + "/river/api/jobs?state=completed")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `"kind":"icekeeper.run"`) {
			t.Fatalf("River's UI on a replica: %d %.300s", resp.StatusCode, body)
		}
		break
	}

	for name, want := range before {
		tbl, err := b.LoadTable(ctx, bucket.TableID{Namespace: []string{"demo"}, Name: name})
		if err != nil {
			t.Fatal(err)
		}
		if fp, err := tablecheck.Rows(ctx, tbl, 0); err != nil || !fp.Equal(want) {
			t.Fatalf("%s: rows %v %v, want %v", name, fp, err, want)
		}
		if missing, err := tablecheck.MissingFiles(ctx, tbl); err != nil || len(missing) > 0 {
			t.Fatalf("%s: missing files %v %v", name, missing, err)
		}
		if n := len(tbl.Metadata().Snapshots()); n <= 30 {
			t.Fatalf("%s: %d snapshots, no compaction committed", name, n)
		}
		// One job per table at a time, across the replicas.
		runs, _ := store.Runs(ctx, keyOf(name), maintenance.Compaction, 1000)
		slices.SortFunc(runs, func(a, b state.Run) int { return a.Started.Compare(b.Started) })
		for i := 1; i < len(runs); i++ {
			if prev := runs[i-1]; prev.Finished.IsZero() || runs[i].Started.Before(prev.Finished) {
				t.Fatalf("%s: runs overlap: %+v and %+v", name, prev, runs[i])
			}
		}
	}
}

// catalogBucket is the embedded default's bucket on another catalog.
func catalogBucket(t testing.TB, home string, catalog map[string]string) *bucket.Bucket {
	t.Helper()
	cfg := configs.Embedded(home)
	cfg.Buckets[0].Catalog = catalog
	reg := cfg.Registry()
	t.Cleanup(reg.Close)
	b, _ := reg.Bucket("local")
	return b
}

// startReplicas starts n `icekeeper serve` processes on one configuration:
// the state store stateDSN, the bucket on catalog, compaction every second
// and the other jobs disabled, each replica running parallelism jobs at
// once, with the flags extra. It returns them by PID, with their API
// addresses by PID.
func startReplicas(t testing.TB, bin, home, stateDSN string, catalog map[string]string, n, parallelism int, extra ...string) (map[int]*exec.Cmd, map[int]string) {
	t.Helper()
	var props strings.Builder
	for k, v := range catalog {
		fmt.Fprintf(&props, "\n      %s: %q", k, v)
	}
	cfgFile := filepath.Join(home, fmt.Sprintf("icekeeper-%s.yaml", servers.RandomName("")))
	yaml := fmt.Sprintf(`state: %s
buckets:
  - arn: %s
    catalog:%s
    maintenance: {icebergSnapshotManagement: {status: disabled}, icebergUnreferencedFileRemoval: {status: disabled}}
schedules: {icebergCompaction: "@every 1s", icebergSnapshotManagement: "@daily", icebergUnreferencedFileRemoval: "@daily"}
`, stateDSN, configs.LocalBucketARN, props.String())
	if err := os.WriteFile(cfgFile, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	replicas, addrs := map[int]*exec.Cmd{}, map[int]string{}
	for range n {
		addr := servers.FreeAddr(t)
		args := append([]string{"serve", "--config", cfgFile, "--listen", addr, "--lease-ttl", "3s", "--parallelism", fmt.Sprint(parallelism)}, extra...)
		cmd := exec.Command(bin, args...)
		// A replica's log goes to a file, shown when the test fails.
		logFile, err := os.Create(filepath.Join(home, fmt.Sprintf("replica-%s.log", servers.RandomName(""))))
		if err != nil {
			t.Fatal(err)
		}
		cmd.Stderr = logFile
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			logFile.Close()
			if t.Failed() {
				log, _ := os.ReadFile(logFile.Name())
				t.Logf("log of replica %d:\n%s", cmd.Process.Pid, tail(log, 40))
			}
		})
		replicas[cmd.Process.Pid], addrs[cmd.Process.Pid] = cmd, addr
	}
	return replicas, addrs
}

func stopReplicas(replicas map[int]*exec.Cmd) {
	for _, cmd := range replicas {
		cmd.Process.Signal(syscall.SIGTERM)
	}
	for _, cmd := range replicas {
		cmd.Wait()
	}
}

// replicaOf is the replica whose River ID (host-pid-random) is by, or nil.
// openDB opens the PostgreSQL database at dsn for a test to look into
// the state store, closed when the test ends.
func openDB(t *testing.T, dsn string) *sql.DB {
	t.Helper()
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func replicaOf(replicas map[int]*exec.Cmd, by string) *exec.Cmd {
	for pid, cmd := range replicas {
		if strings.Contains(by, fmt.Sprintf("-%d-", pid)) {
			return cmd
		}
	}
	return nil
}

// kill sends SIGKILL to victim, waits for it and takes it off replicas.
func kill(t *testing.T, replicas map[int]*exec.Cmd, victim *exec.Cmd) {
	t.Helper()
	if err := victim.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	victim.Wait()
	delete(replicas, victim.Process.Pid)
}

// tail is the last n lines of b.
func tail(b []byte, n int) string {
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
