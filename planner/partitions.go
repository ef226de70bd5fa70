package planner

import (
	"fmt"
	"slices"
	"strings"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
)

// PartitionLabel names a file's partition for people: the partition
// fields' names and human-readable values ("ts_day=2026-11-10"), with the
// spec ID when it is not the current one. Grouping uses PartitionKey.
func PartitionLabel(meta table.Metadata, df iceberg.DataFile) string {
	spec := meta.PartitionSpecByID(int(df.SpecID()))
	if spec == nil || spec.NumFields() == 0 {
		if int(df.SpecID()) == meta.DefaultPartitionSpec() {
			return "unpartitioned"
		}
		return PartitionKey(df)
	}
	part := df.Partition()
	var b strings.Builder
	if int(df.SpecID()) != meta.DefaultPartitionSpec() {
		fmt.Fprintf(&b, "spec %d: ", df.SpecID())
	}
	for i := 0; i < spec.NumFields(); i++ {
		f := spec.Field(i)
		if i > 0 {
			b.WriteByte('/')
		}
		v := part[f.FieldID]
		val := "null"
		if v != nil {
			val = fmt.Sprint(v)
			if src, ok := meta.CurrentSchema().FindFieldByID(f.SourceID()); ok {
				if rt := f.Transform.ResultType(src.Type); rt != nil {
					val = f.Transform.ToHumanStrType(rt, v)
				}
			}
		}
		fmt.Fprintf(&b, "%s=%s", f.Name, val)
	}
	return b.String()
}

// PartitionKey is the canonical partition of a file: spec ID and the
// partition values by field ID.
func PartitionKey(df iceberg.DataFile) string {
	part := df.Partition()
	ids := make([]int, 0, len(part))
	for id := range part {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	var b strings.Builder
	fmt.Fprintf(&b, "spec=%d", df.SpecID())
	for _, id := range ids {
		fmt.Fprintf(&b, "/%d=%v", id, part[id])
	}
	return b.String()
}
