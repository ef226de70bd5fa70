package planner

import (
	"github.com/apache/iceberg-go/table"

	"github.com/icekeeper/icekeeper/maintenance"
)

// The rewrite paths a compaction plan names for its groups.
const (
	// PathMerge merges delete-free files of the current schema column by
	// column with parquet-go (package compactor/merge).
	PathMerge = "merge"
	// PathIceberg reads through iceberg-go, deletes applied, and writes
	// with its Arrow Parquet writer.
	PathIceberg = "iceberg-go"
	// PathRepartition reads files of an older partition spec and writes
	// their rows into the current spec's partitions.
	PathRepartition = "repartition"
	// PathSort, PathZOrder and PathHilbert order a group's rows in
	// memory before writing them.
	PathSort    = "sort"
	PathZOrder  = "z-order"
	PathHilbert = "hilbert"
)

// MergeCheck is the executor's merge path, as a capability: whether it can
// rewrite tasks toward target from metadata alone (ok), and when it cannot,
// why in a few words for the plan. The planner does not import the merge
// code; the executor hands in what it can do, as Prometheus hands its
// compactor a block filter.
type MergeCheck func(meta table.Metadata, tasks []table.FileScanTask, target int64) (why string, ok bool)

// noMerge is the reason given when the executor handed in no merge path.
const noMerge = "no merge path available"

// RewritePath picks the path that rewrites a group of tasks: files of an
// older spec are re-partitioned whatever the strategy; sort, z-order and
// hilbert order rows; a bin-pack group merges when mergeable can take it
// and goes through iceberg-go otherwise, with the reason.
func RewritePath(meta table.Metadata, tasks []table.FileScanTask, strategy string, target int64, mergeable MergeCheck) (path, why string) {
	if int(tasks[0].File.SpecID()) != meta.DefaultPartitionSpec() {
		return PathRepartition, ""
	}
	switch strategy {
	case string(maintenance.StrategySort):
		return PathSort, ""
	case string(maintenance.StrategyZOrder):
		return PathZOrder, ""
	case string(maintenance.StrategyHilbert):
		return PathHilbert, ""
	}
	if mergeable == nil {
		return PathIceberg, noMerge
	}
	if why, ok := mergeable(meta, tasks, target); !ok {
		return PathIceberg, why
	}
	return PathMerge, ""
}

// GroupTasks are the scan tasks of g's files, files having been numbered
// by their index in tasks.
func GroupTasks(tasks []table.FileScanTask, g Group) []table.FileScanTask {
	out := make([]table.FileScanTask, len(g.FileIDs))
	for i, id := range g.FileIDs {
		out[i] = tasks[id]
	}
	return out
}
