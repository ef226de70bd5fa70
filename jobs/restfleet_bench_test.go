package jobs_test

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/sourcegraph/conc/pool"

	"github.com/icekeeper/icekeeper/compactor"
	"github.com/icekeeper/icekeeper/configs"
	"github.com/icekeeper/icekeeper/erasure"
	"github.com/icekeeper/icekeeper/expire"
	"github.com/icekeeper/icekeeper/expire/records"
	"github.com/icekeeper/icekeeper/internal/bucket"
	"github.com/icekeeper/icekeeper/internal/demo"
	"github.com/icekeeper/icekeeper/internal/state"
	"github.com/icekeeper/icekeeper/internal/testkit"
	"github.com/icekeeper/icekeeper/internal/testkit/servers"
	"github.com/icekeeper/icekeeper/jobs"
	"github.com/icekeeper/icekeeper/maintenance"
	"github.com/icekeeper/icekeeper/orphan"
)

// BenchmarkRESTFleet counts what one cycle of each job type asks of an
// Iceberg REST catalog (SeaweedFS's, SigV4) and of its S3, per table, on
// a fleet of small tables (ICEKEEPER_REST_FLEET_TABLES, 1,000 unless set;
// one append of 10 rows each, record expiration on ts with a retention
// no row reaches, maintenance.MaxDays, and erasure with a seven-day
// deadline). Every catalog response and every S3 response is held back
// 20 ms by a proxy that also counts the requests by kind. A cycle runs every table once,
// ICEKEEPER_REST_FLEET_PARALLELISM (8) at a time.
//
// Per job type: a first cycle over every table (to a steady state: the
// unchanged rule's evaluations, removal's reference index and view), then
// 1% of the tables receive an append, then the measured cycle, over the
// unchanged tables first and the changed ones after, counted apart (so a
// cost the runs of one cycle share, such as removal's check of the other
// tables, falls on the unchanged group, and the changed figure is what a
// change adds).
//
// Removal: each table has a stray file under its location; the marking
// cycle runs at clock +4 days, the deleting cycle at +15 days as one fire
// (jobs.Options.FreshSince at the fire's time, as the daemon's engine
// passes the time a run was queued). Before that fire, a sample of the
// tables (ICEKEEPER_REST_FLEET_BEFORE, 20) delete theirs with FreshSince
// zero, as every deleting run did before one fire's runs shared their
// check of the other tables: each loads every other table itself.
//
// The fleet is built once, directly (no latency), eight tables at a time.
// At 1,000 tables the benchmark takes about 26 minutes, 21 of them the
// deleting fire (BENCHMARKS.md, "REST fleet: requests per table per
// cycle"); at 200, under 2.
//
//	go test -run '^$' -bench RESTFleet -benchtime 1x -timeout 60m -v ./jobs/
//	ICEKEEPER_REST_FLEET_TABLES=200 go test -run '^$' -bench RESTFleet -benchtime 1x -v ./jobs/
func BenchmarkRESTFleet(b *testing.B) {
	n := envInt("ICEKEEPER_REST_FLEET_TABLES", 1000)
	par := envInt("ICEKEEPER_REST_FLEET_PARALLELISM", 8)
	sample := envInt("ICEKEEPER_REST_FLEET_BEFORE", 20)
	const latency = 20 * time.Millisecond
	ctx := context.Background()
	srv := servers.REST(b)
	home := b.TempDir()

	// The fleet, built directly.
	start := time.Now()
	direct := configs.Embedded(home)
	direct.Buckets[0].Catalog = srv.Props()
	dreg := direct.Registry()
	b.Cleanup(dreg.Close)
	db, _ := dreg.Bucket("local")
	cat, err := db.Catalog(ctx)
	if err != nil {
		b.Fatal(err)
	}
	if err := cat.CreateNamespace(ctx, table.Identifier{"fleet"}, nil); err != nil {
		b.Fatal(err)
	}
	ids := make([]bucket.TableID, n)
	locs := make([]string, n)
	p := pool.New().WithErrors().WithMaxGoroutines(8)
	for i := range n {
		ids[i] = bucket.TableID{Namespace: []string{"fleet"}, Name: fmt.Sprintf("t%04d", i)}
		p.Go(func() error {
			tbl, err := cat.CreateTable(ctx, table.Identifier{"fleet", ids[i].Name}, demo.Schema(),
				catalog.WithProperties(iceberg.Properties{records.ExpirationColumnProperty: "ts"}))
			if err != nil {
				return fmt.Errorf("create table %d: %w", i, err)
			}
			locs[i] = strings.TrimSuffix(tbl.Location(), "/")
			if err := testkit.AppendRows(ctx, db, ids[i], 10); err != nil {
				return fmt.Errorf("append to table %d: %w", i, err)
			}
			return nil
		})
	}
	if err := p.Wait(); err != nil {
		b.Fatal(err)
	}
	b.Logf("built %d tables in %v", n, time.Since(start).Round(time.Second))

	// The same bucket through the latency and the counters.
	catCount := slowCounter(b, srv.URI, latency, catalogKind)
	s3Count := slowCounter(b, srv.S3Endpoint, latency, s3Kind)
	cfg := configs.Embedded(home)
	props := srv.Props()
	props["uri"] = catCount.url
	props["s3.endpoint"] = s3Count.url
	cfg.Buckets[0].Catalog = props
	reg := cfg.Registry()
	b.Cleanup(reg.Close)
	bk, _ := reg.Bucket("local")
	store, err := state.Open(ctx, "sqlite://"+home+"/state.db")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { store.Close() })
	defaults := cfg.Buckets[0].Defaults()
	defaults.Configs[maintenance.RecordExpiration] = maintenance.Config{Status: maintenance.Enabled,
		Settings: &maintenance.ExpirationSettings{Days: maintenance.Int(maintenance.MaxDays)}}
	defaults.Configs[maintenance.Erasure] = maintenance.Config{Status: maintenance.Enabled,
		Settings: &maintenance.ErasureSettings{DeadlineDays: maintenance.Int(7)}}
	removal := &orphan.Job{Store: store}
	runner := &jobs.Runner{Store: store,
		Jobs: jobs.Map((&compactor.Job{}).Definition(), (&expire.Job{}).Definition(), removal.Definition(),
			(&records.Job{}).Definition(), (&erasure.Job{DeleteFiles: removal.DeleteUnreferenced}).Definition()),
		Resolver: &jobs.Resolver{Store: store, Defaults: map[string]maintenance.BucketDefaults{bk.ARN(): defaults}}}

	changedN := max(n/100, 1)
	phase := 0
	// changeSome appends to 1% of the tables, a different 1% each time.
	changeSome := func() []int {
		var idx []int
		for j := range changedN {
			idx = append(idx, j*(n/changedN)+phase)
		}
		phase++
		p := pool.New().WithErrors().WithMaxGoroutines(8)
		for _, i := range idx {
			p.Go(func() error { return testkit.AppendRows(ctx, db, ids[i], 10) })
		}
		if err := p.Wait(); err != nil {
			b.Fatal(err)
		}
		return idx
	}
	var figMu sync.Mutex
	// cycle runs typ on the tables idx, par at a time, and returns the
	// requests made, the wall time and the runs' figures.
	cycle := func(typ maintenance.JobType, idx []int, opts jobs.Options) (cat, s3c map[string]int, wall time.Duration, figs []jobs.Figures) {
		b.Helper()
		catCount.Take()
		s3Count.Take()
		start := time.Now()
		p := pool.New().WithErrors().WithMaxGoroutines(par)
		for _, i := range idx {
			p.Go(func() error {
				out, err := runner.Run(ctx, jobs.Target{Bucket: bk, Table: ids[i]}, typ, "bench", opts)
				if err != nil || out.Status != state.Successful {
					return fmt.Errorf("%s on %s: %v %s %s", typ, ids[i].Name, err, out.Status, out.FailureMessage)
				}
				figMu.Lock()
				figs = append(figs, out.Figures)
				figMu.Unlock()
				return nil
			})
		}
		if err := p.Wait(); err != nil {
			b.Fatal(err)
		}
		return catCount.Take(), s3Count.Take(), time.Since(start), figs
	}
	all := make([]int, n)
	for i := range all {
		all[i] = i
	}
	without := func(idx, drop []int) []int {
		var out []int
		for _, i := range idx {
			if !slices.Contains(drop, i) {
				out = append(out, i)
			}
		}
		return out
	}
	report := func(label string, k int, cat, s3c map[string]int, wall time.Duration) {
		b.Helper()
		reqs := servers.Total(cat) + servers.Total(s3c)
		b.Logf("%s: %d tables in %v; catalog %.2f/table %s; S3 %.2f/table %s; limit %v (20 ms × %d requests / %d)",
			label, k, wall.Round(time.Millisecond), float64(servers.Total(cat))/float64(k), perTable(cat, k),
			float64(servers.Total(s3c))/float64(k), perTable(s3c, k),
			(time.Duration(reqs) * latency / time.Duration(par)).Round(time.Millisecond), reqs, par)
		b.ReportMetric(float64(servers.Total(cat))/float64(k), label+"-catalog/table")
		b.ReportMetric(float64(servers.Total(s3c))/float64(k), label+"-S3/table")
		b.ReportMetric(wall.Seconds(), label+"-s")
	}
	// measured runs one cycle of typ as the unchanged tables, then the
	// changed, counted apart.
	measured := func(name string, typ maintenance.JobType, tables, changed []int, opts jobs.Options) (unchFigs, chFigs []jobs.Figures) {
		b.Helper()
		unch := without(tables, changed)
		c, s, w, unchFigs := cycle(typ, unch, opts)
		report(name+"-unchanged", len(unch), c, s, w)
		c, s, w, chFigs = cycle(typ, changed, opts)
		report(name+"-changed", len(changed), c, s, w)
		if testing.Verbose() && len(chFigs) > 0 && chFigs[0] != nil {
			b.Logf("%s, a changed table's run:\n%s", name, chFigs[0].Text())
		}
		return unchFigs, chFigs
	}

	for b.Loop() {
		for _, typ := range []maintenance.JobType{maintenance.Compaction, maintenance.SnapshotManagement,
			maintenance.RecordExpiration, maintenance.Erasure} {
			c, s, w, figs := cycle(typ, all, jobs.Options{})
			report(string(typ)+"-first", n, c, s, w)
			u, ch := measured(string(typ), typ, all, changeSome(), jobs.Options{})
			if typ == maintenance.RecordExpiration {
				// The retention is one no row reaches: nothing goes.
				for _, f := range slices.Concat(figs, u, ch) {
					if f, ok := f.(*records.ExpirationFigures); ok && f.DeletedRecords != 0 {
						b.Fatalf("record expiration removed %d rows: %s", f.DeletedRecords, f.Text())
					}
				}
			}
		}

		// Removal: a stray under every table, written directly.
		client := srv.S3().Client
		p := pool.New().WithErrors().WithMaxGoroutines(8)
		for i := range n {
			p.Go(func() error {
				u, err := url.Parse(locs[i] + "/data/stray.parquet")
				if err != nil {
					return err
				}
				_, err = client.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(u.Host),
					Key: aws.String(strings.TrimPrefix(u.Path, "/")), Body: bytes.NewReader([]byte("stray"))})
				return err
			})
		}
		if err := p.Wait(); err != nil {
			b.Fatal(err)
		}
		now := time.Now()
		typ := maintenance.UnreferencedFileRemoval
		c, s, w, _ := cycle(typ, all, jobs.Options{Now: now})
		report("removal-first", n, c, s, w)
		u, ch := measured("removal-mark", typ, all, changeSome(), jobs.Options{Now: now.Add(4 * 24 * time.Hour)})
		for _, f := range append(u, ch...) {
			if m := f.(*orphan.Figures).Marked; m != 1 {
				b.Fatalf("a marking run marked %d, want its stray: %s", m, f.Text())
			}
		}
		changed := changeSome()
		del := jobs.Options{Now: now.Add(15 * 24 * time.Hour)}
		// Before: runs outside a fire, each checking every other table.
		var before []int
		for j := range min(sample, n) {
			if i := j*(n/min(sample, n)) + n/(2*min(sample, n)); !slices.Contains(changed, i) {
				before = append(before, i)
			}
		}
		c, s, w, figs := cycle(typ, before, del)
		report("removal-delete-before", len(before), c, s, w)
		b.Logf("removal-delete-before: other tables loaded per run %s", loaded(figs))
		// After: the rest as one fire.
		del.FreshSince = time.Now()
		rest := without(all, before)
		uf, cf := measured("removal-delete-fire", typ, rest, without(changed, before), del)
		b.Logf("removal-delete-fire (%d tables): other tables loaded per run, unchanged %s, changed %s", len(rest), loaded(uf), loaded(cf))
		for _, f := range slices.Concat(figs, uf, cf) {
			if d := f.(*orphan.Figures).Deleted; d != 1 {
				b.Fatalf("a deleting run deleted %d, want its stray: %s", d, f.Text())
			}
		}
	}
}

