package compactor

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/icekeeper/icekeeper/compactor/merge"
	"github.com/icekeeper/icekeeper/compactor/planner"
	"github.com/icekeeper/icekeeper/maintenance"
)

// ErrStrategy is returned when the configured strategy cannot run.
var ErrStrategy = errors.New("compaction strategy cannot be applied")

// The rewrite paths a plan names for its groups.
const (
	// PathMerge merges delete-free files of the current schema column by
	// column with parquet-go (package merge).
	PathMerge = "merge"
	// PathIceberg reads through iceberg-go, deletes applied, and writes
	// with its Arrow Parquet writer.
	PathIceberg = "iceberg-go"
	// PathRepartition reads files of an older partition spec and writes
	// their rows into the current spec's partitions.
	PathRepartition = "repartition"
	// PathSort and PathZOrder order a group's rows in memory before
	// writing them.
	PathSort   = "sort"
	PathZOrder = "z-order"
)

// planOptions are the run's settings that planning depends on.
type planOptions struct {
	strategy      string
	target        int64
	minInputFiles int
	minFileAge    time.Duration
	now           time.Time
}

// makePlan decides the groups and, for each, the path that will rewrite
// it. It reads metadata only.
func makePlan(meta table.Metadata, sc scanned, o planOptions) (planner.Plan, error) {
	plan, err := planner.Make(sc.files, planner.Options{TargetBytes: o.target, MinInputFiles: o.minInputFiles, MinFileAge: o.minFileAge, Now: o.now})
	if err != nil {
		return plan, err
	}
	for i, g := range plan.Groups {
		plan.Groups[i].Path, plan.Groups[i].PathReason = choosePath(meta, groupTasks(sc.tasks, g), o.strategy, o.target)
	}
	return plan, nil
}

func groupTasks(tasks []table.FileScanTask, g planner.Group) []table.FileScanTask {
	out := make([]table.FileScanTask, len(g.FileIDs))
	for i, id := range g.FileIDs {
		out[i] = tasks[id]
	}
	return out
}

// choosePath picks a group's rewrite path: files of an older spec are
// re-partitioned whatever the strategy; sort and z-order order rows; a
// bin-pack group merges when the merge path can take it and goes through
// iceberg-go otherwise, with the reason.
func choosePath(meta table.Metadata, tasks []table.FileScanTask, strat string, target int64) (path, why string) {
	if int(tasks[0].File.SpecID()) != meta.DefaultPartitionSpec() {
		return PathRepartition, ""
	}
	switch strat {
	case string(maintenance.StrategySort):
		return PathSort, ""
	case string(maintenance.StrategyZOrder):
		return PathZOrder, ""
	}
	if err := merge.Check(meta, tasks, target); err != nil {
		return PathIceberg, strings.TrimPrefix(err.Error(), merge.ErrNotMergeable.Error()+": ")
	}
	return PathMerge, ""
}

// strategy resolves the configured strategy for tbl: auto is sort when the
// table has a sort order, else binpack; sort and z-order need a sort order
// this engine can apply, and fail without one rather than silently fall
// back to binpack.
func strategy(s maintenance.Strategy, tbl *table.Table) (string, error) {
	sorted := !tbl.SortOrder().IsUnsorted()
	switch s {
	case maintenance.StrategyBinpack:
		return string(s), nil
	case maintenance.StrategyAuto, "":
		if !sorted {
			return string(maintenance.StrategyBinpack), nil
		}
		s = maintenance.StrategySort
	case maintenance.StrategySort, maintenance.StrategyZOrder:
		if !sorted {
			return "", fmt.Errorf("%w: strategy %s needs a table sort order (its columns) and the table has none", ErrStrategy, s)
		}
	default:
		return "", fmt.Errorf("%w: unknown strategy %q", ErrStrategy, s)
	}
	if err := checkSortOrder(tbl); err != nil {
		return "", err
	}
	return string(s), nil
}

// checkSortOrder tells whether sortKeys can apply the table's sort order:
// identity fields on top-level columns.
func checkSortOrder(tbl *table.Table) error {
	sc := tbl.Schema()
	for _, f := range tbl.SortOrder().Fields() {
		if _, ok := f.Transform.(iceberg.IdentityTransform); !ok {
			return fmt.Errorf("%w: sort order field %v uses transform %s; only identity sort fields are supported", ErrStrategy, f.SourceIDs, f.Transform)
		}
		name, ok := sc.FindColumnName(f.SourceIDs[0])
		if !ok {
			return fmt.Errorf("%w: sort order names column id %d, which the schema does not have", ErrStrategy, f.SourceIDs[0])
		}
		if !slices.ContainsFunc(sc.Fields(), func(c iceberg.NestedField) bool { return c.ID == f.SourceIDs[0] }) {
			return fmt.Errorf("%w: sort column %s is nested; only top-level columns are supported", ErrStrategy, name)
		}
	}
	return nil
}
