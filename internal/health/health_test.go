package health

import "testing"

func TestScore(t *testing.T) {
	for _, tc := range []struct {
		h    Health
		want Score
	}{
		{Health{}, Score{100, 40, 40, 20}},
		{Health{Files: Files{DataFiles: 10}}, Score{100, 40, 40, 20}},
		{Health{Files: Files{DataFiles: 10, SmallFiles: 10, MergeableSmallFiles: 10}}, Score{60, 0, 40, 20}},
		{Health{Files: Files{DataFiles: 10, SmallFiles: 10}}, Score{100, 40, 40, 20}}, // one per partition: nothing to merge
		{Health{Files: Files{DataFiles: 10, SmallFiles: 5, MergeableSmallFiles: 5, EqualityDeletes: 5, PositionDeletes: 20}}, Score{40, 20, 20, 0}},
	} {
		if got := scoreOf(tc.h); got != tc.want {
			t.Errorf("scoreOf(%+v) = %+v, want %+v", tc.h, got, tc.want)
		}
	}
}
