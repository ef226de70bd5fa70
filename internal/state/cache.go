package state

import (
	"context"
	"fmt"
	"maps"
	"sync"
	"time"

	"github.com/icekeeper/icekeeper/maintenance"
)

// refreshOverlap is how far back of its previous refresh a Cache reads
// finished runs again: another replica's clock may lag this one's, and its
// transaction may commit after this replica read past its finish time.
// Reading a run twice is harmless; missing one would show a stale status
// until the table runs again.
const refreshOverlap = time.Minute

// Cache is a Store that answers the reads of every API request from
// memory: the overrides and the latest runs of each table. It loads them
// once, applies this process's writes as they are made, and takes in other
// processes' writes (replicas, the CLI) on Refresh. Everything else goes
// to the store.
type Cache struct {
	Store

	mu      sync.RWMutex
	tables  map[TableKey]map[maintenance.JobType]maintenance.Config
	buckets map[string]map[maintenance.JobType]maintenance.Config
	last    map[runKey]Run // latest finished run
	success map[runKey]Run // latest successful run
	since   time.Time      // the next refresh reads runs finished since
	writes  int            // overrides written through this cache
}

type runKey struct {
	table TableKey
	typ   maintenance.JobType
}

// NewCache loads the overrides and latest runs of s.
func NewCache(ctx context.Context, s Store) (*Cache, error) {
	c := &Cache{Store: s, last: map[runKey]Run{}, success: map[runKey]Run{}}
	if err := c.Refresh(ctx); err != nil {
		return nil, err
	}
	return c, nil
}

// Refresh reloads the overrides and reads the runs finished since the
// previous refresh.
func (c *Cache) Refresh(ctx context.Context) error {
	start := time.Now()
	tables, buckets, err := c.Store.AllOverrides(ctx)
	if err != nil {
		return fmt.Errorf("refresh cached state: %w", err)
	}
	c.mu.RLock()
	since, writes := c.since, c.writes
	c.mu.RUnlock()
	runs, err := c.Store.LatestRuns(ctx, since)
	if err != nil {
		return fmt.Errorf("refresh cached state: %w", err)
	}
	var moved []TableKey
	if !since.IsZero() {
		moves, err := c.Store.TableMoves(ctx, since)
		if err != nil {
			return fmt.Errorf("refresh cached state: %w", err)
		}
		for _, m := range moves {
			moved = append(moved, m.From, m.To)
		}
	}
	// A table's runs moved by another process: what this one knows under
	// the keys involved is read again.
	fresh := map[TableKey]map[maintenance.JobType]Run{}
	for _, k := range moved {
		if _, ok := fresh[k]; ok || k.IsDropped() {
			continue
		}
		if fresh[k], err = c.Store.LastRuns(ctx, k); err != nil {
			return fmt.Errorf("refresh cached state: %w", err)
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.writes == writes {
		// Else an override written since the read would be lost until
		// the next refresh: keep what is known, the write included.
		c.tables, c.buckets = tables, buckets
	}
	for k, last := range fresh {
		c.forget(k)
		for _, r := range last {
			c.apply(r)
		}
	}
	for _, r := range runs {
		c.apply(r)
	}
	c.since = start.Add(-refreshOverlap)
	return nil
}

// Run refreshes every interval until ctx ends; a failed refresh keeps
// what was known and is reported to onErr.
func (c *Cache) Run(ctx context.Context, every time.Duration, onErr func(error)) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if err := c.Refresh(ctx); err != nil && ctx.Err() == nil {
			onErr(err)
		}
	}
}

// apply keeps r where it is newer than what is known; the latest run is
// the one of the highest ID, as in the store. c.mu is held.
func (c *Cache) apply(r Run) {
	if r.Status == Running || r.Status == Disabled {
		return
	}
	k := runKey{r.Table, r.Type}
	if prev, ok := c.last[k]; !ok || r.ID >= prev.ID {
		c.last[k] = r
	}
	if prev, ok := c.success[k]; r.Status == Successful && (!ok || r.ID >= prev.ID) {
		c.success[k] = r
	}
}

// forget drops what is known of t's runs. c.mu is held.
func (c *Cache) forget(t TableKey) {
	for k := range c.last {
		if k.table == t {
			delete(c.last, k)
		}
	}
	for k := range c.success {
		if k.table == t {
			delete(c.success, k)
		}
	}
}

// DropTable writes through, and forgets what the name held.
func (c *Cache) DropTable(ctx context.Context, rec TableRecord, at time.Time) error {
	if err := c.Store.DropTable(ctx, rec, at); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.forget(rec.Key)
	delete(c.tables, rec.Key)
	c.writes++
	return nil
}

