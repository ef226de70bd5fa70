package rebase

import (
	"testing"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/icekeeper/icekeeper/internal/rowdigest"
)

func dataFile(t *testing.T, path string) iceberg.DataFile {
	t.Helper()
	b, err := iceberg.NewDataFileBuilder(*iceberg.UnpartitionedSpec, iceberg.EntryContentData, path, iceberg.ParquetFile, nil, nil, nil, 1, 1)
	if err != nil {
		t.Fatal(err)
	}
	return b.Build()
}

// A snapshot's claim sums its groups' claims; it carries none when a
// group has none, or when two groups could not be told apart.
func TestRowClaimsProperties(t *testing.T) {
	a := table.CompactionGroupResult{OldDataFiles: []iceberg.DataFile{dataFile(t, "s3://b/a.parquet")}}
	b := table.CompactionGroupResult{OldDataFiles: []iceberg.DataFile{dataFile(t, "s3://b/b.parquet")}}
	var one, two rowdigest.Digest
	one.Add(1)
	two.Add(2)
	c := &RowClaims{}
	c.Put(a, RowClaim{Read: one, Written: one})
	if p := c.properties([]table.CompactionGroupResult{a, b}); p != nil {
		t.Fatalf("a group without a claim: %v", p)
	}
	c.Put(b, RowClaim{Read: two, Written: two})
	sum := one
	sum.Merge(two)
	if p := c.properties([]table.CompactionGroupResult{a, b}); p[RowsReadProperty] != sum.String() || p[RowsWrittenProperty] != sum.String() {
		t.Fatalf("two groups: %v, want %v", p, sum)
	}
	if p := c.properties([]table.CompactionGroupResult{a, a}); p != nil {
		t.Fatalf("one group twice: %v", p)
	}
}
