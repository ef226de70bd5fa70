package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"math/rand/v2"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"

	"github.com/icekeeper/icekeeper/configs"
	"github.com/icekeeper/icekeeper/internal/bucket"
	"github.com/icekeeper/icekeeper/internal/demo"
	"github.com/icekeeper/icekeeper/internal/state"
	"github.com/icekeeper/icekeeper/internal/testkit"
	"github.com/icekeeper/icekeeper/internal/testkit/servers"
	"github.com/icekeeper/icekeeper/internal/testkit/tablecheck"
	"github.com/icekeeper/icekeeper/maintenance"
)

// fanOutGroups is the size of the one big table: a partition per bucket
// of its id, each of five small files, so one rewrite group each.
const fanOutGroups = 64

// One table of 64 rewrite groups, compacted by three `icekeeper serve`
// replicas that share one PostgreSQL and a catalog on S3 answering 20 ms
// late: one replica plans and commits, all three rewrite groups. SIGKILL
// hits, in one case, a replica rewriting a group for another's run, and in
// the other the coordinator. Either way the table ends with the same rows,
// one file per partition (every group committed once), no referenced file
// missing, and the run that committed read each of its 64 groups once.
func TestOneTableAcrossReplicas(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := buildBinary(t)
	for _, victim := range []string{"worker", "coordinator"} {
		t.Run(victim+" killed", func(t *testing.T) { oneTableAcrossReplicas(t, bin, victim) })
	}
}

// bigTable is the table of fanOutGroups partitions of five files each, in
// a PostgreSQL catalog on S3, with a fresh PostgreSQL for the state store.
// The table is made directly; the returned catalog, for the replicas,
// answers 20 ms late.
type bigTable struct {
	b        *bucket.Bucket
	catalog  map[string]string
	stateDSN string
	home     string
	rows     tablecheck.Fingerprint
}

func newBigTable(tb testing.TB) bigTable {
	tb.Helper()
	ctx := context.Background()
	catalogDSN := servers.Postgres(tb)
	direct := servers.S3(tb)
	slow := direct.WithLatency(tb, 20*time.Millisecond)
	bt := bigTable{stateDSN: servers.Postgres(tb), home: tb.TempDir(),
		catalog: map[string]string{"type": "sql", "uri": catalogDSN, "warehouse": "s3://" + direct.Bucket + "/warehouse"}}
	for k, v := range direct.Props() {
		bt.catalog[k] = v
	}
	bt.b = catalogBucket(tb, bt.home, bt.catalog)
	spec := iceberg.NewPartitionSpec(iceberg.PartitionField{SourceIDs: []int{1}, FieldID: 1000, Name: "event_bucket", Transform: iceberg.BucketTransform{NumBuckets: fanOutGroups}})
	tbl := testkit.NewTable(tb, bt.b, "demo", "big", demo.Schema(), catalog.WithPartitionSpec(&spec))
	tbl, err := testkit.AppendCommits(ctx, tbl, 5, 20*fanOutGroups, 0, rand.New(rand.NewPCG(3, 4)))
	if err != nil {
		tb.Fatal(err)
	}
	if bt.rows, err = tablecheck.Rows(ctx, tbl, 0); err != nil {
		tb.Fatal(err)
	}
	for k, v := range slow.Props() {
		bt.catalog[k] = v
	}
	return bt
}

// frozenOn stops replica with SIGSTOP and returns it and job when the job
// is still running there once it is stopped: the job can then finish only
// by a takeover. Otherwise (it finished meanwhile) the replica goes on and
// frozenOn returns nil.
func frozenOn(t *testing.T, db *sql.DB, replica *exec.Cmd, job int64) (*exec.Cmd, int64) {
	t.Helper()
	if replica == nil {
		return nil, 0
	}
	if err := replica.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	// A completion the replica sent just before it stopped may still be on
	// its way to the database: let it land before asking whether the job
	// is still running, or a job that had finished passes for a frozen one.
	time.Sleep(300 * time.Millisecond)
	var st string
	if err := db.QueryRowContext(context.Background(), `SELECT state FROM river_job WHERE id = $1`, job).Scan(&st); err == nil && st == "running" {
		return replica, job
	}
	if err := replica.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	return nil, 0
}

var bigKey = state.TableKey{Bucket: configs.LocalBucketARN, Namespace: "demo", Name: "big"}

