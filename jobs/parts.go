package jobs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/icekeeper/icekeeper/internal/bucket"
	"github.com/icekeeper/icekeeper/internal/state"
	"github.com/icekeeper/icekeeper/maintenance"
)

// A run of a large table fans its parts out: its job (the coordinator)
// plans, queues one part job per piece of work in River's parts queue,
// which the workers of every replica take, and reads each part's output
// back as it finishes. The coordinator keeps its table lease throughout;
// a part takes a lease of its own, so that a part whose replica died is
// rescued by the sweep like any run.

// partsQueue is the River queue of parts. It has workers of its own, so
// that coordinators waiting for their parts can never take every worker a
// part needs.
const partsQueue = "parts"

// PartArgs is one part of a run that its job fanned out: a River job any
// replica may take.
type PartArgs struct {
	Bucket    string              `json:"bucket"`
	Namespace string              `json:"namespace"`
	Name      string              `json:"name"`
	Type      maintenance.JobType `json:"type"`
	// Coordinator is the holder of the coordinating job's table lease
	// (replica/job/attempt). A part whose coordinator no longer holds the
	// lease is not worth doing: nobody would commit its output.
	Coordinator string          `json:"coordinator"`
	Index       int             `json:"index"`
	Part        json.RawMessage `json:"part"`
}

// Kind names the part in River's tables.
func (PartArgs) Kind() string { return "icekeeper.part" }

// partAttempts bounds the tries of one part. A rescue counts as one.
const partAttempts = 5

// InsertOpts puts parts in their queue.
func (PartArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: partsQueue, MaxAttempts: partAttempts}
}

// Key is the part's table.
func (a PartArgs) Key() state.TableKey {
	return state.TableKey{Bucket: a.Bucket, Namespace: a.Namespace, Name: a.Name}
}

// Fanout runs the parts of one run on the workers of every replica. The
// engine hands one to the jobs it runs (Options.Fanout).
type Fanout interface {
	// MinParts is the fewest parts a run must have to fan out.
	MinParts() int
	// Fan queues the parts and calls each with every part's result as it
	// finishes, in the order they finish, one call at a time. It returns
	// when all have been passed on, or with the first error of each, or
	// when ctx ends; parts not finished by then are cancelled.
	Fan(ctx context.Context, parts []json.RawMessage, each func(PartResult) error) error
}

// PartResult is how one part ended: its output, or why it failed.
type PartResult struct {
	Index  int
	Output json.RawMessage
	Err    error
}

// fanout is the engine's Fanout for one run.
type fanout struct {
	e           *Engine
	key         state.TableKey
	typ         maintenance.JobType
	coordinator string
}

func (f *fanout) MinParts() int { return f.e.FanOutParts }

func (f *fanout) Fan(ctx context.Context, parts []json.RawMessage, each func(PartResult) error) error {
	const batch = 500
	index := map[int64]int{}
	// Whatever ends the fan, the parts still queued or running are of no
	// use to anyone.
	defer func() {
		for id := range index {
			_, _ = f.e.client.JobCancel(context.WithoutCancel(ctx), id)
		}
	}()
	for i := 0; i < len(parts); i += batch {
		params := make([]river.InsertManyParams, 0, batch)
		for j, p := range parts[i:min(i+batch, len(parts))] {
			params = append(params, river.InsertManyParams{Args: PartArgs{Bucket: f.key.Bucket, Namespace: f.key.Namespace, Name: f.key.Name,
				Type: f.typ, Coordinator: f.coordinator, Index: i + j, Part: p}})
		}
		res, err := f.e.client.InsertMany(ctx, params)
		if err != nil {
			return fmt.Errorf("queue %d parts of %s on %s: %w", len(params), f.typ, f.key, err)
		}
		for j, r := range res {
			index[r.Job.ID] = i + j
		}
	}
	// Read the parts more often than workers poll for jobs: the last ones
	// in hold up the commit.
	t := time.NewTicker(min(f.e.Poll, 250*time.Millisecond))
	defer t.Stop()
	for len(index) > 0 {
		select {
		case <-ctx.Done():
			return context.Cause(ctx)
		case <-t.C:
		}
		ids := make([]int64, 0, len(index))
		for id := range index {
			ids = append(ids, id)
		}
		for len(ids) > 0 {
			n := min(len(ids), batch)
			res, err := f.e.client.JobList(ctx, river.NewJobListParams().IDs(ids[:n]...).First(n).
				States(rivertype.JobStateCompleted, rivertype.JobStateCancelled, rivertype.JobStateDiscarded))
			if err != nil {
				return fmt.Errorf("read the parts of %s on %s: %w", f.typ, f.key, err)
			}
			for _, j := range res.Jobs {
				r := PartResult{Index: index[j.ID]}
				delete(index, j.ID)
				if j.State == rivertype.JobStateCompleted {
					r.Output = j.Output()
				} else {
					r.Err = partError(j)
				}
				if err := each(r); err != nil {
					return err
				}
			}
			ids = ids[n:]
		}
	}
	return nil
}

