package state

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// keyBatch bounds the hashes of one LookupKeys query and the entries of
// one INSERT: SQLite limits a statement's parameters, and a few hundred
// rows per round trip keep PostgreSQL's round trips few.
const keyBatch = 500

// keyIndexID returns the ID of t's index ix; false when it does not exist.
func keyIndexID(ctx context.Context, q interface {
	QueryRowContext(context.Context, string, ...any) *sql.Row
}, s *sqlStore, t TableKey, ix KeyIndexName) (int64, bool, error) {
	var id int64
	err := q.QueryRowContext(ctx, s.rebind(`SELECT id FROM key_indexes WHERE bucket = ? AND namespace = ? AND name = ? AND table_uuid = ? AND fields = ?`),
		t.Bucket, t.Namespace, t.Name, ix.TableUUID, ix.Fields).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, false, nil
	}
	return id, err == nil, err
}

func (s *sqlStore) KeyFiles(ctx context.Context, t TableKey, ix KeyIndexName) ([]KeyFile, error) {
	id, ok, err := keyIndexID(ctx, s.db, s, t, ix)
	if err != nil || !ok {
		return nil, wrapKeyIndex(err, "read", t)
	}
	rows, err := s.query(ctx, `SELECT id, path, size, records, complete FROM key_index_files WHERE ix = ? ORDER BY id`, id)
	if err != nil {
		return nil, wrapKeyIndex(err, "read", t)
	}
	defer rows.Close()
	var out []KeyFile
	for rows.Next() {
		var f KeyFile
		var complete int
		if err := rows.Scan(&f.ID, &f.Path, &f.Size, &f.Records, &complete); err != nil {
			return nil, wrapKeyIndex(err, "read", t)
		}
		f.Complete = complete != 0
		out = append(out, f)
	}
	return out, wrapKeyIndex(rows.Err(), "read", t)
}

func (s *sqlStore) AddKeyFile(ctx context.Context, t TableKey, ix KeyIndexName, f KeyFile) (KeyFile, error) {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return f, wrapKeyIndex(err, "store", t)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, s.rebind(`INSERT INTO key_indexes (bucket, namespace, name, table_uuid, fields, segs, dead)
		VALUES (?, ?, ?, ?, ?, 0, 0) ON CONFLICT (bucket, namespace, name, table_uuid, fields) DO NOTHING`),
		t.Bucket, t.Namespace, t.Name, ix.TableUUID, ix.Fields); err != nil {
		return f, wrapKeyIndex(err, "store", t)
	}
	id, _, err := keyIndexID(ctx, tx, s, t, ix)
	if err != nil {
		return f, wrapKeyIndex(err, "store", t)
	}
	f.Complete = false
	if err := tx.QueryRowContext(ctx, s.rebind(`INSERT INTO key_index_files (ix, path, size, records, complete) VALUES (?, ?, ?, ?, 0) RETURNING id`),
		id, f.Path, f.Size, f.Records).Scan(&f.ID); err != nil {
		return f, wrapKeyIndex(err, "store", t)
	}
	return f, wrapKeyIndex(tx.Commit(), "store", t)
}

// newSegment numbers a new segment of index id, above every earlier one,
// and records it with its entries.
func (s *sqlStore) newSegment(ctx context.Context, tx *sql.Tx, id, entries int64) (int64, error) {
	var seg int64
	if err := tx.QueryRowContext(ctx, s.rebind(`UPDATE key_indexes SET segs = segs + 1 WHERE id = ? RETURNING segs`), id).Scan(&seg); err != nil {
		return 0, err
	}
	_, err := tx.ExecContext(ctx, s.rebind(`INSERT INTO key_index_segments (ix, seg, entries) VALUES (?, ?, ?)`), id, seg, entries)
	return seg, err
}

