package flinklock_test

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/icekeeper/icekeeper/internal/flinklock"
	"github.com/icekeeper/icekeeper/internal/testkit/servers"
)

// Flink's statements as JdbcLockFactory issues them, to play a Flink job.
const (
	flinkCreate = `CREATE TABLE flink_maintenance_lock (LOCK_TYPE CHAR(1) NOT NULL, LOCK_ID VARCHAR(100) NOT NULL, INSTANCE_ID CHAR(36) NOT NULL, PRIMARY KEY (LOCK_TYPE, LOCK_ID))`
	flinkInsert = `INSERT INTO flink_maintenance_lock (LOCK_TYPE, LOCK_ID, INSTANCE_ID) VALUES (?, ?, ?)`
	flinkSelect = `SELECT INSTANCE_ID FROM flink_maintenance_lock WHERE LOCK_TYPE=? AND LOCK_ID=?`
)

// eachDatabase runs test on SQLite, and on PostgreSQL when the test server
// is there, each time on a fresh database.
func eachDatabase(t *testing.T, test func(t *testing.T, dsn string)) {
	t.Run("sqlite", func(t *testing.T) {
		test(t, "sqlite://"+filepath.Join(t.TempDir(), "locks.db"))
	})
	t.Run("postgres", func(t *testing.T) {
		test(t, servers.Postgres(t))
	})
}

