package tables

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/apache/iceberg-go/table"

	"github.com/icekeeper/icekeeper/internal/bucket"
	"github.com/icekeeper/icekeeper/internal/state"
)

// LocationKeys are the table properties that put a table's files outside
// its location: write.data.path and write.metadata.path, and the older
// write.folder-storage.path and write.object-storage.path that Java's
// writers still honour (the first in place of write.data.path, the second
// for the object-storage layout).
var LocationKeys = [...]string{table.WriteDataPathKey, table.WriteMetadataPathKey, "write.folder-storage.path", "write.object-storage.path"}

// Locations are where meta's table writes its files: its location, then
// every LocationKeys property set, as the metadata spells them.
func Locations(meta table.Metadata) []string {
	out := []string{meta.Location()}
	props := meta.Properties()
	for _, k := range LocationKeys {
		if v := props[k]; v != "" {
			out = append(out, v)
		}
	}
	return out
}

// Registry records what the catalog shows of each table, in the state
// store, so that every replica and one-shot run shares it.
type Registry struct {
	Store  state.Tables
	Logger *slog.Logger
}

// Observe records that id in b holds tbl now, moving state as Decide
// says, and returns what it found. It is called wherever icekeeper has
// just loaded a table, before it reads or writes anything it keeps of it.
// A nil Registry observes nothing.
func (r *Registry) Observe(ctx context.Context, b *bucket.Bucket, id bucket.TableID, tbl *table.Table) (Change, error) {
	if r == nil {
		return Known, nil
	}
	key := state.TableKey{Bucket: b.ARN(), Namespace: id.NamespaceString(), Name: id.Name}
	meta := tbl.Metadata()
	uuid := meta.TableUUID().String()
	now := time.Now()
	live, found, err := r.Store.LiveTable(ctx, key)
	if err != nil {
		return Known, fmt.Errorf("observe table %s: %w", key, err)
	}
	rec := state.TableRecord{Key: key, UUID: uuid, Locations: Locations(meta), MetadataLocation: tbl.MetadataLocation(), FirstSeen: now, LastSeen: now}
	if found && live.UUID == uuid {
		if live.MetadataLocation == rec.MetadataLocation && slices.Equal(live.Locations, rec.Locations) {
			return Known, nil
		}
		return Known, r.Store.PutTable(ctx, rec)
	}
	same, err := r.Store.TablesWithUUID(ctx, key.Bucket, uuid)
	if err != nil {
		return Known, fmt.Errorf("observe table %s: %w", key, err)
	}
	var liveRec *state.TableRecord
	if found {
		liveRec = &live
	}
	var goneErr error
	plan := Decide(key, uuid, liveRec, same, func(k state.TableKey) bool {
		err := b.Exists(ctx, bucket.TableIDOf(k.Namespace, k.Name))
		if err != nil && !errors.Is(err, bucket.ErrNoSuchTable) {
			goneErr = err
		}
		return errors.Is(err, bucket.ErrNoSuchTable)
	})
	if goneErr != nil {
		return Known, fmt.Errorf("observe table %s: %w", key, goneErr)
	}
	if plan.Drop != nil {
		if err := r.Store.DropTable(ctx, *plan.Drop, now); err != nil {
			return Known, err
		}
	}
	if plan.From != nil {
		if err := r.Store.MoveTable(ctx, *plan.From, key, now); err != nil {
			return Known, err
		}
		rec.FirstSeen = plan.From.FirstSeen
	}
	if err := r.Store.PutTable(ctx, rec); err != nil {
		return Known, err
	}
	if plan.Change != New && r.Logger != nil {
		args := []any{"table", key.String(), "uuid", uuid, "change", plan.Change.String()}
		if plan.Drop != nil {
			args = append(args, "dropped", plan.Drop.UUID)
		}
		if plan.From != nil {
			args = append(args, "from", plan.From.StateKey().String())
		}
		r.Logger.Info("table identity changed", args...)
	}
	return plan.Change, nil
}

// Gone records dropped the live table under id of b, which the catalog
// answered it does not have (a poll or an event check that found it
// gone): the drop is recorded then, not at the next listing. A name the
// registry holds no live table under, nothing.
func (r *Registry) Gone(ctx context.Context, b *bucket.Bucket, id bucket.TableID) error {
	if r == nil {
		return nil
	}
	key := state.TableKey{Bucket: b.ARN(), Namespace: id.NamespaceString(), Name: id.Name}
	rec, found, err := r.Store.LiveTable(ctx, key)
	if err != nil || !found {
		return err
	}
	if err := r.Store.DropTable(ctx, rec, time.Now()); err != nil && !errors.Is(err, state.ErrNotFound) {
		return err
	}
	if r.Logger != nil {
		r.Logger.Info("table dropped", "table", key.String(), "uuid", rec.UUID)
	}
	return nil
}

// Forget records dropped every live table of b that a complete listing
// of b (listed) no longer has and b's filters admit: a name filtered out
// is not maintained, not dropped. A table listed again later is restored
// by its next observation, so a listing that missed a table moves its
// state aside, never loses it.
func (r *Registry) Forget(ctx context.Context, b *bucket.Bucket, listed []bucket.TableID) (int, error) {
	if r == nil {
		return 0, nil
	}
	recs, err := r.Store.LiveTables(ctx, b.ARN())
	if err != nil {
		return 0, err
	}
	have := make(map[string]bool, len(listed))
	for _, id := range listed {
		have[id.String()] = true
	}
	now, n := time.Now(), 0
	for _, rec := range recs {
		id := bucket.TableIDOf(rec.Key.Namespace, rec.Key.Name)
		if have[id.String()] || !b.Admits(id) {
			continue
		}
		if err := r.Store.DropTable(ctx, rec, now); err != nil && !errors.Is(err, state.ErrNotFound) {
			return n, err
		}
		n++
		if r.Logger != nil {
			r.Logger.Info("table dropped", "table", rec.Key.String(), "uuid", rec.UUID)
		}
	}
	return n, nil
}
