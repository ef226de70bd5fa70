package state

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// TableRecord is what the registry of tables knows of one table: the name
// it has (or had, once dropped), the UUID its metadata gives it, where it
// lives, and when it was seen.
type TableRecord struct {
	Key  TableKey
	UUID string
	// Locations are where its files are written: its location first,
	// then the write paths its properties set (tables.Locations).
	Locations        []string
	MetadataLocation string
	FirstSeen        time.Time
	LastSeen         time.Time
	// Dropped is when the table left its name: the name now holds
	// another table, or the catalog no longer lists it (zero: live).
	Dropped time.Time
	// Collected is when removal found nothing left of the dropped table
	// under its locations (zero: not yet).
	Collected time.Time
	// Refs is what removal last read of the table (zero: nothing yet).
	Refs TableRefs
}

// TableRefs is what removal read of a table for the other tables' runs:
// the files it references outside its own locations (Foreign; nil with
// !Complete when there were too many to keep), as of its metadata file
// Metadata, which was current at Checked. A view of the other tables
// starts from it in every process, and believes it only where the
// catalog says Metadata is still current, or Checked is recent enough.
type TableRefs struct {
	Metadata string
	Foreign  []string
	Complete bool
	Checked  time.Time
}

// Live reports whether the table still holds its name.
func (r TableRecord) Live() bool { return r.Dropped.IsZero() }

// StateKey is where the table's state (runs, settings, marks, health,
// indexes) is kept: under its name while it is live, under
// Key.Dropped(UUID) once dropped.
func (r TableRecord) StateKey() TableKey {
	if r.Live() {
		return r.Key
	}
	return r.Key.Dropped(r.UUID)
}

// droppedSep separates a bucket's ARN from the UUID of a dropped table in
// its state key: no ARN holds it, so no live table's key can be one.
const droppedSep = "#"

// Dropped is the key under which the state of the table uuid, dropped
// from the name k, is kept: apart from every live table's, readable as
// that table's, and acted on by nothing.
func (k TableKey) Dropped(uuid string) TableKey {
	k.Bucket += droppedSep + uuid
	return k
}

// IsDropped reports whether k is a dropped table's key (Dropped).
func (k TableKey) IsDropped() bool { return strings.Contains(k.Bucket, droppedSep) }

// Live is the key of the name a dropped table's key k was made from, and
// the dropped table's UUID; k itself and "" for a live table's key.
func (k TableKey) Live() (TableKey, string) {
	arn, uuid, found := strings.Cut(k.Bucket, droppedSep)
	if !found {
		return k, ""
	}
	k.Bucket = arn
	return k, uuid
}

// liveOnly is the condition that leaves dropped tables' rows out of the
// reads over every table.
const liveOnly = `bucket NOT LIKE '%` + droppedSep + `%'`

// TableMove is one move of a table's state, from one key to another: a
// drop, a rename, or a dropped table restored.
type TableMove struct {
	From, To TableKey
	UUID     string
	At       time.Time
}

