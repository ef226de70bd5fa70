package state

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"

	"github.com/riverqueue/river/rivermigrate"
)

// migrations are applied in order, each once, each in its own transaction.
// Never edit a released migration: append a new one. {{id}} becomes the
// dialect's auto-increment primary key, {{blob}} its byte-string type,
// {{norowid}} SQLite's WITHOUT ROWID (nothing on PostgreSQL).
var migrations = []string{
	// 1: configuration overrides, run history, noncurrent marks, leases.
	`CREATE TABLE table_config (
		bucket TEXT NOT NULL, namespace TEXT NOT NULL, name TEXT NOT NULL, job_type TEXT NOT NULL,
		value TEXT NOT NULL, updated_at BIGINT NOT NULL,
		PRIMARY KEY (bucket, namespace, name, job_type));
	CREATE TABLE bucket_config (
		bucket TEXT NOT NULL, job_type TEXT NOT NULL, value TEXT NOT NULL, updated_at BIGINT NOT NULL,
		PRIMARY KEY (bucket, job_type));
	CREATE TABLE runs (
		id {{id}}, bucket TEXT NOT NULL, namespace TEXT NOT NULL, name TEXT NOT NULL, job_type TEXT NOT NULL,
		trigger_kind TEXT NOT NULL, started_at BIGINT NOT NULL, finished_at BIGINT NOT NULL,
		status TEXT NOT NULL, failure_message TEXT NOT NULL, metrics TEXT NOT NULL);
	CREATE INDEX runs_by_table ON runs (bucket, namespace, name, job_type, id);
	CREATE TABLE noncurrent_marks (
		bucket TEXT NOT NULL, namespace TEXT NOT NULL, name TEXT NOT NULL, path TEXT NOT NULL,
		size BIGINT NOT NULL, last_modified BIGINT NOT NULL, marked_at BIGINT NOT NULL, run_id BIGINT NOT NULL,
		PRIMARY KEY (bucket, namespace, name, path));
	CREATE TABLE leases (name TEXT PRIMARY KEY, holder TEXT NOT NULL, expires_at BIGINT NOT NULL);`,
	// 2: the daemon's durable job queue (one pending entry per table and
	// job type) and the last cron fire per job type, for catching up.
	`CREATE TABLE job_queue (
		id {{id}}, bucket TEXT NOT NULL, namespace TEXT NOT NULL, name TEXT NOT NULL, job_type TEXT NOT NULL,
		trigger_kind TEXT NOT NULL, not_before BIGINT NOT NULL, enqueued_at BIGINT NOT NULL,
		claimed_by TEXT NOT NULL, claimed_until BIGINT NOT NULL, attempts INTEGER NOT NULL);
	CREATE UNIQUE INDEX job_queue_once ON job_queue (bucket, namespace, name, job_type);
	CREATE INDEX job_queue_due ON job_queue (not_before, id);
	CREATE TABLE schedule_fires (job_type TEXT PRIMARY KEY, last_fire BIGINT NOT NULL);`,
	// 3: restored objects stay protected (0: not protected).
	`ALTER TABLE noncurrent_marks ADD COLUMN protected_at BIGINT NOT NULL DEFAULT 0;`,
	// 4: the daemon's in-memory view reads the runs finished since its
	// last refresh.
	`CREATE INDEX runs_by_finish ON runs (finished_at);`,
	// 5: River holds the job queue now; jobs queued in the old table are
	// queued again by the next cron fire.
	`DROP TABLE job_queue;`,
	// 6: what a run's full evaluation of its table saw, for the unchanged
	// rule (package planner): a later run that finds the same snapshot,
	// metadata file and settings reads nothing more. Columns, not figures:
	// the runner records and looks them up the same way for every job
	// type, without decoding a job's own figures. seen_hash '' means the
	// run left no verdict to rest on.
	`ALTER TABLE runs ADD COLUMN seen_snapshot BIGINT NOT NULL DEFAULT 0;
	ALTER TABLE runs ADD COLUMN seen_metadata TEXT NOT NULL DEFAULT '';
	ALTER TABLE runs ADD COLUMN seen_hash TEXT NOT NULL DEFAULT '';
	ALTER TABLE runs ADD COLUMN evaluated_run BIGINT NOT NULL DEFAULT 0;
	ALTER TABLE runs ADD COLUMN evaluated_at BIGINT NOT NULL DEFAULT 0;
	ALTER TABLE runs ADD COLUMN valid_until BIGINT NOT NULL DEFAULT 0;`,
	// 7: unreferenced file removal's reference index: what each immutable
	// manifest list and manifest of a table references, so that a run
	// reads only those it has not seen. Keyed by table and path; the
	// table's UUID is kept so that a table recreated under the same name
	// never reuses another's rows. refs is opaque here (package orphan
	// encodes and checks it).
	`CREATE TABLE ref_index (
		bucket TEXT NOT NULL, namespace TEXT NOT NULL, name TEXT NOT NULL, path TEXT NOT NULL,
		table_uuid TEXT NOT NULL, refs {{blob}} NOT NULL, indexed_at BIGINT NOT NULL,
		PRIMARY KEY (bucket, namespace, name, path));`,
	// 8: the rewrite ledger: input bytes compaction rewrote, by bucket and
	// time, which rewrite budgets sum over the last hour. Rows, not a
	// counter: every replica appends, and a sum over a window needs no
	// coordination.
	`CREATE TABLE rewrite_ledger (
		id {{id}}, bucket TEXT NOT NULL, finished_at BIGINT NOT NULL, bytes BIGINT NOT NULL);
	CREATE INDEX rewrite_ledger_by_time ON rewrite_ledger (finished_at);`,
	// 9: each table's health over time, for the dashboard's charts: one
	// row per metadata file the daemon computed health for (a table that
	// did not change adds none), the health as the JSON the API serves.
	// The unique key makes a sample idempotent: replicas and the API
	// computing the same table's health record it once.
	`CREATE TABLE health_samples (
		id {{id}}, bucket TEXT NOT NULL, namespace TEXT NOT NULL, name TEXT NOT NULL,
		sampled_at BIGINT NOT NULL, metadata_location TEXT NOT NULL, health TEXT NOT NULL);
	CREATE UNIQUE INDEX health_samples_once ON health_samples (bucket, namespace, name, metadata_location);
	CREATE INDEX health_samples_by_time ON health_samples (bucket, namespace, name, sampled_at);`,
	// 10: equality-delete conversion's key index (state.KeyIndex): per
	// table UUID and equality field set, the data files read, and for
	// each of their rows the key's hash, the file, the position and the
	// opaque entry (package compactor's). Entries are keyed by segment,
	// then hash: a segment is one batch of entries, written in hash order
	// after every existing segment (appended, not spread over the tree),
	// and a lookup of a few keys seeks each segment for them; segments
	// are merged, in hash order, to keep them few. Without a rowid on
	// SQLite, so that a row is stored once. segs numbers segments; dead
	// counts the rows of files forgotten whose entries are not yet swept.
	`CREATE TABLE key_indexes (
		id {{id}}, bucket TEXT NOT NULL, namespace TEXT NOT NULL, name TEXT NOT NULL,
		table_uuid TEXT NOT NULL, fields TEXT NOT NULL, segs BIGINT NOT NULL, dead BIGINT NOT NULL);
	CREATE UNIQUE INDEX key_indexes_once ON key_indexes (bucket, namespace, name, table_uuid, fields);
	CREATE TABLE key_index_files (
		id {{id}}, ix BIGINT NOT NULL, path TEXT NOT NULL, size BIGINT NOT NULL, records BIGINT NOT NULL,
		complete INTEGER NOT NULL);
	CREATE INDEX key_index_files_by_index ON key_index_files (ix, id);
	CREATE TABLE key_index_segments (
		ix BIGINT NOT NULL, seg BIGINT NOT NULL, entries BIGINT NOT NULL,
		PRIMARY KEY (ix, seg));
	CREATE TABLE key_index_entries (
		ix BIGINT NOT NULL, seg BIGINT NOT NULL, hash BIGINT NOT NULL, file BIGINT NOT NULL, pos BIGINT NOT NULL, entry {{blob}} NOT NULL,
		PRIMARY KEY (ix, seg, hash, file, pos)){{norowid}};`,
	// 11: erasure's blocks by another table: a file that held removed
	// rows, kept because another table of the bucket references it, with
	// that table, when the rows were removed and are due, and when a run
	// first found it. The
	// table's own metadata no longer reaches the file, so only this row
	// makes every later run look at it again.
	`CREATE TABLE erasure_blocks (
		bucket TEXT NOT NULL, namespace TEXT NOT NULL, name TEXT NOT NULL, path TEXT NOT NULL,
		holder_bucket TEXT NOT NULL, holder_namespace TEXT NOT NULL, holder_name TEXT NOT NULL,
		removed BIGINT NOT NULL, due BIGINT NOT NULL, first_seen BIGINT NOT NULL,
		PRIMARY KEY (bucket, namespace, name, path));`,
	// 12: the registry of tables (state.Tables): which table, by its
	// Iceberg UUID, each name of a bucket holds, and the tables dropped
	// or renamed away. Every other table keys its rows by name; when a
	// name's UUID changes, those rows move to the dropped table's key
	// (package state's TableKey.Dropped), and when a UUID moves to a new
	// name, they follow it. prev_* is where a row's state was before its
	// last move, and changed_at when, so that replicas' caches follow.
	// locations are where the table's files are (its location and write
	// paths, a JSON list): where a dropped table's leftovers lie;
	// collected_at when a sweep of them found nothing left. refs_* are
	// what removal read of the table (state.TableRefs), so that every
	// process's view of the other tables starts from it.
	`CREATE TABLE tables (
		bucket TEXT NOT NULL, namespace TEXT NOT NULL, name TEXT NOT NULL, table_uuid TEXT NOT NULL,
		locations TEXT NOT NULL, metadata_location TEXT NOT NULL,
		first_seen BIGINT NOT NULL, last_seen BIGINT NOT NULL, dropped_at BIGINT NOT NULL,
		prev_bucket TEXT NOT NULL, prev_namespace TEXT NOT NULL, prev_name TEXT NOT NULL, changed_at BIGINT NOT NULL,
		collected_at BIGINT NOT NULL DEFAULT 0,
		refs_metadata TEXT NOT NULL DEFAULT '', refs {{blob}}, refs_complete INTEGER NOT NULL DEFAULT 0, refs_checked BIGINT NOT NULL DEFAULT 0,
		PRIMARY KEY (bucket, table_uuid, namespace, name));
	CREATE INDEX tables_by_name ON tables (bucket, namespace, name);
	CREATE INDEX tables_by_change ON tables (changed_at);`,
}

