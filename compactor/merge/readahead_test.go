package merge

import (
	"bytes"
	"io"
	"math/rand/v2"
	"sync/atomic"
	"testing"
)

// countingReaderAt counts the reads that reach the source.
type countingReaderAt struct {
	r     io.ReaderAt
	reads atomic.Int64
}

func (c *countingReaderAt) ReadAt(p []byte, off int64) (int, error) {
	c.reads.Add(1)
	return c.r.ReadAt(p, off)
}

// Reads forward, backward, across pieces and past the end return the
// source's bytes, through buffers reused from piece to piece (the last
// one short); a forward pass reads each piece once.
func TestReadAhead(t *testing.T) {
	data := make([]byte, 10_500)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range data {
		data[i] = byte(rng.Uint32())
	}
	src := &countingReaderAt{r: bytes.NewReader(data)}
	ra := newReadAhead(src, int64(len(data)), 1000, 3)
	buf := make([]byte, 700)
	for off := 0; off < len(data); off += len(buf) {
		n, err := ra.ReadAt(buf, int64(off))
		want := min(len(buf), len(data)-off)
		if n != want || !bytes.Equal(buf[:n], data[off:off+n]) || (n < len(buf)) != (err == io.EOF) {
			t.Fatalf("read at %d: %d bytes (want %d), %v", off, n, want, err)
		}
	}
	if got := src.reads.Load(); got != 11 {
		t.Fatalf("a forward pass read %d pieces of 11", got)
	}
	if !ra.holds(10_100, 300) || ra.holds(8_900, 200) || ra.holds(0, 4) {
		t.Fatal("holds: the last piece is held, those behind it not")
	}
	// A pass whose reads each step back across the start of the piece
	// before (a header read again) still reads each piece once.
	src.reads.Store(0)
	back := newReadAhead(src, int64(len(data)), 1000, 3)
	for off := 0; off < len(data); off += len(buf) - 150 {
		if n, err := back.ReadAt(buf, int64(off)); n == 0 || !bytes.Equal(buf[:n], data[off:off+n]) {
			t.Fatalf("stepping back, read at %d: %d bytes, %v", off, n, err)
		}
	}
	back.wait()
	if got := src.reads.Load(); got != 11 {
		t.Fatalf("a pass stepping back read %d pieces of 11", got)
	}
	for _, off := range []int64{10_200, 0, 9_500, 4_321, 999, 10_000} {
		n, err := ra.ReadAt(buf, off)
		want := min(int64(len(buf)), int64(len(data))-off)
		if int64(n) != want || !bytes.Equal(buf[:n], data[off:off+int64(n)]) {
			t.Fatalf("read at %d: %d bytes, %v", off, n, err)
		}
	}
	ra.wait()
}
