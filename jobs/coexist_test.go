package jobs_test

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/apache/iceberg-go/table/compaction"

	"github.com/icekeeper/icekeeper/compactor"
	"github.com/icekeeper/icekeeper/internal/flinklock"
	"github.com/icekeeper/icekeeper/internal/state"
	"github.com/icekeeper/icekeeper/internal/testkit"
	"github.com/icekeeper/icekeeper/internal/testkit/servers"
	"github.com/icekeeper/icekeeper/internal/testkit/tablecheck"
	"github.com/icekeeper/icekeeper/jobs"
	"github.com/icekeeper/icekeeper/maintenance"
)

// flinkJob is a simulated Flink job's side of the lock table: it speaks
// JdbcLockFactory's SQL itself, on its own connection, not through
// package flinklock.
type flinkJob struct {
	db       *sql.DB
	postgres bool
	instance string
}

func (j flinkJob) q(query string) string {
	if j.postgres {
		return strings.NewReplacer("?1", "$1", "?2", "$2", "?3", "$3").Replace(query)
	}
	return strings.NewReplacer("?1", "?", "?2", "?", "?3", "?").Replace(query)
}

// lock is Flink's tryLock: an INSERT, which fails while the row exists.
func (j flinkJob) lock(t testing.TB, id string) bool {
	t.Helper()
	_, err := j.db.Exec(j.q("INSERT INTO flink_maintenance_lock (LOCK_TYPE, LOCK_ID, INSTANCE_ID) VALUES ('m', ?1, ?2)"), id, j.instance)
	return err == nil
}

func (j flinkJob) unlock(t testing.TB, id string) {
	t.Helper()
	if _, err := j.db.Exec(j.q("DELETE FROM flink_maintenance_lock WHERE LOCK_TYPE = 'm' AND LOCK_ID = ?1 AND INSTANCE_ID = ?2"), id, j.instance); err != nil {
		t.Fatal(err)
	}
}

