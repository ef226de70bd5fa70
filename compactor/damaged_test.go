package compactor

import (
	"fmt"
	"strings"
	"testing"

	"github.com/apache/iceberg-go"

	"github.com/icekeeper/icekeeper/internal/state"
	"github.com/icekeeper/icekeeper/internal/testkit"
	"github.com/icekeeper/icekeeper/internal/testkit/tableenv"
	"github.com/icekeeper/icekeeper/maintenance"
)

// A compaction over a manifest that reads cleanly but short fails naming
// the manifest and both lengths, and commits nothing: the data rewrite
// would otherwise drop the lost files' delete files as dangling, and a
// manifest rewrite would drop the lost entries from the table itself.
func TestDamagedManifestFailsCompaction(t *testing.T) {
	// On S3 the length is the object's as its GET answers, not a local
	// file's stat: both stores are checked.
	for _, store := range bothStores() {
		t.Run(store.name+"/data rewrite", func(t *testing.T) {
			e, tbl := store.env(t, tableenv.BaseSchema, *iceberg.UnpartitionedSpec, "2")
			tbl = e.Append(tbl, 20)
			tbl, err := testkit.AddCopies(e.Ctx, tbl, 300)
			if err != nil {
				t.Fatal(err)
			}
			path, _, err := testkit.LargestManifest(e.Ctx, tbl)
			if err != nil {
				t.Fatal(err)
			}
			damagedRun(t, e, &Job{}, path, func(b []byte) ([]byte, error) { return testkit.CutAfterBlocks(b, 1) })
		})
		for _, totals := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/old writer, totals=%v", store.name, totals), func(t *testing.T) {
				// Format version 1, a list without counts: the scan's file
				// count cannot be checked against the list, and without
				// totals against nothing; the length still tells.
				if store.name == "s3" && testing.Short() {
					t.Skip("the old writer's tables on S3 run in the full suite: 2.7 s")
				}
				e, tbl := store.env(t, tableenv.BaseSchema, *iceberg.UnpartitionedSpec, "1")
				tbl = e.Append(tbl, 20)
				tbl, err := testkit.AddCopies(e.Ctx, tbl, 300)
				if err != nil {
					t.Fatal(err)
				}
				if err := testkit.OldWriterTable(e.Ctx, tbl, totals); err != nil {
					t.Fatal(err)
				}
				path, _, err := testkit.LargestManifest(e.Ctx, e.Load())
				if err != nil {
					t.Fatal(err)
				}
				damagedRun(t, e, &Job{}, path, func(b []byte) ([]byte, error) { return testkit.CutAfterBlocks(b, 1) })
			})
		}
		t.Run(store.name+"/manifest rewrite", func(t *testing.T) {
			e, tbl := store.env(t, tableenv.BaseSchema, *iceberg.UnpartitionedSpec, "2")
			for range 20 {
				tbl = e.Append(tbl, 5)
			}
			fs, err := tbl.FS(e.Ctx)
			if err != nil {
				t.Fatal(err)
			}
			list, err := tbl.CurrentSnapshot().Manifests(fs)
			if err != nil {
				t.Fatal(err)
			}
			// Files this small compact too; the minimum keeps the data
			// alone, so the manifest rewrite is what reads the damaged
			// manifest.
			damagedRun(t, e, &Job{MinInputFiles: 1000}, list[3].FilePath(), func(b []byte) ([]byte, error) { return testkit.CutAfterBlocks(b, 0) })
		})
	}
	t.Run("clustering by sort", func(t *testing.T) {
		// The overlap rule plans from every data manifest's bounds: a
		// short one must fail the run, not hide files from the depth.
		e := overlappingTable(t, maintenance.StrategySort)
		path, _, err := testkit.LargestManifest(e.Ctx, e.Load())
		if err != nil {
			t.Fatal(err)
		}
		damagedRun(t, e, &Job{}, path, func(b []byte) ([]byte, error) { return testkit.CutAfterBlocks(b, 0) })
	})
}

// damagedRun damages the manifest at path with how and asserts that a
// compaction fails naming it and its recorded length, and changes nothing.
func damagedRun(t *testing.T, e *env, job *Job, path string, how func([]byte) ([]byte, error)) {
	t.Helper()
	before := e.Load()
	if _, err := testkit.Damage(e.Ctx, before, path, how); err != nil {
		t.Fatal(err)
	}
	out, _ := e.compact(job)
	m, err := testkit.ManifestOf(e.Ctx, before, path)
	if err != nil {
		t.Fatal(err)
	}
	if out.Status != state.Failed || !strings.Contains(out.FailureMessage, path) ||
		!strings.Contains(out.FailureMessage, fmt.Sprintf("its manifest list records %d (manifest_length)", m.Length())) {
		t.Fatalf("compaction over a damaged manifest: %s %s", out.Status, out.FailureMessage)
	}
	if after := e.Load(); after.MetadataLocation() != before.MetadataLocation() {
		t.Fatalf("compaction over a damaged manifest committed %s", after.MetadataLocation())
	}
	t.Log(out.FailureMessage)
}
