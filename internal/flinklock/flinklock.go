package flinklock

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
	_ "github.com/jackc/pgx/v5/stdlib" // registers driver "pgx"
	_ "modernc.org/sqlite"             // registers driver "sqlite"

	"github.com/icekeeper/icekeeper/internal/redact"
)

// Kind is the LOCK_TYPE of a row.
type Kind string

const (
	// Maintenance is held while a maintenance task runs on the table.
	Maintenance Kind = "m"
	// Recovery is held while a holder's leftover maintenance lock is
	// cleared; Flink takes it while it restores a job.
	Recovery Kind = "r"
)

func (k Kind) name() string {
	switch k {
	case Maintenance:
		return "maintenance"
	case Recovery:
		return "recovery"
	}
	return fmt.Sprintf("%q", string(k))
}

// ErrInvalid is wrapped by the errors for arguments the table cannot hold
// or Flink could not match: a caller's mistake, never worth a retry.
var ErrInvalid = errors.New("invalid Flink lock argument")

const (
	// maxLockID is LOCK_ID's width. VARCHAR counts characters, in
	// PostgreSQL as in the other databases Flink supports, so the limit is
	// in characters too: a byte limit would refuse table names Flink
	// accepts.
	maxLockID = 100
	// instanceIDLen is INSTANCE_ID's width, that of a UUID's text.
	instanceIDLen = 36
	// releaseTimeout bounds the release of a recovery lock, which runs
	// even after the caller's context is done.
	releaseTimeout = 10 * time.Second
)

// createTable is Flink's table, with IF NOT EXISTS so that concurrent
// starters do not fail each other.
const createTable = `CREATE TABLE IF NOT EXISTS flink_maintenance_lock (
	LOCK_TYPE CHAR(1) NOT NULL,
	LOCK_ID VARCHAR(100) NOT NULL,
	INSTANCE_ID CHAR(36) NOT NULL,
	PRIMARY KEY (LOCK_TYPE, LOCK_ID))`

// probeTable fails unless the table has the columns Flink reads and writes.
const probeTable = `SELECT LOCK_TYPE, LOCK_ID, INSTANCE_ID FROM flink_maintenance_lock WHERE 1 = 0`

// Locks reads and writes Flink's lock table in one database.
type Locks struct {
	db *sql.DB
	// Statements with the placeholders of the database's dialect.
	insert, holder, remove string
}

// NewInstanceID returns a fresh instance id: a random UUID, as Flink uses.
func NewInstanceID() string { return uuid.NewString() }

// Open connects to the database named by dsn, sqlite://PATH or
// postgres://… (postgresql://…), and creates Flink's lock table there when
// it is missing.
func Open(ctx context.Context, dsn string) (*Locks, error) {
	scheme, rest, ok := strings.Cut(dsn, "://")
	if !ok {
		// Without a scheme the DSN may be key=value text holding a
		// password: it is not repeated.
		return nil, fmt.Errorf("open Flink lock table: %w: DSN has no scheme, want sqlite://PATH or postgres://…", ErrInvalid)
	}
	var (
		l   *Locks
		err error
	)
	switch scheme {
	case "sqlite":
		l, err = openSQLite(rest)
	case "postgres", "postgresql":
		l, err = openPostgres(dsn)
	default:
		return nil, fmt.Errorf("open Flink lock table: %w: DSN scheme %q is not sqlite, postgres or postgresql", ErrInvalid, scheme)
	}
	if err != nil {
		return nil, fmt.Errorf("open Flink lock table %s: %w", describe(dsn), err)
	}
	if err := l.db.PingContext(ctx); err != nil {
		l.db.Close()
		return nil, fmt.Errorf("open Flink lock table %s: %w", describe(dsn), err)
	}
	if err := l.ensureTable(ctx); err != nil {
		l.db.Close()
		return nil, fmt.Errorf("open Flink lock table %s: %w", describe(dsn), err)
	}
	return l, nil
}

