package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"net"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"riverqueue.com/riverui"

	"github.com/icekeeper/icekeeper/configs"
	"github.com/icekeeper/icekeeper/internal/bucket"
	"github.com/icekeeper/icekeeper/internal/state"
	"github.com/icekeeper/icekeeper/jobs"
	"github.com/icekeeper/icekeeper/maintenance"
	"github.com/icekeeper/icekeeper/status"
	"github.com/icekeeper/icekeeper/tables"
)

func cmdServe(ctx context.Context, env *cliEnv, args []string) error {
	c := commonFlags{createHome: true}
	fs := newFlagSet(env, "serve", "[--config FILE] [--listen ADDR]",
		"Runs the daemon: discovers every table of every bucket, queues each job\n"+
			"type by its cron schedule, runs queued jobs (several replicas may share a\n"+
			"PostgreSQL state store), and serves the S3 Tables-compatible API with\n"+
			"/healthz, /readyz and /metrics, until SIGTERM or SIGINT.")
	c.register(fs)
	listen := fs.String("listen", "", "API address, overriding the configuration's listen")
	grace := fs.Duration("shutdown-grace", 30*time.Second, "how long running jobs may take to finish after SIGTERM before they are cancelled")
	parallel := fs.Int("parallelism", 2, "jobs run at once by this replica")
	fanOut := fs.Int("fan-out-groups", 32, "a compaction that plans at least this many rewrite groups hands them to the workers of every replica (0: never; only with a PostgreSQL state store, which replicas share)")
	groupPar := fs.Int("group-parallelism", 2, "groups of fanned-out compactions this replica rewrites at once, besides its jobs")
	timeout := fs.Duration("job-timeout", time.Hour, "longest a single job may run")
	leaseTTL := fs.Duration("lease-ttl", time.Minute, "how long a job's table lease outlives a replica that stops renewing it; its job is taken over after one to two of these")
	refreshEvery := fs.Duration("refresh-interval", 10*time.Second, "how often the API's in-memory view takes in what other replicas and the CLI wrote to the state store")
	discoverEvery := fs.Duration("discover-interval", 5*time.Minute, "how often every bucket's tables are listed again (a table the API is asked about is looked up at once)")
	healthEvery := fs.Duration("health-interval", time.Hour, "how often the per-table health gauges of /metrics are recomputed for the tables no need-ordered fire polled since the last time (a poll gives an unchanged table's health without a read; a recompute reads the table's metadata, and the manifests of a changed table)")
	needOrder := fs.Bool("need-order", true, "at each fire, read every table's metadata first (16 at a time) and queue only the tables whose compaction or snapshot management would not skip as unchanged, changed ones first; false queues every table, spread over the jitter window")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	c.daemon = true
	w, err := c.open(ctx, true)
	if err != nil {
		return err
	}
	defer w.Close()
	logger := w.logger
	addr := w.cfg.Listen
	if *listen != "" {
		addr = *listen
	}
	auth := status.NewAuth(w.cfg.API)
	if err := status.CheckListen(addr, auth != nil); err != nil {
		return usageError{err}
	}

	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	// The API answers from memory: the store's overrides and latest runs
	// in a cache every writer of this process goes through, and the
	// tables as discovery found them.
	cache, err := state.NewCache(ctx, w.store)
	if err != nil {
		return err
	}
	resolver := &jobs.Resolver{Store: cache, Defaults: w.resolver.Defaults}
	known := &tables.Registry{Store: cache, Logger: logger}
	discovery := &jobs.Discovery{Registry: w.registry, Known: known, Logger: logger}
	metrics := jobs.NewMetrics(reg, cache)
	// One health history for the metrics' refresh and the dashboard, so
	// that a table's metadata file is sampled once between them.
	history := &jobs.HealthHistory{Store: cache, Logger: logger}
	metrics.History = history
	registered, dropped, err := availableJobs(w, known)
	if err != nil {
		return err
	}
	coexist, closeLocks, err := coexistOf(ctx, w.cfg, cache, *leaseTTL, logger)
	if err != nil {
		return err
	}
	defer closeLocks()
	fresh := &jobs.Freshness{}
	metrics.Watch(fresh)
	// A run's end is metrics, and, with freshness scheduling, a check of
	// its table: what the run left needs its own deadline.
	var sched *jobs.Scheduler
	observe := func(run state.Run, out jobs.Outcome) {
		metrics.Observe(run, out)
		if len(sched.FreshTypes) > 0 && slices.Contains(sched.FreshTypes, run.Type) {
			sched.Notify([]state.TableKey{run.Table})
		}
	}
	runner := &jobs.Runner{Store: cache, Resolver: resolver, Jobs: registered, Dropped: dropped, Logger: logger, Prices: &w.cfg.Prices, Observe: observe, Loaded: metrics.Polled,
		Coexist: coexist, Freshness: fresh, Tables: known}
	// Each table the health refresh loads gives its lag too: a table
	// without a freshness target has one before its types' first fire.
	metrics.Loaded = runner.Lags
	schedules := map[maintenance.JobType]string(w.cfg.Schedules)
	pg := strings.HasPrefix(w.cfg.State, "postgres")
	if !pg {
		*fanOut = 0 // one process: nowhere to fan out to
	}
	budgets := budgetsOf(w.cfg, cache)
	budgets.Observe = metrics.Budget
	engine := &jobs.Engine{Store: cache, Registry: w.registry, Runner: runner, Holder: holderName(),
		Parallelism: *parallel, FanOutParts: *fanOut, PartParallelism: *groupPar, JobTimeout: *timeout, LeaseTTL: *leaseTTL, Logger: logger,
		OnTakeover: func(jobs.RunArgs) { metrics.Takeovers.Inc() }, Budgets: budgets}
	if err := engine.Init(); err != nil {
		return err
	}
	fired := func(typ maintenance.JobType, f jobs.Fire) {
		metrics.Fired(typ, f)
		if err := budgets.Refresh(ctx, time.Now()); err != nil {
			logger.Warn("rewrite budgets not refreshed", "err", err)
		}
	}
	sched = &jobs.Scheduler{Store: w.store, Queue: engine, Tables: discovery, Schedules: schedules, Rediscover: *discoverEvery, Logger: logger, Fired: fired,
		Skip: func(t jobs.Target, typ maintenance.JobType) bool {
			// The resolver answers from the cache: no store round trip.
			s, err := resolver.Table(ctx, t)
			return err == nil && s.For(typ).Status == maintenance.Disabled
		},
		Dropped: func(ctx context.Context) ([]state.TableKey, error) {
			return jobs.DroppedTables(ctx, w.registry, resolver, cache)
		}}
	if *needOrder {
		sched.Needs = runner.Need
		// Freshness scheduling checks tables between fires: on where a
		// bucket sets a target or events come (a table's own property
		// is then honoured too).
		if freshnessOn(w.cfg) {
			sched.FreshTypes, sched.Freshness = runner.FreshTypes(), fresh
			sched.Debounce, sched.Backstop = w.cfg.Events.Debounce, w.cfg.Events.Backstop
		}
	}
	if err := sched.Init(); err != nil {
		return usageError{err}
	}
	srv := &status.Server{Registry: w.registry, Store: cache, Runner: runner, Resolver: resolver, Scheduler: sched, Queue: engine, Budgets: budgets, Tables: discovery, Auth: auth, Metrics: reg, MetricsToken: w.cfg.API.MetricsAuth, AllowedHosts: w.cfg.API.AllowedHosts, Logger: logger, History: history,
		Freshness: fresh, EventTokens: w.cfg.Events.Tokens}
	if sched.FreshTypes != nil {
		srv.Events = sched
	}

	if pg {
		ui, err := riverui.NewHandler(&riverui.HandlerOpts{Endpoints: riverui.NewEndpoints(engine.Client(), nil),
			Logger: logger.With("component", "riverui"), Prefix: "/river"})
		if err != nil {
			return fmt.Errorf("River's UI: %w", err)
		}
		if err := ui.Start(ctx); err != nil {
			return fmt.Errorf("River's UI: %w", err)
		}
		srv.RiverUI = ui
	}

	// ctx ends on SIGTERM: stop taking jobs; hard ends grace later and
	// cancels the jobs still running.
	hard, cancelHard := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelHard()
	var bg sync.WaitGroup
	bg.Add(4)
	go func() {
		defer bg.Done()
		cache.Run(ctx, *refreshEvery, func(err error) { logger.Warn("refreshing the in-memory view from the state store", "err", err) })
	}()
	go func() { defer bg.Done(); _ = sched.Run(ctx) }()
	go func() {
		defer bg.Done()
		if err := engine.Run(ctx, hard); err != nil {
			logger.Error("job engine", "err", err)
		}
	}()
	go func() { defer bg.Done(); refreshHealth(ctx, metrics, w.registry, resolver, *healthEvery, logger) }()
	ready := make(chan net.Addr, 1)
	go func() {
		if a, ok := <-ready; ok {
			logger.Info("icekeeper serving", "addr", a.String(), "config", configName(w), "buckets", len(w.cfg.Buckets), "holder", engine.Holder)
		}
	}()
	err = srv.Serve(ctx, addr, *grace, ready)
	timer := time.AfterFunc(*grace, cancelHard)
	bg.Wait()
	timer.Stop()
	logger.Info("icekeeper stopped")
	return err
}

