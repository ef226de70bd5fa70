package jobs

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"sync"
	"time"

	"github.com/apache/iceberg-go/table"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/icekeeper/icekeeper/internal/bucket"
	"github.com/icekeeper/icekeeper/internal/health"
	"github.com/icekeeper/icekeeper/internal/state"
	"github.com/icekeeper/icekeeper/maintenance"
	"github.com/icekeeper/icekeeper/planner"
)

// counterMetrics maps every counter a run's figures may report to its
// metric, from the job types' rows in maintenance's type table.
func counterMetrics() map[string]string {
	out := map[string]string{}
	for _, typ := range maintenance.Types() {
		for key, name := range typ.Counters {
			out[key] = name
		}
	}
	return out
}

// Metrics are the daemon's Prometheus metrics.
type Metrics struct {
	runs       *prometheus.CounterVec
	duration   *prometheus.HistogramVec
	counts     map[string]prometheus.Counter
	Takeovers  prometheus.Counter
	fireTables *prometheus.GaugeVec
	firePoll   *prometheus.GaugeVec
	pending    *prometheus.GaugeVec
	budgetUsed *prometheus.GaugeVec
	budgetCap  *prometheus.GaugeVec
	// What runs spent (cost.Figures), by job type.
	bytesProcessed, objectsProcessed, requests, spent *prometheus.CounterVec
	tables                                            *tableCollector
	// healthCache spares a refresh the manifests of unchanged tables.
	healthCache health.Cache
	// History, when set, records the health the refresh and the polls
	// compute, for the dashboard's charts (nil: not recorded).
	History *HealthHistory
	// Loaded, when set, is given each table RefreshHealth loads, so that
	// what else its metadata tells (Runner.Lags) costs no read of its own.
	Loaded func(ctx context.Context, t Target, tbl *table.Table, s maintenance.Settings, now time.Time)
	fresh  *freshCollector
}

// MetricsStore is what the metrics read of the state store.
type MetricsStore interface {
	QueueDepth(ctx context.Context) (int, error)
	LastSuccesses(ctx context.Context) ([]state.Run, error)
	MarkStats(ctx context.Context) (map[state.TableKey]state.MarkStat, error)
}

// NewMetrics registers the metrics on reg; the queue depth and the time
// of each table's last successful run are read from store on each scrape.
func NewMetrics(reg prometheus.Registerer, store MetricsStore) *Metrics {
	m := &Metrics{
		runs: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "icekeeper_job_runs_total",
			Help: "Job runs by job type and outcome."}, []string{"job", "status"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "icekeeper_job_run_duration_seconds",
			Help: "Duration of job runs.", Buckets: prometheus.ExponentialBuckets(0.05, 4, 10)}, []string{"job"}),
		counts: map[string]prometheus.Counter{},
		Takeovers: prometheus.NewCounter(prometheus.CounterOpts{Name: "icekeeper_lease_takeovers_total",
			Help: "Jobs taken over after the worker holding them stopped."}),
		tables: &tableCollector{store: store, health: map[state.TableKey]health.Health{}, polled: map[state.TableKey]time.Time{}},
		fireTables: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "icekeeper_fire_tables",
			Help: "Tables of the last fire of each job type's schedule, by what the fire did with them: fired (all), queued, skipped (unchanged, need order), poll_error (queued to report it)."},
			[]string{"job", "outcome"}),
		firePoll: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "icekeeper_fire_poll_seconds",
			Help: "How long the last need-ordered fire of each job type took to poll its tables."}, []string{"job"}),
		pending: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "icekeeper_pending_tables",
			Help: "Tables the last need-ordered fire of each job type queued, by reason: budget (work a rewrite budget deferred), the unchanged rule's verdict, or due."},
			[]string{"job", "reason"}),
		budgetUsed: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "icekeeper_budget_rewrite_bytes_used",
			Help: "Input bytes compaction rewrote over the last hour, by budget scope (a bucket's name, or daemon)."}, []string{"scope"}),
		budgetCap: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "icekeeper_budget_rewrite_bytes_limit",
			Help: "Input bytes compaction may rewrite per hour, by budget scope (0: unbounded)."}, []string{"scope"}),
	}
	m.bytesProcessed = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "icekeeper_maintenance_bytes_processed_total",
		Help: "Bytes of data files runs read to rewrite them, by job type (what S3 Tables bills compaction by)."}, []string{"job"})
	m.objectsProcessed = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "icekeeper_maintenance_objects_processed_total",
		Help: "Data files runs read to rewrite them, by job type."}, []string{"job"})
	m.requests = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "icekeeper_maintenance_requests_total",
		Help: "Requests runs made to object storage and REST catalogs, by job type and kind (GET, PUT, LIST, DELETE, HEAD, POST, CATALOG)."}, []string{"job", "kind"})
	m.spent = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "icekeeper_maintenance_cost_usd_total",
		Help: "What runs cost at the configured prices, by job type: price=requests is icekeeper's requests, price=s3tables what S3 Tables' compaction would charge for the same processed data."},
		[]string{"job", "price"})
	for _, typ := range maintenance.JobTypes() {
		for _, st := range []state.RunStatus{state.Successful, state.Failed, state.Disabled, state.Skipped} {
			m.runs.WithLabelValues(string(typ), string(st)) // present at 0
		}
	}
	for key, name := range counterMetrics() {
		c := prometheus.NewCounter(prometheus.CounterOpts{Name: name, Help: fmt.Sprintf("Sum of %s over all runs.", key)})
		m.counts[key] = c
		reg.MustRegister(c)
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
	m.fresh = &freshCollector{now: time.Now}
	reg.MustRegister(m.runs, m.duration, m.Takeovers, depth, m.tables, m.fireTables, m.firePoll, m.pending, m.budgetUsed, m.budgetCap,
		m.bytesProcessed, m.objectsProcessed, m.requests, m.spent, m.fresh)
	return m
}

