package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/icekeeper/icekeeper/configs"
	"github.com/icekeeper/icekeeper/internal/demo"
	"github.com/icekeeper/icekeeper/internal/testkit"
	"github.com/icekeeper/icekeeper/internal/testkit/screen"
	"github.com/icekeeper/icekeeper/internal/testkit/servers"
)

// demoWith creates the embedded default's demo table with opts, in
// process: --appends alone makes four files per append, and a test that
// needs hundreds of snapshots needs no more than one.
func demoWith(t *testing.T, opts demo.Options) {
	t.Helper()
	home, err := embeddedHome()
	if err != nil {
		t.Fatal(err)
	}
	reg := configs.Embedded(home).Registry()
	defer reg.Close()
	b, err := reg.Bucket("local")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := demo.Create(context.Background(), b, opts); err != nil {
		t.Fatal(err)
	}
}

var expiredRE = regexp.MustCompile(`(\d+) of \d+ snapshots (would )?expire`)

// expiredIn is the snapshots a run's text says expired.
func expiredIn(t *testing.T, out string) int {
	t.Helper()
	m := expiredRE.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no snapshot count in:\n%s", out)
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

// A run on a table with hundreds of expired snapshots prints counts and
// the first few of each list, at most 60 lines in all; --verbose prints
// every snapshot.
func TestRunSummarises(t *testing.T) {
	c := newCLI(t)
	demoWith(t, demo.Options{Appends: 280, DaysPerAppend: 1, RowsPerFile: 5})
	args := []string{"run", "--table", "local/demo/events"}

	all := c.must(append(args, "--job", "snapshots", "--dry-run", "--verbose")...)
	n := expiredIn(t, all)
	if n < 200 {
		t.Fatalf("the table has %d snapshots to expire, want hundreds:\n%s", n, all)
	}
	if got := strings.Count(all, "\n  would expire "); got != n {
		t.Errorf("--verbose printed %d of the %d snapshots:\n%s", got, n, all)
	}
	if strings.Contains(all, "more (--verbose") {
		t.Errorf("--verbose still left items out:\n%s", all)
	}

	out := c.must(args...)
	if got := expiredIn(t, out); got != n {
		t.Fatalf("the run expired %d snapshots, the dry run planned %d:\n%s", got, n, out)
	}
	if lines := strings.Count(out, "\n"); lines > 60 {
		t.Errorf("run printed %d lines, want at most 60:\n%s", lines, out)
	}
	if want := fmt.Sprintf("… and %d more (--verbose or --json for all)", n-5); !strings.Contains(out, want) {
		t.Errorf("run does not say %q:\n%s", want, out)
	}
}

// When the table cannot be loaded every job fails for that one cause: it
// is printed once, each other job says it failed for the same cause in
// one line, and no job prints figures of zeros.
func TestFailedRunOneLinePerJob(t *testing.T) {
	c := newCLI(t)
	demoWith(t, demo.Options{Appends: 5})
	meta, err := filepath.Glob(filepath.Join(c.home, "warehouse", "demo.db", "events", "metadata", "*.metadata.json"))
	if err != nil || len(meta) == 0 {
		t.Fatalf("metadata files: %v %v", meta, err)
	}
	for _, m := range meta {
		if err := os.Remove(m); err != nil {
			t.Fatal(err)
		}
	}
	code, out, errOut := c.run("run", "--table", "local/demo/events")
	if code != 1 {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	want := []string{
		"icebergRecordExpiration: Disabled",
		"icebergCompaction: Failed — load table local/demo.events: open",
		"icebergSnapshotManagement: Failed (same cause as icebergCompaction)",
		"icebergUnreferencedFileRemoval: Failed (same cause as icebergCompaction)",
		"icebergErasure: Disabled",
		"icebergStatistics: Disabled",
	}
	// A line per job; the one message folds onto lines of its own,
	// indented under it, to fit a terminal.
	var lines []string
	for _, l := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		if !strings.HasPrefix(l, " ") {
			lines = append(lines, l)
		}
	}
	if len(lines) != len(want) {
		t.Fatalf("%d lines, want one per job:\n%s", len(lines), out)
	}
	for i, w := range want {
		if !strings.HasPrefix(lines[i], w) {
			t.Errorf("line %d: %q, want %q…", i+1, lines[i], w)
		}
	}
	if n := strings.Count(out, "no such file or directory"); n != 1 {
		t.Errorf("the cause is printed %d times:\n%s", n, out)
	}
}

// An object store that answers 404 reaches iceberg-go as "file does not
// exist"; the failure names the object and the endpoint that answered.
func TestMissingObjectNamesEndpoint(t *testing.T) {
	c := newCLI(t)
	// The store keeps what the table's creation writes, until it is
	// swapped for one that answers 404 to everything.
	var mu sync.Mutex
	objects, swapped := map[string][]byte{}, false
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		body, ok := objects[r.URL.Path]
		switch {
		case swapped:
		case r.Method == http.MethodPut:
			objects[r.URL.Path], _ = io.ReadAll(r.Body)
			w.Header().Set("ETag", `"0"`)
			return
		case ok && r.Method == http.MethodGet:
			w.Write(body)
			return
		}
		w.WriteHeader(http.StatusNotFound)
		fmt.Fprint(w, "404 page not found")
	}))
	defer srv.Close()
	dir := t.TempDir()
	cfg := filepath.Join(dir, "s3.yaml")
	os.WriteFile(cfg, []byte(fmt.Sprintf(`state: sqlite://state.db
buckets:
  - arn: arn:aws:s3tables:us-east-1:1:bucket/lake
    catalog: {type: sql, uri: "file:catalog.db?mode=rwc", sql.driver: sqlite, sql.dialect: sqlite, warehouse: "s3://bkt/wh",
              s3.endpoint: %q, s3.region: us-east-1, s3.access-key-id: k, s3.secret-access-key: s}
`, srv.URL)), 0o644)
	loaded, err := configs.Load(cfg)
	if err != nil {
		t.Fatal(err)
	}
	reg := loaded.Registry()
	defer reg.Close()
	b, err := reg.Bucket("lake")
	if err != nil {
		t.Fatal(err)
	}
	testkit.NewTable(t, b, "db", "events", demo.Schema())
	mu.Lock()
	swapped = true
	mu.Unlock()

	code, out, errOut := c.run("run", "--config", cfg, "--table", "lake/db/events", "--job", "snapshots")
	if code != 1 {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	if !strings.Contains(out, "s3://bkt/wh/") || !strings.Contains(out, "file does not exist") ||
		!strings.Contains(out, "at S3 endpoint "+srv.URL) {
		t.Fatalf("the failure names neither the object nor the endpoint:\n%s", out)
	}
}