// loaded summarizes how many other tables removal's re-check loaded per
// run: total, runs, and the largest.
func loaded(figs []jobs.Figures) string {
	total, most, runs := 0, 0, 0
	for _, f := range figs {
		if r := f.(*orphan.Figures).Recheck; r != nil {
			total += r.Loaded
			most = max(most, r.Loaded)
			runs++
		}
	}
	return fmt.Sprintf("%d in %d runs (%.1f a run, at most %d)", total, runs, float64(total)/float64(max(runs, 1)), most)
}

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// perTable formats counts by kind divided by k.
func perTable(c map[string]int, k int) string {
	var parts []string
	for _, kind := range slices.Sorted(maps.Keys(c)) {
		parts = append(parts, fmt.Sprintf("%s %.2f", kind, float64(c[kind])/float64(k)))
	}
	return "(" + strings.Join(parts, ", ") + ")"
}

// latencyCounter is a proxy that holds every request back by a latency
// before forwarding it, with the client's Host header (SigV4 signed it),
// and counts the requests by kind.
type latencyCounter struct {
	url    string
	mu     sync.Mutex
	counts map[string]int
}

func slowCounter(t testing.TB, endpoint string, latency time.Duration, kind func(*http.Request) string) *latencyCounter {
	t.Helper()
	target, err := url.Parse(endpoint)
	if err != nil {
		t.Fatal(err)
	}
	c := &latencyCounter{counts: map[string]int{}}
	proxy := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(target)
			r.Out.Host = r.In.Host
		},
		Transport: &http.Transport{MaxIdleConns: 512, MaxIdleConnsPerHost: 512, IdleConnTimeout: time.Minute},
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		k := kind(r)
		c.mu.Lock()
		c.counts[k]++
		c.mu.Unlock()
		time.Sleep(latency)
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	c.url = srv.URL
	return c
}