// describe names the database of dsn in errors, without its password even
// when dsn does not parse as a URL: redact.URI then leaves the user info
// as it is.
func describe(dsn string) string {
	if _, err := url.Parse(dsn); err != nil {
		scheme, _, _ := strings.Cut(dsn, "://")
		return scheme + "://…"
	}
	return redact.URI(dsn)
}

func openSQLite(path string) (*Locks, error) {
	if path == "" {
		return nil, fmt.Errorf("%w: sqlite DSN has no path", ErrInvalid)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, err
	}
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)")
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(4)
	return newLocks(db, func(int) string { return "?" }), nil
}

func openPostgres(dsn string) (*Locks, error) {
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(4)
	return newLocks(db, func(n int) string { return "$" + strconv.Itoa(n) }), nil
}

// newLocks writes the statements with placeholder(n) for the nth argument.
//
// The insert names the primary key as its conflict target: a held lock
// affects no row instead of raising an error that would have to be told
// apart from every other, and a table that lacks Flink's key fails the
// statement rather than letting two instances hold one lock.
func newLocks(db *sql.DB, placeholder func(n int) string) *Locks {
	p1, p2, p3 := placeholder(1), placeholder(2), placeholder(3)
	return &Locks{
		db: db,
		insert: `INSERT INTO flink_maintenance_lock (LOCK_TYPE, LOCK_ID, INSTANCE_ID) VALUES (` + p1 + `, ` + p2 + `, ` + p3 + `)
			ON CONFLICT (LOCK_TYPE, LOCK_ID) DO NOTHING`,
		holder: `SELECT INSTANCE_ID FROM flink_maintenance_lock WHERE LOCK_TYPE = ` + p1 + ` AND LOCK_ID = ` + p2,
		remove: `DELETE FROM flink_maintenance_lock WHERE LOCK_TYPE = ` + p1 + ` AND LOCK_ID = ` + p2 + ` AND INSTANCE_ID = ` + p3,
	}
}

// ensureTable creates the lock table unless a usable one is there. It looks
// first, as Flink does, so that a role without the right to create tables
// can use a table an administrator or Flink made.
func (l *Locks) ensureTable(ctx context.Context) error {
	if _, err := l.db.ExecContext(ctx, probeTable); err == nil {
		return nil
	}
	if _, err := l.db.ExecContext(ctx, createTable); err != nil {
		// PostgreSQL can fail a CREATE TABLE IF NOT EXISTS that races
		// another: the table is then there all the same.
		if _, perr := l.db.ExecContext(ctx, probeTable); perr == nil {
			return nil
		}
		return fmt.Errorf("create table flink_maintenance_lock: %w", err)
	}
	// IF NOT EXISTS keeps a table of another shape without a word.
	if _, err := l.db.ExecContext(ctx, probeTable); err != nil {
		return fmt.Errorf("table flink_maintenance_lock lacks Flink's columns LOCK_TYPE, LOCK_ID, INSTANCE_ID: %w", err)
	}
	return nil
}

// Close closes the connections to the database.
func (l *Locks) Close() error { return l.db.Close() }

