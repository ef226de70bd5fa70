package compactor

import (
	"testing"

	"github.com/apache/iceberg-go"

	"github.com/icekeeper/icekeeper/configs"
	"github.com/icekeeper/icekeeper/internal/state"
	"github.com/icekeeper/icekeeper/internal/testkit/tablecheck"
	"github.com/icekeeper/icekeeper/internal/testkit/tableenv"
)

// BenchmarkEqualityConversion compares one compaction run on the issue's
// CDC table, scaled down (8 well-sized files of 60,000 rows, about 1 MB
// each, in row groups of 20,000; 3 checkpoints of 100 upserts: an
// equality delete on id and the new versions), with equality-delete
// conversion and without it (the data rewrite then rewrites every file
// the deletes reach). v2 on local disk; each iteration builds a fresh
// table and checks the rows after, untimed. bytes-read/op is what the run
// read from data files: the key column chunks when converting, the whole
// input files when rewriting.
//
//	go test -run '^$' -bench EqualityConversion -benchtime 3x -benchmem ./compactor
func BenchmarkEqualityConversion(b *testing.B) {
	for _, side := range []struct {
		name    string
		convert int // compaction.minEqualityDeleteFilesToConvert
	}{{"convert", 1}, {"rewrite", 0}} {
		b.Run(side.name, func(b *testing.B) {
			var read int64
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				home := b.TempDir()
				e, tbl := newEnvWith(b, configs.Embedded(home), home, tableenv.BaseSchema, *iceberg.UnpartitionedSpec, "2")
				e.Defaults.Knobs.MinEqualityDeleteFilesToConvert = side.convert
				tbl, _ = cdcTable{appends: 8, bigRows: 60000, checkpoints: 3, upserts: 100}.fill(e, tbl)
				want := e.Rows(tbl, 0)
				b.StartTimer()
				out, fig := e.compact(&Job{})
				b.StopTimer()
				if out.Status != state.Successful {
					b.Fatalf("%s %s\n%s", out.Status, out.FailureMessage, fig.Text())
				}
				if side.convert > 0 {
					read += fig.ConvertBytesRead
				} else {
					read += fig.InputBytes
				}
				checkRows(b, e, want)
				b.StartTimer()
			}
			b.ReportMetric(float64(read)/float64(b.N), "bytes-read/op")
		})
	}
}

func checkRows(b *testing.B, e *env, want tablecheck.Fingerprint) {
	if got := e.Rows(e.Load(), 0); !got.Equal(want) {
		b.Fatalf("rows %v, want %v", got, want)
	}
	if n := count(e.liveDeletes(), iceberg.EntryContentEqDeletes); n != 0 {
		b.Fatalf("%d equality delete files left", n)
	}
}
