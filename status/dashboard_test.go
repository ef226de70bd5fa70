package status

import (
	"context"
	"encoding/json"
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

	"github.com/icekeeper/icekeeper/configs"
	"github.com/icekeeper/icekeeper/internal/state"
	"github.com/icekeeper/icekeeper/internal/testkit/servers"
	"github.com/icekeeper/icekeeper/jobs"
	"github.com/icekeeper/icekeeper/maintenance"
)

// The dashboard in headless Chromium: it loads without a console error,
// lists the demo table, and shows the run's figures and the noncurrent
// files; the screenshot is kept in $ICEKEEPER_TEST_ARTIFACTS.
func TestDashboardInBrowser(t *testing.T) {
	browser := servers.Tool(t, "chromium")
	var err error
	f := newServer(t, configs.API{})
	if out, err := f.runner.Run(context.Background(), f.Target(), maintenance.SnapshotManagement, "test", jobs.Options{}); err != nil || out.Status != "Successful" {
		t.Fatalf("run: %+v %v", out, err)
	}
	// A protected noncurrent file, for the release button.
	protected := "file:///warehouse/demo.db/events/data/stray.parquet"
	key := f.Target().Key()
	if err := f.Store.PutMarks(context.Background(), []state.Mark{{Table: key, Path: protected, Size: 10, MarkedAt: time.Now()}}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Store.ProtectMarks(context.Background(), key, []string{protected}, time.Now()); err != nil {
		t.Fatal(err)
	}

	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(browser), chromedp.NoSandbox, chromedp.Flag("headless", true))
	actx, cancel := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancel()
	ctx, cancel := chromedp.NewContext(actx)
	defer cancel()
	ctx, cancel = context.WithTimeout(ctx, 30*time.Second)
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
	var list, runs, noncurrent string
	var shot []byte
	step := func(what string, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	_, err = chromedp.Run(ctx, chromedp.Navigate(f.url+"/"))
	step("open the page", err)
	_, err = chromedp.Run(ctx, chromedp.WaitVisible(`a[data-table="demo.events"]`))
	step("wait for the demo table", err)
	list, err = chromedp.Run(ctx, chromedp.Text("#tables"))
	step("read the table list", err)
	// The queue section renders its route: nothing queued yet, and this
	// server has no budgets.
	_, err = chromedp.Run(ctx, textContains("#queue", "nothing queued"))
	step("see the empty queue", err)
	_, err = chromedp.Run(ctx, textContains("#budgets", "no budgets"))
	step("see no budgets", err)
	_, err = chromedp.Run(ctx, chromedp.Click(`a[data-table="demo.events"]`))
	step("open the table", err)
	_, err = chromedp.Run(ctx, chromedp.WaitVisible(`#runs`))
	step("wait for its runs", err)
	runs, err = chromedp.Run(ctx, chromedp.Text("#runs"))
	step("read its runs", err)
	noncurrent, err = chromedp.Run(ctx, chromedp.Text("#detail"))
	step("read its detail", err)
	shot, err = chromedp.Run(ctx, chromedp.FullScreenshot(100))
	step("screenshot", err)

	// A run button queues the run and then shows its result: the queue
	// here has no worker, so the test runs the job as a worker would.
	_, err = chromedp.Run(ctx, chromedp.Click(`button[data-run="icebergSnapshotManagement"]`))
	step("click run", err)
	_, err = chromedp.Run(ctx, textContains("#run-result", "queued"))
	step("see it queued", err)
	if out, err := f.runner.Run(context.Background(), f.Target(), maintenance.SnapshotManagement, "api", jobs.Options{}); err != nil || out.Status != "Successful" {
		t.Fatalf("run: %+v %v", out, err)
	}
	_, err = chromedp.Run(ctx, textContains("#run-result", "icebergSnapshotManagement: Successful"))
	step("see its result", err)

	// The release button ends the protection.
	_, err = chromedp.Run(ctx, chromedp.Click(`button[data-path="`+protected+`"]`))
	step("click release", err)
	_, err = chromedp.Run(ctx, chromedp.Poll[bool](`document.querySelector("#detail h2") !== null && document.querySelector("#noncurrent") === null`))
	step("see it released", err)
	if marks, err := f.Store.Marks(context.Background(), key); err != nil || len(marks) != 0 {
		t.Errorf("after release: %+v %v", marks, err)
	}
	if dir := os.Getenv("ICEKEEPER_TEST_ARTIFACTS"); dir != "" {
		os.MkdirAll(dir, 0o755)
		path := filepath.Join(dir, "dashboard.png")
		if err := os.WriteFile(path, shot, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("screenshot: %s", path)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(consoleErrors) > 0 {
		t.Errorf("console errors: %v", consoleErrors)
	}
	if !strings.Contains(list, "local/demo.events") || !strings.Contains(list, "Successful") || !strings.Contains(list, "Not_Yet_Run") ||
		!strings.Contains(list, "icebergRecordExpiration") ||
		!regexp.MustCompile(`small files \d+/40`).MatchString(list) {
		t.Errorf("table list:\n%s", list)
	}
	// Figures are labelled values, not JSON.
	if !strings.Contains(runs, "icebergSnapshotManagement") || !strings.Contains(runs, "snapshots expired") || strings.Contains(runs, "{") {
		t.Errorf("runs:\n%s", runs)
	}
	if !strings.Contains(noncurrent, "noncurrent files") || !strings.Contains(noncurrent, "never: protected") {
		t.Errorf("detail:\n%s", noncurrent)
	}
}

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