// freshnessOn reports whether cfg asks for freshness scheduling: a
// bucket sets a freshness target, or events are configured.
func freshnessOn(cfg *configs.Config) bool {
	if cfg.Events.On() {
		return true
	}
	for _, b := range cfg.Buckets {
		if b.FreshnessTarget > 0 {
			return true
		}
	}
	return false
}

// budgetsOf is the daemon's rewrite budgets from the configuration,
// kept in store.
func budgetsOf(cfg *configs.Config, store jobs.BudgetStore) *jobs.Budgets {
	limits := func(b configs.Budget) jobs.Limits {
		return jobs.Limits{MaxConcurrentRewrites: b.MaxConcurrentRewrites, RewriteBytesPerHour: b.RewriteBytesPerHour, TableSharePercent: b.TableSharePercent}
	}
	out := &jobs.Budgets{Store: store, Daemon: limits(cfg.Budget), Buckets: map[string]jobs.BucketLimits{}}
	for _, b := range cfg.Buckets {
		out.Buckets[b.ARN] = jobs.BucketLimits{Name: b.Name(), Limits: limits(b.Budget)}
	}
	return out
}

// refreshHealth recomputes the per-table gauges now and every interval
// until ctx ends.
func refreshHealth(ctx context.Context, m *jobs.Metrics, reg *bucket.Registry, resolver *jobs.Resolver, every time.Duration, logger *slog.Logger) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		if err := m.RefreshHealth(ctx, reg, resolver, time.Now()); err != nil && ctx.Err() == nil {
			logger.Warn("table health for /metrics", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// holderName identifies this replica in claims and leases.
func holderName() string {
	host, _ := os.Hostname()
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return fmt.Sprintf("%s-%d-%s", host, os.Getpid(), hex.EncodeToString(b))
}

func configName(w *world) string {
	if w.cfg.File == "" {
		return "embedded default"
	}
	return w.cfg.File
}
