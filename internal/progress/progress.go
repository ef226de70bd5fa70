// Package progress draws a one-line progress bar for long one-shot work,
// only when the output is a terminal, so logs and pipes stay clean.
package progress

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
)

// IsTerminal reports whether w is a character device (a terminal).
func IsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// Bar returns a function reporting done out of total under label, and a
// function ending the line. Both do nothing when w is not a terminal.
func Bar(w io.Writer, label string) (update func(done, total int), finish func()) {
	if !IsTerminal(w) {
		return func(int, int) {}, func() {}
	}
	var mu sync.Mutex
	drawn := false
	update = func(done, total int) {
		mu.Lock()
		defer mu.Unlock()
		if total <= 0 {
			return
		}
		const width = 30
		n := done * width / total
		fmt.Fprintf(w, "\r%s [%s%s] %d/%d", label, strings.Repeat("#", n), strings.Repeat(" ", width-n), done, total)
		drawn = true
	}
	finish = func() {
		mu.Lock()
		defer mu.Unlock()
		if drawn {
			fmt.Fprintln(w)
		}
	}
	return update, finish
}
