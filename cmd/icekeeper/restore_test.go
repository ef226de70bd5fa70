package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/icekeeper/icekeeper/internal/demo"
)

// restore and release take an object's file name, or its path relative to
// the table's location, when it names one noncurrent object; a name that
// names none, or several, is a usage error saying which.
func TestRestoreByFileName(t *testing.T) {
	c := newCLI(t)
	demoWith(t, demo.Options{Appends: 3})
	data := filepath.Join(c.home, "warehouse", "demo.db", "events", "data")
	strays, err := filepath.Glob(filepath.Join(data, "*crashed-writer*"))
	if err != nil || len(strays) != 3 {
		t.Fatalf("strays: %v %v", strays, err)
	}
	// A second object named like the third stray, in another directory.
	twin := filepath.Join(data, "elsewhere", filepath.Base(strays[2]))
	os.MkdirAll(filepath.Dir(twin), 0o755)
	os.WriteFile(twin, []byte("x"), 0o644)
	old := time.Now().Add(-10 * 24 * time.Hour)
	os.Chtimes(twin, old, old)
	if out := c.must("run", "--table", "local/demo/events", "--job", "unreferenced"); !strings.Contains(out, "marked noncurrent: 4") {
		t.Fatalf("run:\n%s", out)
	}

	// The file name names both; the path from the table's location, one.
	code, _, errOut := c.run("restore", "--table", "local/demo/events", "--path", filepath.Base(twin))
	if want := filepath.Base(twin) + " names 2 noncurrent objects of local/demo/events: "; code != 2 || !strings.Contains(errOut, want) ||
		!strings.Contains(errOut, "file://"+twin) || !strings.Contains(errOut, "file://"+strays[2]) {
		t.Errorf("an ambiguous name: exit %d, %q; want exit 2 with %q and both paths", code, errOut, want)
	}

	first := filepath.Base(strays[0])
	out := c.must("restore", "--table", "local/demo/events", "--path", first)
	if !strings.Contains(out, "restored 1 object(s)") || !strings.Contains(out, "file://"+strays[0]) {
		t.Fatalf("restore by file name:\n%s", out)
	}
	rel := "data/" + filepath.Base(strays[2])
	if out := c.must("restore", "--table", "local/demo/events", "--path", rel); !strings.Contains(out, "file://"+strays[2]) {
		t.Fatalf("restore by a path relative to the table:\n%s", out)
	}
	// Only what restore can act on counts: the name now names the twin.
	if out := c.must("restore", "--table", "local/demo/events", "--path", filepath.Base(twin)); !strings.Contains(out, "file://"+twin) {
		t.Fatalf("restore of the name left to one object:\n%s", out)
	}
	if out := c.must("noncurrent", "--table", "local/demo/events"); strings.Count(out, "never: protected") != 3 {
		t.Fatalf("noncurrent after three restores:\n%s", out)
	}
	for _, tc := range []struct{ cmd, path, want string }{
		{"restore", "crashed-writer", "crashed-writer is not a noncurrent object of local/demo/events, nor the end of one's path"},
		{"restore", first, first + " is not a noncurrent object"}, // protected now
		{"release", filepath.Base(strays[1]), "is not a protected object"},
		// Names built to reach past the table's own marks resolve to none.
		{"restore", "../events/data/" + filepath.Base(strays[1]), "is not a noncurrent object"},
		{"restore", "%2e%2e/data/" + filepath.Base(strays[1]), "is not a noncurrent object"},
		{"restore", "//" + filepath.Base(strays[1]), "is not a noncurrent object"},
		{"restore", "data//" + filepath.Base(strays[1]), "is not a noncurrent object"},
	} {
		code, _, errOut := c.run(tc.cmd, "--table", "local/demo/events", "--path", tc.path)
		if code != 2 || !strings.Contains(errOut, tc.want) {
			t.Errorf("%s --path %s: exit %d, %q; want exit 2 with %q", tc.cmd, tc.path, code, errOut, tc.want)
		}
	}
	if out := c.must("release", "--table", "local/demo/events", "--path", first); !strings.Contains(out, "released 1 object(s)") {
		t.Fatalf("release by file name:\n%s", out)
	}
}
