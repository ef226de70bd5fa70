package main

import (
	"context"
	"log/slog"
	"net"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/icekeeper/icekeeper/jobs"
	"github.com/icekeeper/icekeeper/status"
)

func cmdServe(ctx context.Context, env *cliEnv, args []string) error {
	var c commonFlags
	fs := newFlagSet(env, "serve", "[--config FILE] [--listen ADDR]",
		"Runs the daemon: loads the configuration, opens the state store and serves\n"+
			"the API (GET /healthz, /readyz, /metrics) until SIGTERM or SIGINT.")
	c.register(fs)
	listen := fs.String("listen", "", "API address, overriding the configuration's listen")
	grace := fs.Duration("shutdown-grace", 30*time.Second, "how long running work may take to finish on SIGTERM")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	logger := slog.New(slog.NewJSONHandler(env.stderr, nil))
	w, err := c.open(ctx, true)
	if err != nil {
		return err
	}
	defer w.Close()
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
	runner := &jobs.Runner{Store: w.store, Jobs: availableJobs(w), Logger: logger}
	srv := &status.Server{Registry: w.registry, Store: w.store, Runner: runner, Auth: auth, Metrics: reg, Logger: logger}
	ready := make(chan net.Addr, 1)
	go func() {
		if a, ok := <-ready; ok {
			logger.Info("icekeeper serving", "addr", a.String(), "config", configName(w), "buckets", len(w.cfg.Buckets))
		}
	}()
	err = srv.Serve(ctx, addr, *grace, ready)
	logger.Info("icekeeper stopped")
	return err
}

func configName(w *world) string {
	if w.cfg.File == "" {
		return "embedded default"
	}
	return w.cfg.File
}