// rows counts the lock table's rows.
func (j flinkJob) rows(t testing.TB) int {
	t.Helper()
	var n int
	if err := j.db.QueryRow("SELECT COUNT(*) FROM flink_maintenance_lock").Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// lockDatabases are the lock databases the lock tests run on: SQLite,
// and PostgreSQL where the test servers run.
func lockDatabases(t *testing.T) map[string]string {
	dbs := map[string]string{"sqlite": "sqlite://" + filepath.Join(t.TempDir(), "locks.db")}
	if servers.PostgresAvailable() {
		dbs["postgres"] = servers.Postgres(t)
	}
	return dbs
}

// With Flink's maintenance lock held by a Flink job, compaction rewrites
// nothing and says why; with icekeeper's held, the Flink job and a second
// icekeeper wait; every run releases it; an icekeeper that died holding
// it is recovered from once its instance's lease lapsed, and a Flink
// job's lock never is.
func TestFlinkMaintenanceLock(t *testing.T) {
	for name, dsn := range lockDatabases(t) {
		t.Run(name, func(t *testing.T) {
			f := newFleet(t, 1)
			if err := testkit.AppendRows(f.ctx, f.b, f.ids[0], 10); err != nil {
				t.Fatal(err)
			}
			locks, err := flinklock.Open(f.ctx, dsn)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { locks.Close() })
			driver, conn := "sqlite", strings.TrimPrefix(dsn, "sqlite://")
			if name == "postgres" {
				driver, conn = "pgx", dsn
			}
			db, err := sql.Open(driver, conn)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { db.Close() })
			flink := flinkJob{db: db, postgres: name == "postgres", instance: flinklock.NewInstanceID()}
			lockID := "fleet.t000"
			newLock := func() *jobs.FlinkLock {
				return &jobs.FlinkLock{Locks: locks, Leases: f.store, TTL: 3 * time.Second,
					ID: func(t jobs.Target) string { return jobs.LockID("{namespace}.{table}", t) }}
			}
			fl := newLock()
			f.runner.Coexist = &jobs.Coexist{Lock: func(jobs.Target) *jobs.FlinkLock { return fl }}
			before := f.load(t, 0)

			if !flink.lock(t, lockID) {
				t.Fatal("the Flink job could not take a free lock")
			}
			out, err := f.runner.Run(f.ctx, f.target(0), maintenance.Compaction, "test", jobs.Options{})
			if err != nil || out.Status != state.Skipped || !strings.Contains(out.FailureMessage, "held by instance "+flink.instance) {
				t.Fatalf("run under Flink's lock: %+v %v, want Skipped naming Flink's instance", out, err)
			}
			if after := f.load(t, 0); after.CurrentSnapshot().SnapshotID != before.CurrentSnapshot().SnapshotID {
				t.Fatal("compaction committed under Flink's lock")
			}
			flink.unlock(t, lockID)

			// icekeeper holds the lock: the Flink job and a second
			// icekeeper wait.
			_, release, err := fl.Acquire(f.ctx, f.target(0))
			if err != nil {
				t.Fatal(err)
			}
			if flink.lock(t, lockID) {
				t.Fatal("the Flink job took the lock icekeeper holds")
			}
			second := newLock()
			if _, _, err := second.Acquire(f.ctx, f.target(0)); err == nil || !strings.Contains(err.Error(), "another icekeeper run") {
				t.Fatalf("second icekeeper: %v, want it to wait for the first", err)
			}
			release()
			if n := flink.rows(t); n != 0 {
				t.Fatalf("%d lock rows after the release, want 0", n)
			}

			// A run takes and releases it on its way.
			out, err = f.runner.Run(f.ctx, f.target(0), maintenance.Compaction, "test", jobs.Options{})
			if err != nil || out.Status != state.Successful {
				t.Fatalf("run with the lock free: %+v %v", out, err)
			}
			if n := flink.rows(t); n != 0 {
				t.Fatalf("%d lock rows after a run, want 0", n)
			}

			// An icekeeper that dies holding the lock stops renewing its
			// instance: once the lease lapses, the next run recovers the
			// lock through Flink's recovery lock.
			dying, die := context.WithCancel(f.ctx)
			if _, _, err := newLock().Acquire(dying, f.target(0)); err != nil {
				t.Fatal(err)
			}
			die()
			if _, _, err := newLock().Acquire(f.ctx, f.target(0)); err == nil {
				t.Fatal("the lock of a live instance was taken")
			}
			later := newLock()
			later.Now = func() time.Time { return time.Now().Add(10 * time.Second) }
			_, rel, err := later.Acquire(f.ctx, f.target(0))
			if err != nil {
				t.Fatalf("after the dead instance's lease lapsed: %v", err)
			}
			rel()
			// Flink's lock remover deletes whatever row it finds when its
			// job starts without state: the run under the lost lock is
			// stopped, with the reason.
			quick := newLock()
			quick.TTL = 300 * time.Millisecond
			work, rel, err := quick.Acquire(f.ctx, f.target(0))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := db.Exec(flink.q("DELETE FROM flink_maintenance_lock WHERE LOCK_TYPE = 'm' AND LOCK_ID = ?1"), lockID); err != nil {
				t.Fatal(err)
			}
			if !flink.lock(t, lockID) {
				t.Fatal("the Flink job could not take the lock it freed")
			}
			select {
			case <-work.Done():
				if cause := context.Cause(work); !errors.Is(cause, jobs.ErrOtherMaintainer) || !strings.Contains(cause.Error(), flink.instance) {
					t.Fatalf("the run stopped with %v, want the lost lock naming Flink's instance", cause)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("the run went on under a lock Flink took")
			}
			rel()
			if holder := flink.rows(t); holder != 1 {
				t.Fatalf("%d lock rows after icekeeper's release, want Flink's alone", holder)
			}
			flink.unlock(t, lockID)

			// A Flink job's lock is never recovered, however old.
			if !flink.lock(t, lockID) {
				t.Fatal("the Flink job could not take a free lock")
			}
			if _, _, err := later.Acquire(f.ctx, f.target(0)); err == nil {
				t.Fatal("icekeeper took over a Flink job's lock")
			}
			flink.unlock(t, lockID)
		})
	}
}

