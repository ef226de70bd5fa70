package planner

import (
	"errors"
	"strings"
	"testing"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/icekeeper/icekeeper/maintenance"
)

func TestStrategy(t *testing.T) {
	unsorted := newMeta(t, "2")
	sorted := newMeta(t, "2", sortBy(1, iceberg.IdentityTransform{}))
	bucketed := newMeta(t, "2", sortBy(1, iceberg.BucketTransform{NumBuckets: 4}))
	nested := newMeta(t, "2", sortBy(4, iceberg.IdentityTransform{}))
	for _, tc := range []struct {
		name    string
		meta    table.Metadata
		in      maintenance.Strategy
		want    string
		wantErr string // a substring of the error; "" for none
	}{
		{"auto on an unsorted table is binpack", unsorted, maintenance.StrategyAuto, "binpack", ""},
		{"unset is auto", unsorted, "", "binpack", ""},
		{"binpack on an unsorted table", unsorted, maintenance.StrategyBinpack, "binpack", ""},
		{"sort needs a sort order", unsorted, maintenance.StrategySort, "", "strategy sort needs a table sort order"},
		{"z-order needs a sort order", unsorted, maintenance.StrategyZOrder, "", "strategy z-order needs a table sort order"},
		{"unknown strategy", unsorted, "shuffle", "", `unknown strategy "shuffle"`},
		{"auto on a sorted table is sort", sorted, maintenance.StrategyAuto, "sort", ""},
		{"sort on a sorted table", sorted, maintenance.StrategySort, "sort", ""},
		{"z-order on a sorted table", sorted, maintenance.StrategyZOrder, "z-order", ""},
		{"hilbert needs a sort order", unsorted, maintenance.StrategyHilbert, "", "strategy hilbert needs a table sort order"},
		{"hilbert on a sorted table", sorted, maintenance.StrategyHilbert, "hilbert", ""},
		{"binpack ignores the sort order", bucketed, maintenance.StrategyBinpack, "binpack", ""},
		{"a transformed sort field cannot be applied", bucketed, maintenance.StrategyAuto, "", "only identity sort fields are supported"},
		{"a nested sort column cannot be applied", nested, maintenance.StrategySort, "", "sort column loc.city is nested"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Strategy(tc.in, tc.meta)
			if tc.wantErr != "" {
				if !errors.Is(err, ErrStrategy) || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want ErrStrategy with %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("got %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}
