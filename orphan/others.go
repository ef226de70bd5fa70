package orphan

import (
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/apache/iceberg-go/table"
	"github.com/sourcegraph/conc/pool"

	"github.com/icekeeper/icekeeper/internal/bucket"
	"github.com/icekeeper/icekeeper/internal/state"
	"github.com/icekeeper/icekeeper/jobs"
)

// ErrSharedLocation is returned when a table's prefixes hold another
// table's files, or are a namespace or warehouse directory where tables
// are created: removal would take every file of those tables for garbage.
var ErrSharedLocation = errors.New("the table's location is shared with other tables")

// Iceberg makes tables whose files live under another table's location
// as a matter of course: the snapshot and migrate procedures, add_files
// from another table's directory, register_table of a copied metadata
// file, a writer's write.folder-storage.path. So an object under this
// table's prefixes is kept when any table of the bucket's catalog
// references it, not only when no other table's prefix covers it.
//
// Reading every table of a bucket at every run would make removal's cost
// follow the bucket, not the change. Two things keep it proportional:
// each other table's manifest lists and manifests come from the
// reference index (its own rows, which its own runs share), so only what
// it committed since is read; and what a table references outside its
// own prefixes (usually nothing) is remembered by its metadata file, so
// an unchanged table costs its load (its metadata file) and nothing more.

// others is what the other tables of the bucket hold inside this table's
// prefixes.
type others struct {
	// exclude are their prefixes inside this table's (nested tables,
	// with allowNestedTables): left alone.
	exclude []loc
	// refs are the files they reference under this table's prefixes.
	refs  *refSet
	stats bucketStats
}

// bucketStats is what the check of the other tables read.
type bucketStats struct {
	// Tables is how many other tables the catalog holds; Unchanged how
	// many of them had the metadata file of an earlier run, whose
	// references outside their own prefixes were remembered.
	Tables    int `json:"tables"`
	Unchanged int `json:"unchanged"`
	// ManifestsRead and ManifestsFromIndex count their manifest lists
	// and manifests read from storage and taken from the reference index.
	ManifestsRead      int `json:"manifestsRead"`
	ManifestsFromIndex int `json:"manifestsFromIndex"`
	// References is how many paths under this table's prefixes they
	// reference.
	References int `json:"references"`
}

// holding is what another table's metadata file says it holds beyond its
// own prefixes.
type holding struct {
	metadata string // the metadata file it was read from
	// foreign are the files it references outside its own prefixes, as
	// its metadata writes them.
	foreign []string
}

// holdings remembers other tables' holdings by bucket and table.
type holdings struct {
	mu sync.Mutex
	m  map[string]holding
}

// maxRemembered bounds the foreign references remembered of one table: a
// snapshot of a large table references all of its files, and is walked
// from the index at each run rather than held.
const maxRemembered = 1 << 16

