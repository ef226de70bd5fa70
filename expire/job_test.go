package expire

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/icekeeper/icekeeper/internal/commit"
	"github.com/icekeeper/icekeeper/internal/demo"
	"github.com/icekeeper/icekeeper/internal/state"
	"github.com/icekeeper/icekeeper/internal/testkit"
	"github.com/icekeeper/icekeeper/internal/testkit/tablecheck"
	"github.com/icekeeper/icekeeper/jobs"
	"github.com/icekeeper/icekeeper/maintenance"
)

// fixture is the demo table with a snapshot-management job.
type fixture struct {
	*testkit.DemoTable
	t   *testing.T
	ctx context.Context
	job *Job
}

func newFixture(t *testing.T, appends int) *fixture {
	d := testkit.NewDemoTable(t, demo.Options{Appends: appends})
	return &fixture{DemoTable: d, t: t, ctx: d.Ctx, job: &Job{Retry: &commit.Policy{Retries: 8, MinWait: time.Millisecond, MaxWait: time.Millisecond, Timeout: time.Minute}}}
}

func (f *fixture) load() *table.Table { return f.Load() }

func (f *fixture) run(opts jobs.Options) (jobs.Outcome, *Figures) {
	out := f.Run(f.job.Definition(), opts)
	fig, _ := out.Figures.(*Figures)
	return out, fig
}

func (f *fixture) appendRows(n int) error { return testkit.AppendRows(f.ctx, f.Bucket, f.ID, n) }

// Expiring the demo's old snapshots keeps every kept snapshot's rows
// exactly, the current rows exactly, and records the run.
func TestDemoExpiration(t *testing.T) {
	f := newFixture(t, 30)
	before := f.load()
	out, dry := f.run(jobs.Options{DryRun: true})
	if out.Status != state.Successful || dry.SnapshotsExpired == 0 || dry.SnapshotsKept == 0 {
		t.Fatalf("dry run: %+v %+v", out, dry)
	}
	if after := f.load(); after.MetadataLocation() != before.MetadataLocation() {
		t.Fatal("dry run changed the table")
	}
	if runs, _ := f.Store.Runs(f.ctx, f.Target().Key(), maintenance.SnapshotManagement, 10); len(runs) != 0 {
		t.Fatalf("dry run was recorded: %v", runs)
	}
	kept := map[int64]tablecheck.Fingerprint{}
	for id := range dry.Decision.Kept {
		fp, err := tablecheck.Rows(f.ctx, before, id)
		if err != nil {
			t.Fatal(err)
		}
		kept[id] = fp
	}

	out, fig := f.run(jobs.Options{})
	if out.Status != state.Successful || fig.SnapshotsExpired != dry.SnapshotsExpired || fig.CommitAttempts != 1 {
		t.Fatalf("run: %+v %+v", out, fig)
	}
	if fig.MetadataBytesAfter >= fig.MetadataBytesBefore {
		t.Errorf("metadata grew: %d → %d", fig.MetadataBytesBefore, fig.MetadataBytesAfter)
	}
	after := f.load()
	if got := len(after.Metadata().Snapshots()); got != len(kept) {
		t.Fatalf("%d snapshots left, want %d", got, len(kept))
	}
	for id, want := range kept {
		got, err := tablecheck.Rows(f.ctx, after, id)
		if err != nil {
			t.Fatalf("time travel to kept snapshot %d: %v", id, err)
		}
		if !got.Equal(want) {
			t.Fatalf("snapshot %d: %v after, %v before", id, got, want)
		}
	}
	for _, e := range dry.Decision.Expire {
		if after.SnapshotByID(e.SnapshotID) != nil {
			t.Fatalf("snapshot %d still there", e.SnapshotID)
		}
	}
	last, err := f.Store.LastRuns(f.ctx, f.Target().Key())
	if err != nil {
		t.Fatal(err)
	}
	r := last[maintenance.SnapshotManagement]
	var rec Figures
	if r.Status != state.Successful || json.Unmarshal(r.Metrics, &rec) != nil || rec.SnapshotsExpired != fig.SnapshotsExpired {
		t.Fatalf("recorded run %+v", r)
	}
	// A second run has nothing left to do and changes nothing.
	loc := after.MetadataLocation()
	if out, fig := f.run(jobs.Options{}); out.Status != state.Successful || fig.SnapshotsExpired != 0 || f.load().MetadataLocation() != loc {
		t.Fatalf("second run: %+v %+v", out, fig)
	}
}

