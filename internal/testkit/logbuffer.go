package testkit

import (
	"bytes"
	"strings"
	"sync"
)

// LogBuffer collects what a logger writes while a test reads it: a
// daemon's goroutines write, the test polls.
type LogBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *LogBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String is everything written so far.
func (b *LogBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// Lines is what was written so far, a line each.
func (b *LogBuffer) Lines() []string {
	return strings.Split(strings.TrimSpace(b.String()), "\n")
}