// others collects what the bucket's other tables hold under sc's
// prefixes. With allow unset, a table inside them, or a namespace or
// warehouse directory there, fails with ErrSharedLocation; with it set,
// such tables' prefixes are returned to be left alone. use is how the
// reference index serves the other tables' manifests (readAll reads
// them through it too: see deleteDue).
func (j *Job) others(ctx context.Context, t jobs.Target, sc scope, allow bool, use indexUse) (others, error) {
	o := others{refs: &refSet{seed: maphash.MakeSeed()}}
	if err := j.containers(ctx, t, sc, allow); err != nil {
		return o, err
	}
	ids, err := t.Bucket.AllTables(ctx)
	if err != nil {
		return o, fmt.Errorf("list the tables of bucket %s: %w", t.Bucket.Name(), err)
	}
	if use == readAll {
		use = indexOnly
	}
	type found struct {
		id     bucket.TableID
		inside []loc
	}
	var (
		mu      sync.Mutex
		nested  []found
		refMu   sync.Mutex
		unch    atomic.Int64
		read    atomic.Int64
		indexed atomic.Int64
	)
	p := pool.New().WithContext(ctx).WithCancelOnError().WithFirstError().WithMaxGoroutines(8)
	for _, id := range ids {
		if id.String() == t.Table.String() {
			continue
		}
		o.stats.Tables++
		p.Go(func(ctx context.Context) error {
			tbl, err := t.Bucket.LoadTable(ctx, id)
			if errors.Is(err, bucket.ErrNoSuchTable) {
				return nil // dropped since the listing
			}
			if err != nil {
				return fmt.Errorf("load table %s, to keep what it references: %w", id, err)
			}
			raw, err := prefixes(tbl.Metadata())
			if err != nil {
				return fmt.Errorf("table %s: %w", id, err)
			}
			theirs := resolved(raw, sc.res)
			if in := inside(theirs, sc.pfx); len(in) > 0 {
				mu.Lock()
				nested = append(nested, found{id, in})
				mu.Unlock()
			}
			key := state.TableKey{Bucket: t.Bucket.ARN(), Namespace: id.NamespaceString(), Name: id.Name}
			sink := func() refSink { return &batchSink{rs: o.refs, mu: &refMu, sc: sc} }
			var st refStats
			if len(inside(sc.pfx, theirs)) > 0 {
				// This table lies inside the other: all of its
				// references may fall under this table's prefixes.
				st, err = j.walkOther(ctx, tbl, key, use, sink)
			} else {
				var h holding
				var fresh bool
				if h, fresh, st, err = j.holding(ctx, t.Bucket.ARN(), tbl, key, scope{pfx: theirs, eq: sc.eq, res: sc.res}, use); err == nil {
					if !fresh {
						unch.Add(1)
					}
					s := sink()
					for _, r := range h.foreign {
						if err = s.add(r, false); err != nil {
							break
						}
					}
					s.flush()
				}
			}
			read.Add(int64(st.ManifestsRead))
			indexed.Add(int64(st.ManifestsFromIndex))
			if err != nil {
				return fmt.Errorf("table %s: %w", id, err)
			}
			return nil
		})
	}
	if err := p.Wait(); err != nil {
		return o, err
	}
	j.forgetHoldings(t.Bucket.ARN(), ids)
	o.refs.seal()
	o.stats.Unchanged, o.stats.ManifestsRead, o.stats.ManifestsFromIndex = int(unch.Load()), int(read.Load()), int(indexed.Load())
	o.stats.References = len(o.refs.refs)

	slices.SortFunc(nested, func(a, b found) int { return strings.Compare(a.id.String(), b.id.String()) })
	var named []string
	for _, n := range nested {
		o.exclude = append(o.exclude, n.inside...)
		named = append(named, fmt.Sprintf("%s at %s", n.id, n.inside[0]))
	}
	if len(named) > 0 && !allow {
		return o, fmt.Errorf("%w: %s holds %d other tables' files (%s); removal would take them for garbage: move the table, or set allowNestedTables on the bucket to remove around them",
			ErrSharedLocation, sc.pfx[0], len(named), strings.Join(named[:min(len(named), 5)], ", "))
	}
	return o, nil
}

// walkOther walks every reference of another table, its manifests
// served by the index under its own key, into sinks.
func (j *Job) walkOther(ctx context.Context, tbl *table.Table, key state.TableKey, use indexUse, sink func() refSink) (refStats, error) {
	fs, err := tbl.FS(ctx)
	if err != nil {
		return refStats{}, fmt.Errorf("open file system of %s: %w", tbl.Location(), err)
	}
	return walkRefs(ctx, tbl, fs, j.Parallelism, j.index(key, tbl, use), sink)
}

// holding returns what tbl references outside own, its own prefixes,
// from memory when its metadata file is the one read last time (fresh
// is false then), else walking it.
func (j *Job) holding(ctx context.Context, arn string, tbl *table.Table, key state.TableKey, own scope, use indexUse) (h holding, fresh bool, st refStats, err error) {
	id := arn + "\x00" + key.Namespace + "\x00" + key.Name
	j.held.mu.Lock()
	h, ok := j.held.m[id]
	j.held.mu.Unlock()
	if ok && h.metadata == tbl.MetadataLocation() {
		return h, false, st, nil
	}
	var mu sync.Mutex
	h = holding{metadata: tbl.MetadataLocation()}
	st, err = j.walkOther(ctx, tbl, key, use, func() refSink { return &foreignSink{own: own, mu: &mu, out: &h.foreign} })
	if err != nil {
		return h, true, st, err
	}
	slices.Sort(h.foreign)
	h.foreign = slices.Compact(h.foreign)
	if len(h.foreign) <= maxRemembered {
		j.held.mu.Lock()
		if j.held.m == nil {
			j.held.m = map[string]holding{}
		}
		j.held.m[id] = h
		j.held.mu.Unlock()
	}
	return h, true, st, nil
}