func open(t *testing.T, dsn string) *flinklock.Locks {
	t.Helper()
	l, err := flinklock.Open(t.Context(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

// rawDB reaches the database behind icekeeper's back, as Flink does.
type rawDB struct {
	db       *sql.DB
	postgres bool
}

func openRaw(t *testing.T, dsn string) rawDB {
	t.Helper()
	var r rawDB
	var err error
	if path, ok := strings.CutPrefix(dsn, "sqlite://"); ok {
		r.db, err = sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(10000)")
	} else {
		r.db, err = sql.Open("pgx", dsn)
		r.postgres = true
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.db.Close() })
	return r
}

// bind turns ? placeholders into PostgreSQL's $n.
func (r rawDB) bind(q string) string {
	if !r.postgres {
		return q
	}
	var b strings.Builder
	n := 0
	for _, c := range q {
		if c == '?' {
			n++
			b.WriteString("$" + strconv.Itoa(n))
			continue
		}
		b.WriteRune(c)
	}
	return b.String()
}

func (r rawDB) exec(t *testing.T, q string, args ...any) {
	t.Helper()
	if _, err := r.db.ExecContext(t.Context(), r.bind(q), args...); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
}

func (r rawDB) rows(t *testing.T) int {
	t.Helper()
	var n int
	if err := r.db.QueryRowContext(t.Context(), `SELECT COUNT(*) FROM flink_maintenance_lock`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func tryLock(t *testing.T, l *flinklock.Locks, kind flinklock.Kind, id, instance string) bool {
	t.Helper()
	ok, err := l.TryLock(t.Context(), kind, id, instance)
	if err != nil {
		t.Fatal(err)
	}
	return ok
}

func unlock(t *testing.T, l *flinklock.Locks, kind flinklock.Kind, id, instance string) bool {
	t.Helper()
	ok, err := l.Unlock(t.Context(), kind, id, instance)
	if err != nil {
		t.Fatal(err)
	}
	return ok
}

// wantHolder fails unless instance holds the lock; "" for none.
func wantHolder(t *testing.T, l *flinklock.Locks, kind flinklock.Kind, id, instance string) {
	t.Helper()
	got, held, err := l.Holder(t.Context(), kind, id)
	if err != nil {
		t.Fatal(err)
	}
	if held != (instance != "") || got != instance {
		t.Fatalf("%s lock %q: holder %q (held %v), want %q", kind, id, got, held, instance)
	}
}

func TestLockHolderUnlock(t *testing.T) {
	eachDatabase(t, func(t *testing.T, dsn string) {
		l := open(t, dsn)
		const id = "lake.db.events"
		a, b := flinklock.NewInstanceID(), flinklock.NewInstanceID()

		wantHolder(t, l, flinklock.Maintenance, id, "")
		if !tryLock(t, l, flinklock.Maintenance, id, a) {
			t.Fatal("a could not take a free lock")
		}
		if tryLock(t, l, flinklock.Maintenance, id, a) {
			t.Error("a took the lock it holds a second time")
		}
		if tryLock(t, l, flinklock.Maintenance, id, b) {
			t.Error("b took the lock a holds")
		}
		wantHolder(t, l, flinklock.Maintenance, id, a)
		// The two kinds and other ids are separate locks.
		wantHolder(t, l, flinklock.Recovery, id, "")
		if !tryLock(t, l, flinklock.Maintenance, id+"2", b) {
			t.Error("b could not take the lock on another id")
		}

		if unlock(t, l, flinklock.Maintenance, id, b) {
			t.Error("b released a's lock")
		}
		wantHolder(t, l, flinklock.Maintenance, id, a)
		if !unlock(t, l, flinklock.Maintenance, id, a) {
			t.Error("a could not release its lock")
		}
		wantHolder(t, l, flinklock.Maintenance, id, "")
		if unlock(t, l, flinklock.Maintenance, id, a) {
			t.Error("a released a free lock")
		}
		if !tryLock(t, l, flinklock.Maintenance, id, b) {
			t.Error("b could not take the released lock")
		}
		wantHolder(t, l, flinklock.Maintenance, id, b)
	})
}

func TestContention(t *testing.T) {
	eachDatabase(t, func(t *testing.T, dsn string) {
		locks := []*flinklock.Locks{open(t, dsn), open(t, dsn)}
		const id, perLocks = "lake.db.contended", 8
		var (
			start   = make(chan struct{})
			wg      sync.WaitGroup
			mu      sync.Mutex
			winners []string
		)
		for i := range 2 * perLocks {
			wg.Go(func() {
				instance := flinklock.NewInstanceID()
				<-start
				ok, err := locks[i%2].TryLock(context.Background(), flinklock.Maintenance, id, instance)
				if err != nil {
					t.Error(err)
					return
				}
				if ok {
					mu.Lock()
					winners = append(winners, instance)
					mu.Unlock()
				}
			})
		}
		close(start)
		wg.Wait()
		if len(winners) != 1 {
			t.Fatalf("%d instances took the lock, want 1", len(winners))
		}
		wantHolder(t, locks[0], flinklock.Maintenance, id, winners[0])
		wantHolder(t, locks[1], flinklock.Maintenance, id, winners[0])
	})
}

func TestFlinkJobsRowsAreShared(t *testing.T) {
	eachDatabase(t, func(t *testing.T, dsn string) {
		l := open(t, dsn)
		flink := openRaw(t, dsn)
		const id = "lake.db.flink"
		job := flinklock.NewInstanceID()

		// A Flink job takes the maintenance lock: icekeeper sees it held.
		flink.exec(t, flinkInsert, "m", id, job)
		wantHolder(t, l, flinklock.Maintenance, id, job)
		if tryLock(t, l, flinklock.Maintenance, id, flinklock.NewInstanceID()) {
			t.Fatal("took the lock a Flink job holds")
		}
		flink.exec(t, `DELETE FROM flink_maintenance_lock WHERE LOCK_TYPE=? AND LOCK_ID=? AND INSTANCE_ID=?`, "m", id, job)

		// icekeeper takes it: Flink's check finds the row, and Flink's
		// own INSERT is refused.
		me := flinklock.NewInstanceID()
		if !tryLock(t, l, flinklock.Maintenance, id, me) {
			t.Fatal("could not take the lock the Flink job released")
		}
		var got string
		if err := flink.db.QueryRowContext(t.Context(), flink.bind(flinkSelect), "m", id).Scan(&got); err != nil {
			t.Fatalf("Flink's check: %v", err)
		}
		if got != me {
			t.Errorf("Flink's check found %q, want %q", got, me)
		}
		if _, err := flink.db.ExecContext(t.Context(), flink.bind(flinkInsert), "m", id, job); err == nil {
			t.Error("Flink's INSERT took the lock icekeeper holds")
		}
	})
}

func TestTableMadeByFlink(t *testing.T) {
	eachDatabase(t, func(t *testing.T, dsn string) {
		flink := openRaw(t, dsn)
		flink.exec(t, flinkCreate)
		job := flinklock.NewInstanceID()
		flink.exec(t, flinkInsert, "m", "lake.db.t", job)

		l := open(t, dsn)
		wantHolder(t, l, flinklock.Maintenance, "lake.db.t", job)
		me := flinklock.NewInstanceID()
		if !tryLock(t, l, flinklock.Maintenance, "lake.db.u", me) {
			t.Fatal("could not take a free lock in Flink's table")
		}
		wantHolder(t, l, flinklock.Maintenance, "lake.db.u", me)
	})
}

func TestTableOfAnotherShape(t *testing.T) {
	eachDatabase(t, func(t *testing.T, dsn string) {
		openRaw(t, dsn).exec(t, `CREATE TABLE flink_maintenance_lock (id INTEGER)`)
		_, err := flinklock.Open(t.Context(), dsn)
		if err == nil || !strings.Contains(err.Error(), "lacks Flink's columns") {
			t.Fatalf("Open on a table without Flink's columns: %v", err)
		}
	})
}

func TestTableWithoutFlinksKey(t *testing.T) {
	eachDatabase(t, func(t *testing.T, dsn string) {
		openRaw(t, dsn).exec(t, `CREATE TABLE flink_maintenance_lock (LOCK_TYPE CHAR(1), LOCK_ID VARCHAR(100), INSTANCE_ID CHAR(36))`)
		l := open(t, dsn)
		// Without the key two instances could both insert: refused.
		if ok, err := l.TryLock(t.Context(), flinklock.Maintenance, "t", flinklock.NewInstanceID()); err == nil {
			t.Fatalf("TryLock on a table without Flink's key: %v, no error", ok)
		}
	})
}

func TestRecover(t *testing.T) {
	eachDatabase(t, func(t *testing.T, dsn string) {
		l := open(t, dsn)
		const id = "lake.db.orphaned"
		dead, me, other := flinklock.NewInstanceID(), flinklock.NewInstanceID(), flinklock.NewInstanceID()
		recoverDead := func() bool {
			t.Helper()
			ok, err := l.Recover(t.Context(), id, dead, me)
			if err != nil {
				t.Fatal(err)
			}
			return ok
		}
		if !tryLock(t, l, flinklock.Maintenance, id, dead) {
			t.Fatal("could not take the lock")
		}

		// Another recovery (or a restoring Flink job) is under way.
		if !tryLock(t, l, flinklock.Recovery, id, other) {
			t.Fatal("could not take the recovery lock")
		}
		if recoverDead() {
			t.Error("recovered while another instance holds the recovery lock")
		}
		wantHolder(t, l, flinklock.Maintenance, id, dead)
		wantHolder(t, l, flinklock.Recovery, id, other)
		unlock(t, l, flinklock.Recovery, id, other)

		if !recoverDead() {
			t.Fatal("recovery refused with the recovery lock free")
		}
		wantHolder(t, l, flinklock.Maintenance, id, "")
		wantHolder(t, l, flinklock.Recovery, id, "")

		// A holder other than dead keeps its lock.
		live := flinklock.NewInstanceID()
		tryLock(t, l, flinklock.Maintenance, id, live)
		if !recoverDead() {
			t.Fatal("recovery refused with the recovery lock free")
		}
		wantHolder(t, l, flinklock.Maintenance, id, live)
		wantHolder(t, l, flinklock.Recovery, id, "")
	})
}

func TestHostileLockIDs(t *testing.T) {
	ids := []string{
		`'; DROP TABLE flink_maintenance_lock; --`,
		`x'); DELETE FROM flink_maintenance_lock WHERE ('1'='1`,
		`a'b"c` + "`d",
		`back\slash`,
		`100%_`,
		`$1`,
		`?`,
		"t",
		"t ",
		"T",
		"lake.日本語.テーブル🧊",
		strings.Repeat("a", 100),
		strings.Repeat("é", 100), // 200 bytes, 100 characters
	}
	eachDatabase(t, func(t *testing.T, dsn string) {
		l := open(t, dsn)
		holders := map[string]string{}
		for _, id := range ids {
			holders[id] = flinklock.NewInstanceID()
			if !tryLock(t, l, flinklock.Maintenance, id, holders[id]) {
				t.Fatalf("lock id %q: not taken", id)
			}
		}
		for _, id := range ids {
			wantHolder(t, l, flinklock.Maintenance, id, holders[id])
		}
		wantHolder(t, l, flinklock.Maintenance, "100%x", "")
		wantHolder(t, l, flinklock.Maintenance, "t  ", "")
		if n := openRaw(t, dsn).rows(t); n != len(ids) {
			t.Errorf("%d rows, want %d", n, len(ids))
		}
		for _, id := range ids {
			if !unlock(t, l, flinklock.Maintenance, id, holders[id]) {
				t.Errorf("lock id %q: not released", id)
			}
		}
	})
}

func TestOpenErrors(t *testing.T) {
	for _, tc := range []struct {
		dsn, want string
		invalid   bool
	}{
		{"mysql://flink:s3cret@db/locks", `scheme "mysql"`, true},
		{"host=db user=flink password=s3cret", "no scheme", true},
		{"sqlite://", "no path", true},
		// Nothing listens on port 1: the driver's error, password hidden.
		{"postgres://flink:s3cret@127.0.0.1:1/locks?connect_timeout=5", "127.0.0.1:1", false},
		// Not a URL: the DSN is not repeated, whatever the driver says.
		{"postgres://flink:s3cret@[::1/locks", "postgres://…", false},
	} {
		_, err := flinklock.Open(t.Context(), tc.dsn)
		if err == nil {
			t.Errorf("Open(%q): no error", tc.dsn)
			continue
		}
		if !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Open(%q): %v, want it to mention %s", tc.dsn, err, tc.want)
		}
		if strings.Contains(err.Error(), "s3cret") {
			t.Errorf("Open(%q): %v shows the password", tc.dsn, err)
		}
		if errors.Is(err, flinklock.ErrInvalid) != tc.invalid {
			t.Errorf("Open(%q): %v, errors.Is ErrInvalid %v, want %v", tc.dsn, err, !tc.invalid, tc.invalid)
		}
	}
}

func TestInvalidArguments(t *testing.T) {
	l := open(t, "sqlite://"+filepath.Join(t.TempDir(), "locks.db"))
	ctx := t.Context()
	ok := flinklock.NewInstanceID()
	if len(ok) != 36 {
		t.Fatalf("NewInstanceID() = %q, want 36 bytes", ok)
	}
	for _, tc := range []struct {
		name string
		call func() error
		want string
	}{
		{"empty lock id", func() error { _, err := l.TryLock(ctx, flinklock.Maintenance, "", ok); return err }, "lock id is empty"},
		{"long lock id", func() error {
			_, err := l.TryLock(ctx, flinklock.Maintenance, strings.Repeat("a", 101), ok)
			return err
		}, "is 101 characters, LOCK_ID holds 100"},
		{"lock id not UTF-8", func() error { _, err := l.TryLock(ctx, flinklock.Maintenance, "a\xffb", ok); return err }, "not UTF-8"},
		{"lock id with NUL", func() error { _, _, err := l.Holder(ctx, flinklock.Maintenance, "a\x00b"); return err }, "without NUL"},
		{"short instance id", func() error { _, err := l.TryLock(ctx, flinklock.Maintenance, "t", ok[:35]); return err }, "is 35 bytes, want 36"},
		{"long instance id", func() error { _, err := l.Unlock(ctx, flinklock.Maintenance, "t", ok+"0"); return err }, "is 37 bytes, want 36"},
		{"lock type", func() error { _, _, err := l.Holder(ctx, flinklock.Kind("x"), "t"); return err }, `lock type "x"`},
		{"dead holder", func() error { _, err := l.Recover(ctx, "t", "dead", ok); return err }, "dead holder"},
		{"recovering instance", func() error { _, err := l.Recover(ctx, "t", ok, "me"); return err }, `instance id "me"`},
	} {
		err := tc.call()
		if !errors.Is(err, flinklock.ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want ErrInvalid mentioning %s", tc.name, err, tc.want)
		}
	}
}
