package records

import (
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/icekeeper/icekeeper/configs"
	"github.com/icekeeper/icekeeper/internal/state"
	"github.com/icekeeper/icekeeper/internal/testkit/tablecheck"
	"github.com/icekeeper/icekeeper/internal/testkit/tableenv"
)

// BenchmarkRecordExpiration compares a record expiration run with
// iceberg-go's Transaction.Delete of the same rows (copy-on-write: files
// whose rows all match are dropped, the others rewritten), on identical
// tables of 100 appends of 2,000 rows over five days, without deletes
// (where iceberg-go's rewrite is correct). The cutoff splits the third
// day. Each iteration builds a fresh table for each side and checks the
// rows after against the unexpired rows before, both untimed.
//
//	go test -run '^$' -bench RecordExpiration -benchtime 5x ./expire/records
func BenchmarkRecordExpiration(b *testing.B) {
	for _, tc := range []struct {
		name string
		spec iceberg.PartitionSpec
	}{
		{"by-day", iceberg.NewPartitionSpec(tableenv.PF(3, 1000, "ts_day", iceberg.DayTransform{}))},
		{"unpartitioned", *iceberg.UnpartitionedSpec},
	} {
		build := func(b *testing.B) (*env, *table.Table) {
			b.StopTimer()
			defer b.StartTimer()
			home := b.TempDir()
			te, tbl := tableenv.NewWith(b, configs.Embedded(home), home, tableenv.BaseSchema, tc.spec, "2")
			e := &env{te}
			tx := tbl.NewTransaction()
			if err := tx.SetProperties(iceberg.Properties{ExpirationColumnProperty: "ts", "write.delete.mode": "copy-on-write"}); err != nil {
				b.Fatal(err)
			}
			tbl, err := tx.Commit(e.Ctx)
			if err != nil {
				b.Fatal(err)
			}
			return e, e.AppendCommits(tbl, 100, 2000)
		}
		check := func(b *testing.B, e *env, want tablecheck.Fingerprint) {
			b.StopTimer()
			defer b.StartTimer()
			if got := e.Rows(e.Load(), 0); !got.Equal(want) {
				b.Fatalf("rows %v, want %v", got, want)
			}
		}
		b.Run(tc.name+"/icekeeper", func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				e, tbl := build(b)
				want := e.unexpiredUntimed(b, tbl)
				out, fig := e.expire(&Job{}, false)
				if out.Status != state.Successful || fig.DeletedRecords == 0 {
					b.Fatalf("%s %s %+v", out.Status, out.FailureMessage, fig)
				}
				check(b, e, want)
			}
		})
		b.Run(tc.name+"/iceberg-go", func(b *testing.B) {
			cut := iceberg.Timestamp(expiryNow.Add(-30 * 24 * time.Hour).UnixMicro())
			for i := 0; i < b.N; i++ {
				e, tbl := build(b)
				want := e.unexpiredUntimed(b, tbl)
				tx := tbl.NewTransaction()
				if err := tx.Delete(e.Ctx, iceberg.LessThan(iceberg.Reference("ts"), cut), nil); err != nil {
					b.Fatal(err)
				}
				if _, err := tx.Commit(e.Ctx); err != nil {
					b.Fatal(err)
				}
				check(b, e, want)
			}
		})
	}
}

func (e *env) unexpiredUntimed(b *testing.B, tbl *table.Table) tablecheck.Fingerprint {
	b.StopTimer()
	defer b.StartTimer()
	return e.unexpired(tbl, "ts")
}
