package orphan

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/icekeeper/icekeeper/configs"
	"github.com/icekeeper/icekeeper/internal/bucket"
	"github.com/icekeeper/icekeeper/internal/demo"
	"github.com/icekeeper/icekeeper/internal/state"
	"github.com/icekeeper/icekeeper/internal/testkit"
	"github.com/icekeeper/icekeeper/internal/testkit/servers"
	"github.com/icekeeper/icekeeper/internal/testkit/tablecheck"
	"github.com/icekeeper/icekeeper/jobs"
	"github.com/icekeeper/icekeeper/maintenance"
	"github.com/icekeeper/icekeeper/tables"
)

// TestSweepChecksEachTableOnce: on a catalog that cannot list every
// table's metadata file in one query (REST), the deleting runs of one
// fire over N tables, each with a stray due, load each other table once
// between them, not once per run; every stray goes and no table loses a
// row. Runs outside a fire (FreshSince zero) still check every table
// themselves.
func TestSweepChecksEachTableOnce(t *testing.T) {
	for _, n := range []int{30, 100} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			shared, _ := sweepLoads(t, localSweep(t), n, true)
			if shared > n {
				t.Errorf("one fire over %d tables loaded other tables %d times, want at most %d", n, shared, n)
			}
			if n > 30 {
				t.Logf("%d tables: %d loads in one fire (runs checking alone: %d)", n, shared, n*(n-1))
				return // the per-run count, N(N-1), is measured at 30
			}
			alone, _ := sweepLoads(t, localSweep(t), n, false)
			if alone != n*(n-1) {
				t.Errorf("runs outside a fire loaded other tables %d times, want every run to load every other table: %d", alone, n*(n-1))
			}
			t.Logf("%d tables: %d loads in one fire, %d in runs checking alone (%.1f×)", n, shared, alone, float64(alone)/float64(shared))
		})
	}
}

// TestSweepOnREST is TestSweepChecksEachTableOnce on the Iceberg REST
// catalog over S3, its table loads counted as the catalog answers them:
// one fire's deleting runs over N tables make O(N) loads (each run loads
// its own table, and the fire each other table once), not O(N²).
func TestSweepOnREST(t *testing.T) {
	for _, n := range []int{30, 100} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			env := restSweep(t, servers.REST(t)) // a table bucket of its own
			shared, loads := sweepLoads(t, env, n, true)
			if shared > n || loads > 4*n {
				t.Errorf("one fire over %d tables: %d loads of other tables, %d loads the catalog answered; want at most %d and %d", n, shared, loads, n, 4*n)
			}
			t.Logf("REST, %d tables: %d loads the catalog answered in one fire (%.1f per table; checking alone, every run would load the %d others)", n, loads, float64(loads)/float64(n), n-1)
		})
	}
}

