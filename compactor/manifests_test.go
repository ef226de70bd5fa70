package compactor

import (
	"testing"

	"github.com/apache/iceberg-go"

	"github.com/icekeeper/icekeeper/internal/state"
	"github.com/icekeeper/icekeeper/internal/testkit/tablecheck"
)

// A snapshot of many small manifests (a writer's commit each) has them
// merged, by partition, in the compaction run: the rows, time travel and
// every reachable file stay, and planning reads one manifest instead of
// thirty. Under compaction.minManifestsToRewrite nothing is rewritten. On
// the SQL catalog with local files and on the REST catalog with S3.
func TestManifestRewrite(t *testing.T) {
	for _, c := range catalogEnvs {
		t.Run(c.name, func(t *testing.T) {
			e, tbl := c.env(t, baseSchema, *iceberg.UnpartitionedSpec, "2")
			// Files this small compact too; a high minimum of input files
			// leaves the data alone, so the manifests are all there is.
			job := &Job{MinInputFiles: 1000}
			for range 10 {
				tbl = e.append(tbl, 20)
			}
			if _, fig := e.compact(job); fig.ManifestsSmall != 10 || fig.ManifestsRewritten != 0 {
				t.Fatalf("10 manifests, under the minimum of 16: %d small, %d rewritten", fig.ManifestsSmall, fig.ManifestsRewritten)
			}
			for range 20 {
				tbl = e.append(tbl, 20)
			}
			before := e.load()
			fpBefore, snapBefore := e.rows(before, 0), before.CurrentSnapshot().SnapshotID
			out, fig := e.compact(job)
			if out.Status != state.Successful || fig.ManifestsSmall != 30 || fig.ManifestsRewritten != 30 || fig.ManifestsWritten != 1 {
				t.Fatalf("30 manifests: %s %s, %d small, %d rewritten into %d", out.Status, out.FailureMessage, fig.ManifestsSmall, fig.ManifestsRewritten, fig.ManifestsWritten)
			}
			after := e.load()
			fs, err := after.FS(e.ctx)
			if err != nil {
				t.Fatal(err)
			}
			if ms, err := after.CurrentSnapshot().Manifests(fs); err != nil || len(ms) != 1 {
				t.Fatalf("manifests after: %d %v", len(ms), err)
			}
			if fp := e.rows(after, 0); !fp.Equal(fpBefore) {
				t.Fatalf("rows changed: %v, want %v", fp, fpBefore)
			}
			if fp := e.rows(after, snapBefore); !fp.Equal(fpBefore) {
				t.Fatalf("time travel: %v, want %v", fp, fpBefore)
			}
			if missing, err := tablecheck.MissingFiles(e.ctx, after); err != nil || len(missing) > 0 {
				t.Fatalf("missing %v %v", missing, err)
			}
			if _, fig := e.compact(job); fig.ManifestsSmall != 1 || fig.ManifestsRewritten != 0 {
				t.Fatalf("the next run: %d small, %d rewritten", fig.ManifestsSmall, fig.ManifestsRewritten)
			}
		})
	}
}
