package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/icekeeper/icekeeper/internal/testkit/servers"
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
		tables[0].EqualityDeletes == 0 || tables[0].PositionDeletes == 0 || tables[0].Score.Total >= 60 ||
		tables[0].Snapshots < 20 || tables[0].SmallFiles != tables[0].DataFiles || tables[0].MetadataBytes == 0 || tables[0].OldestAgeHours < 24*14 {
		t.Fatalf("tables = %+v", tables)
	}
	if out := c.must("tables"); !strings.Contains(out, "local/demo/events") || !strings.Contains(out, "SMALL FILES") ||
		!strings.Contains(out, fmt.Sprintf("%.0f/100", tables[0].Score.Total)) {
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
		{[]string{"run", "--table", "local/demo/evnets"}, 2, "no such table local/demo.evnets (did you mean local/demo/events?)"},
		{[]string{"run", "--table", "local/dmeo/events", "--dry-run"}, 2, "(did you mean local/demo/events?)"},
		{[]string{"noncurrent", "--table", "locla/demo/events"}, 2, `unknown bucket "locla" (configured: local) (did you mean local?)`},
		{[]string{"run", "--table", "local/demo/events", "--job", "compact"}, 2, `unknown job type "compact" (did you mean compaction?)`},
		{[]string{"run", "--table", "local/demo/events", "--job", "icebergCompation"}, 2, "(did you mean icebergCompaction?)"},
		{[]string{"run", "--table", "local/demo/events", "--now", "yesterday", "--dry-run"}, 2, "--now"},
		{[]string{"run", "--table", "local/demo/events", "--now", "2030-01-01T00:00:00Z"}, 2, "--now previews a later day and needs --dry-run"},
		{[]string{"run", "--table", "local/demo/events", "--now", "0001-01-01T00:00:00Z", "--dry-run"}, 2, "--now: 0001-01-01T00:00:00Z is before 1970-01-01T00:00:00Z"},
		{[]string{"run", "--table", "local/demo/events", "--now", "1969-12-31T23:59:59Z", "--dry-run"}, 2, "--now: 1969-12-31T23:59:59Z is before 1970"},
		{[]string{"run", "--table", "local/demo/events", "--now", "", "--dry-run"}, 2, `--now: "" is not an RFC 3339 time`},
		{[]string{"run", "--table", "local/demo/events", "--rewrite-bytes", "-1", "--dry-run"}, 2, "--rewrite-bytes: -1 is below 0"},
		{[]string{"run", "--bogus"}, 2, "unknown flag --bogus; icekeeper run -h lists the flags"},
		{[]string{"run", "--tabel", "local/demo/events"}, 2, "unknown flag --tabel (did you mean --table?)"},
		{[]string{"tabels"}, 2, `unknown command "tabels" (did you mean tables?)`},
		{[]string{"tables", "extra"}, 2, `unexpected argument "extra"`},
		{[]string{"tables", "--config", "/nonexistent/icekeeper.yaml"}, 2, "configuration file /nonexistent/icekeeper.yaml does not exist"},
		{[]string{"tables", "--config", c.home}, 2, "is a directory"},
		{[]string{"tables", "--connect-timeout", "-5s"}, 2, "--connect-timeout: -5s must be positive"},
		{[]string{"serve", "--lease-ttl", "-1s"}, 2, "--lease-ttl: -1s must be positive"},
		{[]string{"serve", "--parallelism", "0"}, 2, "--parallelism: 0 is below the minimum 1"},
		{[]string{"serve", "--fan-out-groups", "-1"}, 2, "--fan-out-groups: -1 is below the minimum 0"},
		{[]string{"serve", "--shutdown-grace", "-1s"}, 2, "--shutdown-grace: -1s must not be negative"},
		{[]string{"status", "--endpoint", "notaurl", "--table", "local/demo/events"}, 2, `--endpoint: "notaurl" is not an http:// or https:// URL`},
		{[]string{"restore", "--table", "local/demo/events"}, 2, "give exactly one of --path or --all"},
		{[]string{"release", "--table", "local/demo/events", "--path", "file:///nope"}, 2, "file:///nope is not a protected object"},
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
		if tc.want != "" && strings.Count(errOut, tc.want) != 1 {
			t.Errorf("icekeeper %v: error printed %d times: %q", tc.args, strings.Count(errOut, tc.want), errOut)
		}
	}
	if code, out, _ := c.run("--version"); code != 0 || !strings.HasPrefix(out, "icekeeper ") {
		t.Errorf("--version: exit %d, %q", code, out)
	}
	if code, out, _ := c.run("-v"); code != 0 || !strings.HasPrefix(out, "icekeeper ") {
		t.Errorf("-v: exit %d, %q", code, out)
	}
	// /dev/urandom is read up to the bound, not until the process dies.
	if _, err := os.Stat("/dev/urandom"); err == nil {
		if code, _, errOut := c.run("tables", "--config", "/dev/urandom"); code != 2 || !strings.Contains(errOut, "/dev/urandom") {
			t.Errorf("--config /dev/urandom: exit %d, %q", code, errOut)
		}
	}
	// Help is printed once; a bad flag is the one error line, no usage.
	if _, _, errOut := c.run("run", "-h"); strings.Count(errOut, "Usage: icekeeper run") != 1 {
		t.Errorf("run -h printed its usage %d times", strings.Count(errOut, "Usage:"))
	}
	// --job lists every type's short name, from the type table.
	if _, _, errOut := c.run("run", "-h"); !strings.Contains(errOut, "records, compaction, snapshots, unreferenced, erasure, statistics (or their names") {
		t.Errorf("run -h does not list every --job value:\n%s", errOut)
	}
	if _, _, errOut := c.run("tables", "--tabel", "x"); strings.Contains(errOut, "Usage") || strings.Count(strings.TrimSpace(errOut), "\n") != 0 {
		t.Errorf("a bad flag printed more than its error: %q", errOut)
	}
	// restore's help names its flag's argument plainly.
	if _, _, errOut := c.run("restore", "-h"); strings.Contains(errOut, "-path noncurrent") || !strings.Contains(errOut, "-path string") {
		t.Errorf("restore -h: %s", errOut)
	}
	if code, _, _ := c.run("help"); code != 0 {
		t.Errorf("help exits %d", code)
	}
	if code, _, _ := c.run("run", "-h"); code != 0 {
		t.Errorf("run -h exits %d", code)
	}
}