func (s *sqlStore) PutKeys(ctx context.Context, t TableKey, ix KeyIndexName, entries []KeyEntry) (int64, error) {
	if len(entries) == 0 {
		return 0, nil
	}
	id, ok, err := keyIndexID(ctx, s.db, s, t, ix)
	if err != nil {
		return 0, wrapKeyIndex(err, "store", t)
	}
	if !ok {
		return 0, fmt.Errorf("store key index of %s: index %s/%s: %w", t, ix.TableUUID, ix.Fields, ErrNotFound)
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return 0, wrapKeyIndex(err, "store", t)
	}
	defer tx.Rollback()
	seg, err := s.newSegment(ctx, tx, id, int64(len(entries)))
	if err != nil {
		return 0, wrapKeyIndex(err, "store", t)
	}
	const row = ", (?, ?, ?, ?, ?, ?)"
	var full *sql.Stmt // the statement of a whole batch, prepared once
	args := make([]any, 0, 6*keyBatch)
	for start := 0; start < len(entries); start += keyBatch {
		batch := entries[start:min(start+keyBatch, len(entries))]
		args = args[:0]
		for _, e := range batch {
			args = append(args, id, seg, e.Hash, e.File, e.Pos, e.Entry)
		}
		q := s.rebind(`INSERT INTO key_index_entries (ix, seg, hash, file, pos, entry) VALUES ` + strings.Repeat(row, len(batch))[2:] +
			` ON CONFLICT (ix, seg, hash, file, pos) DO UPDATE SET entry = excluded.entry`)
		if len(batch) < keyBatch {
			_, err = tx.ExecContext(ctx, q, args...)
		} else {
			if full == nil {
				if full, err = tx.PrepareContext(ctx, q); err != nil {
					return 0, wrapKeyIndex(err, "store", t)
				}
				defer full.Close()
			}
			_, err = full.ExecContext(ctx, args...)
		}
		if err != nil {
			return 0, wrapKeyIndex(err, "store", t)
		}
	}
	return seg, wrapKeyIndex(tx.Commit(), "store", t)
}

func (s *sqlStore) CompleteKeyFile(ctx context.Context, t TableKey, ix KeyIndexName, file int64) error {
	id, ok, err := keyIndexID(ctx, s.db, s, t, ix)
	if err != nil {
		return wrapKeyIndex(err, "store", t)
	}
	var n int64
	if ok {
		res, err := s.exec(ctx, `UPDATE key_index_files SET complete = 1 WHERE ix = ? AND id = ?`, id, file)
		if err != nil {
			return wrapKeyIndex(err, "store", t)
		}
		if n, err = res.RowsAffected(); err != nil {
			return wrapKeyIndex(err, "store", t)
		}
	}
	if n == 0 {
		return fmt.Errorf("complete key index file %d of %s: %w", file, t, ErrNotFound)
	}
	return nil
}

func (s *sqlStore) LookupKeys(ctx context.Context, t TableKey, ix KeyIndexName, hashes []int64, fn func(KeyEntry) error) error {
	id, ok, err := keyIndexID(ctx, s.db, s, t, ix)
	if err != nil || !ok {
		return wrapKeyIndex(err, "read", t)
	}
	segs, err := s.keySegments(ctx, id)
	if err != nil || len(segs) == 0 {
		return wrapKeyIndex(err, "read", t)
	}
	args := make([]any, 0, 1+len(segs)+keyBatch)
	for start := 0; start < len(hashes); start += keyBatch {
		batch := hashes[start:min(start+keyBatch, len(hashes))]
		args = append(args[:0], id)
		for _, g := range segs {
			args = append(args, g.seg)
		}
		for _, h := range batch {
			args = append(args, h)
		}
		if err := s.lookupBatch(ctx, len(segs), len(batch), args, fn); err != nil {
			return wrapKeyIndex(err, "read", t)
		}
	}
	return nil
}

// keySegment is one segment of an index and the entries written to it.
type keySegment struct {
	seg, entries int64
}

// keySegments lists the segments of index id.
func (s *sqlStore) keySegments(ctx context.Context, id int64) ([]keySegment, error) {
	rows, err := s.query(ctx, `SELECT seg, entries FROM key_index_segments WHERE ix = ? ORDER BY seg`, id)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []keySegment
	for rows.Next() {
		var g keySegment
		if err := rows.Scan(&g.seg, &g.entries); err != nil {
			return nil, err
		}
		out = append(out, g)
	}
	return out, rows.Err()
}