// restSweep is a bucket on srv's REST catalog, its loadTable requests
// counted by a proxy.
func restSweep(t *testing.T, srv servers.RESTServer) sweepEnv {
	var loads atomic.Int64
	target, err := url.Parse(srv.URI)
	if err != nil {
		t.Fatal(err)
	}
	proxy := &httputil.ReverseProxy{Rewrite: func(r *httputil.ProxyRequest) {
		r.SetURL(target)
		r.Out.Host = r.In.Host // SigV4 signed it
	}}
	p := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet && loadTablePath.MatchString(r.URL.Path) {
			loads.Add(1)
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(p.Close)
	cfg := configs.Embedded(t.TempDir())
	props := srv.Props()
	props["uri"] = p.URL
	cfg.Buckets[0].Catalog = props
	reg := cfg.Registry()
	t.Cleanup(reg.Close)
	b, _ := reg.Bucket("local")
	st := s3Store{srv.S3()}
	return sweepEnv{b: b,
		put:    func(uri string) { st.put(t, uri, []byte("stray")) },
		exists: func(uri string) bool { return st.exists(t, uri) },
		loads:  func() int { return int(loads.Load()) }}
}

// loadTablePath is the REST catalog's loadTable route.
var loadTablePath = regexp.MustCompile(`/namespaces/[^/]+/tables/[^/]+$`)

// sweepEnv is where sweepLoads makes its tables: a bucket, whether the
// job must load every table (a catalog without a one-query listing), how
// a stray is written and found, and how many table loads the catalog
// answered (nil: not counted).
type sweepEnv struct {
	b        *bucket.Bucket
	perTable bool
	put      func(uri string)
	exists   func(uri string) bool
	loads    func() int
}

func localSweep(t *testing.T) sweepEnv {
	reg := configs.Embedded(t.TempDir()).Registry()
	t.Cleanup(reg.Close)
	b, _ := reg.Bucket("local")
	return sweepEnv{b: b, perTable: true,
		put: func(uri string) {
			if err := os.WriteFile(strings.TrimPrefix(uri, "file://"), []byte("stray"), 0o644); err != nil {
				t.Fatal(err)
			}
		},
		exists: exists}
}

// sweepLoads makes n tables with a stray file each, marks the strays, and
// deletes them in n runs of one fire (inFire) or n runs of their own; it
// returns how many times those deleting runs loaded another table, and
// how many table loads the catalog answered meanwhile (-1: not counted).
func sweepLoads(t *testing.T, env sweepEnv, n int, inFire bool) (others, catalogLoads int) {
	t.Helper()
	ctx := context.Background()
	b := env.b
	store, err := state.Open(ctx, "sqlite://"+filepath.Join(t.TempDir(), "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	job := &Job{Store: store, perTable: env.perTable}
	runner := &jobs.Runner{Store: store, Jobs: jobs.Map(job.Definition())}
	now := time.Now()
	rng := rand.New(rand.NewPCG(1, uint64(n)))
	var targets []jobs.Target
	rows := map[string]tablecheck.Fingerprint{}
	var strays []string
	for i := range n {
		name := fmt.Sprintf("t%03d", i)
		tbl := testkit.NewTable(t, b, "db", name, demo.Schema())
		if tbl, err = testkit.AppendRandom(ctx, tbl, 3, 0, rng); err != nil {
			t.Fatal(err)
		}
		if rows[name], err = tablecheck.Rows(ctx, tbl, 0); err != nil {
			t.Fatal(err)
		}
		stray := strings.TrimSuffix(tbl.Location(), "/") + "/data/stray.parquet"
		env.put(stray)
		strays = append(strays, stray)
		targets = append(targets, jobs.Target{Bucket: b, Table: bucket.TableID{Namespace: []string{"db"}, Name: name}})
	}
	run := func(target jobs.Target, after time.Duration, since time.Time) *Figures {
		t.Helper()
		out, err := runner.Run(ctx, target, maintenance.UnreferencedFileRemoval, "test", jobs.Options{Now: now.Add(after), FreshSince: since})
		if err != nil || out.Status != state.Successful {
			t.Fatalf("%s at +%v: %+v %v", target.Table, after, out, err)
		}
		return out.Figures.(*Figures)
	}
	for _, target := range targets {
		if fig := run(target, 4*day, time.Time{}); fig.Marked != 1 {
			t.Fatalf("%s marked %v, want its stray", target.Table, fig.MarkedPaths)
		}
	}
	var fire time.Time
	if inFire {
		fire = time.Now()
	}
	catalogLoads = -1
	if env.loads != nil {
		catalogLoads = -env.loads()
	}
	for _, target := range targets {
		fig := run(target, 15*day, fire)
		if fig.Deleted != 1 {
			t.Fatalf("%s deleted %v, want its stray", target.Table, fig.DeletedPaths)
		}
		others += fig.Recheck.Loaded
	}
	if env.loads != nil {
		catalogLoads += env.loads()
	}
	for _, stray := range strays {
		if env.exists(stray) {
			t.Errorf("%s was not deleted", stray)
		}
	}
	for _, target := range targets {
		sound(t, b, target.Table, rows[target.Table.Name])
	}
	return others, catalogLoads
}

// TestViewSharedAcrossProcesses: what one process's removal read of the
// domain's other tables is kept in the registry, so that a run of another
// process (a one-shot `icekeeper run`, another replica) loads none of
// them where nothing changed, and only the table that changed where one
// did: on a catalog that lists every metadata file in one query, and on
// one that cannot (within the view's 5 minutes).
func TestViewSharedAcrossProcesses(t *testing.T) {
	for _, perTable := range []bool{false, true} {
		t.Run(fmt.Sprintf("perTable=%v", perTable), func(t *testing.T) {
			ctx := context.Background()
			env := localSweep(t)
			store, err := state.Open(ctx, "sqlite://"+filepath.Join(t.TempDir(), "state.db"))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { store.Close() })
			rng := rand.New(rand.NewPCG(2, 2))
			const n = 12
			var targets []jobs.Target
			for i := range n {
				tbl := testkit.NewTable(t, env.b, "db", fmt.Sprintf("t%02d", i), demo.Schema())
				if _, err := testkit.AppendRandom(ctx, tbl, 3, 0, rng); err != nil {
					t.Fatal(err)
				}
				targets = append(targets, jobs.Target{Bucket: env.b, Table: bucket.TableID{Namespace: []string{"db"}, Name: fmt.Sprintf("t%02d", i)}})
			}
			// A process: its own job (its own view), the one store.
			loads := func(target jobs.Target, shared bool) int {
				t.Helper()
				job := &Job{Store: store, perTable: perTable}
				if shared {
					job.Tables = &tables.Registry{Store: store}
				}
				runner := &jobs.Runner{Store: store, Jobs: jobs.Map(job.Definition())}
				out, err := runner.Run(ctx, target, maintenance.UnreferencedFileRemoval, "test", jobs.Options{})
				if err != nil || out.Status != state.Successful {
					t.Fatalf("%s: %+v %v", target.Table, out, err)
				}
				return out.Figures.(*Figures).Bucket.Loaded
			}
			if got := loads(targets[0], true); got != n-1 {
				t.Fatalf("the first process loaded %d other tables, want %d", got, n-1)
			}
			// t00, the first run's own table, is no other table's there.
			if got := loads(targets[1], true); got != 1 {
				t.Errorf("a second process loaded %d other tables, want 1 (t00): nothing changed", got)
			}
			if got := loads(targets[1], false); got != n-1 {
				t.Errorf("a process without the registry loaded %d, want every other table (%d)", got, n-1)
			}
			changed, err := env.b.LoadTable(ctx, targets[5].Table)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := testkit.AppendRandom(ctx, changed, 3, 100, rng); err != nil {
				t.Fatal(err)
			}
			want := 1 // the table that changed
			if perTable {
				want = 0 // within the view's 5 minutes, the recorded view stands (a marking run)
			}
			if got := loads(targets[2], true); got != want {
				t.Errorf("after t05 changed, a third process loaded %d other tables, want %d", got, want)
			}
		})
	}
}
