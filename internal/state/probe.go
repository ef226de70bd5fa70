package state

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"

	"github.com/icekeeper/icekeeper/internal/redact"
)

// ErrNotCreated is Probe's answer for a SQLite store whose file does not
// exist yet: the first command that records a run creates it.
var ErrNotCreated = errors.New("not created yet (the first run or serve creates it)")

// Probe reaches the store at dsn without creating or migrating anything,
// and returns its schema version against the one this icekeeper needs.
// A SQLite file is opened read-only; a PostgreSQL server is pinged and
// read.
func Probe(ctx context.Context, dsn string) (have, want int, err error) {
	want = len(migrations)
	scheme, rest, _ := strings.Cut(dsn, "://")
	var db *sql.DB
	switch scheme {
	case "sqlite":
		if _, err := os.Stat(rest); errors.Is(err, fs.ErrNotExist) {
			return 0, want, fmt.Errorf("state store %s: %w", rest, ErrNotCreated)
		} else if err != nil {
			return 0, want, fmt.Errorf("state store %s: %w", rest, err)
		}
		// mode=ro: reading must not create the file's WAL or change it.
		if db, err = sql.Open("sqlite", "file:"+rest+"?mode=ro&_pragma=busy_timeout(10000)"); err != nil {
			return 0, want, fmt.Errorf("open state store %s: %w", rest, err)
		}
	case "postgres", "postgresql":
		if db, err = sql.Open("pgx", dsn); err != nil {
			return 0, want, fmt.Errorf("open state store: %w", err)
		}
	default:
		return 0, want, fmt.Errorf("open state store: scheme %q is not sqlite or postgres", scheme)
	}
	defer db.Close()
	if err := db.PingContext(ctx); err != nil {
		return 0, want, fmt.Errorf("reach state store %s: %w", redact.URI(dsn), err)
	}
	var exists bool
	q := `SELECT EXISTS (SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations')`
	if scheme != "sqlite" {
		q = `SELECT to_regclass('schema_migrations') IS NOT NULL`
	}
	if err := db.QueryRowContext(ctx, q).Scan(&exists); err != nil {
		return 0, want, fmt.Errorf("read state store %s: %w", redact.URI(dsn), err)
	}
	if !exists {
		return 0, want, nil
	}
	if err := db.QueryRowContext(ctx, `SELECT COALESCE(MAX(version), 0) FROM schema_migrations`).Scan(&have); err != nil {
		return 0, want, fmt.Errorf("read state store %s: %w", redact.URI(dsn), err)
	}
	return have, want, nil
}