func TestNowInFutureExpiresMore(t *testing.T) {
	f := newFixture(t, 20)
	_, now := f.run(jobs.Options{DryRun: true})
	_, later := f.run(jobs.Options{DryRun: true, Now: time.Now().Add(60 * 24 * time.Hour)})
	if later.SnapshotsExpired <= now.SnapshotsExpired || later.SnapshotsKept != 1 {
		t.Fatalf("now: %d expired, +60d: %d expired, %d kept", now.SnapshotsExpired, later.SnapshotsExpired, later.SnapshotsKept)
	}
}

func TestGCDisabled(t *testing.T) {
	f := newFixture(t, 10)
	tx := f.load().NewTransaction()
	if err := tx.SetProperties(iceberg.Properties{"gc.enabled": "false"}); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Commit(f.ctx); err != nil {
		t.Fatal(err)
	}
	loc := f.load().MetadataLocation()
	out, _ := f.run(jobs.Options{})
	if out.Status != state.Failed || out.FailureMessage != maintenance.GCDisabledMessage {
		t.Fatalf("outcome %+v", out)
	}
	if f.load().MetadataLocation() != loc {
		t.Fatal("table changed")
	}
}

func TestDisabled(t *testing.T) {
	f := newFixture(t, 10)
	k := f.Target().Key()
	if err := f.Store.PutTableConfig(f.ctx, k, maintenance.SnapshotManagement, maintenance.Config{Status: maintenance.Disabled}); err != nil {
		t.Fatal(err)
	}
	loc := f.load().MetadataLocation()
	if out, _ := f.run(jobs.Options{}); out.Status != state.Disabled || f.load().MetadataLocation() != loc {
		t.Fatalf("disabled run: %+v", out)
	}
}

// A writer commits between our decision and our commit: the commit must
// fail, and the job must decide again on the new state and succeed.
func TestConflictRetries(t *testing.T) {
	f := newFixture(t, 20)
	rowsBefore, err := tablecheck.Rows(f.ctx, f.load(), 0)
	if err != nil {
		t.Fatal(err)
	}
	f.job.beforeCommit = func(attempt int) {
		if attempt == 1 {
			if err := f.appendRows(7); err != nil {
				t.Fatal(err)
			}
		}
	}
	out, fig := f.run(jobs.Options{})
	if out.Status != state.Successful || fig.CommitAttempts != 2 {
		t.Fatalf("outcome %+v, figures %+v", out, fig)
	}
	rows, err := tablecheck.Rows(f.ctx, f.load(), 0)
	if err != nil {
		t.Fatal(err)
	}
	if rows.Rows != rowsBefore.Rows+7 {
		t.Fatalf("rows %d, want %d: the writer's commit was lost", rows.Rows, rowsBefore.Rows+7)
	}

	// A table that never holds still fails cleanly after MaxAttempts.
	f2 := newFixture(t, 20)
	f2.job.Retry = &commit.Policy{Retries: 2, Timeout: time.Minute}
	f2.job.beforeCommit = func(int) {
		if err := f2.appendRows(1); err != nil {
			t.Fatal(err)
		}
	}
	out, fig = f2.run(jobs.Options{})
	if out.Status != state.Failed || out.FailureMessage != commit.MsgStaleMetadata || fig.CommitAttempts != 3 {
		t.Fatalf("outcome %+v, figures %+v", out, fig)
	}
}

