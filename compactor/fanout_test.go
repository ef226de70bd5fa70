package compactor

import (
	"context"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"

	"github.com/apache/iceberg-go"

	"github.com/icekeeper/icekeeper/internal/state"
	"github.com/icekeeper/icekeeper/internal/testkit/tableenv"
	"github.com/icekeeper/icekeeper/jobs"
)

// localFanout is the engine's Fanout in one process: every part goes
// through RunPart and JSON as on a replica, par at a time (1: one after
// the other, each passed on before the next starts), finishing in an order
// of their own. fail, when set, makes the parts it names fail. The
// engine's own (River, leases, kills) is tested with the daemon.
type localFanout struct {
	job    *Job
	target jobs.Target
	min    int
	par    int
	fail   func(index int) error
}

func (f *localFanout) MinParts() int { return f.min }

func (f *localFanout) Fan(ctx context.Context, parts []json.RawMessage, each func(jobs.PartResult) error) error {
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	results := make(chan jobs.PartResult, len(parts))
	sem := make(chan struct{}, max(f.par, 1))
	run := func(i int) jobs.PartResult {
		r := jobs.PartResult{Index: i}
		if f.fail != nil {
			r.Err = f.fail(i)
		}
		if r.Err == nil {
			raw, _ := json.Marshal(parts[i]) // the queue's round trip
			r.Output, r.Err = f.job.RunPart(ctx, f.target, raw)
		}
		return r
	}
	for _, i := range rand.Perm(len(parts)) {
		if f.par <= 1 {
			if err := each(run(i)); err != nil {
				return err
			}
			continue
		}
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			results <- run(i)
		})
	}
	if f.par <= 1 {
		return nil
	}
	for range parts {
		if err := each(<-results); err != nil {
			return err
		}
	}
	return nil
}

// A fanned-out run is a compaction like any: the groups are rewritten by
// RunPart from the planned snapshot, read back from their manifests and
// committed in batches; the visible rows are the same multiset, time
// travel holds, and no reachable file is missing. With
// deletes of both kinds, over several partitions, on both catalog paths.
func TestFanOut(t *testing.T) {
	spec := iceberg.NewPartitionSpec(tableenv.PF(2, 1000, "cat", iceberg.IdentityTransform{}))
	for _, c := range catalogEnvs {
		t.Run(c.name, func(t *testing.T) {
			e, tbl := c.env(t, tableenv.BaseSchema, spec, "2")
			tbl = e.Fill(tbl, 8, 150)
			files := -1
			if c.name == "sql" {
				files = tableenv.CountData(t, tbl.Location())
			}
			job := &Job{MinInputFiles: 2, BatchGroups: 2}
			e.opts.Fanout = &localFanout{job: job, target: e.Target(), min: 2, par: 3}
			fig := e.checkCompaction(job)
			if fig.GroupsFannedOut != fig.GroupsPlanned || fig.GroupsCommitted != fig.GroupsPlanned || fig.GroupsPlanned < 3 {
				t.Fatalf("%d of %d groups fanned out, %d committed; want all of at least 3", fig.GroupsFannedOut, fig.GroupsPlanned, fig.GroupsCommitted)
			}
			if fig.Commits < 2 || fig.DeleteFilesRemoved == 0 {
				t.Fatalf("%d commits, %d delete files removed; want batches of 2 groups and the deletes gone", fig.Commits, fig.DeleteFilesRemoved)
			}
			if files >= 0 {
				if n := tableenv.CountData(t, tbl.Location()); n != files+fig.OutputFiles {
					t.Fatalf("%d data files, want the %d before and the %d committed: outputs left behind", n, files, fig.OutputFiles)
				}
			}
		})
	}
}

// Below the minimum, the run rewrites here.
func TestFanOutBelowMinimum(t *testing.T) {
	e, _ := smallTable(t)
	job := &Job{MinInputFiles: 2}
	e.opts.Fanout = &localFanout{job: job, target: e.Target(), min: 1000}
	if fig := e.checkCompaction(job); fig.GroupsFannedOut != 0 {
		t.Fatalf("%d groups fanned out under the minimum", fig.GroupsFannedOut)
	}
}

// A group that fails for good fails the run. The batches committed
// before it stay, exact; what the groups not committed wrote is removed
// (parts run one at a time here: one that finishes after the failure, on
// another replica, leaves its files to unreferenced file removal).
func TestFanOutGroupFails(t *testing.T) {
	spec := iceberg.NewPartitionSpec(tableenv.PF(2, 1000, "cat", iceberg.IdentityTransform{}))
	e, tbl := newEnv(t, tableenv.BaseSchema, spec, "2")
	tbl = e.Fill(tbl, 8, 150)
	before := e.Rows(tbl, 0)
	dataFiles := tableenv.CountData(t, tbl.Location())
	job := &Job{MinInputFiles: 2, BatchGroups: 1}
	var mu sync.Mutex
	seen := 0
	e.opts.Fanout = &localFanout{job: job, target: e.Target(), min: 2, fail: func(int) error {
		mu.Lock()
		defer mu.Unlock()
		if seen++; seen == 3 {
			return errors.New("injected: the part's attempts are spent")
		}
		return nil
	}}
	out, fig := e.compact(job)
	if out.Status != state.Failed || !strings.Contains(out.FailureMessage, "injected") || !strings.Contains(out.FailureMessage, "committed before stay") {
		t.Fatalf("%s: %s", out.Status, out.FailureMessage)
	}
	if fig.GroupsCommitted != 2 || fig.Commits != 2 {
		t.Fatalf("%d groups committed in %d commits before the failure, want 2 in 2", fig.GroupsCommitted, fig.Commits)
	}
	after := e.Load()
	if fp := e.Rows(after, 0); !fp.Equal(before) {
		t.Fatalf("visible rows changed: %v, want %v", fp, before)
	}
	if n := tableenv.CountData(t, after.Location()); n != dataFiles+fig.OutputFiles {
		t.Fatalf("%d data files, want the %d before and the %d committed: outputs left behind", n, dataFiles, fig.OutputFiles)
	}
}