// Tables is the registry of tables: which table, by its Iceberg UUID,
// each name holds, and the tables dropped or renamed away. Everything
// else the store keeps of a table is keyed by its name; the registry
// keeps that true when a name changes hands: DropTable moves a dropped
// table's state out of the name, MoveTable moves a table's state to its
// new name. Package tables decides when each applies.
type Tables interface {
	// LiveTable returns the live record under t's name; false when the
	// registry knows none.
	LiveTable(ctx context.Context, t TableKey) (TableRecord, bool, error)
	// TablesWithUUID returns the bucket's records of the table uuid, live
	// and dropped, live first.
	TablesWithUUID(ctx context.Context, bucket, uuid string) ([]TableRecord, error)
	// LiveTables returns the bucket's live records, by name.
	LiveTables(ctx context.Context, bucket string) ([]TableRecord, error)
	// DroppedTables returns the bucket's records dropped at or after
	// since, the latest first.
	DroppedTables(ctx context.Context, bucket string, since time.Time) ([]TableRecord, error)
	// PutTable records rec as live under its key: inserted, or its
	// location, metadata file and LastSeen updated.
	PutTable(ctx context.Context, rec TableRecord) error
	// DropTable records the live rec dropped at at and moves the state
	// under its name to rec.Key.Dropped(rec.UUID), in one transaction.
	DropTable(ctx context.Context, rec TableRecord, at time.Time) error
	// MoveTable makes rec (live under another name, or dropped) live
	// under to, its state moved there with it, in one transaction. State
	// already under to that no registered table owns (written before the
	// registry existed) is set aside under a dropped key first, never
	// mixed in.
	MoveTable(ctx context.Context, rec TableRecord, to TableKey, at time.Time) error
	// PutTableRefs records refs as what removal read of the live table
	// uuid under t, and the table's locations then; no live record of
	// it, nothing.
	PutTableRefs(ctx context.Context, t TableKey, uuid string, locations []string, refs TableRefs) error
	// CollectTable records that nothing of the dropped table rec is left
	// under its locations, as of at: its leftovers are not swept again.
	CollectTable(ctx context.Context, rec TableRecord, at time.Time) error
	// TableMoves returns the moves made at or after since, oldest first:
	// what caches of state by name must forget or re-key.
	TableMoves(ctx context.Context, since time.Time) ([]TableMove, error)
}

// stateTables are the tables whose rows are keyed by a table's name
// (bucket, namespace, name): what moves with a table.
var stateTables = []string{"runs", "table_config", "noncurrent_marks", "health_samples", "erasure_blocks", "ref_index", "key_indexes"}

const tableColumns = `bucket, namespace, name, table_uuid, locations, metadata_location, first_seen, last_seen, dropped_at, collected_at,
	refs_metadata, refs, refs_complete, refs_checked`

func scanTables(rows *sql.Rows) ([]TableRecord, error) {
	defer rows.Close()
	var out []TableRecord
	for rows.Next() {
		var r TableRecord
		var first, last, dropped, collected, refsChecked int64
		var locs string
		var refs []byte
		var complete int
		if err := rows.Scan(&r.Key.Bucket, &r.Key.Namespace, &r.Key.Name, &r.UUID, &locs, &r.MetadataLocation, &first, &last, &dropped, &collected,
			&r.Refs.Metadata, &refs, &complete, &refsChecked); err != nil {
			return nil, err
		}
		r.Collected, r.Refs.Checked, r.Refs.Complete = fromMillis(collected), fromMillis(refsChecked), complete != 0
		if len(refs) > 0 {
			if err := json.Unmarshal(refs, &r.Refs.Foreign); err != nil {
				return nil, fmt.Errorf("references of table %s: %w", r.UUID, err)
			}
		}
		if err := json.Unmarshal([]byte(locs), &r.Locations); err != nil {
			return nil, fmt.Errorf("locations of table %s: %w", r.UUID, err)
		}
		r.FirstSeen, r.LastSeen, r.Dropped = fromMillis(first), fromMillis(last), fromMillis(dropped)
		out = append(out, r)
	}
	return out, rows.Err()
}

func (s *sqlStore) tables(ctx context.Context, what, q string, args ...any) ([]TableRecord, error) {
	rows, err := s.query(ctx, `SELECT `+tableColumns+` FROM tables WHERE `+q, args...)
	if err != nil {
		return nil, fmt.Errorf("read the registry of tables (%s): %w", what, err)
	}
	out, err := scanTables(rows)
	if err != nil {
		return nil, fmt.Errorf("read the registry of tables (%s): %w", what, err)
	}
	return out, nil
}