// A streaming writer appends while expiration runs repeatedly: no append
// is lost and every expiration run ends Successful or with S3 Tables'
// stale-metadata message, never anything else.
func TestConcurrentWriter(t *testing.T) {
	f := newFixture(t, 20)
	base, err := tablecheck.Rows(f.ctx, f.load(), 0)
	if err != nil {
		t.Fatal(err)
	}
	var appended atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			if err := f.appendRows(3); err != nil {
				t.Error(err)
				return
			}
			appended.Add(3)
			time.Sleep(10 * time.Millisecond)
		}
	}()
	for i := 0; i < 5; i++ {
		out, _ := f.run(jobs.Options{Now: time.Now().Add(time.Duration(i) * 24 * time.Hour)})
		if out.Status != state.Successful && out.FailureMessage != commit.MsgStaleMetadata {
			t.Errorf("run %d: %+v", i, out)
		}
	}
	close(stop)
	wg.Wait()
	rows, err := tablecheck.Rows(f.ctx, f.load(), 0)
	if err != nil {
		t.Fatal(err)
	}
	if rows.Rows != base.Rows+appended.Load() {
		t.Fatalf("rows %d, want %d + %d", rows.Rows, base.Rows, appended.Load())
	}
}

// Metadata that cannot be read fails the run naming the file; nothing changes.
func TestUnreadableMetadata(t *testing.T) {
	f := newFixture(t, 10)
	loc := f.load().MetadataLocation()
	path := strings.TrimPrefix(loc, "file://")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte("{not json"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, _ := f.run(jobs.Options{})
	if out.Status != state.Failed || !strings.Contains(out.FailureMessage, "demo.events") {
		t.Fatalf("outcome %+v", out)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if f.load().MetadataLocation() != loc {
		t.Fatal("table changed")
	}
}

// Beside a writer that appends a batch every 100 ms, every expiration run
// commits, and no row the writer committed is lost.
func TestBesideStreamingWriter(t *testing.T) {
	f := newFixture(t, 30)
	f.job.Retry = nil // icekeeper's default policy, as users get it
	want, err := tablecheck.Rows(f.ctx, f.load(), 0)
	if err != nil {
		t.Fatal(err)
	}
	w := &testkit.Writer{
		Load:     func(ctx context.Context) (*table.Table, error) { return f.Bucket.LoadTable(ctx, f.ID) },
		Interval: 100 * time.Millisecond, Rows: 50, NextID: 1 << 40, Seed: 5,
	}
	stop := w.Start(f.ctx)
	for i := 0; i < 5; i++ {
		w.Await(5)
		// Each run a day later, so that each has snapshots to expire.
		out, fig := f.run(jobs.Options{Now: time.Now().Add(time.Duration(6+i) * 24 * time.Hour)})
		if out.Status != state.Successful || fig.SnapshotsExpired == 0 {
			t.Fatalf("run %d beside the writer: %s %s, %d expired", i, out.Status, out.FailureMessage, fig.SnapshotsExpired)
		}
		t.Logf("run %d: %d of %d snapshots expired in %d attempts (%d lost)", i, fig.SnapshotsExpired, fig.SnapshotsBefore, fig.CommitAttempts, fig.Conflicts)
	}
	if err := stop(); err != nil {
		t.Fatalf("the writer failed: %v", err)
	}
	st := w.Stats()
	t.Logf("writer: %d batches, %d retries", st.Batches, st.Retries)
	want.Add(w.Written())
	if got, err := tablecheck.Rows(f.ctx, f.load(), 0); err != nil || !got.Equal(want) {
		t.Fatalf("rows %v, want %v (%v)", got, want, err)
	}
}

// A manifest list cut short reads cleanly with fewer manifests; pruning
// unused partition specs from it would remove a spec the lost manifests
// use. The list is checked against its snapshot's summary: the run fails
// naming it and commits nothing.
func TestDamagedManifestList(t *testing.T) {
	f := newFixture(t, 30)
	f.Defaults.Knobs.PruneUnusedSchemasAndSpecs = true
	before := f.load()
	list := before.CurrentSnapshot().ManifestList
	if _, err := testkit.Damage(f.ctx, before, list, func(b []byte) ([]byte, error) { return testkit.CutAfterBlocks(b, 0) }); err != nil {
		t.Fatal(err)
	}
	out, _ := f.run(jobs.Options{})
	if out.Status != state.Failed || !strings.Contains(out.FailureMessage, list) || !strings.Contains(out.FailureMessage, "total-data-files") {
		t.Fatalf("snapshot management over a damaged manifest list: %+v", out)
	}
	if f.load().MetadataLocation() != before.MetadataLocation() {
		t.Fatal("table changed")
	}
}
