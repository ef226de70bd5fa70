package jobs

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/icekeeper/icekeeper/internal/state"
)

// Counter is implemented by job figures that count what a run did
// (bytes compacted, snapshots expired, objects deleted…), for metrics.
type Counter interface {
	Counters() map[string]float64
}

// Metrics are the daemon's Prometheus metrics.
type Metrics struct {
	runs      *prometheus.CounterVec
	duration  *prometheus.HistogramVec
	items     *prometheus.CounterVec
	Takeovers prometheus.Counter
}

// NewMetrics registers the metrics on reg; the queue depth is read from
// store on each scrape.
func NewMetrics(reg prometheus.Registerer, store state.Store) *Metrics {
	m := &Metrics{
		runs: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "icekeeper_job_runs_total",
			Help: "Job runs by job type and outcome."}, []string{"job", "status"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "icekeeper_job_run_duration_seconds",
			Help: "Duration of job runs.", Buckets: prometheus.ExponentialBuckets(0.05, 4, 10)}, []string{"job"}),
		items: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "icekeeper_job_items_total",
			Help: "What job runs did: bytes_compacted, files_compacted, files_written, snapshots_expired, refs_removed, objects_marked, objects_unmarked, objects_deleted, bytes_deleted."},
			[]string{"job", "item"}),
		Takeovers: prometheus.NewCounter(prometheus.CounterOpts{Name: "icekeeper_lease_takeovers_total",
			Help: "Jobs taken over after the worker holding them stopped."}),
	}
	depth := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "icekeeper_queue_depth", Help: "Jobs queued or running."}, func() float64 {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		n, err := store.QueueDepth(ctx)
		if err != nil {
			return -1
		}
		return float64(n)
	})
	reg.MustRegister(m.runs, m.duration, m.items, m.Takeovers, depth)
	return m
}

// Observe records a finished run; use it as Runner.Observe.
func (m *Metrics) Observe(r state.Run, out Outcome) {
	job := string(r.Type)
	m.runs.WithLabelValues(job, string(r.Status)).Inc()
	m.duration.WithLabelValues(job).Observe(r.Finished.Sub(r.Started).Seconds())
	if c, ok := out.Figures.(Counter); ok {
		for item, v := range c.Counters() {
			m.items.WithLabelValues(job, item).Add(v)
		}
	}
}
