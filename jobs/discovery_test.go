package jobs_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/icekeeper/icekeeper/configs"
	"github.com/icekeeper/icekeeper/internal/bucket"
	"github.com/icekeeper/icekeeper/internal/testkit"
	"github.com/icekeeper/icekeeper/jobs"
)

// TestDiscovery: what a listing found is known without the catalog (a
// table dropped since stays known until the next listing); a table made
// since is looked up once and joins the listing when the filters admit
// it; a miss is believed for MissTTL.
func TestDiscovery(t *testing.T) {
	ctx := context.Background()
	cfg := configs.Embedded(t.TempDir())
	cfg.Buckets[0].Tables = configs.Filter{Exclude: []string{"skip_*"}}
	reg := cfg.Registry()
	t.Cleanup(reg.Close)
	b, _ := reg.Bucket("local")
	sc := iceberg.NewSchema(0, iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true})
	testkit.NewTable(t, b, "ns", "a", sc)
	testkit.NewTable(t, b, "ns", "b", sc)

	d := &jobs.Discovery{Registry: reg, MissTTL: time.Hour}
	d.Discover(ctx)
	target := func(name string) jobs.Target {
		return jobs.Target{Bucket: b, Table: bucket.TableID{Namespace: []string{"ns"}, Name: name}}
	}
	names := func() []string {
		var out []string
		for _, tt := range d.Tables() {
			out = append(out, tt.Table.Name)
		}
		return out
	}
	if got := names(); len(got) != 2 || got[0] != "a" || got[1] != "b" {
		t.Fatalf("discovered %v", got)
	}

	cat, err := b.Catalog(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := cat.DropTable(ctx, table.Identifier{"ns", "b"}); err != nil {
		t.Fatal(err)
	}
	if err := d.Exists(ctx, target("b")); err != nil {
		t.Fatalf("a listed table was looked up in the catalog: %v", err)
	}

	if err := d.Exists(ctx, target("c")); !errors.Is(err, bucket.ErrNoSuchTable) {
		t.Fatalf("unknown table: %v", err)
	}
	testkit.NewTable(t, b, "ns", "c", sc)
	testkit.NewTable(t, b, "ns", "skip_me", sc)
	if err := d.Exists(ctx, target("c")); !errors.Is(err, bucket.ErrNoSuchTable) {
		t.Fatalf("a miss was not believed for MissTTL: %v", err)
	}
	if err := d.Exists(ctx, target("skip_me")); err != nil {
		t.Fatalf("a table made since the listing: %v", err)
	}
	if got := names(); len(got) != 2 {
		t.Fatalf("a table the filters exclude joined the listing: %v", got)
	}

	d.Discover(ctx)
	if got := names(); len(got) != 2 || got[0] != "a" || got[1] != "c" {
		t.Fatalf("after the next listing: %v", got)
	}
	if err := d.Exists(ctx, target("b")); !errors.Is(err, bucket.ErrNoSuchTable) {
		t.Fatalf("a dropped table outlived the listing: %v", err)
	}

	testkit.NewTable(t, b, "ns", "d", sc)
	if err := d.Exists(ctx, target("d")); err != nil {
		t.Fatal(err)
	}
	if got := names(); len(got) != 3 || got[2] != "d" {
		t.Fatalf("a table found by lookup did not join the listing: %v", got)
	}
}