// --rewrite-bytes caps a dry run's rewrite as a budget would, and the
// plan says what it defers.
func TestRunRewriteBytes(t *testing.T) {
	c := newCLI(t)
	c.must("demo")
	out := c.must("run", "--table", "local/demo/events", "--job", "compaction", "--dry-run", "--rewrite-bytes", "0")
	if !strings.Contains(out, "0 groups would be rewritten") || !strings.Contains(out, "deferred to the next run by the rewrite budget of 0 bytes: rewrite budget spent") {
		t.Fatalf("dry run with nothing to spend:\n%s", out)
	}
	if out := c.must("run", "--table", "local/demo/events", "--job", "compaction", "--dry-run"); strings.Contains(out, "rewrite budget") {
		t.Fatalf("dry run without a cap mentions a budget:\n%s", out)
	}
}

// A one-shot run spends the configured rewrite budget: it is charged to
// the ledger the daemon's runs share, and the next run finds the hour's
// bytes spent and defers its work; --rewrite-bytes replaces the ledger's
// allowance for one run.
func TestRunSpendsTheBudget(t *testing.T) {
	c := newCLI(t)
	c.must("demo")
	cfg := filepath.Join(c.home, "budget.yaml")
	os.WriteFile(cfg, []byte(`state: sqlite://state.db
budget: {rewriteBytesPerHour: 1000, tableSharePercent: 100}
buckets:
  - arn: arn:aws:s3tables:local:000000000000:bucket/local
    catalog: {type: sql, uri: "file:catalog.db", sql.driver: sqlite, sql.dialect: sqlite, warehouse: "file://./warehouse"}
`), 0o644)
	type figures struct {
		ChargedBytes           int64 `json:"chargedBytes"`
		GroupsCommitted        int   `json:"groupsCommitted"`
		GroupsDeferredByBudget int   `json:"groupsDeferredByBudget"`
		RewriteBudget          *int64
	}
	run := func(args ...string) figures {
		t.Helper()
		out := c.must(append([]string{"run", "--table", "local/demo/events", "--job", "compaction", "--config", cfg, "--json"}, args...)...)
		var got struct {
			Compaction struct{ Figures figures } `json:"icebergCompaction"`
		}
		if err := json.Unmarshal([]byte(out), &got); err != nil {
			t.Fatal(err)
		}
		return got.Compaction.Figures
	}
	if f := run(); f.RewriteBudget == nil || *f.RewriteBudget != 1000 || f.GroupsCommitted != 1 || f.ChargedBytes <= 1000 {
		t.Fatalf("first run: cap %v, %d groups committed, %d bytes charged; want a cap of 1000 overdrawn by one group", f.RewriteBudget, f.GroupsCommitted, f.ChargedBytes)
	}
	if f := run("--dry-run"); f.RewriteBudget == nil || *f.RewriteBudget != 0 || f.GroupsDeferredByBudget == 0 {
		t.Fatalf("after the charge: cap %v, %d groups deferred; want the hour's budget spent", f.RewriteBudget, f.GroupsDeferredByBudget)
	}
	if f := run("--dry-run", "--rewrite-bytes", "1000000000"); f.RewriteBudget == nil || *f.RewriteBudget != 1000000000 || f.GroupsDeferredByBudget != 0 {
		t.Fatalf("--rewrite-bytes: cap %v, %d deferred", f.RewriteBudget, f.GroupsDeferredByBudget)
	}
}