func (s *sqlStore) LiveTable(ctx context.Context, t TableKey) (TableRecord, bool, error) {
	recs, err := s.tables(ctx, t.String(), `bucket = ? AND namespace = ? AND name = ? AND dropped_at = 0 ORDER BY last_seen DESC`, t.Bucket, t.Namespace, t.Name)
	if err != nil || len(recs) == 0 {
		return TableRecord{}, false, err
	}
	return recs[0], true, nil
}

func (s *sqlStore) TablesWithUUID(ctx context.Context, bucket, uuid string) ([]TableRecord, error) {
	return s.tables(ctx, "table "+uuid, `bucket = ? AND table_uuid = ? ORDER BY dropped_at, namespace, name`, bucket, uuid)
}

func (s *sqlStore) LiveTables(ctx context.Context, bucket string) ([]TableRecord, error) {
	return s.tables(ctx, bucket, `bucket = ? AND dropped_at = 0 ORDER BY namespace, name`, bucket)
}

func (s *sqlStore) DroppedTables(ctx context.Context, bucket string, since time.Time) ([]TableRecord, error) {
	return s.tables(ctx, bucket, `bucket = ? AND dropped_at <> 0 AND dropped_at >= ? ORDER BY dropped_at DESC`, bucket, millis(since))
}

func (s *sqlStore) PutTable(ctx context.Context, rec TableRecord) error {
	seen := millis(rec.LastSeen)
	locs, err := json.Marshal(rec.Locations)
	if err != nil {
		return err
	}
	_, err = s.exec(ctx, `INSERT INTO tables (`+tableColumns+`, prev_bucket, prev_namespace, prev_name, changed_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, 0, 0, '', NULL, 0, 0, '', '', '', 0)
		ON CONFLICT (bucket, table_uuid, namespace, name) DO UPDATE SET locations = excluded.locations,
		metadata_location = excluded.metadata_location, last_seen = excluded.last_seen, dropped_at = 0`,
		rec.Key.Bucket, rec.Key.Namespace, rec.Key.Name, rec.UUID, string(locs), rec.MetadataLocation, millis(rec.FirstSeen), seen)
	if err != nil {
		return fmt.Errorf("record table %s (%s): %w", rec.Key, rec.UUID, err)
	}
	return nil
}

func (s *sqlStore) DropTable(ctx context.Context, rec TableRecord, at time.Time) error {
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, s.rebind(`UPDATE tables SET dropped_at = ?, collected_at = 0, prev_bucket = bucket, prev_namespace = namespace,
			prev_name = name, changed_at = ? WHERE bucket = ? AND table_uuid = ? AND namespace = ? AND name = ? AND dropped_at = 0`),
			millis(at), millis(at), rec.Key.Bucket, rec.UUID, rec.Key.Namespace, rec.Key.Name)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return ErrNotFound
		}
		return s.moveState(ctx, tx, rec.Key, rec.Key.Dropped(rec.UUID))
	})
	if err != nil {
		return fmt.Errorf("record table %s (%s) dropped: %w", rec.Key, rec.UUID, err)
	}
	return nil
}

func (s *sqlStore) MoveTable(ctx context.Context, rec TableRecord, to TableKey, at time.Time) error {
	from := rec.StateKey()
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		// What is under to is no registered table's (the caller dropped
		// any live one first): rows written before the registry
		// existed, set aside rather than taken for rec's.
		aside := to.Dropped("unregistered-" + strconv.FormatInt(at.UnixMilli(), 10))
		if err := s.moveState(ctx, tx, to, aside); err != nil {
			return err
		}
		if err := s.moveState(ctx, tx, from, to); err != nil {
			return err
		}
		res, err := tx.ExecContext(ctx, s.rebind(`UPDATE tables SET bucket = ?, namespace = ?, name = ?, dropped_at = 0,
			prev_bucket = ?, prev_namespace = ?, prev_name = ?, changed_at = ?, last_seen = ?
			WHERE bucket = ? AND table_uuid = ? AND namespace = ? AND name = ?`),
			to.Bucket, to.Namespace, to.Name, from.Bucket, from.Namespace, from.Name, millis(at), millis(at),
			rec.Key.Bucket, rec.UUID, rec.Key.Namespace, rec.Key.Name)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return ErrNotFound
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("move table %s (%s) to %s: %w", rec.Key, rec.UUID, to, err)
	}
	return nil
}

