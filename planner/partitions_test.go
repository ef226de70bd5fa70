package planner

import (
	"testing"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
)

func TestPartitionKeyAndLabel(t *testing.T) {
	plain, byNameMeta := newMeta(t, "2"), newSpecMeta(t, "2", byName)
	file := func(spec iceberg.PartitionSpec, part map[int]any) iceberg.DataFile {
		b, err := iceberg.NewDataFileBuilder(spec, iceberg.EntryContentData, "s3://b/t/data/f.parquet", iceberg.ParquetFile, part, nil, nil, 1, 1)
		if err != nil {
			t.Fatal(err)
		}
		return b.Build()
	}
	for _, tc := range []struct {
		name       string
		meta       table.Metadata
		df         iceberg.DataFile
		key, label string
	}{
		{"unpartitioned", plain, file(*iceberg.UnpartitionedSpec, nil), "spec=0", "unpartitioned"},
		{"identity value", byNameMeta, file(byName, map[int]any{1000: "a"}), "spec=0/1000=a", "name=a"},
		{"null value", byNameMeta, file(byName, map[int]any{1000: nil}), "spec=0/1000=<nil>", "name=null"},
		{"a spec the metadata lacks is named by its key", plain, file(iceberg.NewPartitionSpecID(7), nil), "spec=7", "spec=7"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := PartitionKey(tc.df); got != tc.key {
				t.Errorf("key %q, want %q", got, tc.key)
			}
			if got := PartitionLabel(tc.meta, tc.df); got != tc.label {
				t.Errorf("label %q, want %q", got, tc.label)
			}
		})
	}
}