func (s *sqlStore) lookupBatch(ctx context.Context, segs, n int, args []any, fn func(KeyEntry) error) error {
	rows, err := s.query(ctx, `SELECT hash, file, pos, entry FROM key_index_entries WHERE ix = ? AND seg IN (?`+strings.Repeat(", ?", segs-1)+
		`) AND hash IN (?`+strings.Repeat(", ?", n-1)+`)`, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var e KeyEntry
		if err := rows.Scan(&e.Hash, &e.File, &e.Pos, &e.Entry); err != nil {
			return err
		}
		if err := fn(e); err != nil {
			return err
		}
	}
	return rows.Err()
}

func (s *sqlStore) MergeKeySegments(ctx context.Context, t TableKey, ix KeyIndexName, segs []int64, max int) (int, error) {
	id, ok, err := keyIndexID(ctx, s.db, s, t, ix)
	if err != nil || !ok {
		return 0, wrapKeyIndex(err, "merge segments of", t)
	}
	all, err := s.keySegments(ctx, id)
	if err != nil {
		return 0, wrapKeyIndex(err, "merge segments of", t)
	}
	var merged []keySegment
	for _, g := range all {
		if slices.Contains(segs, g.seg) {
			merged = append(merged, g)
		}
	}
	n := 0
	if len(merged) > 1 {
		seg, err := s.mergeSegments(ctx, id, merged)
		if err != nil {
			return 0, wrapKeyIndex(err, "merge segments of", t)
		}
		n = len(merged)
		all = slices.DeleteFunc(all, func(g keySegment) bool { return slices.Contains(segs, g.seg) })
		all = append(all, seg)
	}
	if len(all) <= max || len(all) < 3 {
		return n, nil // merging one segment into one helps nothing
	}
	biggest := slices.MaxFunc(all, func(a, b keySegment) int { return cmp.Compare(a.entries, b.entries) })
	rest := slices.DeleteFunc(all, func(g keySegment) bool { return g == biggest })
	if _, err := s.mergeSegments(ctx, id, rest); err != nil {
		return n, wrapKeyIndex(err, "merge segments of", t)
	}
	return n + len(rest), nil
}

// mergeSegments writes the entries of index id's segments segs, of files
// still in the index, as a new segment in hash order, and removes segs.
func (s *sqlStore) mergeSegments(ctx context.Context, id int64, segs []keySegment) (keySegment, error) {
	var moved int64
	var args []any
	for _, g := range segs {
		moved += g.entries
		args = append(args, g.seg)
	}
	in := `(?` + strings.Repeat(", ?", len(segs)-1) + `)`
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return keySegment{}, err
	}
	defer tx.Rollback()
	seg, err := s.newSegment(ctx, tx, id, moved)
	if err != nil {
		return keySegment{}, err
	}
	steps := []struct {
		q    string
		args []any
	}{
		{`INSERT INTO key_index_entries (ix, seg, hash, file, pos, entry) SELECT ix, ?, hash, file, pos, entry FROM key_index_entries
			WHERE ix = ? AND seg IN ` + in + ` AND file IN (SELECT id FROM key_index_files WHERE ix = ?) ORDER BY hash, file, pos`,
			append(append([]any{seg, id}, args...), id)},
		{`DELETE FROM key_index_entries WHERE ix = ? AND seg IN ` + in, append([]any{id}, args...)},
		{`DELETE FROM key_index_segments WHERE ix = ? AND seg IN ` + in, append([]any{id}, args...)},
	}
	for _, st := range steps {
		if _, err := tx.ExecContext(ctx, s.rebind(st.q), st.args...); err != nil {
			return keySegment{}, err
		}
	}
	return keySegment{seg: seg, entries: moved}, tx.Commit()
}