// TryLock takes the lock kind on lockID for instanceID and reports whether
// it did; false means some instance, instanceID included, holds it.
func (l *Locks) TryLock(ctx context.Context, kind Kind, lockID, instanceID string) (bool, error) {
	if err := validate(kind, lockID, instanceID); err != nil {
		return false, fmt.Errorf("take Flink lock: %w", err)
	}
	res, err := l.db.ExecContext(ctx, l.insert, string(kind), lockID, instanceID)
	if err != nil {
		return false, fmt.Errorf("take Flink %s lock %q: %w", kind.name(), lockID, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, fmt.Errorf("take Flink %s lock %q: %w", kind.name(), lockID, err)
	}
	return n == 1, nil
}

// Holder returns the instance holding the lock kind on lockID, and whether
// any does.
func (l *Locks) Holder(ctx context.Context, kind Kind, lockID string) (instanceID string, held bool, err error) {
	if err := validateLock(kind, lockID); err != nil {
		return "", false, fmt.Errorf("read Flink lock: %w", err)
	}
	err = l.db.QueryRowContext(ctx, l.holder, string(kind), lockID).Scan(&instanceID)
	if errors.Is(err, sql.ErrNoRows) {
		return "", false, nil
	}
	if err != nil {
		return "", false, fmt.Errorf("read Flink %s lock %q: %w", kind.name(), lockID, err)
	}
	return instanceID, true, nil
}

// Unlock releases the lock kind on lockID if instanceID holds it, and
// reports whether it did. Unlike Flink's, it never removes another
// instance's row: one that took the lock since is left holding it.
func (l *Locks) Unlock(ctx context.Context, kind Kind, lockID, instanceID string) (bool, error) {
	if err := validate(kind, lockID, instanceID); err != nil {
		return false, fmt.Errorf("release Flink lock: %w", err)
	}
	res, err := l.db.ExecContext(ctx, l.remove, string(kind), lockID, instanceID)
	if err != nil {
		return false, fmt.Errorf("release Flink %s lock %q: %w", kind.name(), lockID, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, fmt.Errorf("release Flink %s lock %q: %w", kind.name(), lockID, err)
	}
	return n == 1, nil
}

// Recover removes the maintenance lock on lockID that the instance dead
// left behind. It holds the recovery lock as me meanwhile, so that two
// recoveries, or a recovery and Flink restoring its job, do not overlap.
//
// It reports false, having done nothing, when another instance holds the
// recovery lock. True means dead no longer holds the maintenance lock,
// whether this call removed the row or it was already gone; a live
// holder other than dead keeps it.
//
// The caller must know that dead is dead: nothing in the row says so, and
// removing a live holder's lock lets two maintainers run at once.
func (l *Locks) Recover(ctx context.Context, lockID, dead, me string) (recovered bool, err error) {
	if err := validate(Maintenance, lockID, dead); err != nil {
		return false, fmt.Errorf("recover Flink lock: dead holder: %w", err)
	}
	taken, err := l.TryLock(ctx, Recovery, lockID, me)
	if err != nil {
		return false, fmt.Errorf("recover Flink lock: %w", err)
	}
	if !taken {
		return false, nil
	}
	defer func() {
		// Released even when ctx is done: a recovery row left behind
		// would refuse every later recovery and stall a restoring Flink
		// job until someone removed it by hand.
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), releaseTimeout)
		defer cancel()
		if _, uerr := l.Unlock(rctx, Recovery, lockID, me); uerr != nil {
			recovered, err = false, errors.Join(err, uerr)
		}
	}()
	if _, err := l.Unlock(ctx, Maintenance, lockID, dead); err != nil {
		return false, fmt.Errorf("recover Flink lock %q from %s: %w", lockID, dead, err)
	}
	return true, nil
}

func validate(kind Kind, lockID, instanceID string) error {
	if err := validateLock(kind, lockID); err != nil {
		return err
	}
	switch {
	case len(instanceID) != instanceIDLen:
		return fmt.Errorf("%w: instance id %q is %d bytes, want %d", ErrInvalid, instanceID, len(instanceID), instanceIDLen)
	case !utf8.ValidString(instanceID) || strings.ContainsRune(instanceID, 0):
		return fmt.Errorf("%w: instance id %q is not text without NUL", ErrInvalid, instanceID)
	}
	return nil
}

func validateLock(kind Kind, lockID string) error {
	switch {
	case kind != Maintenance && kind != Recovery:
		return fmt.Errorf("%w: lock type %q is neither %q nor %q", ErrInvalid, string(kind), string(Maintenance), string(Recovery))
	case lockID == "":
		return fmt.Errorf("%w: lock id is empty", ErrInvalid)
	case !utf8.ValidString(lockID) || strings.ContainsRune(lockID, 0):
		// PostgreSQL's text refuses both, and Flink, writing Java
		// strings, could never hold such an id.
		return fmt.Errorf("%w: lock id %q is not UTF-8 text without NUL", ErrInvalid, lockID)
	case utf8.RuneCountInString(lockID) > maxLockID:
		return fmt.Errorf("%w: lock id %.40q… is %d characters, LOCK_ID holds %d", ErrInvalid, lockID, utf8.RuneCountInString(lockID), maxLockID)
	}
	return nil
}
