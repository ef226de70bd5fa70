// Package screen renders what a program wrote to a terminal as the lines
// a person would see, for tests of output that moves the cursor: a
// carriage return goes back to the line's start and later text
// overwrites it, and ESC [ K erases from the cursor to the line's end.
package screen

import "strings"

// Lines are the screen's lines after out was written to it.
func Lines(out string) []string {
	var lines []string
	var line []rune
	col := 0
	for i := 0; i < len(out); {
		switch {
		case strings.HasPrefix(out[i:], "\x1b[K"):
			line = line[:col]
			i += len("\x1b[K")
			continue
		case out[i] == '\r':
			col = 0
		case out[i] == '\n':
			lines = append(lines, string(line))
			line, col = nil, 0
		default:
			r := []rune(out[i:])[0]
			if col < len(line) {
				line[col] = r
			} else {
				line = append(line, r)
			}
			col++
			i += len(string(r))
			continue
		}
		i++
	}
	if len(line) > 0 {
		lines = append(lines, string(line))
	}
	return lines
}
