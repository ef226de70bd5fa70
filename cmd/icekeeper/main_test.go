package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// cli runs icekeeper in-process with a fresh embedded home.
type cli struct {
	t    *testing.T
	home string
}

func newCLI(t *testing.T) *cli {
	home := t.TempDir()
	t.Setenv("ICEKEEPER_HOME", home)
	t.Setenv("ICEKEEPER_CONFIG", "")
	return &cli{t: t, home: home}
}

func (c *cli) run(args ...string) (code int, stdout, stderr string) {
	var out, errOut bytes.Buffer
	code = Main(context.Background(), args, &out, &errOut)
	return code, out.String(), errOut.String()
}

func (c *cli) must(args ...string) string {
	c.t.Helper()
	code, out, errOut := c.run(args...)
	if code != 0 {
		c.t.Fatalf("icekeeper %v: exit %d\nstdout: %s\nstderr: %s", args, code, out, errOut)
	}
	return out
}

func TestDemoTablesRun(t *testing.T) {
	c := newCLI(t)
	out := c.must("demo")
	if !strings.Contains(out, "created local/demo/events") {
		t.Fatalf("demo: %s", out)
	}
	if out := c.must("demo"); !strings.Contains(out, "already exists") {
		t.Fatalf("second demo: %s", out)
	}

	var tables []tableHealth
	if err := json.Unmarshal([]byte(c.must("tables", "--json")), &tables); err != nil {
		t.Fatal(err)
	}
	if len(tables) != 1 || tables[0].Table != "events" || tables[0].DataFiles < 200 || tables[0].DeleteFiles == 0 ||
		tables[0].Snapshots < 20 || tables[0].SmallFiles != tables[0].DataFiles || tables[0].MetadataBytes == 0 || tables[0].OldestAgeHours < 24*14 {
		t.Fatalf("tables = %+v", tables)
	}
	if out := c.must("tables"); !strings.Contains(out, "local/demo/events") || !strings.Contains(out, "SMALL FILES") {
		t.Fatalf("tables: %s", out)
	}
	if out := c.must("version"); !strings.Contains(out, "iceberg-go") {
		t.Fatalf("version: %s", out)
	}
}

func TestUsageErrors(t *testing.T) {
	c := newCLI(t)
	c.must("demo")
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	os.WriteFile(bad, []byte("state: sqlite://s.db\nbuckets:\n  - arn: arn:aws:s3tables:us-east-1:1:bucket/one\n    catalog: {type: sql, uri: x}\n    maintenance: {icebergCompaction: {targetFileSizeMB: 0}}\n"), 0o644)
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{}, 2, ""},
		{[]string{"frobnicate"}, 2, `unknown command "frobnicate"`},
		{[]string{"run"}, 2, "--table is required"},
		{[]string{"run", "--table", "local/demo"}, 2, "malformed table reference"},
		{[]string{"run", "--table", "nope/demo/events"}, 2, `unknown bucket "nope"`},
		{[]string{"run", "--table", "local/demo/missing"}, 2, "no such table local/demo.missing"},
		{[]string{"run", "--table", "local/demo/events", "--job", "compact"}, 2, `unknown job type "compact"`},
		{[]string{"run", "--table", "local/demo/events", "--now", "yesterday"}, 2, "--now"},
		{[]string{"run", "--bogus"}, 2, "flag provided but not defined"},
		{[]string{"tables", "--config", "/nonexistent/icekeeper.yaml"}, 2, "configuration file /nonexistent/icekeeper.yaml does not exist"},
		{[]string{"tables", "--config", bad}, 2, "buckets[0].maintenance.icebergCompaction.targetFileSizeMB: 0 is below the minimum 1"},
		{[]string{"serve", "--listen", "0.0.0.0:0"}, 2, "refusing to serve the API on a non-loopback address"},
	} {
		code, _, errOut := c.run(tc.args...)
		if code != tc.code || !strings.Contains(errOut, tc.want) {
			t.Errorf("icekeeper %v: exit %d, stderr %q; want exit %d with %q", tc.args, code, errOut, tc.code, tc.want)
		}
		if strings.Count(strings.TrimSpace(errOut), "\n") > 0 && tc.want != "" && !strings.Contains(errOut, "Usage") {
			t.Errorf("icekeeper %v: error is not one line: %q", tc.args, errOut)
		}
	}
	if code, _, _ := c.run("help"); code != 0 {
		t.Errorf("help exits %d", code)
	}
	if code, _, _ := c.run("run", "-h"); code != 0 {
		t.Errorf("run -h exits %d", code)
	}
}

