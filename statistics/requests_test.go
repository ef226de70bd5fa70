package statistics

import (
	"net/url"
	"os"
	"strings"
	"testing"

	"github.com/icekeeper/icekeeper/internal/testkit/servers"
	"github.com/icekeeper/icekeeper/internal/testkit/tableenv"
	"github.com/icekeeper/icekeeper/maintenance"
)

// A full computation on S3 reads each small data file with one request,
// its footer included, a few files at a time, and its statistics are
// right (checkTable); the next run, after an append, reads the one new
// file.
func TestRequestsPerDataFileOnS3(t *testing.T) {
	counter, srv := servers.S3(t).Counted(t)
	home := t.TempDir()
	e, tbl := newEnvWith(t, tableenv.SQLOnS3(home, srv), home)
	const files = 12
	for range files {
		tbl = e.gen.append(t, e.Ctx, tbl, 2_000)
	}
	tasks, err := tbl.Scan().PlanFiles(e.Ctx)
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, task := range tasks {
		df := task.File
		u, err := url.Parse(df.FilePath())
		if err != nil || u.Host != srv.Bucket {
			t.Fatalf("%s is not in bucket %s", df.FilePath(), srv.Bucket)
		}
		paths = append(paths, "/"+srv.Bucket+"/"+strings.TrimPrefix(u.Path, "/"))
	}
	counter.TakePaths()
	fig := e.stats()
	got := counter.TakePaths()
	var reqs, most int
	for _, p := range paths {
		reqs += got[p]
		most = max(most, got[p])
	}
	t.Logf("%d requests to %d data files; %d in all", reqs, len(paths), servers.Total(got))
	if fig.DataFilesRead != files || reqs != files || most != 1 {
		t.Errorf("%d files read with %d requests (at most %d for one), want %d with one each", fig.DataFilesRead, reqs, most, files)
	}
	e.checkTable(t)
	e.gen.append(t, e.Ctx, e.Load(), 100)
	if fig := e.stats(); fig.DataFilesRead != 1 || fig.Full {
		t.Errorf("after an append: %d files read, full %v", fig.DataFilesRead, fig.Full)
	}
	e.checkTable(t)
}

// A data file missing from storage among others fetched ahead fails the
// run, naming it, and nothing is committed; the files after it are not
// decoded.
func TestMissingDataFileFailsTheRun(t *testing.T) {
	e, tbl := newEnv(t)
	for range 8 {
		tbl = e.gen.append(t, e.Ctx, tbl, 200)
	}
	tasks, err := tbl.Scan().PlanFiles(e.Ctx)
	if err != nil {
		t.Fatal(err)
	}
	gone := tasks[3].File.FilePath()
	if err := os.Remove(strings.TrimPrefix(gone, "file://")); err != nil {
		t.Fatal(err)
	}
	out, err := e.runner.Run(e.Ctx, e.Target(), maintenance.Statistics, "test", jobsNow())
	if err != nil {
		t.Fatal(err)
	}
	if out.Status != "Failed" || !strings.Contains(out.FailureMessage, gone) {
		t.Fatalf("run with %s missing: %s (%s)", gone, out.Status, out.FailureMessage)
	}
	for f := range e.Load().Metadata().Statistics() {
		t.Fatalf("a failed run committed %s", f.StatisticsPath)
	}
}