// Watch exports f's lags: each table's, and how many tables are past
// their target, read at each scrape so that a lag grows between checks.
func (m *Metrics) Watch(f *Freshness) {
	m.fresh.mu.Lock()
	defer m.fresh.mu.Unlock()
	m.fresh.f = f
}

var (
	descLag = gauge("icekeeper_table_freshness_lag_seconds",
		"Age of the oldest work a job type has not taken on the table (0: none waits).", "job")
	descLagTarget = gauge("icekeeper_table_freshness_target_seconds",
		"The table's freshness target, for tables that set one.", "job")
	descLate = prometheus.NewDesc("icekeeper_tables_past_freshness_target",
		"Tables whose oldest work not taken is older than their freshness target, by job type.", []string{"job"}, nil)
)

// freshCollector exports a Freshness.
type freshCollector struct {
	now func() time.Time
	mu  sync.Mutex
	f   *Freshness
}

func (c *freshCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- descLag
	ch <- descLagTarget
	ch <- descLate
}

func (c *freshCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	f := c.f
	c.mu.Unlock()
	if f == nil {
		return
	}
	late := map[maintenance.JobType]int{}
	for _, typ := range maintenance.JobTypes() {
		late[typ] = 0
	}
	now := c.now()
	for _, l := range f.All() {
		labels := []string{l.Table.Bucket, l.Table.Namespace, l.Table.Name, string(l.Type)}
		ch <- prometheus.MustNewConstMetric(descLag, prometheus.GaugeValue, l.Seconds(now), labels...)
		if l.Target > 0 {
			ch <- prometheus.MustNewConstMetric(descLagTarget, prometheus.GaugeValue, l.Target.Seconds(), labels...)
		}
		if l.Late(now) {
			late[l.Type]++
		}
	}
	for typ, n := range late {
		ch <- prometheus.MustNewConstMetric(descLate, prometheus.GaugeValue, float64(n), string(typ))
	}
}

// Fired records what a fire did; use it as Scheduler.Fired.
func (m *Metrics) Fired(typ maintenance.JobType, f Fire) {
	job := string(typ)
	for outcome, n := range map[string]int{"fired": f.Tables, "queued": f.Queued, "skipped": f.Skipped, "poll_error": f.PollErrors} {
		m.fireTables.WithLabelValues(job, outcome).Set(float64(n))
	}
	m.firePoll.WithLabelValues(job).Set(f.Poll.Seconds())
	if f.Pending != nil {
		// Reasons absent from this fire count no table now.
		m.pending.DeletePartialMatch(prometheus.Labels{"job": job})
		for reason, n := range f.Pending {
			m.pending.WithLabelValues(job, reason).Set(float64(n))
		}
	}
}

// Budget records the rewrite budgets' use; use it as Budgets.Observe.
func (m *Metrics) Budget(use []BudgetUse) {
	for _, u := range use {
		m.budgetUsed.WithLabelValues(u.Scope).Set(float64(u.Used))
		m.budgetCap.WithLabelValues(u.Scope).Set(float64(u.BytesPerHour))
	}
}

// Observe records a finished run; use it as Runner.Observe.
func (m *Metrics) Observe(r state.Run, out Outcome) {
	job := string(r.Type)
	m.runs.WithLabelValues(job, string(r.Status)).Inc()
	m.duration.WithLabelValues(job).Observe(r.Finished.Sub(r.Started).Seconds())
	if out.Figures != nil {
		for key, v := range out.Figures.Counters() {
			if counter, ok := m.counts[key]; ok {
				counter.Add(v)
			}
		}
		if c := out.Figures.common().Cost; c != nil {
			m.bytesProcessed.WithLabelValues(job).Add(float64(c.ProcessedBytes))
			m.objectsProcessed.WithLabelValues(job).Add(float64(c.ProcessedObjects))
			for kind, n := range c.ByKind {
				m.requests.WithLabelValues(job, kind).Add(float64(n))
			}
			m.spent.WithLabelValues(job, "requests").Add(c.USD)
			m.spent.WithLabelValues(job, "s3tables").Add(c.S3TablesUSD)
		}
	}
}

