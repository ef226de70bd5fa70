package compactor

import (
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go"

	"github.com/icekeeper/icekeeper/internal/state"
	"github.com/icekeeper/icekeeper/internal/testkit"
	"github.com/icekeeper/icekeeper/internal/testkit/servers"
	"github.com/icekeeper/icekeeper/internal/testkit/tableenv"
	"github.com/icekeeper/icekeeper/jobs"
	"github.com/icekeeper/icekeeper/maintenance"
	"github.com/icekeeper/icekeeper/planner"
)

// unchangedEnv is a compacted table on local disk with an open counter
// on its metadata directory, where metadata.json files, manifest lists
// and manifests live.
type unchangedEnv struct {
	*env
	opens *testkit.Opens
	// fullEvery is the runner's backstop (0: the default).
	fullEvery time.Duration
	// compacted is the run that compacted the table and settled it.
	compacted int64
}

func newUnchangedEnv(t *testing.T) *unchangedEnv {
	e, tbl := newEnv(t, tableenv.BaseSchema, *iceberg.UnpartitionedSpec, "2")
	e.Fill(tbl, 6, 50)
	e.checkCompaction(&Job{})
	runs, err := e.Store.Runs(e.Ctx, e.Target().Key(), maintenance.Compaction, 1)
	if err != nil || len(runs) != 1 {
		t.Fatal(runs, err)
	}
	return &unchangedEnv{env: e, opens: testkit.WatchOpens(t, strings.TrimPrefix(e.Load().Location(), "file://")+"/metadata"), compacted: runs[0].ID}
}

// check runs compaction at now and returns its figures, the run's ID
// and what it opened.
func (u *unchangedEnv) check(now time.Time) (*Figures, int64, testkit.OpenCounts) {
	u.T.Helper()
	u.opens.Take()
	r := u.Runner((&Job{}).Definition())
	r.FullEvery = u.fullEvery
	out, err := r.Run(u.Ctx, u.Target(), maintenance.Compaction, "test", jobs.Options{Now: now})
	if err != nil || out.Status != state.Successful {
		u.T.Fatalf("compaction: %v %s %s", err, out.Status, out.FailureMessage)
	}
	runs, err := u.Store.Runs(u.Ctx, u.Target().Key(), maintenance.Compaction, 1)
	if err != nil || len(runs) != 1 {
		u.T.Fatalf("runs: %v %v", runs, err)
	}
	return out.Figures.(*Figures), runs[0].ID, u.opens.Take()
}

// settle runs compaction until a run skips, and returns the run of the
// evaluation it rested on.
func (u *unchangedEnv) settle(t *testing.T, now time.Time) int64 {
	t.Helper()
	for range 4 {
		if fig, _, _ := u.check(now); fig.Unchanged.Skip {
			return fig.Unchanged.SinceRun
		}
	}
	t.Fatal("compaction does not settle")
	return 0
}

// full asserts that the run evaluated in full for rule: it read the
// manifest list and manifests.
func full(t *testing.T, fig *Figures, opens testkit.OpenCounts, rule string) {
	t.Helper()
	if fig.Unchanged == nil || fig.Unchanged.Skip || fig.Unchanged.Rule != rule {
		t.Fatalf("verdict %+v, want a full evaluation for %q", fig.Unchanged, rule)
	}
	if opens.ManifestLists == 0 || opens.Manifests == 0 {
		t.Fatalf("a full evaluation opened %+v: no manifest list or manifest read", opens)
	}
}

// skipped asserts that the run skipped, resting on run since, and read
// one metadata.json and nothing else.
func skipped(t *testing.T, fig *Figures, opens testkit.OpenCounts, since int64) {
	t.Helper()
	if fig.Unchanged == nil || !fig.Unchanged.Skip || fig.Unchanged.Rule != planner.RuleUnchanged || fig.Unchanged.SinceRun != since {
		t.Fatalf("verdict %+v, want %q since run %d", fig.Unchanged, planner.RuleUnchanged, since)
	}
	if opens != (testkit.OpenCounts{Metadata: 1}) {
		t.Fatalf("an unchanged check opened %+v, want one metadata.json and nothing else", opens)
	}
	if !strings.Contains(fig.Text(), "skipped (skip: unchanged): unchanged since run") {
		t.Fatalf("the run's text does not say it skipped and why:\n%s", fig.Text())
	}
}