// On a terminal every job draws a bar or a count, and --log-level debug
// logs planning, listing and commits; each log line clears the bar's line
// before it and draws the bar again after, so on the screen no log line
// runs into a bar.
func TestProgressAndDebugLogShareTheTerminal(t *testing.T) {
	newCLI(t)
	demoWith(t, demo.Options{Appends: 20})
	var raw fakeTerminal
	var out bytes.Buffer
	code := Main(context.Background(), []string{"run", "--table", "local/demo/events", "--log-level", "debug"}, &out, &raw)
	if code != 0 {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %q", code, out.String(), raw.String())
	}
	lines := screen.Lines(raw.String())
	// A finished bar stays on the screen.
	for _, want := range []string{"icebergCompaction [", "icebergSnapshotManagement [", "icebergUnreferencedFileRemoval "} {
		if !slices.ContainsFunc(lines, func(l string) bool { return strings.HasPrefix(l, want) }) {
			t.Errorf("no bar or count drawn for %q", want)
		}
	}
	logged := map[string]bool{}
	for _, l := range lines {
		if i := strings.Index(l, "time="); i > 0 {
			t.Errorf("a log line runs into a bar: %q", l)
		} else if i < 0 && !strings.HasPrefix(l, "iceberg") {
			t.Errorf("a line that is neither a log line nor a bar: %q", l)
		}
		if _, msg, ok := strings.Cut(l, ` msg="`); ok {
			msg, _, _ = strings.Cut(msg, `"`)
			logged[msg] = true
		}
	}
	for _, want := range []string{"table loaded", "compaction planned", "compaction groups rewritten", "commit attempted",
		"snapshots decided", "references collected", "prefix listed", "marks saved"} {
		if !logged[want] {
			t.Errorf("debug log lacks %q; logged %v", want, logged)
		}
	}
	for _, op := range []string{"operation=compaction", `operation="manifest rewrite"`, `operation="snapshot expiration"`} {
		if !slices.ContainsFunc(lines, func(l string) bool { return strings.Contains(l, `msg="commit attempted"`) && strings.Contains(l, op) }) {
			t.Errorf("no commit logged with %s", op)
		}
	}
}

// fakeTerminal is a buffer that says it is a terminal.
type fakeTerminal struct{ bytes.Buffer }

func (*fakeTerminal) IsTerminal() bool { return true }

