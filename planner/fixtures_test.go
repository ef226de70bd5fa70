package planner

import (
	"testing"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
)

// testSchema has two top-level columns and a struct with one nested
// column; NewMetadata keeps the IDs as given here.
var testSchema = iceberg.NewSchema(0,
	iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
	iceberg.NestedField{ID: 2, Name: "name", Type: iceberg.PrimitiveTypes.String},
	iceberg.NestedField{ID: 3, Name: "loc", Type: &iceberg.StructType{FieldList: []iceberg.NestedField{
		{ID: 4, Name: "city", Type: iceberg.PrimitiveTypes.String},
	}}},
)

// newMeta builds unpartitioned table metadata of the given format version
// sorted by fields (none: unsorted).
func newMeta(t *testing.T, version string, fields ...table.SortField) table.Metadata {
	t.Helper()
	return newSpecMeta(t, version, *iceberg.UnpartitionedSpec, fields...)
}

// byName partitions by the name column's value, as spec 0.
var byName = iceberg.NewPartitionSpec(iceberg.PartitionField{SourceIDs: []int{2}, FieldID: 1000, Name: "name", Transform: iceberg.IdentityTransform{}})

// newSpecMeta builds table metadata partitioned by spec.
func newSpecMeta(t *testing.T, version string, spec iceberg.PartitionSpec, fields ...table.SortField) table.Metadata {
	t.Helper()
	order := table.UnsortedSortOrder
	if len(fields) > 0 {
		var err error
		if order, err = table.NewSortOrder(1, fields); err != nil {
			t.Fatal(err)
		}
	}
	meta, err := table.NewMetadata(testSchema, &spec, order, "s3://b/t",
		iceberg.Properties{table.PropertyFormatVersion: version})
	if err != nil {
		t.Fatal(err)
	}
	return meta
}

// sortBy is an ascending sort field on column id with transform tr.
func sortBy(id int, tr iceberg.Transform) table.SortField {
	return table.SortField{SourceIDs: []int{id}, Transform: tr, Direction: table.SortASC, NullOrder: table.NullsFirst}
}

// dataFile builds a data or delete file of the given spec, content and
// format, without I/O.
func dataFile(t *testing.T, spec iceberg.PartitionSpec, content iceberg.ManifestEntryContent, path string, format iceberg.FileFormat, records int64, opts ...func(*iceberg.DataFileBuilder)) iceberg.DataFile {
	t.Helper()
	b, err := iceberg.NewDataFileBuilder(spec, content, path, format, nil, nil, nil, records, records*100)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range opts {
		o(b)
	}
	return b.Build()
}

// data is a Parquet data file of the unpartitioned spec 0.
func data(t *testing.T, path string) iceberg.DataFile {
	return dataFile(t, *iceberg.UnpartitionedSpec, iceberg.EntryContentData, path, iceberg.ParquetFile, 10)
}

// posDelete is a Parquet position delete file.
func posDelete(t *testing.T, path string) iceberg.DataFile {
	return dataFile(t, *iceberg.UnpartitionedSpec, iceberg.EntryContentPosDeletes, path, iceberg.ParquetFile, 1)
}

// vector is a deletion vector for the data file ref, at offset in the
// Puffin file path.
func vector(t *testing.T, path, ref string, offset int64) iceberg.DataFile {
	return dataFile(t, *iceberg.UnpartitionedSpec, iceberg.EntryContentPosDeletes, path, iceberg.PuffinFile, 1, func(b *iceberg.DataFileBuilder) {
		b.ReferencedDataFile(ref).ContentOffset(offset).ContentSizeInBytes(10)
	})
}
