package textlist

import (
	"strings"
	"testing"
)

func TestLines(t *testing.T) {
	items := []int{1, 2, 3, 4, 5, 6, 7}
	line := func(i int) string { return "item " + string(rune('0'+i)) }
	for _, tc := range []struct {
		name         string
		limit, total int
		want         string
	}{
		{"short", Short, 0, "\n  item 1\n  item 2\n  item 3\n  item 4\n  item 5\n  … and 2 more (--verbose or --json for all)"},
		{"all", All, 7, "\n  item 1\n  item 2\n  item 3\n  item 4\n  item 5\n  item 6\n  item 7"},
		{"fits", 10, 7, "\n  item 1\n  item 2\n  item 3\n  item 4\n  item 5\n  item 6\n  item 7"},
		{"none", 0, 7, "\n  … and 7 more (--verbose or --json for all)"},
		{"kept fewer, short", 2, 100, "\n  item 1\n  item 2\n  … and 98 more (--verbose or --json for the first 7)"},
		{"kept fewer, all", All, 100, "\n  item 1\n  item 2\n  item 3\n  item 4\n  item 5\n  item 6\n  item 7\n  … and 93 more, not recorded (a run keeps the first 7)"},
	} {
		var b strings.Builder
		Lines(&b, tc.limit, items, tc.total, line)
		if b.String() != tc.want {
			t.Errorf("%s:\n got %q\nwant %q", tc.name, b.String(), tc.want)
		}
	}
	var b strings.Builder
	Lines(&b, Short, []string(nil), 0, func(s string) string { return s })
	if b.Len() != 0 {
		t.Errorf("an empty list wrote %q", b.String())
	}
}