// migrationLockID is an arbitrary constant key for pg_advisory_lock, so that
// replicas starting together migrate one at a time.
const migrationLockID = 0x1ce6ee9e

func (s *sqlStore) migrate(ctx context.Context) error {
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	if s.dialect == postgres {
		if _, err := conn.ExecContext(ctx, `SELECT pg_advisory_lock($1)`, migrationLockID); err != nil {
			return err
		}
		defer conn.ExecContext(context.WithoutCancel(ctx), `SELECT pg_advisory_unlock($1)`, migrationLockID)
	}
	if _, err := conn.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, applied_at BIGINT NOT NULL)`); err != nil {
		return err
	}
	var current int
	if err := conn.QueryRowContext(ctx, `SELECT COALESCE(MAX(version), 0) FROM schema_migrations`).Scan(&current); err != nil {
		return err
	}
	if current > len(migrations) {
		return fmt.Errorf("state store is at schema version %d, newer than this icekeeper (%d): upgrade icekeeper", current, len(migrations))
	}
	for v := current + 1; v <= len(migrations); v++ {
		if err := s.apply(ctx, conn, v, migrations[v-1]); err != nil {
			return fmt.Errorf("migration %d: %w", v, err)
		}
	}
	// River's own migrations, under the same lock.
	m, err := rivermigrate.New(s.river, nil)
	if err != nil {
		return fmt.Errorf("river migrations: %w", err)
	}
	if _, err := m.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
		return fmt.Errorf("river migrations: %w", err)
	}
	return nil
}

func (s *sqlStore) apply(ctx context.Context, conn *sql.Conn, version int, script string) error {
	id := "INTEGER PRIMARY KEY AUTOINCREMENT"
	if s.dialect == postgres {
		id = "BIGSERIAL PRIMARY KEY"
	}
	blob := "BLOB"
	if s.dialect == postgres {
		blob = "BYTEA"
	}
	norowid := " WITHOUT ROWID"
	if s.dialect == postgres {
		norowid = ""
	}
	script = strings.NewReplacer("{{id}}", id, "{{blob}}", blob, "{{norowid}}", norowid).Replace(script)
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	for _, stmt := range strings.Split(script, ";") {
		if strings.TrimSpace(stmt) == "" {
			continue
		}
		if _, err := tx.ExecContext(ctx, stmt); err != nil {
			return err
		}
	}
	if _, err := tx.ExecContext(ctx, s.rebind(`INSERT INTO schema_migrations (version, applied_at) VALUES (?, ?)`), version, time.Now().UnixMilli()); err != nil {
		return err
	}
	return tx.Commit()
}
