package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"

	"github.com/icekeeper/icekeeper/configs"
	"github.com/icekeeper/icekeeper/internal/bucket"
	"github.com/icekeeper/icekeeper/internal/demo"
	"github.com/icekeeper/icekeeper/internal/testkit"
	"github.com/icekeeper/icekeeper/planner"
)

// An old writer's table (format version 1, a manifest list without
// counts) whose 300-entry manifest is cut at an Avro block boundary reads
// cleanly in iceberg-go, with fewer entries. Every job that decides from
// manifests fails on it, naming the manifest and its recorded length, and
// changes nothing; with summary totals and without.
func TestOldWriterDamageFailsEveryJob(t *testing.T) {
	for _, totals := range []bool{true, false} {
		t.Run(fmt.Sprintf("totals=%v", totals), func(t *testing.T) {
			c := newCLI(t)
			cfg := filepath.Join(c.home, "icekeeper.yaml")
			writeHomeConfig(t, cfg, c.home, "127.0.0.1:0",
				`{icebergRecordExpiration: {status: enabled, days: 1}, icebergErasure: {status: enabled, deadlineDays: 1}}`, "{}")
			ctx := context.Background()
			reg := configs.Embedded(c.home).Registry()
			defer reg.Close()
			b, err := reg.Bucket("local")
			if err != nil {
				t.Fatal(err)
			}
			tbl := testkit.NewTable(t, b, "db", "old", demo.Schema(), catalog.WithProperties(iceberg.Properties{
				"format-version": "1", planner.ExpirationColumnProperty: "ts"}))
			if tbl, err = testkit.AppendRandom(ctx, tbl, 20, 0, rand.New(rand.NewPCG(1, 2))); err != nil {
				t.Fatal(err)
			}
			if tbl, err = testkit.AddCopies(ctx, tbl, 300); err != nil {
				t.Fatal(err)
			}
			// A later append: snapshot management expires the snapshots
			// before it, which reach the cut manifest too.
			if tbl, err = testkit.AppendRandom(ctx, tbl, 20, 20, rand.New(rand.NewPCG(3, 4))); err != nil {
				t.Fatal(err)
			}
			if err := testkit.OldWriterTable(ctx, tbl, totals); err != nil {
				t.Fatal(err)
			}
			path, _, err := testkit.LargestManifest(ctx, tbl)
			if err != nil {
				t.Fatal(err)
			}
			m, err := testkit.ManifestOf(ctx, tbl, path)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := testkit.Damage(ctx, tbl, path, func(b []byte) ([]byte, error) { return testkit.CutAfterBlocks(b, 1) }); err != nil {
				t.Fatal(err)
			}
			before := tbl.MetadataLocation()
			var res map[string]struct {
				Status         string `json:"status"`
				FailureMessage string `json:"failureMessage"`
			}
			later := time.Now().Add(30 * 24 * time.Hour).UTC().Format(time.RFC3339)
			_, out, errOut := c.run("run", "--config", cfg, "--table", "local/db/old", "--json", "--now", later, "--allow-clock-shift")
			if err := json.Unmarshal([]byte(out), &res); err != nil {
				t.Fatalf("%v\n%s\n%s", err, out, errOut)
			}
			want := fmt.Sprintf("its manifest list records %d (manifest_length)", m.Length())
			for _, typ := range []string{"icebergRecordExpiration", "icebergCompaction", "icebergSnapshotManagement",
				"icebergUnreferencedFileRemoval", "icebergErasure"} {
				r := res[typ]
				if typ == "icebergErasure" && totals && r.Status == "Successful" {
					// total-delete-files says 0: nothing to erase, and
					// erasure reads no manifest to learn it.
					continue
				}
				if r.Status != "Failed" || !strings.Contains(r.FailureMessage, path) || !strings.Contains(r.FailureMessage, want) {
					t.Errorf("%s over the cut manifest: %s %s", typ, r.Status, r.FailureMessage)
				}
			}
			if after, err := b.LoadTable(ctx, bucket.TableID{Namespace: []string{"db"}, Name: "old"}); err != nil || after.MetadataLocation() != before {
				t.Fatalf("the table changed: %v", err)
			}
			if noncurrent := c.must("noncurrent", "--config", cfg, "--table", "local/db/old"); strings.Contains(noncurrent, ".parquet") {
				t.Fatalf("objects marked:\n%s", noncurrent)
			}
		})
	}
}
