package planner

import (
	"errors"
	"fmt"
	"slices"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/icekeeper/icekeeper/maintenance"
)

// ErrStrategy is returned when the configured strategy cannot run.
var ErrStrategy = errors.New("compaction strategy cannot be applied")

// Strategy resolves the configured compaction strategy for a table's
// metadata: auto is sort when the table has a sort order, else binpack;
// sort, z-order and hilbert need a sort order the rewrite can apply, and fail
// without one rather than silently fall back to binpack.
func Strategy(s maintenance.Strategy, meta table.Metadata) (string, error) {
	sorted := !meta.SortOrder().IsUnsorted()
	switch s {
	case maintenance.StrategyBinpack:
		return string(s), nil
	case maintenance.StrategyAuto, "":
		if !sorted {
			return string(maintenance.StrategyBinpack), nil
		}
		s = maintenance.StrategySort
	case maintenance.StrategySort, maintenance.StrategyZOrder, maintenance.StrategyHilbert:
		if !sorted {
			return "", fmt.Errorf("%w: strategy %s needs a table sort order (its columns) and the table has none", ErrStrategy, s)
		}
	default:
		return "", fmt.Errorf("%w: unknown strategy %q", ErrStrategy, s)
	}
	if err := checkSortOrder(meta); err != nil {
		return "", err
	}
	return string(s), nil
}

// checkSortOrder tells whether the rewrite can apply the table's sort
// order: identity fields on top-level columns.
func checkSortOrder(meta table.Metadata) error {
	sc := meta.CurrentSchema()
	for _, f := range meta.SortOrder().Fields() {
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
