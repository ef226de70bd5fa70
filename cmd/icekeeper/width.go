package main

import (
	"strings"
	"unicode/utf8"
)

// lineWidth is the widest line the commands print as text: a terminal of
// 120 columns shows each on one line, where a longer one folds at an
// arbitrary column and loses its indentation.
const lineWidth = 120

// fit folds every line of text wider than lineWidth at spaces, the rest
// of it indented four more than the line, so that a list still reads as
// one. A word too wide for a line of its own (a path, most often) is
// shortened in its middle with "…" when shorten is set: the caller's
// --verbose or --json prints it whole. Otherwise it stands whole on a
// line of its own, since a path cut in two cannot be copied.
func fit(text string, shorten bool) string {
	lines := strings.Split(text, "\n")
	var b strings.Builder
	for i, l := range lines {
		if i > 0 {
			b.WriteByte('\n')
		}
		body := strings.TrimLeft(l, " ")
		b.WriteString(fitLine(l, len(l)-len(body)+4, shorten))
	}
	return b.String()
}

// fitLine folds line as fit does, its continuation lines indented hang
// spaces: under a table's last column, the column's own position.
func fitLine(line string, hang int, shorten bool) string {
	if utf8.RuneCountInString(line) <= lineWidth {
		return line
	}
	body := strings.TrimLeft(line, " ")
	indent := line[:len(line)-len(body)]
	cont := strings.Repeat(" ", min(hang, lineWidth/2))
	var b strings.Builder
	b.WriteString(indent)
	col := len(indent)
	start := true // nothing but the indent on the current line yet
	// Runs of spaces (a table's padding) are kept: only the single space
	// a line is folded at is dropped.
	for _, w := range strings.Split(body, " ") {
		if start && w == "" {
			continue // the padding at a fold
		}
		n := utf8.RuneCountInString(w)
		// A word no line would hold is shortened where it stands, if
		// enough of it shows there; otherwise it starts a line.
		tooWide := n > lineWidth-len(cont)
		if room := lineWidth - col - 1; shorten && tooWide && room >= 40 {
			w, n = middle(w, room), room
		}
		if !start && col+1+n > lineWidth {
			b.WriteString("\n" + cont)
			col, start = len(cont), true
		}
		if room := lineWidth - col; n > room && shorten && room > 10 {
			w, n = middle(w, room), room
		}
		if !start {
			b.WriteByte(' ')
			col++
		}
		b.WriteString(w)
		col += n
		start = false
	}
	return b.String()
}

// middle shortens w to width characters by replacing its middle with "…",
// keeping more of its end: a path's file name tells more than its root.
func middle(w string, width int) string {
	r := []rune(w)
	if len(r) <= width {
		return w
	}
	head := (width - 1) / 3
	tail := width - 1 - head
	return string(r[:head]) + "…" + string(r[len(r)-tail:])
}

// foldItems joins items with ", " on lines that begin with indent, folding
// between items, never inside one ("0 B" stays whole).
func foldItems(indent string, items ...string) string {
	var b strings.Builder
	b.WriteString(indent)
	col := len(indent)
	for i, it := range items {
		n := utf8.RuneCountInString(it)
		switch {
		case i == 0:
		case col+2+n > lineWidth:
			b.WriteString(",\n" + indent)
			col = len(indent)
		default:
			b.WriteString(", ")
			col += 2
		}
		b.WriteString(it)
		col += n
	}
	return b.String()
}
