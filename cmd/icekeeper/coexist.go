package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/icekeeper/icekeeper/configs"
	"github.com/icekeeper/icekeeper/internal/flinklock"
	"github.com/icekeeper/icekeeper/internal/redact"
	"github.com/icekeeper/icekeeper/internal/state"
	"github.com/icekeeper/icekeeper/jobs"
)

// coexistOf is the configuration's coexistence rules: each bucket's
// step-aside cool-down, and its Flink lock, on one connection pool per
// lock database. close closes the pools.
func coexistOf(ctx context.Context, cfg *configs.Config, leases state.Leases, ttl time.Duration, logger *slog.Logger) (c *jobs.Coexist, close func() error, err error) {
	stepAside := map[string]time.Duration{}
	lockOf := map[string]*jobs.FlinkLock{}
	dbs := map[string]*flinklock.Locks{}
	close = func() error {
		var errs []error
		for _, db := range dbs {
			errs = append(errs, db.Close())
		}
		return errors.Join(errs...)
	}
	for _, b := range cfg.Buckets {
		if sa := b.Coexistence.StepAside; sa != nil {
			stepAside[b.ARN] = *sa
		}
		fl := b.Coexistence.FlinkLock
		if fl == nil {
			continue
		}
		db, ok := dbs[fl.Database]
		if !ok {
			if db, err = flinklock.Open(ctx, fl.Database); err != nil {
				close()
				return nil, nil, fmt.Errorf("bucket %s: Flink lock database %s: %w", b.Name(), redact.URI(fl.Database), err)
			}
			dbs[fl.Database] = db
		}
		template := fl.LockID
		lockOf[b.ARN] = &jobs.FlinkLock{Locks: db, Leases: leases, TTL: ttl, Logger: logger,
			ID: func(t jobs.Target) string { return jobs.LockID(template, t) }}
	}
	c = &jobs.Coexist{
		StepAside: func(t jobs.Target) time.Duration { return stepAside[t.Bucket.ARN()] },
		Lock:      func(t jobs.Target) *jobs.FlinkLock { return lockOf[t.Bucket.ARN()] },
	}
	return c, close, nil
}
