package state

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"time"
)

func (s *sqlStore) RecordHealth(ctx context.Context, h HealthSample) (bool, error) {
	t := h.Table
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return false, fmt.Errorf("record health of %s: %w", t, err)
	}
	defer tx.Rollback()
	res, err := tx.ExecContext(ctx, s.rebind(`INSERT INTO health_samples (bucket, namespace, name, sampled_at, metadata_location, health)
		VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (bucket, namespace, name, metadata_location) DO NOTHING`),
		t.Bucket, t.Namespace, t.Name, millis(h.At), h.MetadataLocation, string(h.Health))
	if err != nil {
		return false, fmt.Errorf("record health of %s: %w", t, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return false, nil // sampled already; the insert that did pruned
	}
	// Samples past HealthKeep go whatever their table, so that a table
	// dropped or renamed leaves none behind for long; the cap counts the
	// table's own.
	if _, err := tx.ExecContext(ctx, s.rebind(`DELETE FROM health_samples WHERE sampled_at < ?`), millis(h.At.Add(-HealthKeep))); err != nil {
		return false, fmt.Errorf("forget health samples older than %s: %w", HealthKeep, err)
	}
	if _, err := tx.ExecContext(ctx, s.rebind(`DELETE FROM health_samples WHERE bucket = ? AND namespace = ? AND name = ?
		AND id <= (SELECT id FROM health_samples WHERE bucket = ? AND namespace = ? AND name = ? ORDER BY id DESC LIMIT 1 OFFSET ?)`),
		t.Bucket, t.Namespace, t.Name, t.Bucket, t.Namespace, t.Name, HealthKeepPerTable); err != nil {
		return false, fmt.Errorf("forget old health samples of %s: %w", t, err)
	}
	if err := tx.Commit(); err != nil {
		return false, fmt.Errorf("record health of %s: %w", t, err)
	}
	return true, nil
}

func (s *sqlStore) HealthSamples(ctx context.Context, t TableKey, since time.Time) ([]HealthSample, error) {
	rows, err := s.query(ctx, `SELECT sampled_at, metadata_location, health FROM health_samples
		WHERE bucket = ? AND namespace = ? AND name = ? AND sampled_at >= ? ORDER BY sampled_at, id`, t.Bucket, t.Namespace, t.Name, millis(since))
	if err != nil {
		return nil, fmt.Errorf("read health history of %s: %w", t, err)
	}
	defer rows.Close()
	var out []HealthSample
	for rows.Next() {
		h := HealthSample{Table: t}
		var at int64
		var health string
		if err := rows.Scan(&at, &h.MetadataLocation, &health); err != nil {
			return nil, fmt.Errorf("read health history of %s: %w", t, err)
		}
		h.At, h.Health = fromMillis(at), json.RawMessage(health)
		out = append(out, h)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read health history of %s: %w", t, err)
	}
	return out, nil
}

// figurePath is a path DailySums accepts: keys of letters, digits and
// underscores, dot-separated.
var figurePath = regexp.MustCompile(`^[A-Za-z0-9_]+(\.[A-Za-z0-9_]+)*$`)

const dayMs = 24 * 60 * 60 * 1000

func (s *sqlStore) DailySums(ctx context.Context, t TableKey, since time.Time, paths ...string) ([]DaySums, error) {
	// The figures are summed where they are: a month of a busy table's
	// runs is thousands of figures, of which a day needs a few numbers.
	// A value that is not a number (a figure of another shape) adds 0.
	var sums strings.Builder
	var args []any
	for _, p := range paths {
		if !figurePath.MatchString(p) {
			return nil, fmt.Errorf("sum figures of %s: path %q is not dot-separated keys", t, p)
		}
		if s.dialect == postgres {
			sums.WriteString(`, SUM(CASE WHEN jsonb_typeof(metrics::jsonb #> CAST(? AS text[])) = 'number' THEN (metrics::jsonb #>> CAST(? AS text[]))::float8 ELSE 0 END)`)
			key := "{" + strings.ReplaceAll(p, ".", ",") + "}"
			args = append(args, key, key)
		} else {
			sums.WriteString(`, SUM(CASE WHEN json_type(metrics, ?) IN ('integer', 'real') THEN json_extract(metrics, ?) ELSE 0 END)`)
			args = append(args, "$."+p, "$."+p)
		}
	}
	valid := ""
	if s.dialect == sqlite {
		valid = " AND json_valid(metrics)"
	}
	args = append(args, t.Bucket, t.Namespace, t.Name, millis(since), string(Running))
	rows, err := s.query(ctx, `SELECT started_at / `+fmt.Sprint(dayMs)+`, COUNT(*)`+sums.String()+` FROM runs
		WHERE bucket = ? AND namespace = ? AND name = ? AND started_at >= ? AND status <> ? AND metrics <> ''`+valid+`
		GROUP BY started_at / `+fmt.Sprint(dayMs)+` ORDER BY 1`, args...)
	if err != nil {
		return nil, fmt.Errorf("sum figures of %s: %w", t, err)
	}
	defer rows.Close()
	var out []DaySums
	for rows.Next() {
		var day int64
		d := DaySums{Sums: make([]float64, len(paths))}
		dest := []any{&day, &d.Runs}
		for i := range d.Sums {
			dest = append(dest, &d.Sums[i])
		}
		if err := rows.Scan(dest...); err != nil {
			return nil, fmt.Errorf("sum figures of %s: %w", t, err)
		}
		d.Day = time.UnixMilli(day * dayMs).UTC()
		out = append(out, d)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sum figures of %s: %w", t, err)
	}
	return out, nil
}