// Before `demo`, the embedded default is empty: commands say how to fill
// it, and create nothing.
func TestEmptyEmbeddedDefault(t *testing.T) {
	c := newCLI(t)
	home := filepath.Join(c.home, "icekeeper-data")
	t.Setenv("ICEKEEPER_HOME", home)
	for _, args := range [][]string{
		{"tables"},
		{"run", "--table", "local/demo/events"},
		{"noncurrent", "--table", "local/demo/events"},
		{"restore", "--table", "local/demo/events", "--all"},
	} {
		code, _, errOut := c.run(args...)
		if code != 2 || !strings.Contains(errOut, "run `icekeeper demo`") {
			t.Errorf("icekeeper %v: exit %d, %q", args, code, errOut)
		}
	}
	if _, err := os.Stat(home); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a read-only command created %s: %v", home, err)
	}
}

// Relative paths in a configuration file, the catalog's included, are
// relative to the file wherever icekeeper runs (mode=rwc: the catalog is
// created, as a configured one otherwise must exist).
func TestConfigRelativeToFile(t *testing.T) {
	c := newCLI(t)
	dir := filepath.Join(c.home, "conf")
	os.MkdirAll(dir, 0o755)
	os.WriteFile(filepath.Join(dir, "ik.yaml"), []byte(`state: sqlite://state.db
buckets:
  - arn: arn:aws:s3tables:us-east-1:1:bucket/rel
    catalog: {type: sql, uri: "file:catalog.db?mode=rwc", sql.driver: sqlite, sql.dialect: sqlite, warehouse: "file://./wh"}
`), 0o644)
	t.Chdir(t.TempDir())
	if out := c.must("tables", "--config", filepath.Join("..", filepath.Base(c.home), "conf", "ik.yaml")); !strings.Contains(out, "(no tables)") {
		t.Fatalf("tables: %s", out)
	}
	for _, f := range []string{"catalog.db", "state.db"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("%s not next to the configuration: %v", f, err)
		}
	}
}