// On an unchanged table, the second compaction check opens one
// metadata.json and no manifest list or manifest; a writer's commit,
// changed settings and the backstop each bring a full evaluation back.
func TestUnchangedCompaction(t *testing.T) {
	u := newUnchangedEnv(t)
	now := time.Now()
	// The compaction that committed left a table it has nothing more to
	// do on, and said so: the next check rests on it.
	first := u.compacted
	fig, _, opens := u.check(now)
	skipped(t, fig, opens, first)
	// It was right: a full evaluation of the table (a dry run, which
	// evaluates whatever the verdict, and records nothing) plans nothing.
	u.opens.Take()
	dry, err := u.Runner((&Job{}).Definition()).Run(u.Ctx, u.Target(), maintenance.Compaction, "test", jobs.Options{DryRun: true, Now: now})
	if fig := dry.Figures.(*Figures); err != nil || u.opens.Take().Manifests == 0 || fig.GroupsPlanned != 0 || !settled(fig, dataStage{}) {
		t.Fatalf("a full evaluation after the settling compaction planned %d groups (%v):\n%s", fig.GroupsPlanned, err, fig.Text())
	}
	fig, _, opens = u.check(now.Add(time.Minute))
	skipped(t, fig, opens, first)
	// A skipping run carries the evaluation it rested on.
	fig, _, opens = u.check(now.Add(2 * time.Minute))
	skipped(t, fig, opens, first)

	t.Run("a writer commits", func(t *testing.T) {
		// As many files as a rewrite needs: fewer, and the snapshot's
		// summary totals settle the table (TestSummaryTotalsCompaction).
		for range planner.DefaultMinInput {
			u.Append(u.Load(), 10)
		}
		fig, _, opens := u.check(now.Add(3 * time.Minute))
		full(t, fig, opens, planner.RuleSnapshotChanged)
		id := u.settle(t, now.Add(4*time.Minute))
		fig, _, opens = u.check(now.Add(5 * time.Minute))
		skipped(t, fig, opens, id)
	})
	t.Run("settings change", func(t *testing.T) {
		first, _, _ := u.check(now.Add(6 * time.Minute))
		if !first.Unchanged.Skip {
			t.Fatalf("not settled before the settings change: %+v", first.Unchanged)
		}
		if err := u.Store.PutTableConfig(u.Ctx, u.Target().Key(), maintenance.Compaction, maintenance.Config{
			Status: maintenance.Enabled, Settings: &maintenance.CompactionSettings{TargetFileSizeMB: maintenance.Int(2)}}); err != nil {
			t.Fatal(err)
		}
		fig, id, opens := u.check(now.Add(7 * time.Minute))
		full(t, fig, opens, planner.RuleSettingsChanged)
		if fig.TargetFileSizeMB != 2 {
			t.Fatalf("the full run planned toward %d MB, want 2", fig.TargetFileSizeMB)
		}
		if fig.GroupsPlanned > 0 {
			id = u.settle(t, now.Add(8*time.Minute))
		}
		fig, _, opens = u.check(now.Add(9 * time.Minute))
		skipped(t, fig, opens, id)
	})
	t.Run("backstop", func(t *testing.T) {
		fig, since, _ := u.check(now.Add(10 * time.Minute))
		if !fig.Unchanged.Skip {
			t.Fatalf("not settled before the backstop: %+v", fig.Unchanged)
		}
		since = fig.Unchanged.SinceRun
		later := now.Add(10*time.Minute + jobs.DefaultFullEvery)
		fig, id, opens := u.check(later)
		full(t, fig, opens, planner.RuleBackstop)
		if fig.Unchanged.SinceRun != since {
			t.Fatalf("the backstop's verdict names run %d, want %d", fig.Unchanged.SinceRun, since)
		}
		// The backstop's full run is the new evaluation: the backstop
		// counts from it.
		fig, _, opens = u.check(later.Add(time.Hour))
		skipped(t, fig, opens, id)
	})
	t.Run("rule off", func(t *testing.T) {
		u.fullEvery = -1
		fig, _, opens := u.check(now.Add(11 * time.Minute))
		if fig.Unchanged != nil || opens.ManifestLists == 0 {
			t.Fatalf("with the rule off, a run had verdict %+v and opened %+v", fig.Unchanged, opens)
		}
	})
}

