package orphan

import (
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"io/fs"
	"time"

	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"

	"github.com/icekeeper/icekeeper/internal/bucket"
	"github.com/icekeeper/icekeeper/internal/state"
	"github.com/icekeeper/icekeeper/jobs"
	"github.com/icekeeper/icekeeper/maintenance"
)

// A dropped table's leftovers. Catalogs drop tables without purging their
// files (Trino, Nessie, REST catalogs asked to drop without purge), and
// nothing else ever looks at them again. With removeDroppedTables on its
// bucket, removal takes a table the registry recorded dropped (package
// tables) as it takes a live one, with an empty reference set of its
// own: every object under its locations that no table of the domain
// references, outside every live table's prefixes, is marked noncurrent,
// and deleted nonCurrentDays later after the same re-check. Its marks
// are kept under its dropped key, so restore and release work on them,
// and a table registered again at its metadata (an undrop) takes them
// back with the rest of its state; a run finding it live again, or its
// locations inside a live table's (a table created again where it was,
// whose own removal takes what it left), does nothing. A run that finds
// nothing left under its locations records the table collected, and no
// fire queues it again.

// RunDropped removes the leftovers of the dropped table rec of b, with
// b's settings s, as removal's run on a live table does, and returns its
// figures. A table that is not a dropped table's leftovers any more (see
// above) is ErrNotLeftover, with the reason.
func (j *Job) RunDropped(ctx context.Context, b *bucket.Bucket, rec state.TableRecord, s maintenance.Settings, opts jobs.Options) (*Figures, error) {
	fig := &Figures{Now: opts.Now.UTC()}
	fig.DryRun = opts.DryRun
	if rec.Live() {
		return fig, fmt.Errorf("%w: table %s (%s) is live", ErrNotLeftover, rec.Key, rec.UUID)
	}
	sub := subject{t: jobs.Target{Bucket: b, Table: bucket.TableIDOf(rec.Key.Namespace, rec.Key.Name)}, key: rec.StateKey(), dropped: &rec}
	if err := j.remove(ctx, sub, nil, RulesOf(s), opts, fig); err != nil {
		return fig, err
	}
	if fig.Listed == 0 && !opts.DryRun {
		// Nothing left: later fires need not look again.
		if err := j.Store.CollectTable(ctx, rec, opts.Now); err != nil {
			return fig, err
		}
	}
	return fig, nil
}

// ErrNotLeftover says a dropped table's files are not leftovers any
// more: the table is live again, or its locations lie inside a live
// table's, whose own removal takes them (jobs.ErrNotLeftover).
var ErrNotLeftover = jobs.ErrNotLeftover

// Dropped is RunDropped as the jobs.Runner takes it.
func (j *Job) Dropped() jobs.DroppedRemoval {
	return func(ctx context.Context, b *bucket.Bucket, rec state.TableRecord, s maintenance.Settings, opts jobs.Options) (jobs.Figures, error) {
		return j.RunDropped(ctx, b, rec, s, opts)
	}
}

// droppedView is the view of s's dropped table: its locations as its
// record keeps them, nothing referenced of its own, and what the
// domain's live tables hold there. It checks first that the table is
// still dropped, and that its last metadata file, where it is still
// stored, does not turn garbage collection off.
func (j *Job) droppedView(ctx context.Context, s subject, rules Rules, since time.Time, use indexUse) (view, error) {
	var v view
	rec := s.dropped
	recs, err := j.Store.TablesWithUUID(ctx, rec.Key.Bucket, rec.UUID)
	if err != nil {
		return v, err
	}
	for _, r := range recs {
		if r.Live() {
			return v, fmt.Errorf("%w: table %s is live again as %s", ErrNotLeftover, rec.UUID, r.Key)
		}
	}
	// The catalog itself, under the name it had: a listing that missed a
	// live table must not make its files leftovers.
	switch tbl, err := s.t.Bucket.LoadTable(ctx, s.t.Table); {
	case err == nil && tbl.Metadata().TableUUID().String() == rec.UUID:
		return v, fmt.Errorf("%w: table %s is in the catalog again as %s", ErrNotLeftover, rec.UUID, s.t.Table)
	case err != nil && !errors.Is(err, bucket.ErrNoSuchTable):
		return v, fmt.Errorf("look up %s, which table %s was: %w", s.t.Table, rec.UUID, err)
	}
	if err := j.droppedGC(ctx, s.t.Bucket, rec); err != nil {
		return v, err
	}
	raw, err := dirs(rec.Locations)
	if err != nil {
		return v, err
	}
	res := newResolver()
	v.sc = scope{pfx: resolved(raw, res), eq: rules.Equivalence, res: res}
	if v.others, err = j.others(ctx, s.t, v.sc, othersOpts{allow: rules.AllowNested, since: since, use: use, dropped: rec.UUID}); err != nil {
		return v, err
	}
	v.refs = &refSet{seed: maphash.MakeSeed()}
	v.refs.seal()
	return v, nil
}

// droppedGC refuses a dropped table whose last metadata file sets
// gc.enabled=false: whoever set it wanted its files kept. A metadata file
// no longer stored (a partial purge) says nothing.
func (j *Job) droppedGC(ctx context.Context, b *bucket.Bucket, rec *state.TableRecord) error {
	if rec.MetadataLocation == "" {
		return nil
	}
	ctx = b.WithTableIO(ctx)
	fsys, err := icebergio.LoadFS(ctx, b.Properties(), rec.MetadataLocation)
	if err != nil {
		return fmt.Errorf("open the storage of dropped table %s: %w", rec.Key, err)
	}
	tbl, err := table.NewFromLocation(ctx, bucket.TableIDOf(rec.Key.Namespace, rec.Key.Name).Identifier(), rec.MetadataLocation,
		func(context.Context) (icebergio.IO, error) { return fsys, nil }, nil)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return fmt.Errorf("read the last metadata of dropped table %s: %w", rec.Key, err)
	}
	return maintenance.CheckGC(tbl.Properties())
}
