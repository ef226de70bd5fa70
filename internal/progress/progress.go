// Package progress draws a one-line progress bar for long one-shot work,
// only when the output is a terminal, so logs and pipes stay clean.
//
// A bar and log lines share stderr. A log line written while a bar is
// drawn would start where the bar ends, and the next update would
// overwrite the line's start; so stderr is a Terminal, which clears the
// bar's line before each log line and draws the bar again after it.
package progress

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"
)

// IsTerminal reports whether w is a character device (a terminal), or a
// writer that says it is one with an IsTerminal method (tests' fakes).
func IsTerminal(w io.Writer) bool {
	if t, ok := w.(interface{ IsTerminal() bool }); ok {
		return t.IsTerminal()
	}
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// clearLine returns the cursor to the line's start and erases the line.
const clearLine = "\r\x1b[K"

// redrawEvery bounds how often an update draws: a job reports every
// object it lists, and a terminal that draws a million lines slows the
// listing down.
const redrawEvery = 50 * time.Millisecond

// Terminal is a writer shared by one progress bar at a time and whole
// lines of text (log records), which are written under the bar.
type Terminal struct {
	w   io.Writer
	tty bool

	mu sync.Mutex
	// bar is the bar on the screen, "" when none is; next is its latest
	// state, drawn when the throttle allows, a line is written or the bar
	// ends.
	bar, next string
}

// NewTerminal returns a Terminal writing to w, drawing bars only if tty
// (IsTerminal(w) for a real one).
func NewTerminal(w io.Writer, tty bool) *Terminal { return &Terminal{w: w, tty: tty} }

// For returns w as a Terminal: w itself when it is one, else a Terminal
// over w that draws bars if w is a terminal.
func For(w io.Writer) *Terminal {
	if t, ok := w.(*Terminal); ok {
		return t
	}
	return NewTerminal(w, IsTerminal(w))
}

// Write writes p, which should be whole lines, below any bar: the bar's
// line is cleared first and the bar drawn again after p.
func (t *Terminal) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.bar == "" {
		return t.w.Write(p)
	}
	if _, err := io.WriteString(t.w, clearLine); err != nil {
		return 0, err
	}
	n, err := t.w.Write(p)
	if err != nil {
		return n, err
	}
	return n, t.draw()
}

// draw puts the bar's latest state on the screen; the caller holds mu.
func (t *Terminal) draw() error {
	t.bar = t.next
	_, err := io.WriteString(t.w, clearLine+t.bar)
	return err
}

// Bar returns a function reporting done out of total under label (a
// count alone when total is 0 or less: the total is not known yet), and
// a function ending the line. Both do nothing when the Terminal is not a
// terminal.
func (t *Terminal) Bar(label string) (update func(done, total int), finish func()) {
	if !t.tty {
		return func(int, int) {}, func() {}
	}
	var last time.Time
	update = func(done, total int) {
		t.mu.Lock()
		defer t.mu.Unlock()
		if total <= 0 {
			t.next = fmt.Sprintf("%s %d…", label, done)
		} else {
			const width = 30
			n := max(0, min(done, total)) * width / total
			t.next = fmt.Sprintf("%s [%s%s] %d/%d", label, strings.Repeat("#", n), strings.Repeat(" ", width-n), done, total)
		}
		// The first state and a finished phase are always drawn.
		if now := time.Now(); t.bar == "" || done == total || now.Sub(last) >= redrawEvery {
			last = now
			t.draw()
		}
	}
	finish = func() {
		t.mu.Lock()
		defer t.mu.Unlock()
		if t.bar == "" {
			return
		}
		if t.next != t.bar {
			t.draw()
		}
		io.WriteString(t.w, "\n")
		t.bar, t.next = "", ""
	}
	return update, finish
}

// Bar is For(w).Bar(label).
func Bar(w io.Writer, label string) (update func(done, total int), finish func()) {
	return For(w).Bar(label)
}
