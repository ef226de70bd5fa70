package orphan

import (
	"context"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/icekeeper/icekeeper/configs"
	"github.com/icekeeper/icekeeper/internal/bucket"
	"github.com/icekeeper/icekeeper/internal/demo"
	"github.com/icekeeper/icekeeper/internal/state"
	"github.com/icekeeper/icekeeper/internal/testkit"
	"github.com/icekeeper/icekeeper/internal/testkit/servers"
	"github.com/icekeeper/icekeeper/internal/testkit/tablecheck"
	"github.com/icekeeper/icekeeper/jobs"
	"github.com/icekeeper/icekeeper/maintenance"
)

// Metadata files that fell off the table's log (write.metadata.previous-
// versions-max, without delete-after-commit) are unreferenced objects:
// marked after unreferencedDays and deleted nonCurrentDays later, two-phase
// like any other. The current file and those in its log are never marked,
// and the table reads the same. On the SQL catalog with local files and on
// the REST catalog with S3.
func TestOldMetadataFilesRemoved(t *testing.T) {
	for _, c := range []struct {
		name    string
		catalog func(t *testing.T, home string) map[string]string
	}{
		{"sql", func(t *testing.T, home string) map[string]string { return configs.Embedded(home).Buckets[0].Catalog }},
		{"rest", func(t *testing.T, _ string) map[string]string { return servers.REST(t).Props() }},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			home := t.TempDir()
			cfg := configs.Embedded(home)
			cfg.Buckets[0].Catalog = c.catalog(t, home)
			reg := cfg.Registry()
			t.Cleanup(reg.Close)
			b, _ := reg.Bucket("local")
			name := servers.RandomName("meta_")
			tbl := testkit.NewTable(t, b, "demo", name, demo.Schema())
			tx := tbl.NewTransaction()
			if err := tx.SetProperties(iceberg.Properties{table.MetadataPreviousVersionsMaxKey: "2"}); err != nil {
				t.Fatal(err)
			}
			tbl, err := tx.Commit(ctx)
			if err != nil {
				t.Fatal(err)
			}
			rng := rand.New(rand.NewPCG(3, 4))
			var logged []string
			for i := range 5 {
				for l := range tbl.Metadata().PreviousFiles() {
					logged = append(logged, l.MetadataFile)
				}
				logged = append(logged, tbl.MetadataLocation())
				if tbl, err = testkit.AppendRandom(ctx, tbl, 20, int64(i)*100, rng); err != nil {
					t.Fatal(err)
				}
			}
			kept := map[string]bool{tbl.MetadataLocation(): true}
			for l := range tbl.Metadata().PreviousFiles() {
				kept[l.MetadataFile] = true
			}
			var fallen []string
			for _, p := range logged {
				if !kept[p] && !slices.Contains(fallen, p) {
					fallen = append(fallen, p)
				}
			}
			if len(fallen) < 3 {
				t.Fatalf("only %d metadata files fell off the log", len(fallen))
			}
			before, err := tablecheck.Rows(ctx, tbl, 0)
			if err != nil {
				t.Fatal(err)
			}

			store, err := state.Open(ctx, "sqlite://"+filepath.Join(home, "state.db"))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { store.Close() })
			job := &Job{Store: store}
			runner := &jobs.Runner{Store: store, Jobs: jobs.Map(job.Definition())}
			target := jobs.Target{Bucket: b, Table: bucket.TableID{Namespace: []string{"demo"}, Name: name}}
			now := time.Now()
			run := func(after time.Duration) *Figures {
				t.Helper()
				out, err := runner.Run(ctx, target, maintenance.UnreferencedFileRemoval, "test", jobs.Options{Now: now.Add(after)})
				if err != nil || out.Status != state.Successful {
					t.Fatalf("removal at +%v: %+v %v", after, out, err)
				}
				return out.Figures.(*Figures)
			}
			if fig := run(4 * day); fig.Marked != len(fallen) {
				t.Fatalf("+4d: marked %d, want the %d metadata files off the log: %v", fig.Marked, len(fallen), fig.MarkedPaths)
			}
			marks, err := store.Marks(ctx, target.Key())
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range marks {
				if !strings.HasSuffix(m.Path, ".metadata.json") || kept[m.Path] || !slices.Contains(fallen, m.Path) {
					t.Fatalf("marked %s", m.Path)
				}
			}
			if fig := run(15 * day); fig.Deleted != len(fallen) {
				t.Fatalf("+15d: deleted %d, want %d", fig.Deleted, len(fallen))
			}
			after, err := b.LoadTable(ctx, target.Table)
			if err != nil {
				t.Fatal(err)
			}
			if fp, err := tablecheck.Rows(ctx, after, 0); err != nil || !fp.Equal(before) {
				t.Fatalf("rows after removal: %v %v", fp, err)
			}
			if missing, err := tablecheck.MissingFiles(ctx, after); err != nil || len(missing) > 0 {
				t.Fatalf("missing %v %v", missing, err)
			}
		})
	}
}