// A credential in a catalog URI never reaches the output of a failing
// command.
func TestSecretsRedacted(t *testing.T) {
	c := newCLI(t)
	addr := servers.RefusedAddr
	const secret = "tok3n-s3cr3t-value"
	cfg := filepath.Join(t.TempDir(), "secret.yaml")
	os.WriteFile(cfg, []byte(fmt.Sprintf(`state: sqlite://state.db
buckets:
  - arn: arn:aws:s3tables:us-east-1:1:bucket/down
    catalog: {type: rest, uri: "http://%s/iceberg?token=%s&warehouse=w"}
`, addr, secret)), 0o644)
	for _, args := range [][]string{
		{"tables"},
		{"tables", "--json"},
		{"run", "--table", "down/db/events"},
		{"run", "--table", "down/db/events", "--json"},
		{"noncurrent", "--table", "down/db/events"},
	} {
		code, out, errOut := c.run(append(args, "--config", cfg, "--connect-timeout", "5s")...)
		if code == 0 {
			t.Errorf("icekeeper %v succeeded against a closed port", args)
		}
		if strings.Contains(out+errOut, secret) {
			t.Errorf("icekeeper %v printed the token:\nstdout: %s\nstderr: %s", args, out, errOut)
		}
		if !strings.Contains(out+errOut, addr) {
			t.Errorf("icekeeper %v does not name the endpoint: %s %s", args, out, errOut)
		}
	}
}

