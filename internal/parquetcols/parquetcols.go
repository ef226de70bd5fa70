// Package parquetcols finds an Iceberg table's columns among a Parquet
// file's leaf columns, by the field IDs Iceberg writers put in the schema.
package parquetcols

import "github.com/parquet-go/parquet-go"

// TopLevel maps the field ID of each top-level primitive column of a
// Parquet schema to its leaf column index. Columns without a field ID,
// repeated ones and nested groups are left out (their leaves still count
// toward the indexes of the columns after them).
func TopLevel(sc *parquet.Schema) map[int]int {
	out := map[int]int{}
	leaf := 0
	for _, f := range sc.Fields() {
		if f.Leaf() {
			if id := f.ID(); id != 0 && !f.Repeated() {
				out[id] = leaf
			}
		}
		leaf += leaves(f)
	}
	return out
}

func leaves(f parquet.Field) int {
	if f.Leaf() {
		return 1
	}
	n := 0
	for _, c := range f.Fields() {
		n += leaves(c)
	}
	return n
}
