package testkit

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/iceberg-go/table"

	"github.com/icekeeper/icekeeper/internal/commit"
	"github.com/icekeeper/icekeeper/internal/testkit/tablecheck"
)

// Writer is a streaming writer, as a Flink job with a short checkpoint
// interval is one: every Interval it appends a batch of Rows generated
// rows through iceberg-go, reloading and trying again when it loses a race
// (with maintenance or anyone else), and keeps the fingerprint of every
// row it committed.
type Writer struct {
	Load     func(context.Context) (*table.Table, error)
	Interval time.Duration
	Rows     int
	NextID   int64 // the id of the first row written
	Seed     uint64

	mu      sync.Mutex
	written tablecheck.Fingerprint
	stats   WriterStats
}

// WriterStats counts what a writer did.
type WriterStats struct {
	Batches  int           // batches committed
	Retries  int           // commits lost to a concurrent commit and tried again
	MaxRetry int           // the most retries one batch needed
	Slowest  time.Duration // the longest a batch took from first try to commit
}

// Run writes until ctx is done. It returns the first error that is not a
// lost race: a writer whose batch cannot be committed has lost data, and
// the test must fail.
func (w *Writer) Run(ctx context.Context) error {
	rng := rand.New(rand.NewPCG(w.Seed, 7))
	tick := time.NewTicker(w.Interval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
		if err := w.batch(ctx, rng); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
	}
}

func (w *Writer) batch(ctx context.Context, rng *rand.Rand) error {
	begin := time.Now()
	tbl, err := w.Load(ctx)
	if err != nil {
		return err
	}
	sc, err := table.SchemaToArrowSchema(tbl.Schema(), nil, false, false)
	if err != nil {
		return err
	}
	rec := RandomRecord(sc, w.Rows, w.NextID, rng)
	defer rec.Release()
	for retries := 0; ; retries++ {
		rdr, err := array.NewRecordReader(sc, []arrow.RecordBatch{rec})
		if err != nil {
			return err
		}
		// The append's context is not the run's: a batch begun is
		// finished, as a writer's checkpoint is.
		_, err = tbl.Append(context.WithoutCancel(ctx), rdr, nil)
		rdr.Release()
		if err == nil {
			w.mu.Lock()
			w.written.AddRecord(rec)
			w.stats.Batches++
			w.stats.Retries += retries
			w.stats.MaxRetry = max(w.stats.MaxRetry, retries)
			w.stats.Slowest = max(w.stats.Slowest, time.Since(begin))
			w.mu.Unlock()
			w.NextID += int64(w.Rows)
			return nil
		}
		if !commit.IsConflict(err) {
			return fmt.Errorf("writer append: %w", err)
		}
		if retries >= 1000 {
			return errors.New("writer: 1000 lost races in a row")
		}
		if tbl, err = w.Load(context.WithoutCancel(ctx)); err != nil {
			return err
		}
	}
}

// Start runs the writer on another goroutine until the returned stop is
// called; stop returns Run's error.
func (w *Writer) Start(ctx context.Context) (stop func() error) {
	ctx, cancel := context.WithCancel(ctx)
	errc := make(chan error, 1)
	go func() { errc <- w.Run(ctx) }()
	return func() error {
		cancel()
		return <-errc
	}
}

// Await returns once the writer has committed n more batches.
func (w *Writer) Await(n int) {
	for until := w.Stats().Batches + n; w.Stats().Batches < until; {
		time.Sleep(10 * time.Millisecond)
	}
}

// Written is the fingerprint of every row the writer committed.
func (w *Writer) Written() tablecheck.Fingerprint {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.written
}

// Stats returns what the writer did so far.
func (w *Writer) Stats() WriterStats {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.stats
}