func (s *sqlStore) ForgetKeyFiles(ctx context.Context, t TableKey, ix KeyIndexName, ids []int64) (int, error) {
	if len(ids) == 0 {
		return 0, nil
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return 0, wrapKeyIndex(err, "forget files of", t)
	}
	defer tx.Rollback()
	id, ok, err := keyIndexID(ctx, tx, s, t, ix)
	if err != nil || !ok {
		return 0, wrapKeyIndex(err, "forget files of", t)
	}
	get := s.rebind(`SELECT records FROM key_index_files WHERE ix = ? AND id = ?`)
	del := s.rebind(`DELETE FROM key_index_files WHERE ix = ? AND id = ?`)
	removed, dead := 0, int64(0)
	for _, f := range ids {
		var records int64
		err := tx.QueryRowContext(ctx, get, id, f).Scan(&records)
		if errors.Is(err, sql.ErrNoRows) {
			continue
		}
		if err != nil {
			return 0, wrapKeyIndex(err, "forget files of", t)
		}
		if _, err := tx.ExecContext(ctx, del, id, f); err != nil {
			return 0, wrapKeyIndex(err, "forget files of", t)
		}
		removed++
		dead += records
	}
	var live int64
	if err := tx.QueryRowContext(ctx, s.rebind(`UPDATE key_indexes SET dead = dead + ? WHERE id = ? RETURNING dead`), dead, id).Scan(&dead); err != nil {
		return 0, wrapKeyIndex(err, "forget files of", t)
	}
	if err := tx.QueryRowContext(ctx, s.rebind(`SELECT COALESCE(SUM(records), 0) FROM key_index_files WHERE ix = ?`), id).Scan(&live); err != nil {
		return 0, wrapKeyIndex(err, "forget files of", t)
	}
	// Sweep once the dead rows outnumber the live: each row written pays
	// for at most one pass over the index, and the index holds at most
	// twice its live rows.
	if dead > live {
		if _, err := tx.ExecContext(ctx, s.rebind(`DELETE FROM key_index_entries WHERE ix = ? AND file NOT IN (SELECT id FROM key_index_files WHERE ix = ?)`), id, id); err != nil {
			return 0, wrapKeyIndex(err, "sweep", t)
		}
		if _, err := tx.ExecContext(ctx, s.rebind(`UPDATE key_indexes SET dead = 0 WHERE id = ?`), id); err != nil {
			return 0, wrapKeyIndex(err, "sweep", t)
		}
		if _, err := tx.ExecContext(ctx, s.rebind(`DELETE FROM key_index_segments WHERE ix = ? AND NOT EXISTS
			(SELECT 1 FROM key_index_entries e WHERE e.ix = key_index_segments.ix AND e.seg = key_index_segments.seg)`), id); err != nil {
			return 0, wrapKeyIndex(err, "sweep", t)
		}
	}
	return removed, wrapKeyIndex(tx.Commit(), "forget files of", t)
}

func (s *sqlStore) DropKeyIndexes(ctx context.Context, t TableKey, keepUUID string) (int, error) {
	rows, err := s.query(ctx, `SELECT id FROM key_indexes WHERE bucket = ? AND namespace = ? AND name = ? AND table_uuid <> ?`,
		t.Bucket, t.Namespace, t.Name, keepUUID)
	if err != nil {
		return 0, wrapKeyIndex(err, "drop", t)
	}
	var ids []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return 0, wrapKeyIndex(err, "drop", t)
		}
		ids = append(ids, id)
	}
	err = rows.Err()
	rows.Close()
	if err != nil || len(ids) == 0 {
		return 0, wrapKeyIndex(err, "drop", t)
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return 0, wrapKeyIndex(err, "drop", t)
	}
	defer tx.Rollback()
	for _, id := range ids {
		for _, q := range []string{`DELETE FROM key_index_entries WHERE ix = ?`, `DELETE FROM key_index_segments WHERE ix = ?`,
			`DELETE FROM key_index_files WHERE ix = ?`, `DELETE FROM key_indexes WHERE id = ?`} {
			if _, err := tx.ExecContext(ctx, s.rebind(q), id); err != nil {
				return 0, wrapKeyIndex(err, "drop", t)
			}
		}
	}
	return len(ids), wrapKeyIndex(tx.Commit(), "drop", t)
}

// wrapKeyIndex names the key index of t in err; nil stays nil.
func wrapKeyIndex(err error, what string, t TableKey) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%s key index of %s: %w", what, t, err)
}