// A writer's commit that leaves the table with fewer files than a rewrite
// needs, no delete files and one partition spec is settled by the
// snapshot's summary totals: one metadata.json read, the last full
// evaluation carried on, so that the backstop still comes; a dry run
// shows the verdict and plans; enough files bring a full evaluation back.
func TestSummaryTotalsCompaction(t *testing.T) {
	u := newUnchangedEnv(t)
	now := time.Now()
	first := u.compacted
	fig, _, opens := u.check(now)
	skipped(t, fig, opens, first)

	summarised := func(fig *Figures, opens testkit.OpenCounts) {
		t.Helper()
		if fig.Unchanged == nil || !fig.Unchanged.Skip || fig.Unchanged.Rule != planner.RuleSummary || fig.Unchanged.SinceRun != first {
			t.Fatalf("verdict %+v, want %q resting on run %d", fig.Unchanged, planner.RuleSummary, first)
		}
		if opens != (testkit.OpenCounts{Metadata: 1}) {
			t.Fatalf("a check settled by the totals opened %+v, want one metadata.json", opens)
		}
		if !strings.Contains(fig.Text(), "skipped (skip: summary totals): snapshot") {
			t.Fatalf("the run's text does not say why it skipped:\n%s", fig.Text())
		}
	}
	u.Append(u.Load(), 10) // two files now
	fig, _, opens = u.check(now.Add(time.Minute))
	summarised(fig, opens)
	fig, _, opens = u.check(now.Add(2 * time.Minute))
	summarised(fig, opens)
	ev, ok, err := u.Store.LastEvaluation(u.Ctx, u.Target().Key(), maintenance.Compaction)
	if err != nil || !ok || ev.RunID != first {
		t.Fatalf("the evaluation carried on is run %d (%v %v), want %d", ev.RunID, ok, err, first)
	}

	dry, err := u.Runner((&Job{}).Definition()).Run(u.Ctx, u.Target(), maintenance.Compaction, "test", jobs.Options{DryRun: true, Now: now.Add(3 * time.Minute)})
	if err != nil {
		t.Fatal(err)
	}
	if d := dry.Figures.(*Figures); d.Unchanged == nil || d.Unchanged.Rule != planner.RuleSummary || d.GroupsPlanned != 0 ||
		!strings.Contains(d.Text(), "a run would skip") {
		t.Fatalf("dry run: %+v, %d groups\n%s", d.Unchanged, d.GroupsPlanned, d.Text())
	}

	// Once the last full evaluation is the backstop's age, the table is
	// read in full, whatever the totals say (the verdict names what
	// changed since that evaluation, as it does without the totals).
	fig, _, opens = u.check(now.Add(jobs.DefaultFullEvery + time.Hour))
	full(t, fig, opens, planner.RuleSnapshotChanged)
	fig, _, opens = u.check(now.Add(jobs.DefaultFullEvery + 90*time.Minute))
	if fig.Unchanged == nil || fig.Unchanged.Rule != planner.RuleUnchanged || opens != (testkit.OpenCounts{Metadata: 1}) {
		t.Fatalf("after the backstop's full run: %+v, opened %+v", fig.Unchanged, opens)
	}

	for range planner.DefaultMinInput {
		u.Append(u.Load(), 10)
	}
	fig, _, opens = u.check(now.Add(jobs.DefaultFullEvery + 2*time.Hour))
	full(t, fig, opens, planner.RuleSnapshotChanged)
	if fig.GroupsPlanned == 0 {
		t.Fatal("enough small files, and no group planned")
	}
}