// An unreachable catalog is a one-line error naming the endpoint, within
// the connect timeout, with exit code 1.
func TestUnreachableCatalog(t *testing.T) {
	c := newCLI(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	cfg := filepath.Join(t.TempDir(), "down.yaml")
	os.WriteFile(cfg, []byte(fmt.Sprintf(`state: sqlite://state.db
buckets:
  - arn: arn:aws:s3tables:us-east-1:1:bucket/down
    catalog: {type: rest, uri: "http://%s/iceberg"}
`, addr)), 0o644)
	start := time.Now()
	code, _, errOut := c.run("tables", "--config", cfg, "--connect-timeout", "5s")
	if code != 1 || !strings.Contains(errOut, addr) || strings.Count(strings.TrimSpace(errOut), "\n") != 0 {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("took %v", d)
	}
}

// The quickstart's run: all three jobs on the demo table, recorded, with
// fewer files, fewer snapshots and the crashed writer's files marked.
func TestRunAllOnDemo(t *testing.T) {
	c := newCLI(t)
	c.must("demo")
	var before []tableHealth
	json.Unmarshal([]byte(c.must("tables", "--json")), &before)
	var res map[string]struct {
		Status         string          `json:"status"`
		FailureMessage string          `json:"failureMessage"`
		Figures        json.RawMessage `json:"figures"`
	}
	if err := json.Unmarshal([]byte(c.must("run", "--table", "local/demo/events", "--json")), &res); err != nil {
		t.Fatal(err)
	}
	for _, typ := range []string{"icebergCompaction", "icebergSnapshotManagement", "icebergUnreferencedFileRemoval"} {
		if res[typ].Status != "Successful" || len(res[typ].Figures) == 0 {
			t.Fatalf("%s: %+v", typ, res[typ])
		}
	}
	var after []tableHealth
	json.Unmarshal([]byte(c.must("tables", "--json")), &after)
	if after[0].DataFiles >= before[0].DataFiles/5 || after[0].Snapshots >= before[0].Snapshots {
		t.Fatalf("before %+v, after %+v", before[0].Health, after[0].Health)
	}
	out := c.must("noncurrent", "--table", "local/demo/events")
	if strings.Count(out, "crashed-writer") != 3 {
		t.Fatalf("noncurrent: %s", out)
	}
	// A dry run changes nothing.
	c.must("run", "--table", "local/demo/events", "--dry-run")
	var again []tableHealth
	json.Unmarshal([]byte(c.must("tables", "--json")), &again)
	if again[0].DataFiles != after[0].DataFiles || again[0].Snapshots != after[0].Snapshots {
		t.Fatalf("dry run changed the table: %+v → %+v", after[0].Health, again[0].Health)
	}
}

func TestServeHealthz(t *testing.T) {
	newCLI(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int)
	var errOut bytes.Buffer
	go func() { done <- Main(ctx, []string{"serve", "--listen", addr}, io.Discard, &errOut) }()
	var resp *http.Response
	for i := 0; i < 100; i++ {
		if resp, err = http.Get("http://" + addr + "/healthz"); err == nil {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err != nil {
		t.Fatalf("healthz: %v (stderr %s)", err, errOut.String())
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(body), "ok") {
		t.Fatalf("healthz = %d %s", resp.StatusCode, body)
	}
	if resp, err := http.Get("http://" + addr + "/readyz"); err != nil || resp.StatusCode != 200 {
		t.Fatalf("readyz = %v %v", resp, err)
	}
	cancel()
	select {
	case code := <-done:
		if code != 0 {
			t.Fatalf("serve exited %d: %s", code, errOut.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("serve did not stop on cancellation")
	}
	// The daemon logs JSON.
	first, _, _ := strings.Cut(errOut.String(), "\n")
	var rec map[string]any
	if err := json.Unmarshal([]byte(first), &rec); err != nil || rec["msg"] != "icekeeper serving" {
		t.Fatalf("first log line %q is not the JSON start record: %v", first, err)
	}
}
