package jobs

import (
	"context"
	"encoding/json"
	"log/slog"
	"sync"
	"time"

	"github.com/apache/iceberg-go/table"

	"github.com/icekeeper/icekeeper/internal/health"
	"github.com/icekeeper/icekeeper/internal/state"
	"github.com/icekeeper/icekeeper/maintenance"
)

// HealthHistory records each table's health over time in the state
// store, for the dashboard's charts: a sample each time health is
// computed for a metadata file the table had not been sampled at. It
// rides on the health the daemon computes anyway (the metrics' refresh,
// the polls, the dashboard's overview), so it costs the table no read of
// its own, and an unchanged table no row. A nil HealthHistory records
// nothing.
type HealthHistory struct {
	Store  state.HealthHistory
	Logger *slog.Logger

	mu sync.Mutex
	// last is the metadata location last recorded per table, so that an
	// unchanged table costs no store round trip.
	last map[state.TableKey]string
}

// Health is the package's Health of t, recorded.
func (r *HealthHistory) Health(ctx context.Context, t Target, s maintenance.Settings, now time.Time, c *health.Cache) (health.Health, error) {
	h, _, err := r.health(ctx, t, s, now, c)
	return h, err
}

// health is Health, with the table it loaded.
func (r *HealthHistory) health(ctx context.Context, t Target, s maintenance.Settings, now time.Time, c *health.Cache) (health.Health, *table.Table, error) {
	h, tbl, err := healthOf(ctx, t, s, now, c)
	if err == nil {
		r.Record(ctx, t.Key(), tbl.MetadataLocation(), h, now)
	}
	return h, tbl, err
}

// Record records h, computed at at for t's metadata file location,
// unless that file is the one last recorded for t. A failure is logged,
// not returned: a missing sample is a point missing from a chart, and
// must not fail what computed the health.
func (r *HealthHistory) Record(ctx context.Context, t state.TableKey, location string, h health.Health, at time.Time) {
	// Without a location (a catalog that gives none) a change cannot be
	// told from a repeat.
	if r == nil || location == "" {
		return
	}
	r.mu.Lock()
	seen := r.last[t] == location
	r.mu.Unlock()
	if seen {
		return
	}
	body, err := json.Marshal(h)
	if err == nil {
		_, err = r.Store.RecordHealth(ctx, state.HealthSample{Table: t, At: at, MetadataLocation: location, Health: body})
	}
	if err != nil {
		if r.Logger != nil {
			r.Logger.Warn("health sample not recorded", "table", t.String(), "err", err)
		}
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.last == nil {
		r.last = map[state.TableKey]string{}
	}
	r.last[t] = location
}
