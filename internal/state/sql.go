package state

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // registers driver "pgx"
	"github.com/riverqueue/river/riverdriver"
	"github.com/riverqueue/river/riverdriver/riverdatabasesql"
	"github.com/riverqueue/river/riverdriver/riversqlite"
	_ "modernc.org/sqlite" // registers driver "sqlite"

	"github.com/icekeeper/icekeeper/internal/redact"
	"github.com/icekeeper/icekeeper/maintenance"
)

type dialect int

const (
	sqlite dialect = iota
	postgres
)

// sqlStore implements Store on database/sql for both dialects; the few
// differences (placeholders, id columns, migration locking) are handled in
// rebind and migrate.
type sqlStore struct {
	db      *sql.DB
	queueDB *sql.DB // River's own pool
	river   riverdriver.Driver[*sql.Tx]
	dialect dialect
}

// Open opens (creating when needed) and migrates the store named by dsn:
// sqlite://PATH or postgres://….
func Open(ctx context.Context, dsn string) (Store, error) {
	scheme, rest, _ := strings.Cut(dsn, "://")
	var s *sqlStore
	switch scheme {
	case "sqlite":
		if err := os.MkdirAll(filepath.Dir(rest), 0o755); err != nil {
			return nil, fmt.Errorf("open state store: %w", err)
		}
		file := "file:" + rest + "?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)&_txlock=immediate"
		db, err := sql.Open("sqlite", file)
		if err != nil {
			return nil, fmt.Errorf("open state store %s: %w", rest, err)
		}
		// Bounded: a burst of requests must queue for a connection, not
		// open a file handle each.
		db.SetMaxOpenConns(8)
		// River on SQLite wants one connection: its maintenance runs in
		// parallel, and SQLite has one writer at a time.
		queue, err := sql.Open("sqlite", file)
		if err != nil {
			db.Close()
			return nil, fmt.Errorf("open state store %s: %w", rest, err)
		}
		queue.SetMaxOpenConns(1)
		s = &sqlStore{db: db, queueDB: queue, river: riversqlite.New(queue), dialect: sqlite}
	case "postgres", "postgresql":
		db, err := sql.Open("pgx", dsn)
		if err != nil {
			return nil, fmt.Errorf("open state store: %w", err)
		}
		db.SetMaxOpenConns(8)
		queue, err := sql.Open("pgx", dsn)
		if err != nil {
			db.Close()
			return nil, fmt.Errorf("open state store: %w", err)
		}
		queue.SetMaxOpenConns(4)
		s = &sqlStore{db: db, queueDB: queue, river: riverdatabasesql.New(queue), dialect: postgres}
	default:
		return nil, fmt.Errorf("open state store: scheme %q is not sqlite or postgres", scheme)
	}
	if err := s.migrate(ctx); err != nil {
		s.Close()
		return nil, fmt.Errorf("migrate state store %s: %w", redact.URI(dsn), err)
	}
	return s, nil
}

func (s *sqlStore) Close() error { return errors.Join(s.queueDB.Close(), s.db.Close()) }

func (s *sqlStore) Ping(ctx context.Context) error {
	if err := s.db.PingContext(ctx); err != nil {
		return fmt.Errorf("reach state store: %w", err)
	}
	return nil
}

