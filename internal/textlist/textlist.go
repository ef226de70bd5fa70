// Package textlist writes the lists of a run's report for a terminal: the
// first few items and a count of the rest. A table with hundreds of
// expired snapshots or thousands of files made `icekeeper run` print a
// line for each, burying the counts a reader wants; the JSON figures keep
// every item for the reader who wants them all.
package textlist

import (
	"fmt"
	"strings"
)

// Short is how many items of each list a report shows unless asked for
// every one.
const Short = 5

// All asks a report for every item of its lists.
const All = -1

// Lines writes to b the first limit items (every one when limit is
// negative), each on a line of its own as "\n  " and line(item), then a
// line saying how many were left out. total is how many items the list
// had; it exceeds len(items) where the figures keep only the first items
// of a longer list, and a smaller total counts as len(items).
func Lines[T any](b *strings.Builder, limit int, items []T, total int, line func(T) string) {
	total = max(total, len(items))
	shown := len(items)
	if limit >= 0 && limit < shown {
		shown = limit
	}
	for _, it := range items[:shown] {
		b.WriteString("\n  ")
		b.WriteString(line(it))
	}
	if left := total - shown; left > 0 {
		b.WriteString("\n  ")
		switch kept := len(items); {
		case shown < kept && kept < total:
			fmt.Fprintf(b, "… and %d more (--verbose or --json for the first %d)", left, kept)
		case shown < kept:
			fmt.Fprintf(b, "… and %d more (--verbose or --json for all)", left)
		default:
			fmt.Fprintf(b, "… and %d more, not recorded (a run keeps the first %d)", left, kept)
		}
	}
}