// Take returns the counts since the last Take, and starts again.
func (c *latencyCounter) Take() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := c.counts
	c.counts = map[string]int{}
	return out
}

var (
	restTable     = regexp.MustCompile(`/namespaces/[^/]+/tables/[^/]+$`)
	restTables    = regexp.MustCompile(`/namespaces/[^/]+/tables$`)
	restNamespace = regexp.MustCompile(`/namespaces/[^/]+$`)
)

// catalogKind names a REST catalog request by its route.
func catalogKind(r *http.Request) string {
	p := r.URL.Path
	switch {
	case strings.HasSuffix(p, "/config"):
		return "config"
	case restTable.MatchString(p) && r.Method == http.MethodGet:
		return "loadTable"
	case restTable.MatchString(p) && r.Method == http.MethodPost:
		return "commit"
	case restTable.MatchString(p) && r.Method == http.MethodHead:
		return "tableExists"
	case restTables.MatchString(p) && r.Method == http.MethodGet:
		return "listTables"
	case strings.HasSuffix(p, "/namespaces") && r.Method == http.MethodGet:
		return "listNamespaces"
	case restNamespace.MatchString(p):
		return r.Method + " namespace"
	case strings.HasSuffix(p, "/transactions/commit"):
		return "commitTransaction"
	}
	return r.Method + " " + p
}

// s3Kind names an S3 request: its method, LIST for a ListObjectsV2,
// DeleteObjects for a batch delete.
func s3Kind(r *http.Request) string {
	switch {
	case r.Method == http.MethodGet && r.URL.Query().Has("list-type"):
		return "LIST"
	case r.Method == http.MethodPost && r.URL.Query().Has("delete"):
		return "DeleteObjects"
	}
	return r.Method
}
