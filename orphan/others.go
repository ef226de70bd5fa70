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
	"time"

	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
	"github.com/sourcegraph/conc/pool"

	"github.com/icekeeper/icekeeper/internal/bucket"
	"github.com/icekeeper/icekeeper/internal/state"
	"github.com/icekeeper/icekeeper/jobs"
	"github.com/icekeeper/icekeeper/tables"
)

// ErrSharedLocation is returned when a table's prefixes hold another
// table's files, or are a namespace or warehouse directory where tables
// are created: removal would take every file of those tables for garbage.
var ErrSharedLocation = errors.New("the table's location is shared with other tables")

// Iceberg makes tables whose files live under another table's location
// as a matter of course: the snapshot and migrate procedures, add_files
// from another table's directory, register_table of a copied metadata
// file, a writer's write.folder-storage.path. So an object under this
// table's prefixes is kept when any table of the bucket's reference
// domain references it, not only when no other table's prefix covers it.
// The domain is every configured bucket that shares the catalog database
// or storage with this one (bucket.Bucket.Domain): two catalog names of
// one SQL catalog hold tables that reach each other's files as readily
// as two tables under one name.
//
// Reading every table of a domain at every run would make removal's cost
// follow the domain, not the change, and a fleet's runs the square of it.
// So the job keeps a view of each domain, shared by its tables' runs: per
// table, its metadata file, its prefixes and the files it references
// outside them (usually none). A table whose metadata file is the one the
// view was read from is not read again; a changed one is loaded, and its
// manifest lists and manifests come from the reference index (its own
// rows, which its own runs share), so only what it committed since is
// read. How a run learns that a table is unchanged depends on the
// catalog: a SQL catalog gives every table's metadata file in one query,
// at every run; other catalogs are loaded table by table, which marking
// runs (and dry runs) do at most once per viewTTL, while the re-check
// before deleting, and snapshot management's deletion, always do.

// viewTTL is how long a marking run trusts a domain view it cannot check
// in one query per bucket. A marking run that misses a reference made
// since can only mark a file: the re-check before deleting loads every
// table afresh and unmarks it.
const viewTTL = 5 * time.Minute

// others is what the other tables of the domain hold inside this
// table's prefixes.
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
	// many of them had the metadata file the bucket's view was read from,
	// and were not read again; Loaded how many were loaded (to learn
	// that, or because they changed).
	Tables    int `json:"tables"`
	Unchanged int `json:"unchanged"`
	Loaded    int `json:"loaded"`
	// ManifestsRead and ManifestsFromIndex count their manifest lists
	// and manifests read from storage and taken from the reference index.
	ManifestsRead      int `json:"manifestsRead"`
	ManifestsFromIndex int `json:"manifestsFromIndex"`
	// References is how many paths under this table's prefixes they
	// reference.
	References int `json:"references"`
}

// held is what one table's metadata file says it holds: its prefixes and
// the files it references outside them.
type held struct {
	b        *bucket.Bucket // the bucket it is listed through (bucket.Bucket.Lists)
	id       bucket.TableID
	metadata string // the metadata file it was read from
	prefixes []loc  // as its metadata writes them (not resolved)
	// foreign are the files it references outside its own prefixes, as
	// its metadata writes them; nil with !complete when there were more
	// than maxRemembered (a snapshot of a large table references all of
	// its files), and a run walks the table itself.
	foreign  []string
	complete bool
	uuid     string // the table's UUID
	// checked is when this process last learned that the table's
	// metadata file is the one above (a load, or the one-query listing
	// of its catalog, started then).
	checked time.Time
}

// tableRef is a table of a domain: ns.t of one bucket and ns.t of
// another are two tables.
type tableRef struct {
	bucket string // the ARN of the bucket it is listed through
	table  string // TableID.String
}

func refOf(b *bucket.Bucket, id bucket.TableID) tableRef {
	return tableRef{bucket: b.Lists().ARN(), table: id.String()}
}

// ref is the table h was read of.
func (h held) ref() tableRef { return refOf(h.b, h.id) }

// target is the table h was read of, as jobs address it.
func (h held) target() jobs.Target { return jobs.Target{Bucket: h.b, Table: h.id} }

// name is h's table as a message about a table of from names it.
func (h held) name(from *bucket.Bucket) string { return h.b.TableName(h.id, from) }