// forgetHoldings drops what is remembered of the bucket's tables that
// are no longer in its catalog.
func (j *Job) forgetHoldings(arn string, ids []bucket.TableID) {
	live := make(map[string]bool, len(ids))
	for _, id := range ids {
		live[arn+"\x00"+id.NamespaceString()+"\x00"+id.Name] = true
	}
	j.held.mu.Lock()
	defer j.held.mu.Unlock()
	for k := range j.held.m {
		if strings.HasPrefix(k, arn+"\x00") && !live[k] {
			delete(j.held.m, k)
		}
	}
}

// foreignSink keeps the references that some form of lies outside own.
type foreignSink struct {
	own  scope
	mu   *sync.Mutex
	out  *[]string
	kept []string
}

func (s *foreignSink) add(p string, _ bool) error {
	// A reference own cannot place (another scheme for the same path)
	// is kept as foreign: the table asking decides what it is to it.
	if _, n, forms, err := s.own.classify(p); err == nil && n == forms {
		return nil
	}
	s.kept = append(s.kept, p)
	return nil
}

func (s *foreignSink) flush() {
	if len(s.kept) == 0 {
		return
	}
	s.mu.Lock()
	*s.out = append(*s.out, s.kept...)
	s.mu.Unlock()
	s.kept = nil
}

// inside returns those of theirs that lie under one of pfx (or are one),
// compared by authority and path whatever the scheme (s3a:// names the
// same object as s3:// often enough that guessing otherwise is unsafe),
// in pfx's scheme.
func inside(theirs, pfx []loc) []loc {
	var in []loc
	for _, o := range theirs {
		for _, p := range pfx {
			if o.authority == p.authority && strings.HasPrefix(o.path, p.path) {
				o.scheme = p.scheme
				in = append(in, o)
				break
			}
		}
	}
	return in
}

// containers refuses a table whose prefixes contain the catalog's
// warehouse or a directory of the table's namespaces, where the catalog
// puts new tables.
func (j *Job) containers(ctx context.Context, t jobs.Target, sc scope, allow bool) error {
	if allow {
		return nil
	}
	type dir struct{ what, location string }
	var dirs []dir
	if w := t.Bucket.Properties()["warehouse"]; w != "" {
		dirs = append(dirs, dir{"the warehouse", w})
	}
	cat, err := t.Bucket.Catalog(ctx)
	if err != nil {
		return err
	}
	for i := range t.Table.Namespace {
		ns := t.Table.Namespace[:i+1]
		props, err := cat.LoadNamespaceProperties(ctx, ns)
		if err != nil {
			return fmt.Errorf("load the properties of namespace %s: %w", strings.Join(ns, "."), err)
		}
		if l := props["location"]; l != "" {
			dirs = append(dirs, dir{"namespace " + strings.Join(ns, "."), l})
		}
	}
	for _, d := range dirs {
		// A REST catalog's warehouse is a name, not a location.
		if !strings.HasPrefix(d.location, "/") && !strings.Contains(d.location, "://") {
			continue
		}
		ls, err := dirOf(d.location)
		if err != nil {
			continue // not a location icekeeper could list either
		}
		ls = sc.res.prefix(ls)
		for _, p := range sc.pfx {
			if ls.authority == p.authority && strings.HasPrefix(ls.path, p.path) {
				return fmt.Errorf("%w: %s contains the directory of %s (%s), where the catalog creates tables: move the table, or set allowNestedTables on the bucket to remove around the tables there",
					ErrSharedLocation, p, d.what, d.location)
			}
		}
	}
	return nil
}

// dirOf is dirs for one location.
func dirOf(s string) (loc, error) {
	ls, err := dirs([]string{s})
	if err != nil {
		return loc{}, err
	}
	return ls[0], nil
}
