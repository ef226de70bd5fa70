package bucket

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"
)

// CommitRate bounds the commits icekeeper sends a bucket's REST catalog,
// for the managed catalogs that limit them (Cloudflare R2 Data Catalog: 20
// updateTable a minute per table, 120 writes a minute per catalog): at most
// PerTable commits to one table, and PerCatalog to the catalog as a whole,
// in any minute. 0 leaves a bound off. The bounds hold per process: replicas
// of icekeeper on one catalog must share them out.
type CommitRate struct {
	PerTable, PerCatalog int
}

// on reports whether any bound is set.
func (c CommitRate) on() bool { return c.PerTable > 0 || c.PerCatalog > 0 }

// commitLimiter holds the commits to one catalog within a CommitRate. It
// keeps the times of the last commits granted (a sliding log) rather than
// a token bucket: a bucket refilled at n a minute with a burst of n lets
// 2n through in the first minute, and the catalogs count what arrived in
// a window. A commit waits until both its table's and the catalog's last
// window hold fewer commits than their bound.
type commitLimiter struct {
	perTable, perCatalog int
	window               time.Duration

	mu      sync.Mutex
	catalog []time.Time            // the last grants, oldest first, at most perCatalog
	tables  map[string][]time.Time // the same per table, at most perTable each
	swept   time.Time              // when tables were last rid of idle entries
}

func newCommitLimiter(rate CommitRate, window time.Duration) *commitLimiter {
	return &commitLimiter{perTable: rate.PerTable, perCatalog: rate.PerCatalog, window: window, tables: map[string][]time.Time{}}
}

// wait blocks until a commit to tables may be sent and takes its turn in
// the catalog's window and in each table's. It returns how long it
// waited; when ctx ends first, that and the context's cause.
func (l *commitLimiter) wait(ctx context.Context, tables []string) (time.Duration, error) {
	start := time.Now()
	for {
		l.mu.Lock()
		now := time.Now()
		at := l.nextLocked(tables)
		if !at.After(now) {
			l.takeLocked(tables, now)
			l.mu.Unlock()
			return now.Sub(start), nil
		}
		l.mu.Unlock()
		// Another commit may take the turn first: then the loop waits
		// for the next one.
		if err := sleep(ctx, at.Sub(now)); err != nil {
			return time.Since(start), err
		}
	}
}

// nextLocked is the earliest time a commit to tables may go: the n-th
// most recent grant of a log bounded by n must have left the window.
func (l *commitLimiter) nextLocked(tables []string) time.Time {
	var at time.Time
	later := func(log []time.Time, n int) {
		if n > 0 && len(log) >= n {
			if t := log[len(log)-n].Add(l.window); t.After(at) {
				at = t
			}
		}
	}
	later(l.catalog, l.perCatalog)
	for _, tbl := range tables {
		later(l.tables[tbl], l.perTable)
	}
	return at
}

func (l *commitLimiter) takeLocked(tables []string, now time.Time) {
	if l.perCatalog > 0 {
		l.catalog = appendBounded(l.catalog, now, l.perCatalog)
	}
	if l.perTable <= 0 {
		return
	}
	for _, tbl := range tables {
		l.tables[tbl] = appendBounded(l.tables[tbl], now, l.perTable)
	}
	// A table whose last commit left the window constrains nothing:
	// forget it, so that a fleet's tables are not all kept forever.
	if now.Sub(l.swept) >= l.window {
		for tbl, log := range l.tables {
			if !log[len(log)-1].Add(l.window).After(now) {
				delete(l.tables, tbl)
			}
		}
		l.swept = now
	}
}

func appendBounded(log []time.Time, t time.Time, n int) []time.Time {
	log = append(log, t)
	if len(log) > n {
		log = append(log[:0], log[len(log)-n:]...)
	}
	return log
}

// commitTables reports whether r is a commit, and the tables it commits
// to: updateTable (a POST to a table's own route) or commitTransaction
// (POST …/transactions/commit, its tables read from the body). Loads,
// listings, scan planning and metrics reports are not commits.
func commitTables(r *http.Request) ([]string, bool) {
	if r.Method != http.MethodPost {
		return nil, false
	}
	if tableLoadPath.MatchString(r.URL.Path) {
		parts := strings.Split(r.URL.EscapedPath(), "/")
		ns, _ := url.PathUnescape(parts[len(parts)-3])
		name, _ := url.PathUnescape(parts[len(parts)-1])
		return []string{tableKey(strings.Split(ns, "\x1f"), name)}, true
	}
	if !strings.HasSuffix(r.URL.Path, "/transactions/commit") {
		return nil, false
	}
	var body struct {
		Changes []struct {
			Identifier struct {
				Namespace []string `json:"namespace"`
				Name      string   `json:"name"`
			} `json:"identifier"`
		} `json:"table-changes"`
	}
	// A body that cannot be read again or parsed still counts against
	// the catalog's bound, with no table's.
	if r.GetBody != nil {
		if rd, err := r.GetBody(); err == nil {
			_ = json.NewDecoder(io.LimitReader(rd, 64<<20)).Decode(&body)
			rd.Close()
		}
	}
	var tables []string
	for _, c := range body.Changes {
		tables = append(tables, tableKey(c.Identifier.Namespace, c.Identifier.Name))
	}
	return tables, true
}

// tableKey names a table in the limiter and in messages as TableID does.
func tableKey(namespace []string, name string) string {
	return TableID{Namespace: namespace, Name: name}.String()
}

// sleep waits d, or until ctx ends (returning its cause).
func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return context.Cause(ctx)
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return context.Cause(ctx)
	case <-t.C:
		return nil
	}
}
