package state

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/icekeeper/icekeeper/maintenance"
)

func (s *sqlStore) FailRunning(ctx context.Context, t TableKey, typ maintenance.JobType, msg string, now time.Time) (int, error) {
	res, err := s.exec(ctx, `UPDATE runs SET status = ?, failure_message = ?, finished_at = ?
		WHERE bucket = ? AND namespace = ? AND name = ? AND job_type = ? AND status = ?`,
		string(Failed), msg, now.UnixMilli(), t.Bucket, t.Namespace, t.Name, string(typ), string(Running))
	if err != nil {
		return 0, fmt.Errorf("fail abandoned runs of %s: %w", t, err)
	}
	n, _ := res.RowsAffected()
	return int(n), nil
}

func (s *sqlStore) Enqueue(ctx context.Context, j QueuedJob) (bool, error) {
	res, err := s.exec(ctx, `INSERT INTO job_queue (bucket, namespace, name, job_type, trigger_kind, not_before, enqueued_at, claimed_by, claimed_until, attempts)
		VALUES (?, ?, ?, ?, ?, ?, ?, '', 0, 0) ON CONFLICT (bucket, namespace, name, job_type) DO NOTHING`,
		j.Table.Bucket, j.Table.Namespace, j.Table.Name, string(j.Type), j.Trigger, j.NotBefore.UnixMilli(), time.Now().UnixMilli())
	if err != nil {
		return false, fmt.Errorf("enqueue %s on %s: %w", j.Type, j.Table, err)
	}
	n, _ := res.RowsAffected()
	return n == 1, nil
}

func (s *sqlStore) Claim(ctx context.Context, holder string, now time.Time, ttl time.Duration) (*QueuedJob, error) {
	// The subquery picks a candidate; the outer condition re-checks it, so
	// of two workers that picked the same row only one updates it. On
	// PostgreSQL, SKIP LOCKED lets the other pick a different row at once.
	lock := ""
	if s.dialect == postgres {
		lock = " FOR UPDATE SKIP LOCKED"
	}
	n := now.UnixMilli()
	var j QueuedJob
	var typ string
	var notBefore int64
	err := s.db.QueryRowContext(ctx, s.rebind(`UPDATE job_queue SET claimed_by = ?, claimed_until = ?, attempts = attempts + 1
		WHERE id = (SELECT id FROM job_queue WHERE not_before <= ? AND claimed_until <= ? ORDER BY not_before, id LIMIT 1`+lock+`)
		AND claimed_until <= ?
		RETURNING id, bucket, namespace, name, job_type, trigger_kind, not_before, attempts`),
		holder, now.Add(ttl).UnixMilli(), n, n, n).Scan(&j.ID, &j.Table.Bucket, &j.Table.Namespace, &j.Table.Name, &typ, &j.Trigger, &notBefore, &j.Attempts)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("claim a queued job: %w", err)
	}
	j.Type, j.NotBefore = maintenance.JobType(typ), fromMillis(notBefore)
	return &j, nil
}

func (s *sqlStore) Extend(ctx context.Context, id int64, holder string, until time.Time) error {
	return s.claimed(ctx, "extend", id, `UPDATE job_queue SET claimed_until = ? WHERE id = ? AND claimed_by = ?`, until.UnixMilli(), id, holder)
}

func (s *sqlStore) Complete(ctx context.Context, id int64, holder string) error {
	return s.claimed(ctx, "complete", id, `DELETE FROM job_queue WHERE id = ? AND claimed_by = ?`, id, holder)
}

func (s *sqlStore) Requeue(ctx context.Context, id int64, holder string, notBefore time.Time) error {
	return s.claimed(ctx, "requeue", id, `UPDATE job_queue SET claimed_by = '', claimed_until = 0, not_before = ? WHERE id = ? AND claimed_by = ?`, notBefore.UnixMilli(), id, holder)
}

// claimed runs a statement on a job holder claims; zero rows means the
// claim was lost (it expired and another worker took it over).
func (s *sqlStore) claimed(ctx context.Context, what string, id int64, q string, args ...any) error {
	res, err := s.exec(ctx, q, args...)
	if err != nil {
		return fmt.Errorf("%s queued job %d: %w", what, id, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("%s queued job %d: %w", what, id, ErrClaimLost)
	}
	return nil
}

// ErrClaimLost is returned when a worker acts on a claim it no longer holds.
var ErrClaimLost = errors.New("claim lost")

func (s *sqlStore) QueueDepth(ctx context.Context) (int, error) {
	var n int
	if err := s.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM job_queue`).Scan(&n); err != nil {
		return 0, fmt.Errorf("count queued jobs: %w", err)
	}
	return n, nil
}

func (s *sqlStore) LastFire(ctx context.Context, typ maintenance.JobType) (time.Time, error) {
	var ms int64
	err := s.db.QueryRowContext(ctx, s.rebind(`SELECT last_fire FROM schedule_fires WHERE job_type = ?`), string(typ)).Scan(&ms)
	if errors.Is(err, sql.ErrNoRows) {
		return time.Time{}, nil
	}
	if err != nil {
		return time.Time{}, fmt.Errorf("read last fire of %s: %w", typ, err)
	}
	return fromMillis(ms), nil
}

func (s *sqlStore) SetLastFire(ctx context.Context, typ maintenance.JobType, at time.Time) error {
	_, err := s.exec(ctx, `INSERT INTO schedule_fires (job_type, last_fire) VALUES (?, ?)
		ON CONFLICT (job_type) DO UPDATE SET last_fire = excluded.last_fire`, string(typ), at.UnixMilli())
	if err != nil {
		return fmt.Errorf("record fire of %s: %w", typ, err)
	}
	return nil
}