// An unreachable catalog is a one-line error naming the endpoint, within
// the connect timeout, with exit code 1.
func TestUnreachableCatalog(t *testing.T) {
	c := newCLI(t)
	addr := servers.FreeAddr(t)
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

// The quickstart's run: every job on the demo table (record expiration
// off, as by default), recorded, with
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
	if r := res["icebergRecordExpiration"]; r.Status != "Disabled" {
		t.Fatalf("record expiration, off by default: %+v", r)
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
	// A dry run changes nothing, and says so.
	dry := c.must("run", "--table", "local/demo/events", "--dry-run")
	if strings.Count(dry, ": DryRun (nothing was changed or recorded)") != 3 || !strings.Contains(dry, "would mark noncurrent: 0") ||
		!strings.Contains(dry, "would delete: 0") || !strings.Contains(dry, "snapshots would expire") || strings.Contains(dry, "Successful") {
		t.Fatalf("dry run output:\n%s", dry)
	}
	// Eleven days on, the what-if: the crashed writer's files would go.
	later := time.Now().Add(11 * 24 * time.Hour).UTC().Format(time.RFC3339)
	whatIf := c.must("run", "--table", "local/demo/events", "--job", "unreferenced", "--dry-run", "--now", later)
	if !strings.Contains(whatIf, "would delete: 3") {
		t.Fatalf("what-if:\n%s", whatIf)
	}
	if out := c.must("noncurrent", "--table", "local/demo/events"); strings.Count(out, "crashed-writer") != 3 {
		t.Fatalf("the what-if changed the marks: %s", out)
	}
	var again []tableHealth
	json.Unmarshal([]byte(c.must("tables", "--json")), &again)
	if again[0].DataFiles != after[0].DataFiles || again[0].Snapshots != after[0].Snapshots {
		t.Fatalf("dry run changed the table: %+v → %+v", after[0].Health, again[0].Health)
	}

	// Restore one: the rehearsed run eleven days on deletes the other two
	// and keeps it; released, it is marked again.
	var list []struct {
		Path string `json:"path"`
	}
	json.Unmarshal([]byte(c.must("noncurrent", "--table", "local/demo/events", "--json")), &list)
	kept := list[0].Path
	if out := c.must("restore", "--table", "local/demo/events", "--path", kept); !strings.Contains(out, "restored 1 object(s)") {
		t.Fatalf("restore: %s", out)
	}
	if out := c.must("noncurrent", "--table", "local/demo/events"); !strings.Contains(out, "never: protected") {
		t.Fatalf("noncurrent after restore: %s", out)
	}
	out = c.must("run", "--table", "local/demo/events", "--job", "unreferenced", "--now", later, "--allow-clock-shift")
	if !strings.Contains(out, "deleted: 2") || !strings.Contains(out, "1 protected by restore") {
		t.Fatalf("rehearsed run:\n%s", out)
	}
	if _, err := os.Stat(strings.TrimPrefix(kept, "file://")); err != nil {
		t.Fatalf("the restored file is gone: %v", err)
	}
	if out := c.must("release", "--table", "local/demo/events", "--all"); !strings.Contains(out, "released 1 object(s)") {
		t.Fatalf("release: %s", out)
	}
	if out := c.must("run", "--table", "local/demo/events", "--job", "unreferenced"); !strings.Contains(out, "marked noncurrent: 1") {
		t.Fatalf("after release:\n%s", out)
	}
}

func TestServeHealthz(t *testing.T) {
	newCLI(t)
	addr := servers.FreeAddr(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int)
	var errOut bytes.Buffer
	go func() { done <- Main(ctx, []string{"serve", "--listen", addr}, io.Discard, &errOut) }()
	var resp *http.Response
	var err error
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

// A table that cannot be read is printed with its error, the others as
// usual, and the exit status is 1.
func TestTablesExitsOneOnUnreadableTable(t *testing.T) {
	c := newCLI(t)
	c.must("demo")
	var tables []tableHealth
	if err := json.Unmarshal([]byte(c.must("tables", "--json")), &tables); err != nil {
		t.Fatal(err)
	}
	meta, err := filepath.Glob(filepath.Join(c.home, "warehouse", "demo.db", "events", "metadata", "*.metadata.json"))
	if err != nil || len(meta) == 0 {
		t.Fatalf("metadata files: %v %v", meta, err)
	}
	for _, m := range meta {
		if err := os.Remove(m); err != nil {
			t.Fatal(err)
		}
	}
	code, out, errOut := c.run("tables")
	if code != 1 || !strings.Contains(out, "local/demo/events") || !strings.Contains(out, "error:") || !strings.Contains(errOut, "1 of 1 tables could not be read") {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
}

// --log-level debug says where a one-shot run spends its time before the
// job starts; a bad level is a usage error; the environment sets it too.
func TestDebugLogging(t *testing.T) {
	c := newCLI(t)
	c.must("demo")
	code, _, errOut := c.run("run", "--table", "local/demo/events", "--job", "snapshots", "--dry-run", "--log-level", "debug")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{"configuration loaded", "state store opened", "catalog opened", "table loaded", "duration=", "job finished"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("debug log lacks %q:\n%s", want, errOut)
		}
	}
	if _, _, errOut := c.run("run", "--table", "local/demo/events", "--job", "snapshots", "--dry-run"); strings.Contains(errOut, "table loaded") {
		t.Errorf("debug lines without --log-level:\n%s", errOut)
	}
	t.Setenv(EnvLogLevel, "debug")
	if _, _, errOut := c.run("tables"); !strings.Contains(errOut, "tables listed") {
		t.Errorf("%s=debug logged nothing:\n%s", EnvLogLevel, errOut)
	}
	if code, _, errOut := c.run("tables", "--log-level", "loud"); code != 2 || !strings.Contains(errOut, `"loud"`) {
		t.Errorf("a bad level: exit %d, %s", code, errOut)
	}
}

// `icekeeper run` says when a run skipped an unchanged table, and why;
// a dry run on a table with no history shows the rule's verdict and its
// plan; the run after a compaction that settled the table skips.
func TestRunSaysUnchanged(t *testing.T) {
	c := newCLI(t)
	c.must("demo")
	args := []string{"run", "--table", "local/demo/events", "--job", "compaction"}
	if out := c.must(append(args, "--dry-run")...); !strings.Contains(out, "unchanged rule: full: no earlier evaluation") || !strings.Contains(out, "groups would be rewritten") {
		t.Fatalf("dry run on a fresh table:\n%s", out)
	}
	for i := range 4 {
		out := c.must(args...)
		if strings.Contains(out, "skipped (skip: unchanged): unchanged since run") {
			// The first run compacts and finds the table it left settled:
			// the second skips.
			if i != 1 {
				t.Fatalf("run %d skipped, want the second:\n%s", i+1, out)
			}
			// A long line folds: the words, not the spaces, are the message.
			if dry := c.must(append(args, "--dry-run")...); !strings.Contains(strings.Join(strings.Fields(dry), " "), "a run would skip") {
				t.Fatalf("dry run on a settled table:\n%s", dry)
			}
			return
		}
	}
	t.Fatal("no run skipped the unchanged table")
}
