package jobs_test

import (
	"context"
	"encoding/json"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/icekeeper/icekeeper/internal/health"
	"github.com/icekeeper/icekeeper/internal/state"
	"github.com/icekeeper/icekeeper/internal/testkit"
	"github.com/icekeeper/icekeeper/jobs"
	"github.com/icekeeper/icekeeper/maintenance"
)

// countingHistory counts the health samples written to the store.
type countingHistory struct {
	state.HealthHistory
	writes atomic.Int32
}

func (c *countingHistory) RecordHealth(ctx context.Context, s state.HealthSample) (bool, error) {
	c.writes.Add(1)
	return c.HealthHistory.RecordHealth(ctx, s)
}

// The health the metrics compute is recorded once per metadata file: the
// first refresh samples every table, polls and refreshes of unchanged
// tables write nothing, and a commit adds one sample to its table, with
// its new figures.
func TestHealthHistoryFromRefreshAndPolls(t *testing.T) {
	f := newFleet(t, 3)
	store := &countingHistory{HealthHistory: f.store}
	reg := prometheus.NewRegistry()
	m := jobs.NewMetrics(reg, f.store)
	m.History = &jobs.HealthHistory{Store: store}
	f.runner.Loaded = m.Polled
	resolver := &jobs.Resolver{Store: f.store}
	now := time.Now()
	samples := func(i int) []health.Health {
		t.Helper()
		got, err := f.store.HealthSamples(f.ctx, f.target(i).Key(), time.Time{})
		if err != nil {
			t.Fatal(err)
		}
		var out []health.Health
		for _, s := range got {
			var h health.Health
			if err := json.Unmarshal(s.Health, &h); err != nil {
				t.Fatal(err)
			}
			out = append(out, h)
		}
		return out
	}
	if err := m.RefreshHealth(f.ctx, f.reg, resolver, now); err != nil {
		t.Fatal(err)
	}
	for i := range f.ids {
		if got := samples(i); len(got) != 1 || got[0].DataFiles == 0 {
			t.Fatalf("table %d after the first refresh: %+v", i, got)
		}
	}
	if n := store.writes.Swap(0); n != 3 {
		t.Fatalf("the first refresh wrote %d samples, want one per table", n)
	}
	// Unchanged: the polls and the next refresh write nothing.
	for i := range f.ids {
		if _, err := f.runner.Need(f.ctx, f.target(i), maintenance.Compaction, now.Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
	}
	if err := m.RefreshHealth(f.ctx, f.reg, resolver, now.Add(2*time.Hour)); err != nil {
		t.Fatal(err)
	}
	if n := store.writes.Swap(0); n != 0 {
		t.Fatalf("unchanged tables wrote %d samples", n)
	}
	if err := testkit.AppendRows(f.ctx, f.b, f.ids[2], 10); err != nil {
		t.Fatal(err)
	}
	if err := m.RefreshHealth(f.ctx, f.reg, resolver, now.Add(3*time.Hour)); err != nil {
		t.Fatal(err)
	}
	if got := samples(2); len(got) != 2 || got[1].DataFiles != got[0].DataFiles+1 {
		t.Fatalf("the changed table's samples: %+v, want a second one with one file more", got)
	}
	if got := samples(0); len(got) != 1 {
		t.Fatalf("an unchanged table's samples: %+v", got)
	}
	if n := store.writes.Swap(0); n != 1 {
		t.Fatalf("one commit wrote %d samples", n)
	}
}

// A poll that gives a table's health from the cache records it too: here
// the refresh ran before the history was attached (as after a store that
// failed to take the samples), and the polls alone fill it.
func TestHealthHistoryFromPolls(t *testing.T) {
	f := newFleet(t, 2)
	m := jobs.NewMetrics(prometheus.NewRegistry(), f.store)
	f.runner.Loaded = m.Polled
	now := time.Now()
	if err := m.RefreshHealth(f.ctx, f.reg, &jobs.Resolver{Store: f.store}, now); err != nil {
		t.Fatal(err)
	}
	m.History = &jobs.HealthHistory{Store: f.store}
	for i := range f.ids {
		if _, err := f.runner.Need(f.ctx, f.target(i), maintenance.Compaction, now.Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
		got, err := f.store.HealthSamples(f.ctx, f.target(i).Key(), time.Time{})
		if err != nil || len(got) != 1 || got[0].MetadataLocation == "" {
			t.Fatalf("table %d after its poll: %+v %v", i, got, err)
		}
	}
}