// Polled takes a table's health from a load made for another reason
// (Runner.Loaded: a need-ordered fire's poll) when the health cache holds
// that metadata file already, which costs no read; a table whose
// metadata changed is left to the next RefreshHealth, which reads what
// changed. A table whose health a poll gave is not loaded again by the
// next RefreshHealth.
func (m *Metrics) Polled(t Target, tbl *table.Table, s maintenance.Settings, now time.Time) {
	cs := s.For(maintenance.Compaction).Compaction()
	h, ok := m.healthCache.Cached(t.Key().String(), tbl, *cs.TargetFileSizeMB, planner.DefaultMinInput, cs.Strategy, now)
	if !ok {
		return
	}
	if m.History != nil {
		// A poll has no context of its own; the sample is one row at
		// most, for a table the history has not seen at this metadata
		// file.
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		m.History.Record(ctx, t.Key(), tbl.MetadataLocation(), h, now)
		cancel()
	}
	m.tables.mu.Lock()
	defer m.tables.mu.Unlock()
	m.tables.health[t.Key()] = h
	m.tables.polled[t.Key()] = now
}

// RefreshHealth computes the health of every table of every bucket for
// the per-table gauges; a table that cannot be read keeps no gauges. A
// table whose health a poll gave since the last refresh (Polled) keeps
// it, unread: with need-ordered fires at least as often as the refresh,
// an unchanged table costs the refresh nothing.
func (m *Metrics) RefreshHealth(ctx context.Context, reg *bucket.Registry, resolver *Resolver, now time.Time) error {
	fresh := map[state.TableKey]health.Health{}
	m.tables.mu.Lock()
	since, polled, known := m.tables.lastRefresh, maps.Clone(m.tables.polled), maps.Clone(m.tables.health)
	m.tables.lastRefresh = now
	m.tables.mu.Unlock()
	var firstErr error
	for _, b := range reg.Buckets() {
		ids, err := b.Tables(ctx)
		if err != nil {
			firstErr = cmp.Or(firstErr, err)
			continue
		}
		for _, id := range ids {
			t := Target{Bucket: b, Table: id}
			if at, ok := polled[t.Key()]; ok && !since.IsZero() && !at.Before(since) {
				if h, ok := known[t.Key()]; ok {
					fresh[t.Key()] = h
					continue
				}
			}
			s, err := resolver.Table(ctx, t)
			if err != nil {
				firstErr = cmp.Or(firstErr, err)
				continue
			}
			h, tbl, err := m.History.health(ctx, t, s, now, &m.healthCache)
			if err != nil {
				firstErr = cmp.Or(firstErr, err)
				continue
			}
			if m.Loaded != nil {
				m.Loaded(ctx, t, tbl, s, now)
			}
			fresh[t.Key()] = h
		}
	}
	// fresh is read here, before it is published: from then on polls
	// (Polled) write into it, under the lock only.
	seen := make(map[string]bool, len(fresh))
	for k := range fresh {
		seen[k.String()] = true
	}
	m.tables.mu.Lock()
	m.tables.health = fresh
	m.tables.mu.Unlock()
	if firstErr == nil { // a table that failed to list keeps its entry
		m.healthCache.Retain(func(key string) bool { return seen[key] })
	}
	return firstErr
}

// tableCollector exports per-table gauges: health from the last refresh,
// and the last successful run of each job type from the state store.
type tableCollector struct {
	store  MetricsStore
	mu     sync.Mutex
	health map[state.TableKey]health.Health
	// polled is when a poll last gave a table's health (Polled), and
	// lastRefresh when the last RefreshHealth began.
	polled      map[state.TableKey]time.Time
	lastRefresh time.Time
}

