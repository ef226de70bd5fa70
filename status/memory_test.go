package status

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/iceberg-go"

	"github.com/icekeeper/icekeeper/configs"
	"github.com/icekeeper/icekeeper/internal/state"
	"github.com/icekeeper/icekeeper/internal/testkit"
	"github.com/icekeeper/icekeeper/jobs"
	"github.com/icekeeper/icekeeper/maintenance"
	"github.com/icekeeper/icekeeper/planner"
)

// manyTables is a server over an embedded home of n empty tables, each
// with a recorded run, as the daemon wires it: the API answers from a
// cache of the store and from discovery. cached false puts the store and
// the catalog behind every request instead, as before.
type manyTables struct {
	home    string
	url     string
	names   []string
	handler http.Handler
	server  *Server
}

func newManyTables(tb testing.TB, n int, cached bool) *manyTables {
	tb.Helper()
	ctx := context.Background()
	home := tb.TempDir()
	reg := configs.Embedded(home).Registry()
	tb.Cleanup(reg.Close)
	b, _ := reg.Bucket("local")
	store, err := state.Open(ctx, "sqlite://"+filepath.Join(home, "state.db"))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { store.Close() })
	sc := iceberg.NewSchema(0, iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true})
	m := &manyTables{home: home}
	for i := range n {
		name := fmt.Sprintf("t%04d", i)
		testkit.NewTable(tb, b, "ns", name, sc)
		id, err := store.StartRun(ctx, state.Run{Table: state.TableKey{Bucket: b.ARN(), Namespace: "ns", Name: name}, Type: maintenance.Compaction, Trigger: "test", Started: time.Now()})
		if err != nil {
			tb.Fatal(err)
		}
		if err := store.FinishRun(ctx, state.Run{ID: id, Status: state.Successful, Finished: time.Now()}); err != nil {
			tb.Fatal(err)
		}
		m.names = append(m.names, name)
	}
	srv := &Server{Registry: reg, Store: store}
	if cached {
		cache, err := state.NewCache(ctx, store)
		if err != nil {
			tb.Fatal(err)
		}
		d := &jobs.Discovery{Registry: reg}
		d.Discover(ctx)
		srv.Store, srv.Tables = cache, d
	}
	m.handler, m.server = srv.Handler(), srv
	ts := httptest.NewServer(m.handler)
	tb.Cleanup(ts.Close)
	m.url = ts.URL
	return m
}

func (m *manyTables) statusURL(name string) string {
	return m.url + "/tables/" + url.PathEscape(configs.LocalBucketARN) + "/ns/" + name + "/maintenance-job-status"
}

// openDBFiles counts this process's open handles on the home's SQLite
// files (catalog and state store, with their -wal and -shm files).
func openDBFiles(tb testing.TB, home string) int {
	tb.Helper()
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		tb.Skip("needs /proc: ", err)
	}
	n := 0
	for _, fd := range fds {
		target, err := os.Readlink(filepath.Join("/proc/self/fd", fd.Name()))
		if err == nil && strings.HasPrefix(target, home) && strings.Contains(target, ".db") {
			n++
		}
	}
	return n
}

// TestBurstKeepsHandlesBounded sends 1,000 requests on 1,000 connections
// at once, to 100 tables and to 10 that do not exist: every answer is
// right, the known tables are answered without a catalog or store
// connection, and the unknown ones take at most Discovery's 4 concurrent
// lookups. (With every request going to the store and the catalog, the
// peak here was 18 handles above the start.)
func TestBurstKeepsHandlesBounded(t *testing.T) {
	m := newManyTables(t, 100, true)
	before := openDBFiles(t, m.home)
	var peak atomic.Int64
	stop := make(chan struct{})
	var sampler sync.WaitGroup
	sampler.Go(func() {
		for {
			peak.Store(max(peak.Load(), int64(openDBFiles(t, m.home))))
			select {
			case <-stop:
				return
			case <-time.After(2 * time.Millisecond):
			}
		}
	})

	const requests = 1000
	start := make(chan struct{})
	codes := make([]int, requests)
	var wg sync.WaitGroup
	for i := range requests {
		wg.Go(func() {
			name := m.names[i%len(m.names)]
			want := http.StatusOK
			if i%100 == 0 {
				name, want = fmt.Sprintf("missing%d", i/100), http.StatusNotFound
			}
			c := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: time.Minute}
			<-start
			resp, err := c.Get(m.statusURL(name))
			if err != nil {
				t.Errorf("request %d: %v", i, err)
				return
			}
			resp.Body.Close()
			if codes[i] = resp.StatusCode; codes[i] != want {
				t.Errorf("request %d for %s: %d, want %d", i, name, resp.StatusCode, want)
			}
		})
	}
	close(start)
	wg.Wait()
	close(stop)
	sampler.Wait()
	after := openDBFiles(t, m.home)
	t.Logf("handles on the SQLite files: %d before, peak %d, %d after", before, peak.Load(), after)
	// Each SQLite connection holds the database, -wal and -shm files.
	if limit := before + 3*4; int(peak.Load()) > limit {
		t.Fatalf("peak of %d handles on the SQLite files, above %d", peak.Load(), limit)
	}
}