// rebind turns ? placeholders into $n for PostgreSQL.
func (s *sqlStore) rebind(q string) string {
	if s.dialect != postgres {
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

func (s *sqlStore) exec(ctx context.Context, q string, args ...any) (sql.Result, error) {
	return s.db.ExecContext(ctx, s.rebind(q), args...)
}

func (s *sqlStore) query(ctx context.Context, q string, args ...any) (*sql.Rows, error) {
	return s.db.QueryContext(ctx, s.rebind(q), args...)
}

func millis(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}

func fromMillis(ms int64) time.Time {
	if ms == 0 {
		return time.Time{}
	}
	return time.UnixMilli(ms).UTC()
}

func (s *sqlStore) TableConfig(ctx context.Context, t TableKey) (map[maintenance.JobType]maintenance.Config, error) {
	return s.configs(ctx, `SELECT job_type, value FROM table_config WHERE bucket = ? AND namespace = ? AND name = ?`, t.Bucket, t.Namespace, t.Name)
}

func (s *sqlStore) BucketConfig(ctx context.Context, bucket string) (map[maintenance.JobType]maintenance.Config, error) {
	return s.configs(ctx, `SELECT job_type, value FROM bucket_config WHERE bucket = ?`, bucket)
}

func (s *sqlStore) configs(ctx context.Context, q string, args ...any) (map[maintenance.JobType]maintenance.Config, error) {
	out := map[maintenance.JobType]maintenance.Config{}
	err := s.eachConfig(ctx, func(_ []string, typ maintenance.JobType, c maintenance.Config) { out[typ] = c }, 0, q, args...)
	return out, err
}

func (s *sqlStore) AllOverrides(ctx context.Context) (map[TableKey]map[maintenance.JobType]maintenance.Config, map[string]map[maintenance.JobType]maintenance.Config, error) {
	tables := map[TableKey]map[maintenance.JobType]maintenance.Config{}
	err := s.eachConfig(ctx, func(k []string, typ maintenance.JobType, c maintenance.Config) {
		key := TableKey{Bucket: k[0], Namespace: k[1], Name: k[2]}
		if tables[key] == nil {
			tables[key] = map[maintenance.JobType]maintenance.Config{}
		}
		tables[key][typ] = c
	}, 3, `SELECT bucket, namespace, name, job_type, value FROM table_config WHERE `+liveOnly)
	if err != nil {
		return nil, nil, err
	}
	buckets := map[string]map[maintenance.JobType]maintenance.Config{}
	err = s.eachConfig(ctx, func(k []string, typ maintenance.JobType, c maintenance.Config) {
		if buckets[k[0]] == nil {
			buckets[k[0]] = map[maintenance.JobType]maintenance.Config{}
		}
		buckets[k[0]][typ] = c
	}, 1, `SELECT bucket, job_type, value FROM bucket_config`)
	if err != nil {
		return nil, nil, err
	}
	return tables, buckets, nil
}

// eachConfig calls fn for each row of q, whose columns are keys key
// columns, then the job type and the stored configuration.
func (s *sqlStore) eachConfig(ctx context.Context, fn func(key []string, typ maintenance.JobType, c maintenance.Config), keys int, q string, args ...any) error {
	rows, err := s.query(ctx, q, args...)
	if err != nil {
		return fmt.Errorf("read maintenance configuration: %w", err)
	}
	defer rows.Close()
	key := make([]string, keys)
	for rows.Next() {
		var typ, value string
		dest := make([]any, 0, keys+2)
		for i := range key {
			dest = append(dest, &key[i])
		}
		if err := rows.Scan(append(dest, &typ, &value)...); err != nil {
			return fmt.Errorf("read maintenance configuration: %w", err)
		}
		var c maintenance.Config
		if err := json.Unmarshal([]byte(value), &c); err != nil {
			return fmt.Errorf("decode stored %s configuration: %w", typ, err)
		}
		fn(key, maintenance.JobType(typ), c)
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read maintenance configuration: %w", err)
	}
	return nil
}

func (s *sqlStore) PutTableConfig(ctx context.Context, t TableKey, typ maintenance.JobType, c maintenance.Config) error {
	value, err := json.Marshal(c)
	if err != nil {
		return err
	}
	_, err = s.exec(ctx, `INSERT INTO table_config (bucket, namespace, name, job_type, value, updated_at) VALUES (?, ?, ?, ?, ?, ?)
		ON CONFLICT (bucket, namespace, name, job_type) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at`,
		t.Bucket, t.Namespace, t.Name, string(typ), string(value), time.Now().UnixMilli())
	if err != nil {
		return fmt.Errorf("store %s configuration of %s: %w", typ, t, err)
	}
	return nil
}

func (s *sqlStore) PutBucketConfig(ctx context.Context, bucket string, typ maintenance.JobType, c maintenance.Config) error {
	value, err := json.Marshal(c)
	if err != nil {
		return err
	}
	_, err = s.exec(ctx, `INSERT INTO bucket_config (bucket, job_type, value, updated_at) VALUES (?, ?, ?, ?)
		ON CONFLICT (bucket, job_type) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at`,
		bucket, string(typ), string(value), time.Now().UnixMilli())
	if err != nil {
		return fmt.Errorf("store %s configuration of %s: %w", typ, bucket, err)
	}
	return nil
}

func (s *sqlStore) StartRun(ctx context.Context, r Run) (int64, error) {
	var id int64
	err := s.db.QueryRowContext(ctx, s.rebind(`INSERT INTO runs (bucket, namespace, name, job_type, trigger_kind, started_at, finished_at, status, failure_message, metrics)
		VALUES (?, ?, ?, ?, ?, ?, 0, ?, '', '') RETURNING id`),
		r.Table.Bucket, r.Table.Namespace, r.Table.Name, string(r.Type), r.Trigger, millis(r.Started), string(Running)).Scan(&id)
	if err != nil {
		return 0, fmt.Errorf("record start of %s on %s: %w", r.Type, r.Table, err)
	}
	return id, nil
}

func (s *sqlStore) FinishRun(ctx context.Context, r Run) error {
	var ev Evaluation
	if r.Evaluation != nil && r.Evaluation.SettingsHash != "" {
		ev = *r.Evaluation
	}
	res, err := s.exec(ctx, `UPDATE runs SET finished_at = ?, status = ?, failure_message = ?, metrics = ?,
		seen_snapshot = ?, seen_metadata = ?, seen_hash = ?, evaluated_run = ?, evaluated_at = ?, valid_until = ? WHERE id = ?`,
		millis(r.Finished), string(r.Status), r.FailureMessage, string(r.Metrics),
		ev.SnapshotID, ev.MetadataLocation, ev.SettingsHash, ev.RunID, millis(ev.At), millis(ev.ValidUntil), r.ID)
	if err != nil {
		return fmt.Errorf("record end of run %d: %w", r.ID, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("record end of run %d: %w", r.ID, ErrNotFound)
	}
	return nil
}

const runColumns = `id, bucket, namespace, name, job_type, trigger_kind, started_at, finished_at, status, failure_message, metrics,
	seen_snapshot, seen_metadata, seen_hash, evaluated_run, evaluated_at, valid_until`

func scanRuns(rows *sql.Rows) ([]Run, error) {
	defer rows.Close()
	var out []Run
	for rows.Next() {
		var r Run
		var typ, status, metrics string
		var started, finished, evAt, validUntil int64
		var ev Evaluation
		if err := rows.Scan(&r.ID, &r.Table.Bucket, &r.Table.Namespace, &r.Table.Name, &typ, &r.Trigger, &started, &finished, &status, &r.FailureMessage, &metrics,
			&ev.SnapshotID, &ev.MetadataLocation, &ev.SettingsHash, &ev.RunID, &evAt, &validUntil); err != nil {
			return nil, err
		}
		if ev.SettingsHash != "" {
			ev.At, ev.ValidUntil = fromMillis(evAt), fromMillis(validUntil)
			r.Evaluation = &ev
		}
		r.Type, r.Status = maintenance.JobType(typ), RunStatus(status)
		r.Started, r.Finished = fromMillis(started), fromMillis(finished)
		if metrics != "" {
			r.Metrics = json.RawMessage(metrics)
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

func (s *sqlStore) LastRuns(ctx context.Context, t TableKey) (map[maintenance.JobType]Run, error) {
	rows, err := s.query(ctx, `SELECT `+runColumns+` FROM runs WHERE id IN (
		SELECT MAX(id) FROM runs WHERE bucket = ? AND namespace = ? AND name = ? AND status NOT IN (?, ?) GROUP BY job_type)`,
		t.Bucket, t.Namespace, t.Name, string(Running), string(Disabled))
	if err != nil {
		return nil, fmt.Errorf("read last runs of %s: %w", t, err)
	}
	runs, err := scanRuns(rows)
	if err != nil {
		return nil, fmt.Errorf("read last runs of %s: %w", t, err)
	}
	out := make(map[maintenance.JobType]Run, len(runs))
	for _, r := range runs {
		out[r.Type] = r
	}
	return out, nil
}

func (s *sqlStore) LastEvaluation(ctx context.Context, t TableKey, typ maintenance.JobType) (Evaluation, bool, error) {
	rows, err := s.query(ctx, `SELECT `+runColumns+` FROM runs WHERE bucket = ? AND namespace = ? AND name = ? AND job_type = ? AND status = ?
		ORDER BY id DESC LIMIT 1`, t.Bucket, t.Namespace, t.Name, string(typ), string(Successful))
	if err != nil {
		return Evaluation{}, false, fmt.Errorf("read last evaluation of %s on %s: %w", typ, t, err)
	}
	runs, err := scanRuns(rows)
	if err != nil {
		return Evaluation{}, false, fmt.Errorf("read last evaluation of %s on %s: %w", typ, t, err)
	}
	if len(runs) == 0 || runs[0].Evaluation == nil {
		return Evaluation{}, false, nil
	}
	return *runs[0].Evaluation, true, nil
}

func (s *sqlStore) LastSuccesses(ctx context.Context) ([]Run, error) {
	rows, err := s.query(ctx, `SELECT `+runColumns+` FROM runs WHERE id IN (
		SELECT MAX(id) FROM runs WHERE status = ? AND `+liveOnly+` GROUP BY bucket, namespace, name, job_type)`, string(Successful))
	if err != nil {
		return nil, fmt.Errorf("read last successful runs: %w", err)
	}
	runs, err := scanRuns(rows)
	if err != nil {
		return nil, fmt.Errorf("read last successful runs: %w", err)
	}
	return runs, nil
}

func (s *sqlStore) LatestRuns(ctx context.Context, since time.Time) ([]Run, error) {
	q, args := `SELECT `+runColumns+` FROM runs WHERE finished_at >= ? AND status <> ? ORDER BY id`, []any{millis(since), string(Running)}
	if since.IsZero() {
		q = `SELECT ` + runColumns + ` FROM runs WHERE id IN (
			SELECT MAX(id) FROM runs WHERE status NOT IN (?, ?) AND ` + liveOnly + ` GROUP BY bucket, namespace, name, job_type
			UNION SELECT MAX(id) FROM runs WHERE status = ? AND ` + liveOnly + ` GROUP BY bucket, namespace, name, job_type) ORDER BY id`
		args = []any{string(Running), string(Disabled), string(Successful)}
	}
	rows, err := s.query(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("read latest runs: %w", err)
	}
	runs, err := scanRuns(rows)
	if err != nil {
		return nil, fmt.Errorf("read latest runs: %w", err)
	}
	return runs, nil
}

func (s *sqlStore) Runs(ctx context.Context, t TableKey, typ maintenance.JobType, limit int) ([]Run, error) {
	rows, err := s.query(ctx, `SELECT `+runColumns+` FROM runs WHERE bucket = ? AND namespace = ? AND name = ? AND job_type = ? ORDER BY id DESC LIMIT ?`,
		t.Bucket, t.Namespace, t.Name, string(typ), limit)
	if err != nil {
		return nil, fmt.Errorf("read runs of %s: %w", t, err)
	}
	runs, err := scanRuns(rows)
	if err != nil {
		return nil, fmt.Errorf("read runs of %s: %w", t, err)
	}
	return runs, nil
}

func (s *sqlStore) PutMarks(ctx context.Context, marks []Mark) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("store noncurrent marks: %w", err)
	}
	defer tx.Rollback()
	stmt, err := tx.PrepareContext(ctx, s.rebind(`INSERT INTO noncurrent_marks (bucket, namespace, name, path, size, last_modified, marked_at, run_id)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (bucket, namespace, name, path) DO UPDATE SET
		size = excluded.size, last_modified = excluded.last_modified, marked_at = excluded.marked_at, run_id = excluded.run_id`))
	if err != nil {
		return fmt.Errorf("store noncurrent marks: %w", err)
	}
	defer stmt.Close()
	for _, m := range marks {
		if _, err := stmt.ExecContext(ctx, m.Table.Bucket, m.Table.Namespace, m.Table.Name, m.Path, m.Size, millis(m.LastModified), millis(m.MarkedAt), m.RunID); err != nil {
			return fmt.Errorf("store noncurrent mark of %s: %w", m.Path, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("store noncurrent marks: %w", err)
	}
	return nil
}

func (s *sqlStore) Marks(ctx context.Context, t TableKey) ([]Mark, error) {
	rows, err := s.query(ctx, `SELECT path, size, last_modified, marked_at, run_id, protected_at FROM noncurrent_marks
		WHERE bucket = ? AND namespace = ? AND name = ? ORDER BY path`, t.Bucket, t.Namespace, t.Name)
	if err != nil {
		return nil, fmt.Errorf("read noncurrent marks of %s: %w", t, err)
	}
	defer rows.Close()
	var out []Mark
	for rows.Next() {
		m := Mark{Table: t}
		var lm, at, prot int64
		if err := rows.Scan(&m.Path, &m.Size, &lm, &at, &m.RunID, &prot); err != nil {
			return nil, fmt.Errorf("read noncurrent marks of %s: %w", t, err)
		}
		m.LastModified, m.MarkedAt = fromMillis(lm), fromMillis(at)
		if prot != 0 {
			m.ProtectedAt = fromMillis(prot)
		}
		out = append(out, m)
	}
	return out, rows.Err()
}

func (s *sqlStore) MarkStats(ctx context.Context) (map[TableKey]MarkStat, error) {
	rows, err := s.query(ctx, `SELECT bucket, namespace, name, COUNT(*), MIN(marked_at) FROM noncurrent_marks
		WHERE protected_at = 0 AND `+liveOnly+` GROUP BY bucket, namespace, name`)
	if err != nil {
		return nil, fmt.Errorf("count noncurrent marks: %w", err)
	}
	defer rows.Close()
	out := map[TableKey]MarkStat{}
	for rows.Next() {
		var k TableKey
		var st MarkStat
		var oldest int64
		if err := rows.Scan(&k.Bucket, &k.Namespace, &k.Name, &st.Count, &oldest); err != nil {
			return nil, fmt.Errorf("count noncurrent marks: %w", err)
		}
		st.Oldest = fromMillis(oldest)
		out[k] = st
	}
	return out, rows.Err()
}

func (s *sqlStore) ProtectMarks(ctx context.Context, t TableKey, paths []string, at time.Time) (int, error) {
	const protect = `UPDATE noncurrent_marks SET protected_at = ? WHERE bucket = ? AND namespace = ? AND name = ? AND protected_at = 0`
	if paths == nil {
		res, err := s.exec(ctx, protect, millis(at), t.Bucket, t.Namespace, t.Name)
		if err != nil {
			return 0, fmt.Errorf("protect noncurrent objects of %s: %w", t, err)
		}
		n, _ := res.RowsAffected()
		return int(n), nil
	}
	n, err := s.perPath(ctx, t, paths, protect+` AND path = ?`, millis(at))
	if err != nil {
		return 0, fmt.Errorf("protect noncurrent objects of %s: %w", t, err)
	}
	return n, nil
}

func (s *sqlStore) DeleteMarks(ctx context.Context, t TableKey, paths []string) (int, error) {
	n, err := s.perPath(ctx, t, paths, `DELETE FROM noncurrent_marks WHERE bucket = ? AND namespace = ? AND name = ? AND path = ?`)
	if err != nil {
		return 0, fmt.Errorf("clear noncurrent marks of %s: %w", t, err)
	}
	return n, nil
}

func (s *sqlStore) PutErasureBlocks(ctx context.Context, blocks []ErasureBlock) error {
	if len(blocks) == 0 {
		return nil
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("store erasure blocks: %w", err)
	}
	defer tx.Rollback()
	stmt, err := tx.PrepareContext(ctx, s.rebind(`INSERT INTO erasure_blocks (bucket, namespace, name, path,
		holder_bucket, holder_namespace, holder_name, removed, due, first_seen) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (bucket, namespace, name, path) DO UPDATE SET holder_bucket = excluded.holder_bucket,
		holder_namespace = excluded.holder_namespace, holder_name = excluded.holder_name,
		removed = excluded.removed, due = excluded.due`))
	if err != nil {
		return fmt.Errorf("store erasure blocks: %w", err)
	}
	defer stmt.Close()
	for _, b := range blocks {
		if _, err := stmt.ExecContext(ctx, b.Table.Bucket, b.Table.Namespace, b.Table.Name, b.Path,
			b.Holder.Bucket, b.Holder.Namespace, b.Holder.Name, millis(b.Removed), millis(b.Due), millis(b.FirstSeen)); err != nil {
			return fmt.Errorf("store erasure block of %s: %w", b.Path, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("store erasure blocks: %w", err)
	}
	return nil
}

func (s *sqlStore) ErasureBlocks(ctx context.Context, t TableKey) ([]ErasureBlock, error) {
	rows, err := s.query(ctx, `SELECT path, holder_bucket, holder_namespace, holder_name, removed, due, first_seen FROM erasure_blocks
		WHERE bucket = ? AND namespace = ? AND name = ? ORDER BY path`, t.Bucket, t.Namespace, t.Name)
	if err != nil {
		return nil, fmt.Errorf("read erasure blocks of %s: %w", t, err)
	}
	defer rows.Close()
	var out []ErasureBlock
	for rows.Next() {
		b := ErasureBlock{Table: t}
		var removed, due, seen int64
		if err := rows.Scan(&b.Path, &b.Holder.Bucket, &b.Holder.Namespace, &b.Holder.Name, &removed, &due, &seen); err != nil {
			return nil, fmt.Errorf("read erasure blocks of %s: %w", t, err)
		}
		b.Removed, b.Due, b.FirstSeen = fromMillis(removed), fromMillis(due), fromMillis(seen)
		out = append(out, b)
	}
	return out, rows.Err()
}

func (s *sqlStore) DeleteErasureBlocks(ctx context.Context, t TableKey, paths []string) (int, error) {
	n, err := s.perPath(ctx, t, paths, `DELETE FROM erasure_blocks WHERE bucket = ? AND namespace = ? AND name = ? AND path = ?`)
	if err != nil {
		return 0, fmt.Errorf("clear erasure blocks of %s: %w", t, err)
	}
	return n, nil
}

// perPath runs stmt once per path in one transaction, with the arguments
// lead..., t's bucket, namespace and name, and the path, and returns the
// rows it affected.
func (s *sqlStore) perPath(ctx context.Context, t TableKey, paths []string, stmt string, lead ...any) (int, error) {
	if len(paths) == 0 {
		return 0, nil
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return 0, err
	}
	defer tx.Rollback()
	stmt = s.rebind(stmt)
	total := 0
	for _, p := range paths {
		res, err := tx.ExecContext(ctx, stmt, append(lead, t.Bucket, t.Namespace, t.Name, p)...)
		if err != nil {
			return 0, fmt.Errorf("%s: %w", p, err)
		}
		n, _ := res.RowsAffected()
		total += int(n)
	}
	return total, tx.Commit()
}

func (s *sqlStore) AcquireLease(ctx context.Context, name, holder string, now time.Time, ttl time.Duration) (bool, error) {
	if ttl <= 0 {
		return false, errors.New("acquire lease: ttl must be positive")
	}
	// One statement, so two replicas racing for an expired lease cannot
	// both win: the conflict branch updates only when the lease is ours or
	// has expired, and zero affected rows means someone else holds it.
	res, err := s.exec(ctx, `INSERT INTO leases (name, holder, expires_at) VALUES (?, ?, ?)
		ON CONFLICT (name) DO UPDATE SET holder = excluded.holder, expires_at = excluded.expires_at
		WHERE leases.holder = excluded.holder OR leases.expires_at <= ?`,
		name, holder, now.Add(ttl).UnixMilli(), now.UnixMilli())
	if err != nil {
		return false, fmt.Errorf("acquire lease %s: %w", name, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, fmt.Errorf("acquire lease %s: %w", name, err)
	}
	return n == 1, nil
}

func (s *sqlStore) LeaseHolder(ctx context.Context, name string, now time.Time) (string, error) {
	var holder string
	err := s.db.QueryRowContext(ctx, s.rebind(`SELECT holder FROM leases WHERE name = ? AND expires_at > ?`), name, now.UnixMilli()).Scan(&holder)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("read lease %s: %w", name, err)
	}
	return holder, nil
}

func (s *sqlStore) ReleaseLease(ctx context.Context, name, holder string) error {
	if _, err := s.exec(ctx, `DELETE FROM leases WHERE name = ? AND holder = ?`, name, holder); err != nil {
		return fmt.Errorf("release lease %s: %w", name, err)
	}
	return nil
}

func (s *sqlStore) RecordRewrite(ctx context.Context, bucket string, at time.Time, bytes int64) error {
	if bytes <= 0 {
		return nil
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("record %d bytes rewritten in %s: %w", bytes, bucket, err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, s.rebind(`INSERT INTO rewrite_ledger (bucket, finished_at, bytes) VALUES (?, ?, ?)`), bucket, millis(at), bytes); err != nil {
		return fmt.Errorf("record %d bytes rewritten in %s: %w", bytes, bucket, err)
	}
	if _, err := tx.ExecContext(ctx, s.rebind(`DELETE FROM rewrite_ledger WHERE finished_at < ?`), millis(at.Add(-LedgerKeep))); err != nil {
		return fmt.Errorf("forget old rewrite ledger rows: %w", err)
	}
	return tx.Commit()
}

func (s *sqlStore) RewrittenSince(ctx context.Context, since time.Time) (map[string]int64, error) {
	rows, err := s.query(ctx, `SELECT bucket, CAST(SUM(bytes) AS BIGINT) FROM rewrite_ledger WHERE finished_at >= ? GROUP BY bucket`, millis(since))
	if err != nil {
		return nil, fmt.Errorf("read the rewrite ledger: %w", err)
	}
	defer rows.Close()
	out := map[string]int64{}
	for rows.Next() {
		var bucket string
		var n int64
		if err := rows.Scan(&bucket, &n); err != nil {
			return nil, fmt.Errorf("read the rewrite ledger: %w", err)
		}
		out[bucket] = n
	}
	return out, rows.Err()
}

// indexBatch bounds the paths of one IndexedRefs query: SQLite limits a
// statement's parameters, and one round trip per few hundred rows is
// cheap enough.
const indexBatch = 500

func (s *sqlStore) IndexedRefs(ctx context.Context, t TableKey, paths []string) (map[string]IndexRow, error) {
	out := map[string]IndexRow{}
	for start := 0; start < len(paths); start += indexBatch {
		batch := paths[start:min(start+indexBatch, len(paths))]
		args := []any{t.Bucket, t.Namespace, t.Name}
		for _, p := range batch {
			args = append(args, p)
		}
		rows, err := s.query(ctx, `SELECT path, table_uuid, refs FROM ref_index WHERE bucket = ? AND namespace = ? AND name = ? AND path IN (?`+
			strings.Repeat(", ?", len(batch)-1)+`)`, args...)
		if err != nil {
			return nil, fmt.Errorf("read reference index of %s: %w", t, err)
		}
		for rows.Next() {
			var r IndexRow
			if err := rows.Scan(&r.Path, &r.TableUUID, &r.Refs); err != nil {
				rows.Close()
				return nil, fmt.Errorf("read reference index of %s: %w", t, err)
			}
			out[r.Path] = r
		}
		err = rows.Err()
		rows.Close()
		if err != nil {
			return nil, fmt.Errorf("read reference index of %s: %w", t, err)
		}
	}
	return out, nil
}

func (s *sqlStore) PutIndexedRefs(ctx context.Context, t TableKey, rows []IndexRow) error {
	if len(rows) == 0 {
		return nil
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("store reference index of %s: %w", t, err)
	}
	defer tx.Rollback()
	stmt, err := tx.PrepareContext(ctx, s.rebind(`INSERT INTO ref_index (bucket, namespace, name, path, table_uuid, refs, indexed_at)
		VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (bucket, namespace, name, path) DO UPDATE SET
		table_uuid = excluded.table_uuid, refs = excluded.refs, indexed_at = excluded.indexed_at`))
	if err != nil {
		return fmt.Errorf("store reference index of %s: %w", t, err)
	}
	defer stmt.Close()
	now := time.Now().UnixMilli()
	for _, r := range rows {
		if _, err := stmt.ExecContext(ctx, t.Bucket, t.Namespace, t.Name, r.Path, r.TableUUID, r.Refs, now); err != nil {
			return fmt.Errorf("store reference index of %s for %s: %w", t, r.Path, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("store reference index of %s: %w", t, err)
	}
	return nil
}

func (s *sqlStore) ForgetIndexedRefs(ctx context.Context, t TableKey, tableUUID string, keep []string) (int, error) {
	rows, err := s.query(ctx, `SELECT path, table_uuid FROM ref_index WHERE bucket = ? AND namespace = ? AND name = ?`, t.Bucket, t.Namespace, t.Name)
	if err != nil {
		return 0, fmt.Errorf("read reference index of %s: %w", t, err)
	}
	kept := make(map[string]bool, len(keep))
	for _, p := range keep {
		kept[p] = true
	}
	var gone []string
	for rows.Next() {
		var p, id string
		if err := rows.Scan(&p, &id); err != nil {
			rows.Close()
			return 0, fmt.Errorf("read reference index of %s: %w", t, err)
		}
		if !kept[p] || id != tableUUID {
			gone = append(gone, p)
		}
	}
	err = rows.Err()
	rows.Close()
	if err != nil {
		return 0, fmt.Errorf("read reference index of %s: %w", t, err)
	}
	n, err := s.perPath(ctx, t, gone, `DELETE FROM ref_index WHERE bucket = ? AND namespace = ? AND name = ? AND path = ?`)
	if err != nil {
		return 0, fmt.Errorf("forget reference index rows of %s: %w", t, err)
	}
	return n, nil
}
