package jobs

import (
	"cmp"
	"context"
	"fmt"
	"time"

	"github.com/apache/iceberg-go/table"

	"github.com/icekeeper/icekeeper/internal/health"
	"github.com/icekeeper/icekeeper/internal/state"
	"github.com/icekeeper/icekeeper/maintenance"
	"github.com/icekeeper/icekeeper/planner"
)

// SettingsStore is the part of the state store that holds the overrides
// written through the API.
type SettingsStore interface {
	TableConfig(ctx context.Context, t state.TableKey) (map[maintenance.JobType]maintenance.Config, error)
	BucketConfig(ctx context.Context, bucketARN string) (map[maintenance.JobType]maintenance.Config, error)
}

// Resolver is the one place settings are resolved: per field, the table's
// API override > the bucket's API override > the configuration file's
// bucket defaults > the built-in defaults; icebergUnreferencedFileRemoval
// is a bucket setting in S3 Tables and has no table layer. The runner,
// the API and the CLI all ask it.
type Resolver struct {
	Store SettingsStore
	// Defaults are the configuration file's bucket entries by bucket ARN;
	// a bucket without an entry has the built-in defaults.
	Defaults map[string]maintenance.BucketDefaults
}

// Table resolves everything that steers maintenance of t.
func (r *Resolver) Table(ctx context.Context, t Target) (maintenance.Settings, error) {
	tableCfg, err := r.Store.TableConfig(ctx, t.Key())
	if err != nil {
		return maintenance.Settings{}, err
	}
	return r.with(ctx, t.Bucket.ARN(), tableCfg)
}

// Statuses resolves the status of each of types on t, as Table would:
// the first status the layers set, over the type's default. The
// job-status call needs no more, and resolving every type's settings was
// a third of its work.
func (r *Resolver) Statuses(ctx context.Context, t Target, types []maintenance.JobType) ([]maintenance.Status, error) {
	tableCfg, err := r.Store.TableConfig(ctx, t.Key())
	if err != nil {
		return nil, err
	}
	bucketARN := t.Bucket.ARN()
	bucketCfg, err := r.Store.BucketConfig(ctx, bucketARN)
	if err != nil {
		return nil, err
	}
	file := r.Defaults[bucketARN].Configs
	out := make([]maintenance.Status, len(types))
	for i, typ := range types {
		var tableLayer maintenance.Config
		if row, ok := maintenance.Lookup(typ); ok && row.Scope != maintenance.BucketScope {
			tableLayer = tableCfg[typ]
		}
		out[i] = cmp.Or(tableLayer.Status, bucketCfg[typ].Status, file[typ].Status, maintenance.DefaultStatus(typ))
	}
	return out, nil
}

// WithOverride is Table as it would be once override were t's table-level
// configuration of typ: the check before an override is stored.
func (r *Resolver) WithOverride(ctx context.Context, t Target, typ maintenance.JobType, override maintenance.Config) (maintenance.Settings, error) {
	tableCfg, err := r.Store.TableConfig(ctx, t.Key())
	if err != nil {
		return maintenance.Settings{}, err
	}
	if tableCfg == nil {
		tableCfg = map[maintenance.JobType]maintenance.Config{}
	}
	tableCfg[typ] = override
	return r.with(ctx, t.Bucket.ARN(), tableCfg)
}

// Bucket resolves a bucket's own layer of typ, without any table's:
// GetTableBucketMaintenanceConfiguration.
func (r *Resolver) Bucket(ctx context.Context, bucketARN string, typ maintenance.JobType) (maintenance.Config, error) {
	s, err := r.with(ctx, bucketARN, nil)
	return s.For(typ), err
}

func (r *Resolver) with(ctx context.Context, bucketARN string, tableCfg map[maintenance.JobType]maintenance.Config) (maintenance.Settings, error) {
	bucketCfg, err := r.Store.BucketConfig(ctx, bucketARN)
	if err != nil {
		return maintenance.Settings{}, err
	}
	file := r.Defaults[bucketARN]
	out := maintenance.Settings{Configs: make(map[maintenance.JobType]maintenance.Config, len(maintenance.JobTypes())), Knobs: file.Knobs}
	for _, typ := range maintenance.Types() {
		tableLayer := tableCfg[typ.Name]
		if typ.Scope == maintenance.BucketScope {
			tableLayer = maintenance.Config{}
		}
		out.Configs[typ.Name] = maintenance.Resolve(typ.Name, tableLayer, bucketCfg[typ.Name], file.Configs[typ.Name])
	}
	return out, nil
}

// Health loads t and computes its health against the compaction target
// its settings give: what `tables`, the dashboard and the metrics show.
// What c holds for t's current metadata and snapshot is not read again
// (nil c: everything is read).
func Health(ctx context.Context, t Target, s maintenance.Settings, now time.Time, c *health.Cache) (health.Health, error) {
	h, _, err := healthOf(ctx, t, s, now, c)
	return h, err
}

// healthOf is Health, with the table it was computed for.
func healthOf(ctx context.Context, t Target, s maintenance.Settings, now time.Time, c *health.Cache) (health.Health, *table.Table, error) {
	tbl, err := t.Bucket.LoadTable(ctx, t.Table)
	if err != nil {
		return health.Health{}, nil, err
	}
	cs := s.For(maintenance.Compaction).Compaction()
	h, err := c.Of(ctx, t.Key().String(), tbl, *cs.TargetFileSizeMB, planner.DefaultMinInput, cs.Strategy, now)
	if err != nil {
		return h, nil, fmt.Errorf("health of %s: %w", t.Key(), err)
	}
	return h, tbl, nil
}
