package jobs

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/sourcegraph/conc/pool"

	"github.com/icekeeper/icekeeper/internal/bucket"
	"github.com/icekeeper/icekeeper/internal/state"
)

// Worker takes jobs from the durable queue and runs them: a bounded pool,
// at most one job per table at a time across every replica sharing the
// store (a lease per table), a timeout per job, and claims that expire so
// that a replica that dies mid-job has its jobs taken over.
type Worker struct {
	Store interface {
		state.Queue
		state.Leases
		state.History
	}
	Registry *bucket.Registry
	Runner   *Runner
	// Holder names this worker in claims and leases; unique per process.
	Holder string
	// Parallelism bounds concurrent jobs (default 2).
	Parallelism int
	// JobTimeout bounds one job (default 1h).
	JobTimeout time.Duration
	// LeaseTTL is how long a claim and a table lease live without renewal
	// (default 1m); they are renewed every third of it while the job runs.
	LeaseTTL time.Duration
	// Poll is how often an idle worker looks for due jobs (default 1s).
	Poll   time.Duration
	Logger *slog.Logger
	// OnTakeover, when set, is called when a job whose previous claim
	// expired is taken over.
	OnTakeover func(state.QueuedJob)
}

func (w *Worker) defaults() {
	if w.Parallelism <= 0 {
		w.Parallelism = 2
	}
	if w.JobTimeout <= 0 {
		w.JobTimeout = time.Hour
	}
	if w.LeaseTTL <= 0 {
		w.LeaseTTL = time.Minute
	}
	if w.Poll <= 0 {
		w.Poll = time.Second
	}
	if w.Logger == nil {
		w.Logger = slog.New(slog.DiscardHandler)
	}
}

// Run works until stop is done, then takes no new jobs and waits for the
// running ones; those are cancelled when hard is done. A cancelled job
// never leaves a half-done commit: catalog commits are atomic.
func (w *Worker) Run(stop, hard context.Context) {
	w.defaults()
	// A slot is taken before claiming, so a worker never holds a claim it
	// has no goroutine for; the pool only waits for running jobs.
	slots := make(chan struct{}, w.Parallelism)
	p := pool.New()
	defer p.Wait()
	for {
		select {
		case <-stop.Done():
			return
		case slots <- struct{}{}:
		}
		j, err := w.Store.Claim(hard, w.Holder, time.Now(), w.LeaseTTL)
		if err != nil || j == nil {
			<-slots
			if err != nil {
				w.Logger.Error("claim failed", "err", err)
			}
			select {
			case <-stop.Done():
				return
			case <-time.After(w.Poll):
			}
			continue
		}
		p.Go(func() {
			defer func() { <-slots }()
			w.runOne(hard, *j)
		})
	}
}

func (w *Worker) runOne(ctx context.Context, j state.QueuedJob) {
	log := w.Logger.With("table", j.Table.String(), "job", j.Type, "queued", j.ID)
	b, err := w.Registry.Bucket(j.Table.Bucket)
	if err != nil {
		log.Warn("dropping a job of a bucket no longer configured", "err", err)
		_ = w.Store.Complete(ctx, j.ID, w.Holder)
		return
	}
	t := Target{Bucket: b, Table: bucket.TableID{Namespace: strings.Split(j.Table.Namespace, "."), Name: j.Table.Name}}
	lease := "table:" + j.Table.String()
	ok, err := w.Store.AcquireLease(ctx, lease, w.Holder, time.Now(), w.LeaseTTL)
	if err != nil || !ok {
		// Another job of this table runs (here or on another replica):
		// try again shortly.
		_ = w.Store.Requeue(ctx, j.ID, w.Holder, time.Now().Add(time.Second))
		return
	}
	defer w.Store.ReleaseLease(context.WithoutCancel(ctx), lease, w.Holder)
	if j.Attempts > 1 {
		// The previous claim expired: its worker died, and the run it
		// recorded as Running never finished.
		n, _ := w.Store.FailRunning(ctx, j.Table, j.Type, "the worker running this job stopped before it finished; the job was run again", time.Now())
		log.Warn("took over a job whose worker stopped", "attempt", j.Attempts, "abandonedRuns", n)
		if w.OnTakeover != nil {
			w.OnTakeover(j)
		}
	}

	jobCtx, cancel := context.WithTimeoutCause(ctx, w.JobTimeout, fmt.Errorf("job exceeded its timeout of %v", w.JobTimeout))
	defer cancel()
	heartbeat := make(chan struct{})
	go func() {
		t := time.NewTicker(w.LeaseTTL / 3)
		defer t.Stop()
		for {
			select {
			case <-heartbeat:
				return
			case <-t.C:
				until := time.Now().Add(w.LeaseTTL)
				err := w.Store.Extend(ctx, j.ID, w.Holder, until)
				if _, lerr := w.Store.AcquireLease(ctx, lease, w.Holder, time.Now(), w.LeaseTTL); err == nil {
					err = lerr
				}
				if errors.Is(err, state.ErrClaimLost) {
					log.Error("lost the claim of a running job; cancelling it")
					cancel()
					return
				}
			}
		}
	}()
	out, err := w.Runner.Run(jobCtx, t, j.Type, j.Trigger, Options{})
	close(heartbeat)
	if err != nil {
		log.Error("job could not be recorded", "err", err)
	}
	if out.Status == state.Failed {
		log.Warn("job failed", "message", out.FailureMessage)
	}
	if ctx.Err() != nil {
		// Shutting down: the job was cancelled, not finished. Give it back
		// so that the next worker (a restart or another replica) runs it.
		if err := w.Store.Requeue(context.WithoutCancel(ctx), j.ID, w.Holder, time.Now()); err != nil {
			log.Error("requeueing a cancelled job failed", "err", err)
		}
		return
	}
	if err := w.Store.Complete(context.WithoutCancel(ctx), j.ID, w.Holder); err != nil {
		log.Error("completing a job failed", "err", err)
	}
}
