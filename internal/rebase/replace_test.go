package rebase

import (
	"testing"

	"github.com/apache/iceberg-go"
)

// Which data files a position delete may apply to, by its referenced data
// file or the bounds of its file_path column (full or truncated).
func TestMayApply(t *testing.T) {
	del := func(ref *string, lo, hi string) iceberg.DataFile {
		b, err := iceberg.NewDataFileBuilder(*iceberg.UnpartitionedSpec, iceberg.EntryContentPosDeletes, "d.parquet", iceberg.ParquetFile, nil, nil, nil, 1, 1)
		if err != nil {
			t.Fatal(err)
		}
		if ref != nil {
			b.ReferencedDataFile(*ref)
		}
		if lo != "" {
			b.LowerBoundValues(map[int][]byte{FilePathFieldID: []byte(lo)}).UpperBoundValues(map[int][]byte{FilePathFieldID: []byte(hi)})
		}
		return b.Build()
	}
	a, z := "s3://b/t/data/a.parquet", "s3://b/t/data/z.parquet"
	for _, tc := range []struct {
		name string
		d    iceberg.DataFile
		path string
		want bool
	}{
		{"referenced file", del(&a, "", ""), a, true},
		{"another referenced file", del(&a, "", ""), z, false},
		{"no bounds", del(nil, "", ""), z, true},
		{"full bounds, inside", del(nil, a, z), "s3://b/t/data/m.parquet", true},
		{"full bounds, the upper one", del(nil, a, z), z, true},
		{"full bounds, below", del(nil, z, z), a, false},
		{"full bounds, above", del(nil, a, a), z, false},
		{"truncated bounds hold every path with the prefix", del(nil, "s3://b/t/data/", "s3://b/t/data0"), z, true},
	} {
		if got := mayApply(tc.d, tc.path); got != tc.want {
			t.Errorf("%s: mayApply = %v, want %v", tc.name, got, tc.want)
		}
	}
}