// bucketView is what every table of one reference domain holds, and when
// it was read.
type bucketView struct {
	mu     sync.Mutex // one refresh at a time
	at     time.Time
	tables map[tableRef]held
	// listed is the domain's tables as a listing started at listedAt
	// found them: one fire's deleting runs share it, as they share the
	// checks of the tables (a listing of a REST catalog takes a request
	// per 20 tables).
	listed   []listedTable
	listedAt time.Time
}

// listedTable is a table of the domain as a listing found it.
type listedTable struct {
	b  *bucket.Bucket
	id bucket.TableID
}

// views holds the job's domain views, by the ARN of the domain's first
// bucket.
type views struct {
	mu sync.Mutex
	m  map[string]*bucketView
}

func (vs *views) of(arn string) *bucketView {
	vs.mu.Lock()
	defer vs.mu.Unlock()
	if vs.m == nil {
		vs.m = map[string]*bucketView{}
	}
	v, ok := vs.m[arn]
	if !ok {
		v = &bucketView{}
		vs.m[arn] = v
	}
	return v
}

// maxRemembered bounds the foreign references remembered of one table.
const maxRemembered = 1 << 16

// viewStats is what a refresh of a domain view did.
type viewStats struct {
	unchanged, loaded, read, indexed int
}

// bucketView returns what every table of t's reference domain but t
// holds, refreshed as the header says; fresh forces every table to be
// checked now, except, where the catalog cannot tell every table's
// metadata file in one query, a table checked at or after since (a
// sweep's start: see deleteDue). t itself is neither loaded nor walked: its run reads it
// anyway, and what it held before stays for the other tables' runs to
// check. Each table is listed and loaded through its own bucket, under
// its own catalog name.
func (j *Job) bucketView(ctx context.Context, t jobs.Target, eq Equivalence, fresh bool, since time.Time, use indexUse, hasSelf bool) (map[tableRef]held, viewStats, error) {
	var st viewStats
	domain := t.Bucket.Domain()
	self := refOf(t.Bucket, t.Table)
	if !hasSelf {
		self = tableRef{} // a dropped table's: every table of the domain is another
	}
	v := j.views.of(domain[0].ARN())
	v.mu.Lock()
	defer v.mu.Unlock()
	var listers []*bucket.Bucket
	for _, b := range domain {
		if b.Lists() == b {
			listers = append(listers, b)
		}
	}
	locs := make(map[string]map[string]string, len(listers)) // by bucket ARN
	oneQuery := true
	for _, b := range listers {
		l, err := b.MetadataLocations(ctx)
		if j.perTable {
			l, err = nil, errors.ErrUnsupported
		}
		switch {
		case errors.Is(err, errors.ErrUnsupported):
			oneQuery = false
		case err != nil:
			return nil, st, err
		}
		locs[b.ARN()] = l
	}
	if v.tables == nil && j.Tables != nil {
		// A view of this process's first run starts from what other
		// runs, here or elsewhere, recorded (and is checked as any).
		if err := j.seed(ctx, v, listers); err != nil {
			return nil, st, err
		}
	}
	if !oneQuery && !fresh && v.tables != nil && time.Since(v.at) < viewTTL {
		st.unchanged = len(v.tables)
		if _, ok := v.tables[self]; ok {
			st.unchanged--
		}
		return v.tables, st, nil
	}
	all := v.listed
	if !fresh || since.IsZero() || v.listedAt.Before(since) {
		listedAt := time.Now()
		all = nil
		for _, b := range listers {
			ids, err := b.AllTables(ctx)
			if errors.Is(err, bucket.ErrCatalogName) {
				// No table under the bucket's catalog name (yet): it holds
				// nothing here; its own jobs say what is wrong.
				continue
			}
			if err != nil {
				return nil, st, fmt.Errorf("list the tables of bucket %s: %w", b.Name(), err)
			}
			for _, id := range ids {
				all = append(all, listedTable{b, id})
			}
		}
		v.listed, v.listedAt = all, listedAt
	}
	at := time.Now()
	res := newResolver()
	next := make(map[tableRef]held, len(all))
	var (
		mu                          sync.Mutex
		unch, loaded, read, indexed atomic.Int64
	)
	p := pool.New().WithContext(ctx).WithCancelOnError().WithFirstError().WithMaxGoroutines(8)
	keep := func(r tableRef, h held) {
		mu.Lock()
		next[r] = h
		mu.Unlock()
	}
	for _, l := range all {
		b, id := l.b, l.id
		r := refOf(b, id)
		prev, known := v.tables[r]
		if r == self {
			if known {
				keep(r, prev)
			}
			continue
		}
		byQuery := locs[b.ARN()] != nil
		if known && prev.complete && byQuery && locs[b.ARN()][id.String()] == prev.metadata {
			prev.checked = at
			keep(r, prev)
			unch.Add(1)
			continue
		}
		if known && prev.complete && !byQuery && (fresh && !since.IsZero() && !prev.checked.Before(since) || !fresh && at.Sub(prev.checked) < viewTTL) {
			// Checked in this sweep already, by another table's run; or,
			// for a marking run, recently (by another process too).
			keep(r, prev)
			unch.Add(1)
			continue
		}
		name := b.TableName(id, t.Bucket)
		p.Go(func(ctx context.Context) error {
			tbl, err := b.LoadTable(ctx, id)
			if errors.Is(err, bucket.ErrNoSuchTable) {
				return nil // dropped since the listing
			}
			if err != nil {
				return fmt.Errorf("load table %s, to keep what it references: %w", name, err)
			}
			loaded.Add(1)
			h := prev
			if !known || !prev.complete || prev.metadata != tbl.MetadataLocation() {
				var ws refStats
				h, ws, err = j.hold(ctx, b, id, tbl, eq, res, use)
				read.Add(int64(ws.ManifestsRead))
				indexed.Add(int64(ws.ManifestsFromIndex))
				if err != nil {
					return fmt.Errorf("table %s: %w", name, err)
				}
				j.remember(ctx, b, id, tbl, h, at)
			} else {
				unch.Add(1)
			}
			h.checked = at
			keep(r, h)
			return nil
		})
	}
	if err := p.Wait(); err != nil {
		return nil, st, err
	}
	v.tables, v.at = next, at
	st = viewStats{int(unch.Load()), int(loaded.Load()), int(read.Load()), int(indexed.Load())}
	return next, st, nil
}

