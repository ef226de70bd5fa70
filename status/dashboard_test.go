package status

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/icekeeper/icekeeper/compactor"
	"github.com/icekeeper/icekeeper/configs"
	"github.com/icekeeper/icekeeper/internal/health"
	"github.com/icekeeper/icekeeper/internal/state"
	"github.com/icekeeper/icekeeper/internal/testkit"
	"github.com/icekeeper/icekeeper/internal/testkit/servers"
	"github.com/icekeeper/icekeeper/jobs"
	"github.com/icekeeper/icekeeper/maintenance"
	"github.com/icekeeper/icekeeper/planner"
)

// The dashboard in headless Chromium, 1,280 pixels wide: a first visit
// to a fresh demo table charts three weeks of its snapshot log; the home view
// lists the demo table with every job type and no column cut off; the
// table's own address opens its view with charts of its history (each
// series at least two samples), its 30-day cost, and each run as one
// summary line with its figures folded behind it; an auto-refresh keeps
// what the reader opened; the run and release buttons work; back leads
// home; no text is wider than its box. It fails on any console error,
// and keeps screenshots of the first visit, the home view, the table
// view and an opened run in $ICEKEEPER_TEST_ARTIFACTS.
func TestDashboardInBrowser(t *testing.T) {
	browser := servers.Tool(t, "chromium")
	var err error
	f := newServer(t, configs.API{})
	ctx0 := context.Background()
	// A history of three samples: the table as the demo made it, after
	// a compaction, and after a writer's append, each seen by the
	// overview (which records what it computes).
	f.runner.Jobs[maintenance.Compaction] = (&compactor.Job{}).Definition()
	overview := func() {
		t.Helper()
		resp, err := http.Get(f.url + "/icekeeper/v1/overview")
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("overview: %v %v", resp, err)
		}
		resp.Body.Close()
	}
	overview()
	for _, typ := range []maintenance.JobType{maintenance.Compaction, maintenance.SnapshotManagement} {
		if out, err := f.runner.Run(ctx0, f.Target(), typ, "test", jobs.Options{}); err != nil || out.Status != "Successful" {
			t.Fatalf("%s: %+v %v", typ, out, err)
		}
	}
	overview()
	if err := testkit.AppendRows(ctx0, f.Bucket, f.ID, 10); err != nil {
		t.Fatal(err)
	}
	overview()
	// Earlier samples, as the daemon would have recorded them over the
	// last days while writers added files, so that the charts run across
	// their window as they do in use; the real ones above are the last.
	recorded, err := f.Store.HealthSamples(ctx0, f.Target().Key(), time.Time{})
	if err != nil || len(recorded) != 3 {
		t.Fatalf("health samples from the overview: %+v %v", recorded, err)
	}
	var first health.Health
	if err := json.Unmarshal(recorded[0].Health, &first); err != nil {
		t.Fatal(err)
	}
	const seeded = 3
	for i := seeded; i >= 1; i-- {
		h := first
		h.DataFiles, h.SmallFiles, h.TotalBytes = first.DataFiles-4*i, first.SmallFiles-4*i, first.TotalBytes*int64(10-2*i)/10
		h.Snapshots = max(1, first.Snapshots-i)
		body, _ := json.Marshal(h)
		if _, err := f.Store.RecordHealth(ctx0, state.HealthSample{Table: f.Target().Key(), At: time.Now().Add(-time.Duration(3*i) * 24 * time.Hour),
			MetadataLocation: fmt.Sprint("earlier-", i), Health: body}); err != nil {
			t.Fatal(err)
		}
	}
	// A failed run with a long message, as a job cell shows it.
	failed := state.Run{Table: f.Target().Key(), Type: maintenance.UnreferencedFileRemoval, Trigger: "schedule", Started: time.Now().Add(-time.Hour)}
	if failed.ID, err = f.Store.StartRun(ctx0, failed); err != nil {
		t.Fatal(err)
	}
	failed.Status, failed.Finished = state.Failed, failed.Started.Add(1500*time.Millisecond)
	failed.FailureMessage = "list s3://warehouse/demo.db/events/: operation error S3: ListObjectsV2, https response error StatusCode: 503, RequestID: 17A2B3C4D5E6F7, api error SlowDown: Please reduce your request rate."
	if err := f.Store.FinishRun(ctx0, failed); err != nil {
		t.Fatal(err)
	}
	// A protected noncurrent file, for the release button.
	protected := "file:///warehouse/demo.db/events/data/stray.parquet"
	key := f.Target().Key()
	if err := f.Store.PutMarks(ctx0, []state.Mark{{Table: key, Path: protected, Size: 10, MarkedAt: time.Now()}}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Store.ProtectMarks(ctx0, key, []string{protected}, time.Now()); err != nil {
		t.Fatal(err)
	}

	// A table dropped yesterday, whose leftovers' removal marked a file.
	gone := state.TableRecord{Key: state.TableKey{Bucket: key.Bucket, Namespace: "demo", Name: "gone"}, UUID: "0b7d3c1e-0000-4000-8000-00000000d0d0",
		Locations: []string{"file:///warehouse/demo.db/gone"}, FirstSeen: time.Now().Add(-48 * time.Hour), LastSeen: time.Now().Add(-24 * time.Hour)}
	if err := f.Store.PutTable(ctx0, gone); err != nil {
		t.Fatal(err)
	}
	if err := f.Store.DropTable(ctx0, gone, time.Now().Add(-24*time.Hour)); err != nil {
		t.Fatal(err)
	}
	if err := f.Store.PutMarks(ctx0, []state.Mark{{Table: gone.Key.Dropped(gone.UUID), Path: "file:///warehouse/demo.db/gone/data/a.parquet", Size: 3 << 20, MarkedAt: time.Now()}}); err != nil {
		t.Fatal(err)
	}

	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(browser), chromedp.NoSandbox, chromedp.Flag("headless", true))
	actx, cancel := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancel()
	ctx, cancel := chromedp.NewContext(actx)
	defer cancel()
	ctx, cancel = context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	var mu sync.Mutex
	var consoleErrors []string
	if err := chromedp.Listen(ctx, func(ev any) {
		mu.Lock()
		defer mu.Unlock()
		switch e := ev.(type) {
		case *runtime.EventConsoleAPICalled:
			if e.Type == runtime.ConsoleAPICalledTypeError {
				for _, a := range e.Args {
					consoleErrors = append(consoleErrors, string(a.Value)+a.Description)
				}
			}
		case *runtime.EventExceptionThrown:
			consoleErrors = append(consoleErrors, e.ExceptionDetails.Text)
		}
	}); err != nil {
		t.Fatal(err)
	}
	step := func(what string, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	shots := map[string][]byte{}
	shot := func(name string) {
		t.Helper()
		b, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
		step("screenshot "+name, err)
		shots[name] = b
	}
	js := func(what, expr string) any {
		t.Helper()
		v, err := chromedp.Run(ctx, chromedp.Evaluate[any](expr))
		step(what, err)
		return v
	}

	_, err = chromedp.Run(ctx, chromedp.EmulateViewport(1280, 900))
	step("size the window", err)

	// A first visit to a fresh demo table, which the daemon has sampled
	// only as the page asked for it: the series a snapshot summary carries
	// start from the table's own snapshot log, which the demo spread over
	// three weeks; small files and the score, which no summary tells,
	// start at the sample.
	fresh := newServer(t, configs.API{})
	// A lag with a target and a reason it waits, longer than a job's
	// column is wide, as a table behind on compaction shows it.
	fresh.fresh.Set(fresh.Target().Key(), "", maintenance.Compaction, jobs.Lag{Target: 200 * time.Hour, Checked: time.Now(),
		Oldest: &planner.Oldest{Since: time.Now().Add(-80 * time.Hour), What: "3 data files added by snapshot 123 (append)"},
		Waits:  "budget: the bucket's compaction budget of 10 GiB a day is spent until midnight UTC"})
	_, err = chromedp.Run(ctx, chromedp.Navigate(fresh.url+"/#/table/local/demo/events"))
	step("open a fresh table's address", err)
	_, err = chromedp.Run(ctx, chromedp.WaitVisible(`#charts svg.plot[data-series="dataFiles"]`))
	step("wait for its charts", err)
	points := js("count the charts' points", chartPoints).(map[string]any)
	for _, series := range []string{"dataFiles", "totalBytes", "snapshots", "smallFiles", "score"} {
		p, _ := points[series].([]any)
		if len(p) != 3 {
			t.Errorf("first visit, chart %s: no points (all: %v)", series, points)
			continue
		}
		logged, oldest := p[1].(float64), time.UnixMilli(int64(p[2].(float64)))
		switch series {
		case "dataFiles", "totalBytes", "snapshots":
			if logged < 5 || time.Since(oldest) < 18*24*time.Hour {
				t.Errorf("first visit, chart %s has %v points from the snapshot log, the oldest %v: want the demo's three weeks", series, logged, oldest)
			}
		default:
			if logged != 0 || time.Since(oldest) > time.Hour {
				t.Errorf("first visit, chart %s has %v points from the snapshot log, the oldest %v: no summary tells it", series, logged, oldest)
			}
		}
	}
	if n := js("count the legends", `[...document.querySelectorAll("#charts .legend")].filter(l => l.textContent.includes("snapshot log")).length`); n.(float64) < 3 {
		t.Errorf("%v charts say they are drawn from the snapshot log, want data files, size and snapshots at least", n)
	}
	if over := js("look for overflow", overflowing).([]any); len(over) > 0 {
		t.Errorf("first visit, text wider than its box at 1,280 pixels: %v", over)
	}
	shot("dashboard-first-visit.png")

	// Home.
	_, err = chromedp.Run(ctx, chromedp.Navigate(f.url+"/"))
	step("open the page", err)
	_, err = chromedp.Run(ctx, chromedp.WaitVisible(`a[data-table="demo.events"]`))
	step("wait for the demo table", err)
	_, err = chromedp.Run(ctx, textContains("#queue", "nothing queued"))
	step("see the empty queue", err)
	_, err = chromedp.Run(ctx, textContains("#budgets", "no budgets"))
	step("see no budgets", err)
	dropped, err := chromedp.Run(ctx, chromedp.Text("#dropped"))
	step("read the dropped tables", err)
	if !strings.Contains(dropped, "local/demo.gone") || !strings.Contains(dropped, gone.UUID) || !strings.Contains(dropped, "3.0 MiB") ||
		!strings.Contains(dropped, "not yet") || strings.Contains(dropped, "[object") {
		t.Errorf("dropped tables read %q", dropped)
	}
	list, err := chromedp.Run(ctx, chromedp.Text("#tables"))
	step("read the table list", err)
	// Every job type has its column, and every column fits: nothing
	// scrolls sideways at 1,280 pixels.
	if n := js("count job columns", `document.querySelectorAll("#tables th[data-job]").length`); n != float64(len(maintenance.JobTypes())) {
		t.Errorf("%v job columns, want %d", n, len(maintenance.JobTypes()))
	}
	if w := js("measure the page", `[document.documentElement.scrollWidth, window.innerWidth]`).([]any); w[0].(float64) > w[1].(float64) {
		t.Errorf("the home view is %v pixels wide in a %v-pixel window", w[0], w[1])
	}
	// Times read relatively, the local time in their title.
	if v := js("read the times", `[...document.querySelectorAll("#tables time")].map(e => e.textContent + "|" + e.title)`).([]any); len(v) == 0 ||
		!regexp.MustCompile(`^(just now|\d+ (min|h|days) ago|in .+)\|.+`).MatchString(v[0].(string)) {
		t.Errorf("times: %v", v)
	}
	shot("dashboard.png")

	// The table's own view, at its own address.
	_, err = chromedp.Run(ctx, chromedp.Click(`a[data-table="demo.events"]`))
	step("open the table", err)
	_, err = chromedp.Run(ctx, chromedp.WaitVisible(`#charts`))
	step("wait for its charts", err)
	if h := js("read the address", `location.hash`); h != "#/table/local/demo/events" {
		t.Errorf("the table's address is %v", h)
	}
	if v := js("see the home view hidden", `document.getElementById("home").hidden`); v != true {
		t.Error("the table view opened below the home view")
	}
	// Every chart has a point per sample: the seeded ones and the three
	// the overview recorded.
	points = js("count the charts' points", chartPoints).(map[string]any)
	firstSample := time.Now().Add(-time.Duration(3*seeded) * 24 * time.Hour)
	for _, series := range []string{"dataFiles", "totalBytes", "smallFiles", "deleteFiles", "snapshots", "score"} {
		p, _ := points[series].([]any)
		if len(p) != 3 {
			t.Errorf("chart %s: no points (all: %v)", series, points)
			continue
		}
		samples, logged, oldest := p[0].(float64), p[1].(float64), time.UnixMilli(int64(p[2].(float64)))
		if samples != seeded+3 {
			t.Errorf("chart %s has %v points of samples, want %d (all: %v)", series, samples, seeded+3, points)
		}
		// The expiration above left only snapshots younger than the
		// seeded samples: none is drawn.
		if logged != 0 || oldest.Before(firstSample.Add(-time.Hour)) {
			t.Errorf("chart %s has %v points from the snapshot log, the oldest %v, all older than the samples", series, logged, oldest)
		}
	}
	// Every chart names its unit; the cost's is USD, its legend names
	// icekeeper's and S3 Tables' bars.
	units := js("read the units", `[...document.querySelectorAll("#charts figcaption")].map(c => c.textContent)`).([]any)
	for _, u := range units {
		if !regexp.MustCompile(`\(.+\)`).MatchString(u.(string)) {
			t.Errorf("chart caption %q names no unit", u)
		}
	}
	if c := js("read the cost chart", `document.querySelector("#charts figure.cost").textContent`).(string); !strings.Contains(c, "(USD)") ||
		!strings.Contains(c, "no run recorded a cost") && !strings.Contains(c, "S3 Tables' price") {
		t.Errorf("cost chart reads %q", c)
	}
	// Each run is one summary line: the compaction's files in and out,
	// the expiration's snapshots, the failed run's failure, each with its
	// duration.
	lines := js("read the run lines", `[...document.querySelectorAll("details.run > summary")].map(s => s.querySelector(".line").textContent)`).([]any)
	if len(lines) != 3 {
		t.Errorf("run lines: %v, want the compaction's, the expiration's and the failed removal's", lines)
	}
	summary := regexp.MustCompile(`^(\d+ files? -> \d+ files?|expired \d+ snapshots?|no snapshot expired|failed)[^\n]*, \d+(\.\d)? (ms|s)\b`)
	for _, l := range lines {
		if s, _ := l.(string); !summary.MatchString(s) || len(s) > 120 {
			t.Errorf("run line %q is not a summary", s)
		}
	}
	cost, err := chromedp.Run(ctx, chromedp.Text("#cost"))
	step("read the cost", err)
	if !strings.Contains(cost, "cost, last 30 days") || !strings.Contains(cost, "$") || strings.Contains(cost, "$0") && !strings.Contains(cost, "no cost recorded in 30 days") {
		t.Errorf("cost card: %q", cost)
	}
	if w := js("measure the page", `[document.documentElement.scrollWidth, window.innerWidth]`).([]any); w[0].(float64) > w[1].(float64) {
		t.Errorf("the table view is %v pixels wide in a %v-pixel window", w[0], w[1])
	}
	// Nothing runs out of its own box (the lag once ran across the next
	// job's column): no element whose content is wider than it shows it.
	if over := js("look for overflow", overflowing).([]any); len(over) > 0 {
		t.Errorf("text wider than its box at 1,280 pixels: %v", over)
	}
	shot("dashboard-table.png")

	// A run opens to its figures: labelled values, no zeros, no JSON.
	_, err = chromedp.Run(ctx, chromedp.Click(`details.run > summary`))
	step("open a run", err)
	_, err = chromedp.Run(ctx, chromedp.WaitVisible(`details.run[open] dl.figures`))
	step("see its figures", err)
	figures, err := chromedp.Run(ctx, chromedp.Text(`details.run[open] dl.figures`))
	step("read its figures", err)
	if strings.Contains(figures, "{") || !regexp.MustCompile(`(input files|snapshots expired)\s+\d`).MatchString(figures) {
		t.Errorf("figures:\n%s", figures)
	}
	if zeros := js("look for zeros", `[...document.querySelectorAll("details.run[open] dl.figures dd")].filter(d => /^(0|0 B|\$0|false)$/.test(d.textContent)).length`); zeros != float64(0) {
		t.Errorf("%v zero values shown in the figures", zeros)
	}
	shot("dashboard-run.png")
	// A refresh rebuilds the view and keeps the run open and the page
	// where the reader scrolled it.
	js("scroll", `window.scrollTo(0, 300)`)
	js("refresh", `refresh()`)
	_, err = chromedp.Run(ctx, chromedp.Poll[bool](`!ui.busy`))
	step("wait for the refresh", err)
	if open := js("count open runs", `document.querySelectorAll("details.run[open]").length`); open != float64(1) {
		t.Errorf("%v runs open after a refresh, want the one opened", open)
	}
	if y := js("read the scroll", `window.scrollY`); y != float64(300) {
		t.Errorf("scrolled to %v after a refresh, want 300", y)
	}
	_, err = chromedp.Run(ctx, chromedp.Click(`#pause`))
	step("pause", err)
	if txt := js("read the pause button", `document.getElementById("pause").textContent`); txt != "resume auto-refresh" {
		t.Errorf("after pause, the button says %v", txt)
	}

	// A run button queues the run and then shows its result: the queue
	// here has no worker, so the test runs the job as a worker would.
	_, err = chromedp.Run(ctx, chromedp.Click(`button[data-run="icebergSnapshotManagement"]`))
	step("click run", err)
	_, err = chromedp.Run(ctx, textContains("#run-result", "queued"))
	step("see it queued", err)
	if out, err := f.runner.Run(ctx0, f.Target(), maintenance.SnapshotManagement, "api", jobs.Options{}); err != nil || out.Status != "Successful" {
		t.Fatalf("run: %+v %v", out, err)
	}
	_, err = chromedp.Run(ctx, textContains("#run-result", "icebergSnapshotManagement: Successful"))
	step("see its result", err)
	detail, err := chromedp.Run(ctx, chromedp.Text("#detail"))
	step("read the detail", err)
	if !strings.Contains(detail, "noncurrent files") || !strings.Contains(detail, "never: protected") {
		t.Errorf("detail:\n%s", detail)
	}

	// The release button ends the protection.
	// Clicked from the page's own thread once no refresh is under way: the
	// run's result refreshes the view, and a click on a button it has
	// just replaced is lost.
	sel, _ := json.Marshal(`button[data-path="` + protected + `"]`)
	_, err = chromedp.Run(ctx, chromedp.Poll[bool](`(() => { if (ui.busy) return false; const b = document.querySelector(`+string(sel)+`); if (!b) return false; b.click(); return true; })()`))
	step("click release", err)
	_, err = chromedp.Run(ctx, chromedp.Poll[bool](`document.querySelector("#detail h3") !== null && document.querySelector("#noncurrent") === null`))
	step("see it released", err)
	if marks, err := f.Store.Marks(ctx0, key); err != nil || len(marks) != 0 {
		t.Errorf("after release: %+v %v", marks, err)
	}

	// Back leads home; the table's address opens its view directly.
	_, err = chromedp.Run(ctx, chromedp.Click(`#back`))
	step("go back", err)
	_, err = chromedp.Run(ctx, chromedp.WaitVisible(`#tables`))
	step("see the home view", err)
	_, err = chromedp.Run(ctx, chromedp.Navigate(f.url+"/#/table/local/demo/events"))
	step("open the table's address", err)
	_, err = chromedp.Run(ctx, chromedp.WaitVisible(`#charts`))
	step("see the table view", err)

	if dir := os.Getenv("ICEKEEPER_TEST_ARTIFACTS"); dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for name, b := range shots {
			path := filepath.Join(dir, name)
			if err := os.WriteFile(path, b, 0o644); err != nil {
				t.Fatal(err)
			}
			t.Logf("screenshot: %s", path)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(consoleErrors) > 0 {
		t.Errorf("console errors: %v", consoleErrors)
	}
	if !strings.Contains(list, "local/demo.events") || !strings.Contains(list, "Successful") || !strings.Contains(list, "Failed") || !strings.Contains(list, "Disabled") ||
		!strings.Contains(list, "Record expiration") ||
		!regexp.MustCompile(`small files \d+/40`).MatchString(list) {
		t.Errorf("table list:\n%s", list)
	}
}

// chartPoints is, for each chart of the page, its points from samples,
// its points from the snapshot log and the time of its oldest point.
const chartPoints = `Object.fromEntries([...document.querySelectorAll("svg.plot[data-series]")].map(s => [s.dataset.series,
	[s.querySelectorAll("circle.point:not(.log)").length, s.querySelectorAll("circle.point.log").length,
	 Math.min(...[...s.querySelectorAll("circle.point")].map(c => Number(c.dataset.t)))]]))`

// overflowing lists the visible elements of the page whose content is
// wider than their box and spills out of it (an element that clips or
// scrolls its content is fine, and so is an SVG, which scales).
const overflowing = `[...document.querySelectorAll("main *")].filter(e => {
	if (e.closest("svg") || e.clientWidth === 0 || e.offsetParent === null) return false;
	const st = getComputedStyle(e);
	return st.overflowX === "visible" && e.scrollWidth > e.clientWidth + 1;
}).map(e => e.tagName.toLowerCase() + (e.className ? "." + e.className : "") + ": " + e.textContent.slice(0, 60))`

// textContains waits until the element's text holds want.
func textContains(sel, want string) chromedp.Action[bool] {
	return chromedp.PollFunction[bool](`(sel, want) => { const e = document.querySelector(sel); return !!e && e.innerText.includes(want); }`,
		chromedp.WithPollingArgs(sel, want))
}

// With keys, the page wants HTTP Basic credentials (a browser cannot sign
// SigV4); a read-only key sees the overview, may not write, and is told so.
func TestDashboardAuth(t *testing.T) {
	f := newServer(t, configs.API{Keys: []configs.APIKey{
		{AccessKeyID: "AKADMIN", SecretAccessKey: "admin-secret-0123456789"},
		{AccessKeyID: "AKVIEW", SecretAccessKey: "view-secret-0123456789", ReadOnly: true},
	}})
	do := func(method, path, id, secret string) (*http.Response, map[string]any) {
		t.Helper()
		req, _ := http.NewRequest(method, f.url+path, nil)
		req.Header.Set(IntentHeader, "1")
		if id != "" {
			req.SetBasicAuth(id, secret)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var body map[string]any
		json.NewDecoder(resp.Body).Decode(&body)
		return resp, body
	}
	if resp, _ := do("GET", "/", "", ""); resp.StatusCode != 401 || !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Basic") {
		t.Fatalf("/ without credentials: %d %q", resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
	}
	if resp, _ := do("GET", "/", "AKADMIN", "wrong"); resp.StatusCode != 401 {
		t.Fatalf("/ with a wrong secret: %d", resp.StatusCode)
	}
	if resp, _ := do("GET", "/", "AKVIEW", "view-secret-0123456789"); resp.StatusCode != 200 {
		t.Fatalf("/ with a key: %d", resp.StatusCode)
	}
	if resp, body := do("GET", "/icekeeper/v1/overview", "AKADMIN", "admin-secret-0123456789"); resp.StatusCode != 200 || body["canWrite"] != true {
		t.Fatalf("overview, admin: %d %v", resp.StatusCode, body)
	}
	if resp, body := do("GET", "/icekeeper/v1/overview", "AKVIEW", "view-secret-0123456789"); resp.StatusCode != 200 || body["canWrite"] != false {
		t.Fatalf("overview, read-only: %d %v", resp.StatusCode, body)
	}
	trigger := "/icekeeper/v1/tables/" + url.PathEscape(bucketARN) + "/demo/events/runs/icebergCompaction"
	if resp, _ := do("POST", trigger, "AKVIEW", "view-secret-0123456789"); resp.StatusCode != 403 {
		t.Fatalf("read-only key queued a run: %d", resp.StatusCode)
	}
	if resp, _ := do("POST", trigger, "AKADMIN", "admin-secret-0123456789"); resp.StatusCode != 202 {
		t.Fatalf("admin key: %d", resp.StatusCode)
	}
}
