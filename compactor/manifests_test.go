package compactor

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/icekeeper/icekeeper/internal/state"
	"github.com/icekeeper/icekeeper/internal/testkit/tablecheck"
	"github.com/icekeeper/icekeeper/internal/testkit/tableenv"
)

// A snapshot of many small manifests (a writer's commit each) has them
// merged, by partition, in the compaction run: the rows, time travel and
// every reachable file stay, and planning reads one manifest instead of
// thirty. Under compaction.minManifestsToRewrite nothing is rewritten. On
// the SQL catalog with local files and on the REST catalog with S3.
func TestManifestRewrite(t *testing.T) {
	for _, c := range catalogEnvs {
		t.Run(c.name, func(t *testing.T) {
			e, tbl := c.env(t, tableenv.BaseSchema, *iceberg.UnpartitionedSpec, "2")
			// Files this small compact too; a high minimum of input files
			// leaves the data alone, so the manifests are all there is.
			job := &Job{MinInputFiles: 1000}
			for range 10 {
				tbl = e.Append(tbl, 20)
			}
			if _, fig := e.compact(job); fig.ManifestsSmall != 10 || fig.ManifestsRewritten != 0 {
				t.Fatalf("10 manifests, under the minimum of 16: %d small, %d rewritten", fig.ManifestsSmall, fig.ManifestsRewritten)
			}
			for range 20 {
				tbl = e.Append(tbl, 20)
			}
			before := e.Load()
			fpBefore, snapBefore := e.Rows(before, 0), before.CurrentSnapshot().SnapshotID
			out, fig := e.compact(job)
			if out.Status != state.Successful || fig.ManifestsSmall != 30 || fig.ManifestsRewritten != 30 || fig.ManifestsWritten != 1 {
				t.Fatalf("30 manifests: %s %s, %d small, %d rewritten into %d", out.Status, out.FailureMessage, fig.ManifestsSmall, fig.ManifestsRewritten, fig.ManifestsWritten)
			}
			after := e.Load()
			fs, err := after.FS(e.Ctx)
			if err != nil {
				t.Fatal(err)
			}
			if ms, err := after.CurrentSnapshot().Manifests(fs); err != nil || len(ms) != 1 {
				t.Fatalf("manifests after: %d %v", len(ms), err)
			}
			if fp := e.Rows(after, 0); !fp.Equal(fpBefore) {
				t.Fatalf("rows changed: %v, want %v", fp, fpBefore)
			}
			if fp := e.Rows(after, snapBefore); !fp.Equal(fpBefore) {
				t.Fatalf("time travel: %v, want %v", fp, fpBefore)
			}
			if missing, err := tablecheck.MissingFiles(e.Ctx, after); err != nil || len(missing) > 0 {
				t.Fatalf("missing %v %v", missing, err)
			}
			if _, fig := e.compact(job); fig.ManifestsSmall != 1 || fig.ManifestsRewritten != 0 {
				t.Fatalf("the next run: %d small, %d rewritten", fig.ManifestsSmall, fig.ManifestsRewritten)
			}
		})
	}
}

// A manifest rewrite that loses to a writer's commit is rebased, not read
// again: the merged manifests are kept, the next attempt lists them with
// the writer's new manifest, and the writer's rows are there. When the
// concurrent commit replaced some of the manifests being merged, the
// rewrite is staged again on its head. Either way no file it wrote and did
// not commit is left. On both catalog paths.
func TestManifestRewriteRebases(t *testing.T) {
	for _, c := range catalogEnvs {
		for _, replace := range []bool{false, true} {
			name := c.name + "/append"
			if replace {
				name = c.name + "/manifests replaced"
			}
			t.Run(name, func(t *testing.T) {
				e, tbl := c.env(t, tableenv.BaseSchema, *iceberg.UnpartitionedSpec, "2")
				for range 20 {
					tbl = e.Append(tbl, 20)
				}
				job := &Job{MinInputFiles: 1000}
				job.beforeManifestCommit = func(attempt int) {
					if attempt != 1 {
						return
					}
					if !replace {
						e.Append(e.Load(), 20)
						return
					}
					// Another writer merges two of the small manifests.
					cur := e.Load()
					fs, _ := cur.FS(e.Ctx)
					ms, _ := cur.CurrentSnapshot().Manifests(fs)
					two := map[string]bool{ms[0].FilePath(): true, ms[1].FilePath(): true}
					tx := cur.NewTransaction()
					if _, err := tx.RewriteManifests(e.Ctx, table.WithRewriteManifestPredicate(func(m iceberg.ManifestFile) bool { return two[m.FilePath()] })); err != nil {
						t.Error(err)
						return
					}
					if _, err := tx.Commit(e.Ctx); err != nil {
						t.Error(err)
					}
				}
				before := e.Rows(e.Load(), 0)
				out, fig := e.compact(job)
				if out.Status != state.Successful || fig.ManifestConflicts != 1 || fig.ManifestRebases != 1 || fig.ManifestsDeferred {
					t.Fatalf("%s %s: %+v", out.Status, out.FailureMessage, fig.manifestFigures)
				}
				after := e.Load()
				fs, err := after.FS(e.Ctx)
				if err != nil {
					t.Fatal(err)
				}
				ms, err := after.CurrentSnapshot().Manifests(fs)
				if err != nil {
					t.Fatal(err)
				}
				// Appended: 20 merged into 1, the writer's stays. Replaced:
				// 2 were merged by the other commit, staged again: that one
				// and the 18 others into 1.
				wantRewritten, wantManifests := 20, 2
				if replace {
					wantRewritten, wantManifests = 19, 1
				}
				if fig.ManifestsRewritten != wantRewritten || fig.ManifestsWritten != 1 || len(ms) != wantManifests {
					t.Fatalf("%d rewritten into %d, %d manifests after; want %d into 1, %d after", fig.ManifestsRewritten, fig.ManifestsWritten, len(ms), wantRewritten, wantManifests)
				}
				fp := e.Rows(after, 0)
				if !replace {
					if fp.Rows != before.Rows+20 {
						t.Fatalf("%d rows, want the %d before and the writer's 20", fp.Rows, before.Rows)
					}
				} else if !fp.Equal(before) {
					t.Fatalf("rows changed: %v, want %v", fp, before)
				}
				if missing, err := tablecheck.MissingFiles(e.Ctx, after); err != nil || len(missing) > 0 {
					t.Fatalf("missing %v %v", missing, err)
				}
				if c.name == "sql" {
					if left := unreachableMetadata(t, e, after); len(left) > 0 {
						t.Fatalf("files written and not committed are left: %v", left)
					}
				}
			})
		}
	}
}

// unreachableMetadata lists the Avro files under a local table's metadata
// directory that no snapshot reaches.
func unreachableMetadata(t *testing.T, e *env, tbl *table.Table) []string {
	t.Helper()
	reach, err := tablecheck.ReachableFiles(e.Ctx, tbl)
	if err != nil {
		t.Fatal(err)
	}
	reachable := map[string]bool{}
	for _, p := range reach {
		reachable[strings.TrimPrefix(p, "file://")] = true
	}
	files, err := filepath.Glob(filepath.Join(strings.TrimPrefix(tbl.Location(), "file://"), "metadata", "*.avro"))
	if err != nil {
		t.Fatal(err)
	}
	var left []string
	for _, f := range files {
		if !reachable[f] {
			left = append(left, f)
		}
	}
	return left
}
