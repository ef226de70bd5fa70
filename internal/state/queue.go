package state

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/riverqueue/river/riverdriver"

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

func (s *sqlStore) RunningRuns(ctx context.Context, startedBefore time.Time) ([]Run, error) {
	rows, err := s.query(ctx, `SELECT `+runColumns+` FROM runs WHERE status = ? AND started_at < ? ORDER BY id`,
		string(Running), millis(startedBefore))
	if err != nil {
		return nil, fmt.Errorf("read running runs: %w", err)
	}
	runs, err := scanRuns(rows)
	if err != nil {
		return nil, fmt.Errorf("read running runs: %w", err)
	}
	return runs, nil
}

func (s *sqlStore) FailRun(ctx context.Context, r Run, msg string, now time.Time) (bool, error) {
	res, err := s.exec(ctx, `UPDATE runs SET status = ?, failure_message = ?, finished_at = ? WHERE id = ? AND status = ?`,
		string(Failed), msg, millis(now), r.ID, string(Running))
	if err != nil {
		return false, fmt.Errorf("fail run %d: %w", r.ID, err)
	}
	n, _ := res.RowsAffected()
	return n == 1, nil
}

func (s *sqlStore) Engine() riverdriver.Driver[*sql.Tx] { return s.river }

func (s *sqlStore) QueueDepth(ctx context.Context) (int, error) {
	var n int
	if err := s.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM river_job WHERE state IN ('available', 'pending', 'retryable', 'running', 'scheduled')`).Scan(&n); err != nil {
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