// moveState re-keys every state row of from to to.
func (s *sqlStore) moveState(ctx context.Context, tx *sql.Tx, from, to TableKey) error {
	for _, t := range stateTables {
		if _, err := tx.ExecContext(ctx, s.rebind(`UPDATE `+t+` SET bucket = ?, namespace = ?, name = ? WHERE bucket = ? AND namespace = ? AND name = ?`),
			to.Bucket, to.Namespace, to.Name, from.Bucket, from.Namespace, from.Name); err != nil {
			return fmt.Errorf("move %s from %s to %s: %w", t, from, to, err)
		}
	}
	return nil
}

func (s *sqlStore) PutTableRefs(ctx context.Context, t TableKey, uuid string, locations []string, refs TableRefs) error {
	locs, err := json.Marshal(locations)
	if err != nil {
		return err
	}
	var foreign []byte // NULL: none
	if len(refs.Foreign) > 0 {
		// JSON, not lines: an object name may hold a newline.
		if foreign, err = json.Marshal(refs.Foreign); err != nil {
			return err
		}
	}
	complete := 0
	if refs.Complete {
		complete = 1
	}
	if _, err := s.exec(ctx, `UPDATE tables SET locations = ?, refs_metadata = ?, refs = ?, refs_complete = ?, refs_checked = ?
		WHERE bucket = ? AND table_uuid = ? AND namespace = ? AND name = ? AND dropped_at = 0`,
		string(locs), refs.Metadata, foreign, complete, millis(refs.Checked), t.Bucket, uuid, t.Namespace, t.Name); err != nil {
		return fmt.Errorf("record what table %s references: %w", t, err)
	}
	return nil
}

func (s *sqlStore) CollectTable(ctx context.Context, rec TableRecord, at time.Time) error {
	if _, err := s.exec(ctx, `UPDATE tables SET collected_at = ? WHERE bucket = ? AND table_uuid = ? AND namespace = ? AND name = ? AND dropped_at <> 0`,
		millis(at), rec.Key.Bucket, rec.UUID, rec.Key.Namespace, rec.Key.Name); err != nil {
		return fmt.Errorf("record the leftovers of table %s (%s) collected: %w", rec.Key, rec.UUID, err)
	}
	return nil
}

func (s *sqlStore) TableMoves(ctx context.Context, since time.Time) ([]TableMove, error) {
	rows, err := s.query(ctx, `SELECT prev_bucket, prev_namespace, prev_name, bucket, namespace, name, table_uuid, dropped_at, changed_at
		FROM tables WHERE changed_at <> 0 AND changed_at >= ? ORDER BY changed_at`, millis(since))
	if err != nil {
		return nil, fmt.Errorf("read moves of tables: %w", err)
	}
	defer rows.Close()
	var out []TableMove
	for rows.Next() {
		var m TableMove
		var dropped, at int64
		if err := rows.Scan(&m.From.Bucket, &m.From.Namespace, &m.From.Name, &m.To.Bucket, &m.To.Namespace, &m.To.Name, &m.UUID, &dropped, &at); err != nil {
			return nil, fmt.Errorf("read moves of tables: %w", err)
		}
		if dropped != 0 {
			m.To = m.To.Dropped(m.UUID)
		}
		m.At = fromMillis(at)
		out = append(out, m)
	}
	return out, rows.Err()
}

// inTx runs fn in a transaction, committed when fn returns nil.
func (s *sqlStore) inTx(ctx context.Context, fn func(tx *sql.Tx) error) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if err := fn(tx); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return errors.Join(err, ctx.Err())
	}
	return nil
}