// seed fills v with what the registry recorded of the tables the listers
// list: each one's references as of a metadata file, where that file is
// the one the registry last saw current. v.at stays unset: a run starting
// from a seed lists the tables, and trusts each entry as its check's age
// allows (a table the seed lacks is loaded).
func (j *Job) seed(ctx context.Context, v *bucketView, listers []*bucket.Bucket) error {
	v.tables = map[tableRef]held{}
	for _, b := range listers {
		recs, err := j.Store.LiveTables(ctx, b.ARN())
		if err != nil {
			return err
		}
		for _, rec := range recs {
			refs := rec.Refs
			if refs.Metadata == "" || refs.Metadata != rec.MetadataLocation {
				continue // never read, or changed since
			}
			pfx, err := dirs(rec.Locations)
			if err != nil {
				continue // its run reads it, and says what is wrong
			}
			id := bucket.TableIDOf(rec.Key.Namespace, rec.Key.Name)
			v.tables[refOf(b, id)] = held{b: b, id: id, metadata: refs.Metadata, prefixes: pfx, foreign: refs.Foreign,
				complete: refs.Complete, uuid: rec.UUID, checked: refs.Checked}
		}
	}
	return nil
}

// remember records in the registry what tbl, id of b, held as of at, for
// every process's view. A failure costs another process a load, never a
// wrong answer, and is logged.
func (j *Job) remember(ctx context.Context, b *bucket.Bucket, id bucket.TableID, tbl *table.Table, h held, at time.Time) {
	if j.Tables == nil {
		return
	}
	if _, err := j.Tables.Observe(ctx, b, id, tbl); err != nil {
		j.log().Warn("table not recorded in the registry", "table", id.String(), "err", err)
		return
	}
	key := state.TableKey{Bucket: b.ARN(), Namespace: id.NamespaceString(), Name: id.Name}
	refs := state.TableRefs{Metadata: h.metadata, Foreign: h.foreign, Complete: h.complete, Checked: at}
	if err := j.Store.PutTableRefs(ctx, key, h.uuid, tables.Locations(tbl.Metadata()), refs); err != nil {
		j.log().Warn("what a table references not recorded", "table", id.String(), "err", err)
	}
}

