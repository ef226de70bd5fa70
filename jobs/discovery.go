package jobs

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"

	"github.com/icekeeper/icekeeper/internal/bucket"
	"github.com/icekeeper/icekeeper/internal/state"
	"github.com/icekeeper/icekeeper/tables"
)

// Discovery is the daemon's knowledge of which tables there are: what the
// last listing of each bucket found, and tables looked up since. The
// scheduler queues jobs for its tables; the API answers existence and
// listings from it, without a catalog round trip per request.
//
// A table created after the last listing is looked up in the catalog
// once, on the first request that names it, and is known from then on. A
// table dropped leaves with the next listing.
type Discovery struct {
	Registry *bucket.Registry
	// Known, when set, is the registry of tables, told what each listing
	// no longer has: those tables were dropped.
	Known  *tables.Registry
	Logger *slog.Logger
	// Lookups bounds concurrent catalog lookups of tables not yet known
	// (default 4), so a burst of requests cannot open a catalog
	// connection each.
	Lookups int
	// MissTTL is how long a lookup that found no table is believed
	// (default 5s): long enough that a client polling a wrong name does
	// not reach the catalog on every request, short enough that a table
	// just created shows soon.
	MissTTL time.Duration

	once    sync.Once
	sem     chan struct{}
	flight  singleflight.Group
	mu      sync.RWMutex
	listed  map[string][]bucket.TableID // per bucket ARN, sorted; nil: never listed
	known   map[state.TableKey]bool     // listed, or looked up since the last listing
	missing map[state.TableKey]time.Time
}

func (d *Discovery) init() {
	d.once.Do(func() {
		d.sem = make(chan struct{}, cmp.Or(max(d.Lookups, 0), 4))
		d.listed, d.known, d.missing = map[string][]bucket.TableID{}, map[state.TableKey]bool{}, map[state.TableKey]time.Time{}
		d.MissTTL = cmp.Or(max(d.MissTTL, 0), 5*time.Second)
		if d.Logger == nil {
			d.Logger = slog.New(slog.DiscardHandler)
		}
	})
}

// Discover lists the tables of every bucket; a bucket that cannot be
// listed keeps its previous tables and is logged.
func (d *Discovery) Discover(ctx context.Context) {
	d.init()
	for _, b := range d.Registry.Buckets() {
		if b.ReadOnly() {
			continue // read for references, never maintained
		}
		if err := d.list(ctx, b); err != nil {
			d.Logger.Warn("cannot list tables", "bucket", b.Name(), "err", err)
		}
	}
	d.mu.Lock()
	clear(d.missing)
	d.mu.Unlock()
}

func (d *Discovery) list(ctx context.Context, b *bucket.Bucket) error {
	lctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	ids, err := b.Tables(lctx)
	if err != nil {
		return err
	}
	if _, err := d.Known.Forget(lctx, b, ids); err != nil {
		d.Logger.Warn("dropped tables not recorded", "bucket", b.Name(), "err", err)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.listed[b.ARN()] = ids
	// The listing replaces what was known of the bucket: a dropped table
	// leaves, and one found by lookup that the filters exclude is looked
	// up again.
	maps.DeleteFunc(d.known, func(k state.TableKey, _ bool) bool { return k.Bucket == b.ARN() })
	for _, id := range ids {
		d.known[Target{Bucket: b, Table: id}.Key()] = true
	}
	return nil
}

// Tables returns the tables of every bucket, as last listed.
func (d *Discovery) Tables() []Target {
	d.init()
	d.mu.RLock()
	defer d.mu.RUnlock()
	var out []Target
	for _, b := range d.Registry.Buckets() {
		for _, id := range d.listed[b.ARN()] {
			out = append(out, Target{Bucket: b, Table: id})
		}
	}
	return out
}

// BucketTables returns b's tables as last listed; a bucket never listed
// is listed now.
func (d *Discovery) BucketTables(ctx context.Context, b *bucket.Bucket) ([]bucket.TableID, error) {
	d.init()
	d.mu.RLock()
	ids, ok := d.listed[b.ARN()]
	d.mu.RUnlock()
	if ok {
		return ids, nil
	}
	_, err, _ := d.flight.Do("list:"+b.ARN(), func() (any, error) { return nil, d.list(context.WithoutCancel(ctx), b) })
	if err != nil {
		return nil, err
	}
	d.mu.RLock()
	defer d.mu.RUnlock()
	return d.listed[b.ARN()], nil
}

// Exists reports whether t is a table, as Bucket.Exists does: from what
// is known when it can, else by one catalog lookup shared by every caller
// asking at the same time.
func (d *Discovery) Exists(ctx context.Context, t Target) error {
	d.init()
	k := t.Key()
	d.mu.RLock()
	known := d.known[k]
	missUntil, missed := d.missing[k]
	d.mu.RUnlock()
	if known {
		return nil
	}
	if missed && time.Now().Before(missUntil) {
		return noSuchTable(t)
	}
	_, err, _ := d.flight.Do("table:"+k.String(), func() (any, error) {
		// Shared by every caller: one leaving must not fail the others.
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		select {
		case d.sem <- struct{}{}:
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		}
		defer func() { <-d.sem }()
		err := t.Bucket.Exists(ctx, t.Table)
		d.mu.Lock()
		defer d.mu.Unlock()
		switch {
		case err == nil:
			d.known[k] = true
			d.addListed(t)
		case errors.Is(err, bucket.ErrNoSuchTable):
			d.missing[k] = time.Now().Add(d.MissTTL)
		}
		return nil, err
	})
	return err
}

// addListed puts a table found by lookup into its bucket's listing, when
// the bucket's filters admit it, so that it is scheduled and listed before
// the next listing. d.mu is held.
func (d *Discovery) addListed(t Target) {
	ids, ok := d.listed[t.Bucket.ARN()]
	if !ok || !t.Bucket.Admits(t.Table) {
		return
	}
	i, found := slices.BinarySearchFunc(ids, t.Table, func(x, y bucket.TableID) int { return strings.Compare(x.String(), y.String()) })
	if !found {
		d.listed[t.Bucket.ARN()] = slices.Insert(slices.Clone(ids), i, t.Table)
	}
}

func noSuchTable(t Target) error {
	return fmt.Errorf("%w %s/%s", bucket.ErrNoSuchTable, t.Bucket.Name(), t.Table)
}