var (
	tableLabels = []string{"bucket", "namespace", "table"}
	gauge       = func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc(name, help, append(append([]string{}, tableLabels...), labels...), nil)
	}
	descDataFiles   = gauge("icekeeper_table_data_files", "Data files in the table's current snapshot.")
	descSmallFiles  = gauge("icekeeper_table_small_files", "Data files under 75% of the compaction target.")
	descDeleteFiles = gauge("icekeeper_table_delete_files", "Position and equality delete files and deletion vectors in the current snapshot.")
	descBytes       = gauge("icekeeper_table_bytes", "Bytes of data and delete files in the current snapshot.")
	descSnapshots   = gauge("icekeeper_table_snapshots", "Snapshots in the table's metadata.")
	descOldest      = gauge("icekeeper_table_oldest_snapshot_age_seconds", "Age of the table's oldest snapshot.")
	descMetadata    = gauge("icekeeper_table_metadata_bytes", "Size of the table's current metadata file.")
	descLastSuccess = gauge("icekeeper_table_last_success_timestamp_seconds", "When the last successful run of a job type on the table finished.", "job")
	descScore       = gauge("icekeeper_table_health_score", "How little the table needs compaction, 0 to 100 (small files 40, equality deletes 40, position deletes 20).")
	descScorePart   = gauge("icekeeper_table_health_score_part", "The parts of the health score.", "part")
	descNoncurrent  = gauge("icekeeper_table_noncurrent_objects", "Objects marked noncurrent and not protected, awaiting deletion.")
	descOldestMark  = gauge("icekeeper_table_oldest_noncurrent_mark_timestamp_seconds", "When the table's oldest unprotected noncurrent mark was made.")
	// Clustering is apart from the health score, whose parts add up to it.
	descClustering = gauge("icekeeper_table_clustering_score", "How well the table's data files are clustered on its sort order, 0 to 100: the share of data files not in a partition whose key ranges overlap more than 2 deep. Absent for a table without a sort order.")
	descDepth      = gauge("icekeeper_table_overlap_depth", "The most data files of one partition whose key ranges on the sort order share a point.")
	// Absent for a table icekeeper keeps no statistics for; their age is
	// icekeeper_table_freshness_lag_seconds{job="icebergStatistics"}.
	descStatsBehind = gauge("icekeeper_table_statistics_commits_behind", "Commits on the table's current lineage since the snapshot its statistics (column NDV sketches) describe.")
)

func (c *tableCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descDataFiles, descSmallFiles, descDeleteFiles, descBytes, descSnapshots, descOldest, descMetadata,
		descScore, descScorePart, descClustering, descDepth, descStatsBehind, descLastSuccess, descNoncurrent, descOldestMark} {
		ch <- d
	}
}

func (c *tableCollector) Collect(ch chan<- prometheus.Metric) {
	// A copy: polls (Metrics.Polled) write into the map as a scrape
	// reads it, and a map read and written at once stops the process.
	c.mu.Lock()
	hs := maps.Clone(c.health)
	c.mu.Unlock()
	for k, h := range hs {
		l := []string{k.Bucket, k.Namespace, k.Name}
		for d, v := range map[*prometheus.Desc]float64{descDataFiles: float64(h.DataFiles), descSmallFiles: float64(h.SmallFiles),
			descDeleteFiles: float64(h.DeleteFiles), descBytes: float64(h.TotalBytes), descSnapshots: float64(h.Snapshots),
			descOldest: h.OldestAgeHours * 3600, descMetadata: float64(h.MetadataBytes)} {
			ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, l...)
		}
		ch <- prometheus.MustNewConstMetric(descScore, prometheus.GaugeValue, h.Score.Total, l...)
		for part, v := range map[string]float64{"small_files": h.Score.SmallFiles, "equality_deletes": h.Score.EqualityDeletes, "position_deletes": h.Score.PositionDeletes} {
			ch <- prometheus.MustNewConstMetric(descScorePart, prometheus.GaugeValue, v, append(l, part)...)
		}
		if c := h.Clustering; c != nil {
			ch <- prometheus.MustNewConstMetric(descClustering, prometheus.GaugeValue, c.Score, l...)
			ch <- prometheus.MustNewConstMetric(descDepth, prometheus.GaugeValue, float64(c.Depth), l...)
		}
		if st := h.Statistics; st != nil {
			ch <- prometheus.MustNewConstMetric(descStatsBehind, prometheus.GaugeValue, float64(st.CommitsBehind), l...)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	runs, err := c.store.LastSuccesses(ctx)
	if err != nil {
		ch <- prometheus.NewInvalidMetric(descLastSuccess, err)
		return
	}
	for _, r := range runs {
		ch <- prometheus.MustNewConstMetric(descLastSuccess, prometheus.GaugeValue, float64(r.Finished.UnixMilli())/1000,
			r.Table.Bucket, r.Table.Namespace, r.Table.Name, string(r.Type))
	}
	marks, err := c.store.MarkStats(ctx)
	if err != nil {
		ch <- prometheus.NewInvalidMetric(descNoncurrent, err)
		return
	}
	for k, st := range marks {
		l := []string{k.Bucket, k.Namespace, k.Name}
		ch <- prometheus.MustNewConstMetric(descNoncurrent, prometheus.GaugeValue, float64(st.Count), l...)
		ch <- prometheus.MustNewConstMetric(descOldestMark, prometheus.GaugeValue, float64(st.Oldest.UnixMilli())/1000, l...)
	}
}