// hold reads what tbl holds: its prefixes, and what it references outside
// them (its manifests served by the reference index under its own key).
func (j *Job) hold(ctx context.Context, b *bucket.Bucket, id bucket.TableID, tbl *table.Table, eq Equivalence, res *resolver, use indexUse) (held, refStats, error) {
	h := held{b: b, id: id, metadata: tbl.MetadataLocation(), uuid: tbl.Metadata().TableUUID().String()}
	var err error
	if h.prefixes, err = prefixes(tbl.Metadata()); err != nil {
		return h, refStats{}, err
	}
	own := scope{pfx: resolved(h.prefixes, res), eq: eq, res: res}
	var mu sync.Mutex
	st, err := j.walkOther(ctx, b, id, tbl, use, func() refSink { return &foreignSink{own: own, mu: &mu, out: &h.foreign} })
	if err != nil {
		return h, st, err
	}
	slices.Sort(h.foreign)
	h.foreign = slices.Compact(h.foreign)
	if h.complete = len(h.foreign) <= maxRemembered; !h.complete {
		h.foreign = nil
	}
	return h, st, nil
}

// walkOther walks every reference of another table, its manifests
// served by the index under its own key (its own bucket's ARN), into
// sinks.
func (j *Job) walkOther(ctx context.Context, b *bucket.Bucket, id bucket.TableID, tbl *table.Table, use indexUse, sink func() refSink) (refStats, error) {
	fs, err := tbl.FS(ctx)
	if err != nil {
		return refStats{}, fmt.Errorf("open file system of %s: %w", tbl.Location(), err)
	}
	key := state.TableKey{Bucket: b.ARN(), Namespace: id.NamespaceString(), Name: id.Name}
	return walkRefs(ctx, tbl, fs, j.Parallelism, j.index(key, tbl, use), sink)
}

// others collects what the domain's other tables hold under sc's
// prefixes. With allow unset, a table inside them, or a namespace or
// warehouse directory there, fails with ErrSharedLocation; with it set,
// such tables' prefixes are returned to be left alone. use is how the
// reference index serves the other tables' manifests (readAll, the
// re-check before deleting, reads them through it too, but checks every
// table afresh).
// othersOpts steer others: allow is allowNestedTables, since and use as
// bucketView takes them; dropped, when set, is the UUID of the dropped
// table whose leftovers are looked at: every table of the domain is
// another, tables inside are left alone, and one whose prefixes hold it,
// or that has its UUID, stops the run (ErrNotLeftover).
type othersOpts struct {
	allow   bool
	since   time.Time
	use     indexUse
	dropped string
}