// partError is why a part did not complete: its last attempt's error.
func partError(j *rivertype.JobRow) error {
	why := "it was cancelled"
	if n := len(j.Errors); n > 0 {
		why = j.Errors[n-1].Error
	}
	return fmt.Errorf("part %d %s after %d attempts: %s", j.ID, j.State, j.Attempt, why)
}

func partLease(id int64) string { return fmt.Sprintf("part:%d", id) }

type partWorker struct {
	river.WorkerDefaults[PartArgs]
	e *Engine
}

// NextRetry retries a failed part soon: its coordinator is waiting.
func (w *partWorker) NextRetry(job *river.Job[PartArgs]) time.Time {
	return time.Now().Add(time.Duration(job.Attempt) * w.e.partRetry)
}

func (w *partWorker) Work(ctx context.Context, job *river.Job[PartArgs]) error {
	e, a := w.e, job.Args
	k := a.Key()
	if holder, err := e.Store.LeaseHolder(ctx, leaseName(k), e.now()); err != nil {
		return fmt.Errorf("look up the coordinator of %s: %w", k, err)
	} else if holder != a.Coordinator {
		return river.JobCancel(fmt.Errorf("the job that queued this part (%s) has stopped", a.Coordinator))
	}
	p, ok := e.Runner.Jobs[a.Type]
	if !ok {
		return river.JobCancel(fmt.Errorf("%s is %w", a.Type, ErrNotAvailable))
	}
	b, err := e.Registry.Bucket(k.Bucket)
	if err != nil {
		return river.JobCancel(err)
	}
	lease, holder := partLease(job.ID), fmt.Sprintf("%s/%d/%d", e.Holder, job.ID, job.Attempt)
	ok, err = e.Store.AcquireLease(ctx, lease, holder, e.now(), e.LeaseTTL)
	if err != nil {
		return fmt.Errorf("take the lease of part %d: %w", job.ID, err)
	}
	if !ok {
		// An earlier attempt still renews it: it was rescued while alive.
		return river.JobSnooze(e.LeaseTTL / 3)
	}
	defer e.Store.ReleaseLease(context.WithoutCancel(ctx), lease, holder)
	ctx, cancel := context.WithTimeoutCause(ctx, e.JobTimeout, fmt.Errorf("part exceeded the job timeout of %v", e.JobTimeout))
	defer cancel()
	defer e.renew(ctx, []string{lease}, holder, cancel)()
	t := Target{Bucket: b, Table: bucket.TableIDOf(k.Namespace, k.Name)}
	out, err := p.runPart(ctx, t, a.Part)
	if errors.Is(err, errNoParts) {
		return river.JobCancel(err)
	}
	if err != nil {
		return fmt.Errorf("part %d of %s on %s: %w", a.Index, a.Type, k, err)
	}
	return river.RecordOutput(ctx, out)
}