// BenchmarkJobStatus is GetTableMaintenanceJobStatus on 1,000 tables from
// 32 concurrent clients: from memory (the daemon's wiring) against the
// store and the catalog on every request. Reports requests/s and p99.
func BenchmarkJobStatus(b *testing.B) {
	for _, mode := range []struct {
		name   string
		cached bool
	}{{"memory", true}, {"store", false}} {
		b.Run(mode.name, func(b *testing.B) {
			m := newManyTables(b, 1000, mode.cached)
			tr := &http.Transport{MaxIdleConnsPerHost: 32}
			c := &http.Client{Transport: tr}
			var mu sync.Mutex
			var lat []time.Duration
			var i atomic.Int64
			b.SetParallelism(16) // 32 clients on the 2 cores here
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				var mine []time.Duration
				for pb.Next() {
					t0 := time.Now()
					resp, err := c.Get(m.statusURL(m.names[int(i.Add(1))%len(m.names)]))
					if err != nil || resp.StatusCode != http.StatusOK {
						b.Errorf("job status: %v %v", resp, err)
						return
					}
					resp.Body.Close()
					mine = append(mine, time.Since(t0))
				}
				mu.Lock()
				lat = append(lat, mine...)
				mu.Unlock()
			})
			b.StopTimer()
			sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "req/s")
			if len(lat) > 0 {
				b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
			}
		})
	}
}

// BenchmarkJobStatusHandler is the job-status handler alone, without
// the network, on 1,000 tables as the daemon wires it: the last run of
// every type carries figures with a cost (a few hundred bytes beside
// it, as a compaction records), and every type has a lag. It is the
// server's CPU per request that scripts/bench-api.sh measures through
// wrk, where the network costs more than the handler.
func BenchmarkJobStatusHandler(b *testing.B) {
	m := newManyTables(b, 100, true)
	srv := m.server
	ctx := context.Background()
	figures := []byte(`{"filesRewritten":240,"bytesRewritten":125829120,"filesWritten":21,"groups":21,"deferred":0,` +
		`"skipped":[{"partition":"day=2026-11-30","reason":"fewer than 5 files"},{"partition":"day=2026-12-01","reason":"fewer than 5 files"}],` +
		`"cost":{"requests":532,"byKind":{"GET":270,"PUT":21,"LIST":1,"HEAD":240},"bytesRead":125829120,"bytesWritten":98566144,"processedObjects":240,"processedBytes":125829120,"usd":0.0003,"s3TablesUSD":0.06}}`)
	fresh := &jobs.Freshness{}
	now := time.Now()
	for _, name := range m.names {
		k := state.TableKey{Bucket: configs.LocalBucketARN, Namespace: "ns", Name: name}
		for _, typ := range maintenance.MaintenanceTypes() {
			id, err := srv.Store.StartRun(ctx, state.Run{Table: k, Type: typ, Trigger: "test", Started: now})
			if err != nil {
				b.Fatal(err)
			}
			if err := srv.Store.FinishRun(ctx, state.Run{ID: id, Table: k, Type: typ, Status: state.Successful, Started: now, Finished: now, Metrics: figures}); err != nil {
				b.Fatal(err)
			}
			fresh.Set(k, "file:///w/ns/"+name, typ, jobs.Lag{Oldest: &planner.Oldest{Since: now.Add(-time.Hour), What: "3 data files added by snapshot 123 (append)"}, Checked: now})
		}
	}
	srv.Freshness = fresh
	h := srv.Handler()
	var i atomic.Int64
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			req := httptest.NewRequest(http.MethodGet, m.statusURL(m.names[int(i.Add(1))%len(m.names)]), nil)
			w := httptest.NewRecorder()
			h.ServeHTTP(w, req)
			if w.Code != http.StatusOK {
				b.Fatalf("job status: %d %s", w.Code, w.Body)
			}
		}
	})
}