func (j *Job) others(ctx context.Context, t jobs.Target, sc scope, oo othersOpts) (others, error) {
	allow, since, use := oo.allow, oo.since, oo.use
	o := others{refs: &refSet{seed: maphash.MakeSeed()}}
	if err := j.containers(ctx, t, sc, allow, use == readAll, since); err != nil {
		return o, err
	}
	// A dropped table's leftovers are removed around the live tables
	// inside its location, which are no leftovers of it.
	allow = allow || oo.dropped != ""
	fresh := use == readAll
	if fresh {
		use = indexOnly
	}
	tables, vs, err := j.bucketView(ctx, t, sc.eq, fresh, since, use, oo.dropped == "")
	if err != nil {
		return o, err
	}
	o.stats = bucketStats{Unchanged: vs.unchanged, Loaded: vs.loaded, ManifestsRead: vs.read, ManifestsFromIndex: vs.indexed}
	type found struct {
		name   string
		inside []loc
	}
	var nested []found
	var mu sync.Mutex
	var walked []held
	self := refOf(t.Bucket, t.Table)
	for _, h := range tables {
		if oo.dropped == "" && h.ref() == self {
			continue
		}
		o.stats.Tables++
		theirs := resolved(h.prefixes, sc.res)
		if oo.dropped != "" {
			switch {
			case h.uuid == oo.dropped:
				return o, fmt.Errorf("%w: table %s is live under %s again", ErrNotLeftover, oo.dropped, h.name(t.Bucket))
			case len(inside(sc.pfx, theirs)) > 0:
				return o, fmt.Errorf("%w: its location lies inside live table %s's, whose own removal takes what it left", ErrNotLeftover, h.name(t.Bucket))
			}
		}
		if in := inside(theirs, sc.pfx); len(in) > 0 {
			nested = append(nested, found{h.name(t.Bucket), in})
		}
		if !h.complete || len(inside(sc.pfx, theirs)) > 0 {
			// Too many to remember, or this table lies inside the
			// other: all of its references may matter here.
			walked = append(walked, h)
			continue
		}
		sink := &batchSink{rs: o.refs, mu: &mu, sc: sc}
		for _, r := range h.foreign {
			if err := sink.add(r, false); err != nil {
				return o, fmt.Errorf("table %s: %w", h.name(t.Bucket), err)
			}
		}
		sink.flush()
	}
	for _, h := range walked {
		tbl, err := h.b.LoadTable(ctx, h.id)
		if errors.Is(err, bucket.ErrNoSuchTable) {
			continue
		}
		if err != nil {
			return o, fmt.Errorf("load table %s, to keep what it references: %w", h.name(t.Bucket), err)
		}
		st, err := j.walkOther(ctx, h.b, h.id, tbl, use, func() refSink { return &batchSink{rs: o.refs, mu: &mu, sc: sc} })
		o.stats.Loaded++
		o.stats.ManifestsRead += st.ManifestsRead
		o.stats.ManifestsFromIndex += st.ManifestsFromIndex
		if err != nil {
			return o, fmt.Errorf("table %s: %w", h.name(t.Bucket), err)
		}
	}
	o.refs.seal()
	o.stats.References = len(o.refs.refs)

	slices.SortFunc(nested, func(a, b found) int { return strings.Compare(a.name, b.name) })
	var named []string
	for _, n := range nested {
		o.exclude = append(o.exclude, n.inside...)
		named = append(named, fmt.Sprintf("%s at %s", n.name, n.inside[0]))
	}
	if len(named) > 0 && !allow {
		return o, fmt.Errorf("%w: %s holds %d other tables' files (%s); removal would take them for garbage: move the table, or set allowNestedTables on the bucket to remove around them",
			ErrSharedLocation, sc.pfx[0], len(named), strings.Join(named[:min(len(named), 5)], ", "))
	}
	return o, nil
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

// containers refuses a table whose prefixes contain the warehouse of a
// catalog of its domain or a directory of the table's namespaces, where
// a catalog puts new tables.
//
// A namespace's location is read at most once a view's lifetime (a
// marking run), or once a fire (fresh, since set), like the other tables:
// every run of a fire asks about the same few namespaces.
func (j *Job) containers(ctx context.Context, t jobs.Target, sc scope, allow, fresh bool, since time.Time) error {
	if allow {
		return nil
	}
	type dir struct{ what, location string }
	var dirs []dir
	for _, b := range t.Bucket.Domain() {
		if w := b.Properties()["warehouse"]; w != "" {
			what := "the warehouse"
			if b.Lists() != t.Bucket.Lists() {
				what = "the warehouse of bucket " + b.Name()
			}
			dirs = append(dirs, dir{what, w})
		}
	}
	for i := range t.Table.Namespace {
		ns := t.Table.Namespace[:i+1]
		l, gone, err := j.namespaces.location(ctx, t.Bucket, ns, fresh, since)
		if err != nil {
			return err
		}
		if gone {
			break // dropped with a dropped table: no directory to keep
		}
		if l != "" {
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

// namespaces caches the namespaces' location properties containers
// reads, by bucket and namespace.
type namespaces struct {
	mu sync.Mutex
	m  map[string]namespaceEntry
}

type namespaceEntry struct {
	location string
	gone     bool      // the catalog has no such namespace
	at       time.Time // when it was read
}

// location is ns's location property in b's catalog (gone: no such
// namespace), read again unless a read is recent enough: within viewTTL
// for a marking run, since since for a fresh one (never, since zero).
func (c *namespaces) location(ctx context.Context, b *bucket.Bucket, ns table.Identifier, fresh bool, since time.Time) (string, bool, error) {
	key := b.Lists().ARN() + "\x00" + strings.Join(ns, "\x1f")
	now := time.Now()
	c.mu.Lock()
	e, ok := c.m[key]
	c.mu.Unlock()
	if ok && (!fresh && now.Sub(e.at) < viewTTL || fresh && !since.IsZero() && !e.at.Before(since)) {
		return e.location, e.gone, nil
	}
	cat, err := b.Catalog(ctx)
	if err != nil {
		return "", false, err
	}
	props, err := cat.LoadNamespaceProperties(ctx, ns)
	switch {
	case errors.Is(err, catalog.ErrNoSuchNamespace):
		e = namespaceEntry{gone: true, at: now}
	case err != nil:
		return "", false, fmt.Errorf("load the properties of namespace %s: %w", strings.Join(ns, "."), err)
	default:
		e = namespaceEntry{location: props["location"], at: now}
	}
	c.mu.Lock()
	if c.m == nil {
		c.m = map[string]namespaceEntry{}
	}
	c.m[key] = e
	c.mu.Unlock()
	return e.location, e.gone, nil
}

// dirOf is dirs for one location.
func dirOf(s string) (loc, error) {
	ls, err := dirs([]string{s})
	if err != nil {
		return loc{}, err
	}
	return ls[0], nil
}
