package merge

import (
	"bytes"
	"io"
	"math/rand/v2"
	"os"
	"testing"
)

// acknowledging is a writer whose store acknowledges, or not, what it
// took.
type acknowledging struct {
	io.Writer
	ack bool
}

func (a acknowledging) Acknowledged() bool { return a.ack }

// An output's bytes read from its sentCopy are the output's: what was
// written from the copy, the ranges the storage copied from the store,
// across every boundary between them; and the copy leaves no file behind.
func TestSentCopyReadsAsTheOutput(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	rng := rand.New(rand.NewPCG(5, 6))
	out := make([]byte, 3<<20)
	for i := range out {
		out[i] = byte(rng.Uint32())
	}
	// A corrupted store copy shows in the reads of its ranges only.
	store := bytes.Clone(out)
	c := &countingWriter{w: acknowledging{Writer: io.Discard, ack: true}}
	c.sent = newSentCopy(c.w)
	if c.sent == nil || c.sent.err != nil {
		t.Fatalf("no copy kept: %+v", c.sent)
	}
	stored := []byteRange{{4, 1 << 20}, {1<<20 + 1, 2 << 20}, {2<<20 + 100, 2<<20 + 200}}
	at := int64(0)
	for _, s := range stored {
		if _, err := c.Write(out[at:s.start]); err != nil {
			t.Fatal(err)
		}
		c.sent.copied(c.n, s.end-s.start)
		c.n += s.end - s.start
		at = s.end
	}
	if _, err := c.Write(out[at:]); err != nil || c.n != int64(len(out)) {
		t.Fatalf("wrote %d of %d bytes: %v", c.n, len(out), err)
	}
	r := &sentReader{sent: c.sent, store: bytes.NewReader(store)}
	check := func(what string) {
		t.Helper()
		for range 2000 {
			off := rng.Int64N(int64(len(out)))
			n := 1 + rng.Int64N(min(int64(len(out))-off, 300<<10))
			if rng.IntN(4) == 0 { // around a boundary
				s := stored[rng.IntN(len(stored))]
				off = max(0, []int64{s.start, s.end}[rng.IntN(2)]-rng.Int64N(8))
				n = min(1+rng.Int64N(16), int64(len(out))-off)
			}
			got := make([]byte, n)
			if k, err := r.ReadAt(got, off); err != nil || int64(k) != n || !bytes.Equal(got, out[off:off+n]) {
				t.Fatalf("%s: %d bytes at %d: read %d, equal %v, %v", what, n, off, k, bytes.Equal(got, out[off:off+n]), err)
			}
		}
	}
	check("read as written")
	if k, err := r.ReadAt(make([]byte, 10), int64(len(out))-4); k != 4 || err != io.EOF {
		t.Fatalf("a read past the end: %d bytes, %v", k, err)
	}
	store[stored[1].start+1]++
	got := make([]byte, 8)
	if _, err := r.ReadAt(got, stored[1].start); err != nil || bytes.Equal(got, out[stored[1].start:stored[1].start+8]) {
		t.Fatalf("a range the storage copied is not read from the store: %v", err)
	}
	c.sent.close()
	if left, _ := os.ReadDir(os.Getenv("TMPDIR")); len(left) > 0 {
		t.Fatalf("%d files left behind", len(left))
	}
	if newSentCopy(io.Discard) != nil {
		t.Fatal("a copy kept for a writer that acknowledges nothing")
	}
	// Where no temporary file can be made, nothing is kept, and writing
	// goes on (the output is then read back).
	t.Setenv("TMPDIR", os.Getenv("TMPDIR")+"/gone")
	c = &countingWriter{w: acknowledging{Writer: io.Discard, ack: true}}
	c.sent = newSentCopy(c.w)
	if c.sent == nil || c.sent.err == nil {
		t.Fatalf("a copy kept without a temporary directory: %+v", c.sent)
	}
	if n, err := c.Write(out[:100]); n != 100 || err != nil {
		t.Fatalf("writing without a copy: %d, %v", n, err)
	}
	c.sent.close()
}