// maxLine is the widest line a command prints as text: a terminal of 120
// columns shows each on one line.
const maxLine = 120

// longLines is every line of out wider than maxLine characters.
func longLines(out string) []string {
	var long []string
	for _, l := range strings.Split(out, "\n") {
		if n := len([]rune(l)); n > maxLine {
			long = append(long, fmt.Sprintf("%d: %s", n, l))
		}
	}
	return long
}

// The demo's commands print no line wider than a 120-column terminal:
// long lists and messages wrap, and --json stays one document, unchanged.
func TestOutputFitsTheTerminal(t *testing.T) {
	c := newCLI(t)
	c.must("demo")
	for _, args := range [][]string{
		{"run", "--table", "local/demo/events", "--job", "all", "--dry-run"},
		{"run", "--table", "local/demo/events", "--job", "all"},
		{"tables"},
		{"noncurrent", "--table", "local/demo/events"},
	} {
		code, out, errOut := c.run(args...)
		if code != 0 && code != 1 {
			t.Fatalf("icekeeper %v: exit %d\n%s%s", args, code, out, errOut)
		}
		if long := longLines(out + errOut); len(long) > 0 {
			t.Errorf("icekeeper %v prints %d lines wider than %d:\n%s", args, len(long), maxLine, strings.Join(long, "\n"))
		}
	}
	// status asks a running daemon.
	addr := servers.FreeAddr(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int)
	var serveErr bytes.Buffer
	go func() { done <- Main(ctx, []string{"serve", "--listen", addr}, io.Discard, &serveErr) }()
	defer func() {
		cancel()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Error("serve did not stop on cancellation")
		}
	}()
	var code int
	var out, errOut string
	for range 100 {
		if code, out, errOut = c.run("status", "--endpoint", "http://"+addr, "--table", "local/demo/events"); code == 0 {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if code != 0 || !strings.Contains(out, "RECENT RUNS") {
		t.Fatalf("status: exit %d\n%s%s\nserve: %s", code, out, errOut, serveErr.String())
	}
	if long := longLines(out); len(long) > 0 {
		t.Errorf("icekeeper status prints %d lines wider than %d:\n%s", len(long), maxLine, strings.Join(long, "\n"))
	}

	// The paths noncurrent shortened, --verbose prints whole, as restore
	// --path takes them.
	short, whole := c.must("noncurrent", "--table", "local/demo/events"), c.must("noncurrent", "--table", "local/demo/events", "--verbose")
	paths := regexp.MustCompile(`(?m)^file://\S+`).FindAllString(whole, -1)
	if len(paths) == 0 || !strings.Contains(short, "…") || !strings.Contains(short, "--verbose or --json prints them whole") {
		t.Fatalf("noncurrent:\n%s\nwith --verbose:\n%s", short, whole)
	}
	for _, p := range paths {
		if strings.Contains(p, "…") || !strings.HasSuffix(p, ".parquet") {
			t.Errorf("noncurrent --verbose printed %q, not a whole path", p)
		}
	}
}

// A line folds at spaces under its hang, keeps a table's padding, and
// shortens a word too wide for any line only when asked to.
func TestFitLine(t *testing.T) {
	msg := strings.Repeat("word ", 40) + "end"
	row := "icebergCompaction  Failed  2026-12-05T02:38:53Z  " + msg
	folded := fitLine(row, 50, false)
	lines := strings.Split(folded, "\n")
	if len(lines) < 2 || !strings.HasPrefix(row, lines[0]) || strings.Join(strings.Fields(folded), " ") != strings.Join(strings.Fields(row), " ") {
		t.Fatalf("folded:\n%s", folded)
	}
	for _, l := range lines {
		if len(l) > maxLine {
			t.Errorf("line of %d: %q", len(l), l)
		}
	}
	for _, l := range lines[1:] {
		if !strings.HasPrefix(l, strings.Repeat(" ", 50)+"w") && !strings.HasPrefix(l, strings.Repeat(" ", 50)+"e") {
			t.Errorf("continuation %q is not under its column", l)
		}
	}
	path := "file:///" + strings.Repeat("d/", 80) + "file.parquet"
	if got := fit("  mark   "+path, true); len([]rune(got)) != maxLine || !strings.Contains(got, "…") || !strings.HasSuffix(got, "file.parquet") {
		t.Errorf("shortened: %q", got)
	}
	if got := fit("  mark   "+path, false); !strings.Contains(got, path) {
		t.Errorf("not shortened, the path is cut: %q", got)
	}
	if short := "a line of its own"; fit(short, true) != short {
		t.Errorf("a short line changed: %q", fit(short, true))
	}
}
