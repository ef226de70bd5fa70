package objects

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	icebergio "github.com/apache/iceberg-go/io"
)

// countingIO counts the opens that reach the IO under a Memo.
type countingIO struct {
	icebergio.LocalFS
	opens map[string]int
}

func (c *countingIO) Open(name string) (icebergio.File, error) {
	c.opens[name]++
	return c.LocalFS.Open(name)
}

// A file Memo keeps is opened once below it and read whole every time
// after; its size is the stored file's; the others pass through.
func TestMemo(t *testing.T) {
	dir := t.TempDir()
	keep, other := filepath.Join(dir, "m.avro"), filepath.Join(dir, "d.parquet")
	for _, p := range []string{keep, other} {
		if err := os.WriteFile(p, []byte("contents of "+filepath.Base(p)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	below := &countingIO{opens: map[string]int{}}
	m := Memo(below, func(name string) bool { return strings.HasSuffix(name, ".avro") }, 1<<20)
	for range 3 {
		for _, p := range []string{keep, other} {
			f, err := m.Open(p)
			if err != nil {
				t.Fatal(err)
			}
			b, err := io.ReadAll(f)
			st, serr := f.Stat()
			f.Close()
			if err != nil || serr != nil || string(b) != "contents of "+filepath.Base(p) || st.Size() != int64(len(b)) {
				t.Fatalf("%s: %q (size %v), %v %v", p, b, st, err, serr)
			}
		}
	}
	if below.opens[keep] != 1 || below.opens[other] != 3 {
		t.Errorf("opens below the memo: %v; want the kept file once, the other every time", below.opens)
	}
	if _, err := m.Open(filepath.Join(dir, "missing.avro")); err == nil {
		t.Error("a missing file opened")
	}
}

// Past its budget a Memo serves files without keeping them: the files
// kept first stay kept, the one that would not fit is opened every time.
func TestMemoBudget(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.avro"), filepath.Join(dir, "b.avro")
	for _, p := range []string{a, b} {
		if err := os.WriteFile(p, make([]byte, 600), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	below := &countingIO{opens: map[string]int{}}
	m := Memo(below, func(string) bool { return true }, 1000)
	for range 3 {
		for _, p := range []string{a, b} {
			f, err := m.Open(p)
			if err != nil {
				t.Fatal(err)
			}
			got, err := io.ReadAll(f)
			f.Close()
			if err != nil || len(got) != 600 {
				t.Fatalf("%s: %d bytes, %v", p, len(got), err)
			}
		}
	}
	if below.opens[a] != 1 || below.opens[b] != 3 {
		t.Errorf("opens below a memo of 1000 bytes: %v; want a.avro once, b.avro every time", below.opens)
	}
}