func oneTableAcrossReplicas(t *testing.T, bin, victimKind string) {
	ctx := context.Background()
	bt := newBigTable(t)
	b, stateDSN, before := bt.b, bt.stateDSN, bt.rows
	id := bucket.TableID{Namespace: []string{"demo"}, Name: "big"}
	replicas, _ := startReplicas(t, bin, bt.home, stateDSN, bt.catalog, 3, 1, "--fan-out-groups", "16", "--group-parallelism", "2")
	defer func() { stopReplicas(replicas) }()

	db := openDB(t, stateDSN)
	// Mid-run: the coordinator's job runs and some of its parts are done,
	// some running.
	var victim *exec.Cmd
	var victimJob int64
	for deadline := time.Now().Add(2 * time.Minute); victim == nil; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("never saw the run fanned out and under way")
		}
		var runJob int64
		var coordinator string
		if db.QueryRowContext(ctx, `SELECT id, attempted_by[array_upper(attempted_by, 1)] FROM river_job
			WHERE kind = 'icekeeper.run' AND state = 'running'`).Scan(&runJob, &coordinator) != nil {
			continue
		}
		var done int
		if db.QueryRowContext(ctx, `SELECT count(*) FROM river_job WHERE kind = 'icekeeper.part' AND state = 'completed'`).Scan(&done) != nil || done < 4 {
			continue
		}
		if victimKind == "coordinator" {
			victim, victimJob = frozenOn(t, db, replicaOf(replicas, coordinator), runJob)
			continue
		}
		rows, err := db.QueryContext(ctx, `SELECT id, attempted_by[array_upper(attempted_by, 1)] FROM river_job
			WHERE kind = 'icekeeper.part' AND state = 'running'`)
		if err != nil {
			continue
		}
		type running struct {
			part int64
			by   string
		}
		var parts []running
		for rows.Next() {
			var r running
			if rows.Scan(&r.part, &r.by) == nil && replicaOf(replicas, r.by) != replicaOf(replicas, coordinator) {
				parts = append(parts, r)
			}
		}
		rows.Close()
		for _, r := range parts {
			if victim, victimJob = frozenOn(t, db, replicaOf(replicas, r.by), r.part); victim != nil {
				break
			}
		}
	}
	kill(t, replicas, victim)

	// The killed job is rescued and completes; a compaction succeeds.
	store, err := state.Open(ctx, stateDSN)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	k := bigKey
	var success *state.Run
	var jobState string
	var attempts int
	for deadline := time.Now().Add(3 * time.Minute); ; time.Sleep(200 * time.Millisecond) {
		_ = db.QueryRowContext(ctx, `SELECT state, attempt FROM river_job WHERE id = $1`, victimJob).Scan(&jobState, &attempts)
		runs, _ := store.Runs(ctx, k, maintenance.Compaction, 100)
		success = nil
		for i := range runs {
			if runs[i].Status == state.Successful && strings.Contains(string(runs[i].Metrics), `"groupsFannedOut"`) {
				success = &runs[i]
			}
		}
		if success != nil && jobState == "completed" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after the kill: the killed job %d is %q, compaction runs %+v", victimJob, jobState, runs)
		}
	}
	if attempts < 2 {
		t.Fatalf("the killed job completed in attempt %d: it was not taken over", attempts)
	}
	var fig struct{ GroupsPlanned, GroupsFannedOut, GroupsCommitted, InputFiles, OutputFiles int }
	if err := json.Unmarshal(success.Metrics, &fig); err != nil {
		t.Fatal(err)
	}
	if fig.GroupsPlanned != fanOutGroups || fig.GroupsFannedOut != fanOutGroups || fig.GroupsCommitted != fanOutGroups || fig.InputFiles != 5*fanOutGroups || fig.OutputFiles != fanOutGroups {
		t.Fatalf("the successful run: %+v; want all %d groups fanned out and committed, five files into one each", fig, fanOutGroups)
	}

	after, err := b.LoadTable(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if fp, err := tablecheck.Rows(ctx, after, 0); err != nil || !fp.Equal(before) {
		t.Fatalf("rows %v %v, want %v", fp, err, before)
	}
	if missing, err := tablecheck.MissingFiles(ctx, after); err != nil || len(missing) > 0 {
		t.Fatalf("missing files %v %v", missing, err)
	}
	tasks, err := after.Scan().PlanFiles(ctx)
	if err != nil || len(tasks) != fanOutGroups {
		t.Fatalf("%d live data files, want one per partition (%d): %v", len(tasks), fanOutGroups, err)
	}
	if victimKind == "coordinator" {
		runs, _ := store.Runs(ctx, k, maintenance.Compaction, 100)
		taken := false
		for _, r := range runs {
			taken = taken || (r.Status == state.Failed && strings.Contains(r.FailureMessage, "stopped before it finished"))
		}
		if !taken {
			t.Fatalf("the killed coordinator's run was not recorded as taken over: %+v", runs)
		}
	}
}
