package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// `icekeeper erasure` shows the proof of the runs: on the demo table,
// whose deletes are due eight days on, a run rewrites and expires, and the
// proof says what went and when; --json gives it whole. A configuration
// that enables erasure without a deadline, or with a bad one, is refused
// naming the key.
func TestErasureCommand(t *testing.T) {
	c := newCLI(t)
	c.must("demo")
	cfg := filepath.Join(c.home, "icekeeper.yaml")
	for _, bad := range []struct{ maintenance, want string }{
		{`{icebergErasure: {status: enabled}}`, "deadlineDays"},
		{`{icebergErasure: {status: enabled, deadlineDays: 0}}`, "deadlineDays"},
		{`{icebergErasure: {status: enabled, deadlineDayz: 7}}`, "deadlineDays"},
	} {
		writeHomeConfig(t, cfg, c.home, "127.0.0.1:0", bad.maintenance, "{}")
		code, _, errOut := c.run("run", "--config", cfg, "--table", "local/demo/events", "--job", "erasure")
		if code != 2 || !strings.Contains(errOut, bad.want) {
			t.Errorf("%s: exit %d, %s", bad.maintenance, code, errOut)
		}
	}

	writeHomeConfig(t, cfg, c.home, "127.0.0.1:0", `{icebergErasure: {status: enabled, deadlineDays: 7}}`, "{}")
	if out := c.must("erasure", "--config", cfg, "--table", "local/demo/events"); !strings.Contains(out, "no erasure run recorded") {
		t.Fatalf("before any run: %s", out)
	}
	later := time.Now().Add(8 * 24 * time.Hour).UTC().Format(time.RFC3339)
	run := c.must("run", "--config", cfg, "--table", "local/demo/events", "--job", "erasure", "--now", later, "--allow-clock-shift")
	if !strings.Contains(run, "icebergErasure: Successful") {
		t.Fatalf("run:\n%s", run)
	}
	out := c.must("erasure", "--config", cfg, "--table", "local/demo/events")
	if !strings.Contains(out, "rewrote") || !strings.Contains(out, "expired snapshot") || !strings.Contains(out, "checked gone from storage") {
		t.Fatalf("proof:\n%s", out)
	}
	var runs []struct {
		Status string `json:"status"`
		Proof  struct {
			Rewritten []struct {
				DataFiles []string `json:"dataFiles"`
			} `json:"rewritten"`
			Gone []string `json:"gone"`
		} `json:"proof"`
	}
	if err := json.Unmarshal([]byte(c.must("erasure", "--config", cfg, "--table", "local/demo/events", "--json")), &runs); err != nil {
		t.Fatal(err)
	}
	if len(runs) != 1 || runs[0].Status != "Successful" || len(runs[0].Proof.Rewritten) == 0 || len(runs[0].Proof.Gone) == 0 {
		t.Fatalf("--json: %+v", runs)
	}
	if code, _, errOut := c.run("erasure", "--config", cfg, "--table", "local/demo/events", "--runs", "0"); code != 2 || !strings.Contains(errOut, "--runs") {
		t.Errorf("--runs 0: exit %d, %s", code, errOut)
	}
}
