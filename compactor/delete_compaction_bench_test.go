package compactor

import (
	"testing"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/icekeeper/icekeeper/configs"
	"github.com/icekeeper/icekeeper/internal/rebase"
	"github.com/icekeeper/icekeeper/internal/state"
	"github.com/icekeeper/icekeeper/internal/testkit/tablecheck"
	"github.com/icekeeper/icekeeper/internal/testkit/tableenv"
	"github.com/icekeeper/icekeeper/planner"
)

// BenchmarkDeleteFileCompaction compares delete-file compaction with what
// sheds the same delete files without it: rewriting the data files they
// apply to, with iceberg-go's Table.RewriteDataFiles (one group per
// partition, deletes applied). The table is v2 on local disk with two
// well-sized files of 60,000 rows (about 1 MB) in each of 2 buckets, and
// 10 commits of position deletes, 5 rows per file each. Each iteration
// builds a fresh table for each side and checks the rows after, untimed.
//
//	go test -run '^$' -bench DeleteFileCompaction -benchtime 5x -count 3 -benchmem ./compactor
func BenchmarkDeleteFileCompaction(b *testing.B) {
	build := func(b *testing.B) (*env, *table.Table, tablecheck.Fingerprint) {
		b.StopTimer()
		defer b.StartTimer()
		home := b.TempDir()
		e, tbl := newEnvWith(b, configs.Embedded(home), home, tableenv.BaseSchema, iceberg.NewPartitionSpec(tableenv.PF(1, 1000, "id_bucket", iceberg.BucketTransform{NumBuckets: 2})), "2")
		tbl = deleteTable{bigRows: 120000, parts: 2, deletes: 10, perCommit: 5, noSmall: true}.fill(e, tbl)
		return e, tbl, e.Rows(tbl, 0)
	}
	check := func(b *testing.B, e *env, want tablecheck.Fingerprint, deleteFiles int) {
		b.StopTimer()
		defer b.StartTimer()
		tbl := e.Load()
		if got := e.Rows(tbl, 0); !got.Equal(want) {
			b.Fatalf("rows %v, want %v", got, want)
		}
		if _, n, _, _ := deleteShape(e, tbl, want.Rows); n != deleteFiles {
			b.Fatalf("%d delete files after, want %d", n, deleteFiles)
		}
	}
	b.Run("icekeeper", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			e, _, want := build(b)
			out, fig := e.compact(&Job{})
			if out.Status != state.Successful || fig.DeleteGroupsCommitted != 2 {
				b.Fatalf("%s %s\n%s", out.Status, out.FailureMessage, fig.Text())
			}
			check(b, e, want, 4)
		}
	})
	b.Run("rewrite-data-files", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			e, tbl, want := build(b)
			tasks, err := tbl.Scan().PlanFiles(e.Ctx)
			if err != nil {
				b.Fatal(err)
			}
			byPart := map[string]*table.CompactionTaskGroup{}
			var groups []table.CompactionTaskGroup
			for _, t := range rebase.WholeFiles(tasks) {
				pk := planner.PartitionKey(t.File)
				g, ok := byPart[pk]
				if !ok {
					g = &table.CompactionTaskGroup{PartitionKey: pk}
					byPart[pk] = g
				}
				g.Tasks = append(g.Tasks, t)
				g.TotalSizeBytes += t.File.FileSizeBytes()
			}
			for _, g := range byPart {
				groups = append(groups, *g)
			}
			if _, err := tbl.RewriteDataFiles(e.Ctx, groups, table.RewriteDataFilesOptions{
				GroupOptions: []table.CompactionGroupOption{table.WithCompactionTargetFileSize(1 << 20)}}); err != nil {
				b.Fatal(err)
			}
			check(b, e, want, 0)
		}
	})
}
