package jobs_test

import (
	"context"
	"math/rand/v2"
	"testing"

	"github.com/icekeeper/icekeeper/configs"
	"github.com/icekeeper/icekeeper/internal/state"
	"github.com/icekeeper/icekeeper/jobs"
	"github.com/icekeeper/icekeeper/maintenance"
)

// layers is a SettingsStore of one table's and one bucket's overrides.
type layers struct {
	table, bucket map[maintenance.JobType]maintenance.Config
}

func (l layers) TableConfig(context.Context, state.TableKey) (map[maintenance.JobType]maintenance.Config, error) {
	return l.table, nil
}

func (l layers) BucketConfig(context.Context, string) (map[maintenance.JobType]maintenance.Config, error) {
	return l.bucket, nil
}

// TestStatusesAsTable holds Statuses, which the job-status call asks, to
// the status Table resolves, over every type and generated layers: unset,
// enabled and disabled at the table, the bucket and the configuration
// file, with and without settings beside the status.
func TestStatusesAsTable(t *testing.T) {
	ctx := context.Background()
	reg := configs.Embedded(t.TempDir()).Registry()
	defer reg.Close()
	bk, err := reg.Bucket("local")
	if err != nil {
		t.Fatal(err)
	}
	target := jobs.Target{Bucket: bk}
	target.Table.Namespace, target.Table.Name = []string{"ns"}, "t"
	types := maintenance.JobTypes()
	statuses := []maintenance.Status{"", maintenance.Enabled, maintenance.Disabled}
	rng := rand.New(rand.NewPCG(5, 12))
	pick := func() maintenance.Config {
		c := maintenance.Config{Status: statuses[rng.IntN(len(statuses))]}
		if rng.IntN(2) == 0 {
			c.Settings = maintenance.Defaults(types[rng.IntN(len(types))]).Settings
		}
		return c
	}
	for i := range 500 {
		l := layers{table: map[maintenance.JobType]maintenance.Config{}, bucket: map[maintenance.JobType]maintenance.Config{}}
		file := maintenance.BucketDefaults{Configs: map[maintenance.JobType]maintenance.Config{}}
		for _, typ := range types {
			if c := pick(); c.Status != "" || rng.IntN(2) == 0 {
				l.table[typ] = c
			}
			if c := pick(); c.Status != "" || rng.IntN(2) == 0 {
				l.bucket[typ] = c
			}
			if c := pick(); c.Status != "" || rng.IntN(2) == 0 {
				file.Configs[typ] = c
			}
		}
		r := &jobs.Resolver{Store: l, Defaults: map[string]maintenance.BucketDefaults{bk.ARN(): file}}
		want, err := r.Table(ctx, target)
		if err != nil {
			t.Fatal(err)
		}
		got, err := r.Statuses(ctx, target, types)
		if err != nil {
			t.Fatal(err)
		}
		for j, typ := range types {
			if got[j] != want.For(typ).Status {
				t.Fatalf("case %d, %s: Statuses says %q, Table %q (table %v, bucket %v, file %v)",
					i, typ, got[j], want.For(typ).Status, l.table[typ], l.bucket[typ], file.Configs[typ])
			}
		}
	}
}
