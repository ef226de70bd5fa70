package main

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
)

// verify on the demo table after a compaction: "verified", exit 0; the
// written file replaced in storage by a file the commit replaced (valid
// Parquet, the same schema): exit 1, naming it; bad input: exit 2.
func TestVerify(t *testing.T) {
	c := newCLI(t)
	c.must("demo")
	c.must("run", "--table", "local/demo/events", "--job", "compaction")
	out := c.must("verify", "--table", "local/demo/events")
	if !strings.Contains(out, "verified: the commit kept exactly the rows it touched") || !strings.Contains(out, "claimed") {
		t.Fatalf("verify after compaction:\n%s", out)
	}
	var change struct {
		Snapshot          int64
		Replaced, Written []string
	}
	if err := json.Unmarshal([]byte(c.must("verify", "--table", "local/demo/events", "--json")), &change); err != nil {
		t.Fatal(err)
	}
	if len(change.Written) == 0 || len(change.Replaced) == 0 {
		t.Fatalf("verify --json: %+v", change)
	}
	body, err := os.ReadFile(strings.TrimPrefix(change.Replaced[0], "file://"))
	if err != nil {
		t.Fatal(err)
	}
	victim := change.Written[len(change.Written)-1]
	if err := os.WriteFile(strings.TrimPrefix(victim, "file://"), body, 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, _ := c.run("verify", "--table", "local/demo/events")
	if code != exitFailed || !strings.Contains(out, "differs: "+victim) || strings.Contains(out, "verified:") {
		t.Fatalf("verify over a replaced output: exit %d\n%s", code, out)
	}
	t.Log(out)

	for _, args := range [][]string{
		{"verify", "--table", "local/demo/events", "--snapshot", "abc"},
		{"verify", "--table", "local/demo/events", "--snapshot", "1"},
		{"verify", "--table", "local/demo/nosuch"},
	} {
		if code, _, errOut := c.run(args...); code != exitUsage {
			t.Errorf("%v: exit %d, want %d: %s", args, code, exitUsage, errOut)
		}
	}
}