// A dry run shows the verdict, and still plans: on a fresh table with no
// history as on a settled one.
func TestUnchangedDryRun(t *testing.T) {
	e, tbl := newEnv(t, tableenv.BaseSchema, *iceberg.UnpartitionedSpec, "2")
	e.Fill(tbl, 6, 50)
	dry := func() *Figures {
		t.Helper()
		out, err := e.Runner((&Job{}).Definition()).Run(e.Ctx, e.Target(), maintenance.Compaction, "test", jobs.Options{DryRun: true})
		if err != nil || out.Status != state.Successful {
			t.Fatalf("dry run: %v %+v", err, out)
		}
		return out.Figures.(*Figures)
	}
	if fig := dry(); fig.Unchanged == nil || fig.Unchanged.Rule != planner.RuleFirst || fig.GroupsPlanned == 0 ||
		!strings.Contains(fig.Text(), "unchanged rule: "+planner.RuleFirst) {
		t.Fatalf("dry run on a fresh table: %+v\n%s", fig.Unchanged, fig.Text())
	}
	e.checkCompaction(&Job{})
	e.compact(&Job{})
	fig := dry()
	if fig.Unchanged == nil || !fig.Unchanged.Skip || !strings.Contains(fig.Text(), "a run would skip") {
		t.Fatalf("dry run on a settled table: %+v\n%s", fig.Unchanged, fig.Text())
	}
}

// BenchmarkUnchangedCheckS3 counts the S3 requests of a compaction run on
// an unchanged, compacted table (SQL catalog in a local SQLite file, data
// and metadata on the test S3 server behind a counting proxy): with the
// unchanged rule, and evaluated in full at every run as before the rule
// (its backstop set to a nanosecond).
//
//	go test -run '^$' -bench UnchangedCheckS3 -benchtime 5x ./compactor
func BenchmarkUnchangedCheckS3(b *testing.B) {
	counter, proxied := servers.S3(b).Counted(b)
	home := b.TempDir()
	e, tbl := newEnvWith(b, tableenv.SQLOnS3(home, proxied), home, tableenv.BaseSchema, *iceberg.UnpartitionedSpec, "2")
	e.Fill(tbl, 20, 50)
	run := func(fullEvery time.Duration) map[string]int {
		b.Helper()
		r := e.Runner((&Job{}).Definition())
		r.FullEvery = fullEvery
		counter.Take()
		out, err := r.Run(e.Ctx, e.Target(), maintenance.Compaction, "test", jobs.Options{})
		if err != nil || out.Status != state.Successful {
			b.Fatalf("compaction: %v %s %s", err, out.Status, out.FailureMessage)
		}
		return counter.Take()
	}
	first := run(0) // compacts
	run(0)          // evaluates the compacted table in full: later runs rest on it
	var rule, full map[string]int
	for b.Loop() {
		rule = run(0)
		full = run(time.Nanosecond)
	}
	b.Logf("requests: first run %v, unchanged check %v, full evaluation %v", first, rule, full)
	b.ReportMetric(float64(servers.Total(rule)), "requests/unchanged-check")
	b.ReportMetric(float64(servers.Total(full)), "requests/full-evaluation")
}

// A compaction whose own commit leaves the manifest rewrite due does not
// settle the table, though its data files are: the next check evaluates
// in full and merges them.
func TestCompactionLeavingManifestsDue(t *testing.T) {
	e, tbl := newEnv(t, tableenv.BaseSchema, *iceberg.UnpartitionedSpec, "2")
	e.Fill(tbl, 6, 50)
	e.Defaults.Knobs.MinManifestsToRewrite = 2
	out, fig := e.compact(&Job{})
	if out.Status != state.Successful || fig.GroupsCommitted == 0 {
		t.Fatalf("compaction: %s %s, %d groups committed", out.Status, out.FailureMessage, fig.GroupsCommitted)
	}
	if out.Evaluation != nil {
		t.Fatalf("the run settled a table whose manifest rewrite is due: %+v", out.Evaluation)
	}
	next, _ := e.compact(&Job{})
	if f := next.Figures.(*Figures); f.Unchanged == nil || f.Unchanged.Skip {
		t.Fatalf("the next check skipped: %+v", f.Unchanged)
	}
}
