package progress

import (
	"bytes"
	"log/slog"
	"slices"
	"strings"
	"testing"

	"github.com/icekeeper/icekeeper/internal/testkit/screen"
)

// A log line written while a bar is drawn gets a line of its own: the
// bar's line is cleared before it and the bar drawn again after it, so
// on the screen neither runs into the other.
func TestLogLinesUnderTheBar(t *testing.T) {
	var out bytes.Buffer
	term := NewTerminal(&out, true)
	logger := slog.New(slog.NewTextHandler(term, &slog.HandlerOptions{
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey {
				return slog.Attr{}
			}
			return a
		}}))
	update, finish := term.Bar("job")
	update(1, 4)
	logger.Info("planned", "groups", 4)
	update(4, 4)
	logger.Info("committed")
	finish()
	logger.Info("after")

	got := screen.Lines(out.String())
	want := []string{
		`level=INFO msg=planned groups=4`,
		`level=INFO msg=committed`,
		`job [##############################] 4/4`,
		`level=INFO msg=after`,
	}
	if !slices.Equal(got, want) {
		t.Fatalf("screen:\n%s\nwant:\n%s\nwritten: %q", strings.Join(got, "\n"), strings.Join(want, "\n"), out.String())
	}
}

// A count stands in for the bar while the total is unknown; updates
// faster than the redraw interval are drawn only as the bar ends.
func TestCounterAndThrottle(t *testing.T) {
	var out bytes.Buffer
	term := NewTerminal(&out, true)
	update, finish := term.Bar("listing")
	for i := 1; i <= 1000; i++ {
		update(i, 0)
	}
	finish()
	if got := screen.Lines(out.String()); !slices.Equal(got, []string{"listing 1000…"}) {
		t.Fatalf("screen %q", got)
	}
	if n := strings.Count(out.String(), "\r"); n > 10 {
		t.Errorf("1000 quick updates drew %d times", n)
	}
}

// Not a terminal: no bar, and lines pass through untouched.
func TestNotATerminal(t *testing.T) {
	var out bytes.Buffer
	term := For(&out)
	update, finish := term.Bar("job")
	update(1, 2)
	term.Write([]byte("line\n"))
	finish()
	if out.String() != "line\n" {
		t.Fatalf("wrote %q", out.String())
	}
	if For(term) != term {
		t.Error("For wrapped a Terminal again")
	}
}