// load loads f's i-th table.
func (f *fleet) load(t testing.TB, i int) *table.Table {
	t.Helper()
	tbl, err := f.b.LoadTable(f.ctx, f.ids[i])
	if err != nil {
		t.Fatal(err)
	}
	return tbl
}

// Two maintainers on one table: another engine compacts it (iceberg-go's
// RewriteDataFiles, a REPLACE as Spark's or Flink's would be) while a
// writer appends; icekeeper's compaction steps aside within the
// cool-down, rewrites nothing and so loses no commit, and the rows stay
// exactly the writer's; past the cool-down it compacts again.
func TestStepAsideForAnotherMaintainer(t *testing.T) {
	f := newFleet(t, 1)
	f.runner.Coexist = &jobs.Coexist{StepAside: func(jobs.Target) time.Duration { return time.Hour }}
	other := func() {
		t.Helper()
		tbl := f.load(t, 0)
		cfg := compaction.DefaultConfig()
		cfg.MinInputFiles = 2
		plan, err := compaction.Analyze(f.ctx, tbl, cfg)
		if err != nil {
			t.Fatal(err)
		}
		var groups []table.CompactionTaskGroup
		for _, g := range plan.Groups {
			groups = append(groups, table.CompactionTaskGroup{PartitionKey: g.PartitionKey, Tasks: g.Tasks, TotalSizeBytes: g.TotalSizeBytes})
		}
		if len(groups) == 0 {
			t.Fatal("the other maintainer found nothing to compact")
		}
		if _, err := tbl.RewriteDataFiles(f.ctx, groups, table.RewriteDataFilesOptions{SnapshotProps: iceberg.Properties{"engine-name": "spark"}}); err != nil {
			t.Fatal(err)
		}
	}
	rows := func(tbl *table.Table) tablecheck.Fingerprint {
		t.Helper()
		fp, err := tablecheck.Rows(f.ctx, tbl, 0)
		if err != nil {
			t.Fatal(err)
		}
		return fp
	}
	conflicts := 0
	for round := range 3 {
		for range 3 {
			if err := testkit.AppendRows(f.ctx, f.b, f.ids[0], 10); err != nil {
				t.Fatal(err)
			}
		}
		other()
		for range 2 {
			if err := testkit.AppendRows(f.ctx, f.b, f.ids[0], 10); err != nil {
				t.Fatal(err)
			}
		}
		before := f.load(t, 0)
		want := rows(before)
		out, err := f.runner.Run(f.ctx, f.target(0), maintenance.Compaction, "test", jobs.Options{})
		if err != nil || out.Status != state.Skipped || !strings.Contains(out.FailureMessage, "spark committed a replace") {
			t.Fatalf("round %d: %+v %v, want a step aside naming Spark's replace", round, out, err)
		}
		conflicts += out.Figures.(*compactor.Figures).Conflicts
		after := f.load(t, 0)
		if after.CurrentSnapshot().SnapshotID != before.CurrentSnapshot().SnapshotID {
			t.Fatalf("round %d: icekeeper committed within the cool-down", round)
		}
		if got := rows(after); !got.Equal(want) {
			t.Fatalf("round %d: rows %v, want %v", round, got, want)
		}
	}
	if conflicts != 0 {
		t.Fatalf("%d commits lost while stepping aside", conflicts)
	}
	// Past the cool-down icekeeper compacts, rows exact.
	before := f.load(t, 0)
	want := rows(before)
	out, err := f.runner.Run(f.ctx, f.target(0), maintenance.Compaction, "test", jobs.Options{Now: time.Now().Add(2 * time.Hour)})
	if err != nil || out.Status != state.Successful {
		t.Fatalf("past the cool-down: %+v %v", out, err)
	}
	after := f.load(t, 0)
	if after.CurrentSnapshot().Summary.Properties["icekeeper.job"] != string(maintenance.Compaction) {
		t.Fatalf("past the cool-down icekeeper did not compact: %+v", after.CurrentSnapshot().Summary)
	}
	if got := rows(after); !got.Equal(want) {
		t.Fatalf("rows after icekeeper's compaction %v, want %v", got, want)
	}
}