// MoveTable writes through, and re-keys what is known of the table.
func (c *Cache) MoveTable(ctx context.Context, rec TableRecord, to TableKey, at time.Time) error {
	if err := c.Store.MoveTable(ctx, rec, to, at); err != nil {
		return err
	}
	last, err := c.Store.LastRuns(ctx, to)
	if err != nil {
		return err
	}
	cfg, err := c.Store.TableConfig(ctx, to)
	if err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	from := rec.StateKey()
	c.forget(from)
	c.forget(to)
	for _, r := range last {
		c.apply(r)
	}
	delete(c.tables, from)
	delete(c.tables, to)
	if len(cfg) > 0 {
		c.tables[to] = cfg
	}
	c.writes++
	return nil
}

// TableConfig answers from memory; a dropped table's from the store.
func (c *Cache) TableConfig(ctx context.Context, t TableKey) (map[maintenance.JobType]maintenance.Config, error) {
	if t.IsDropped() {
		return c.Store.TableConfig(ctx, t)
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	return cloneOrEmpty(c.tables[t]), nil
}

// BucketConfig answers from memory.
func (c *Cache) BucketConfig(_ context.Context, bucketARN string) (map[maintenance.JobType]maintenance.Config, error) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return cloneOrEmpty(c.buckets[bucketARN]), nil
}

func cloneOrEmpty(m map[maintenance.JobType]maintenance.Config) map[maintenance.JobType]maintenance.Config {
	if m == nil {
		return map[maintenance.JobType]maintenance.Config{}
	}
	return maps.Clone(m)
}

// PutTableConfig writes through.
func (c *Cache) PutTableConfig(ctx context.Context, t TableKey, typ maintenance.JobType, cfg maintenance.Config) error {
	if err := c.Store.PutTableConfig(ctx, t, typ, cfg); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	setConfig(c.tables, t, typ, cfg)
	c.writes++
	return nil
}

// PutBucketConfig writes through.
func (c *Cache) PutBucketConfig(ctx context.Context, bucketARN string, typ maintenance.JobType, cfg maintenance.Config) error {
	if err := c.Store.PutBucketConfig(ctx, bucketARN, typ, cfg); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	setConfig(c.buckets, bucketARN, typ, cfg)
	c.writes++
	return nil
}

// setConfig replaces k's map rather than writing into it: readers got
// clones, but a refresh may hand the same map on.
func setConfig[K comparable](m map[K]map[maintenance.JobType]maintenance.Config, k K, typ maintenance.JobType, cfg maintenance.Config) {
	next := cloneOrEmpty(m[k])
	next[typ] = cfg
	m[k] = next
}

// FinishRun writes through.
func (c *Cache) FinishRun(ctx context.Context, r Run) error {
	if err := c.Store.FinishRun(ctx, r); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.apply(r)
	return nil
}

// FailRunning writes through and reads t's latest runs again.
func (c *Cache) FailRunning(ctx context.Context, t TableKey, typ maintenance.JobType, msg string, now time.Time) (int, error) {
	n, err := c.Store.FailRunning(ctx, t, typ, msg, now)
	if err != nil || n == 0 {
		return n, err
	}
	last, err := c.Store.LastRuns(ctx, t)
	if err != nil {
		return n, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, r := range last {
		c.apply(r)
	}
	return n, nil
}

// FailRun writes through.
func (c *Cache) FailRun(ctx context.Context, r Run, msg string, now time.Time) (bool, error) {
	ok, err := c.Store.FailRun(ctx, r, msg, now)
	if err != nil || !ok {
		return ok, err
	}
	r.Status, r.FailureMessage, r.Finished = Failed, msg, now
	c.mu.Lock()
	defer c.mu.Unlock()
	c.apply(r)
	return true, nil
}

// LastRuns answers from memory; a dropped table's, which the cache does
// not hold, from the store.
func (c *Cache) LastRuns(ctx context.Context, t TableKey) (map[maintenance.JobType]Run, error) {
	if t.IsDropped() {
		return c.Store.LastRuns(ctx, t)
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	out := map[maintenance.JobType]Run{}
	for _, typ := range maintenance.JobTypes() {
		if r, ok := c.last[runKey{t, typ}]; ok {
			out[typ] = r
		}
	}
	return out, nil
}

// LastSuccesses answers from memory.
func (c *Cache) LastSuccesses(context.Context) ([]Run, error) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	out := make([]Run, 0, len(c.success))
	for _, r := range c.success {
		out = append(out, r)
	}
	return out, nil
}
