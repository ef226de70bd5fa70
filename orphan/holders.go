package orphan

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"slices"
	"sync"
	"time"

	"github.com/apache/iceberg-go/table"

	"github.com/icekeeper/icekeeper/internal/bucket"
	"github.com/icekeeper/icekeeper/jobs"
	"github.com/icekeeper/icekeeper/maintenance"
)

// Holders says which other table of t's reference domain holds each of
// paths (as table metadata names them) now: one that references it, or
// under whose prefixes it lies, with the bucket it is listed through
// (bucket.Bucket.Lists), since ns.t of another bucket is another table.
// Paths no other table holds are absent. Every table is checked afresh,
// as before deleting, so that erasure names the table that keeps a file,
// not one that kept it an hour ago; where several hold a path, the first
// by bucket and name is given.
//
// Removal itself only needs to know that some table references a file,
// and keeps one set for all of them; naming the table costs a set per
// table, which only the few files erasure could not delete pay.
func (j *Job) Holders(ctx context.Context, t jobs.Target, s maintenance.Settings, paths []string) (map[string]jobs.Target, error) {
	out := map[string]jobs.Target{}
	if len(paths) == 0 {
		return out, nil
	}
	tbl, err := t.Bucket.LoadTable(ctx, t.Table)
	if err != nil {
		return nil, fmt.Errorf("find the tables holding files of %s: %w", t.Table, err)
	}
	raw, err := prefixes(tbl.Metadata())
	if err != nil {
		return nil, err
	}
	res := newResolver()
	sc := scope{pfx: resolved(raw, res), eq: RulesOf(s).Equivalence, res: res}
	tables, _, err := j.bucketView(ctx, t, sc.eq, true, time.Time{}, indexOnly, true)
	if err != nil {
		return nil, fmt.Errorf("find the tables holding files of %s: %w", t.Table, err)
	}
	names := make([]tableRef, 0, len(tables))
	for name := range tables {
		names = append(names, name)
	}
	slices.SortFunc(names, func(a, b tableRef) int {
		return cmp.Or(cmp.Compare(a.bucket, b.bucket), cmp.Compare(a.table, b.table))
	})
	self := refOf(t.Bucket, t.Table)
	forms := make(map[string][]loc, len(paths))
	for _, p := range paths {
		l, err := refLoc(p)
		if err != nil {
			return nil, err
		}
		f, n := sc.forms(l)
		forms[p] = f[:n]
	}
	for _, name := range names {
		h := tables[name]
		if name == self {
			continue
		}
		theirs := resolved(h.prefixes, sc.res)
		refs, err := j.heldRefs(ctx, t, h, theirs, sc)
		if err != nil {
			return nil, err
		}
		for _, p := range paths {
			if _, found := out[p]; found {
				continue
			}
			if slices.ContainsFunc(forms[p], func(l loc) bool { return under(l, theirs) || refs.contains(l) }) {
				out[p] = h.target()
			}
		}
	}
	return out, nil
}

// heldRefs is the set of files under sc's prefixes that the other table h,
// whose prefixes are theirs, references, as others collects them for all
// tables at once.
func (j *Job) heldRefs(ctx context.Context, t jobs.Target, h held, theirs []loc, sc scope) (*refSet, error) {
	rs := &refSet{seed: maphash.MakeSeed()}
	var mu sync.Mutex
	if h.complete && len(inside(sc.pfx, theirs)) == 0 {
		sink := &batchSink{rs: rs, mu: &mu, sc: sc}
		for _, r := range h.foreign {
			if err := sink.add(r, false); err != nil {
				return nil, fmt.Errorf("table %s: %w", h.name(t.Bucket), err)
			}
		}
		sink.flush()
		rs.seal()
		return rs, nil
	}
	// Too many to remember, or this table lies inside the other: all of
	// its references may matter here.
	tbl, err := h.b.LoadTable(ctx, h.id)
	if errors.Is(err, bucket.ErrNoSuchTable) {
		rs.seal()
		return rs, nil
	}
	if err != nil {
		return nil, fmt.Errorf("load table %s, to learn what it references: %w", h.name(t.Bucket), err)
	}
	if _, err := j.walkOther(ctx, h.b, h.id, tbl, indexOnly, func() refSink { return &batchSink{rs: rs, mu: &mu, sc: sc} }); err != nil {
		return nil, fmt.Errorf("table %s: %w", h.name(t.Bucket), err)
	}
	rs.seal()
	return rs, nil
}

// Unreferenced is DeleteUnreferenced's choice without the deletion:
// those of paths it would delete were tbl the table's metadata. A dry
// run hands it the table as a commit it does not make would leave it, so
// that it reports what the real run would delete.
func (j *Job) Unreferenced(ctx context.Context, t jobs.Target, s maintenance.Settings, tbl *table.Table, paths []string) ([]string, error) {
	del, err := j.unreferenced(ctx, t, s, tbl, paths)
	if err != nil {
		return nil, err
	}
	out := make([]string, len(del))
	for i, l := range del {
		out[i] = l.String()
	}
	return out, nil
}

// unreferenced is the files among paths that DeleteUnreferenced deletes
// when tbl is the table's metadata, each as storage names it.
func (j *Job) unreferenced(ctx context.Context, t jobs.Target, s maintenance.Settings, tbl *table.Table, paths []string) ([]loc, error) {
	v, err := j.view(ctx, t, tbl, RulesOf(s), time.Time{}, readAll)
	if err != nil {
		return nil, err
	}
	var del []loc
	for _, p := range paths {
		l, err := refLoc(p)
		if err != nil {
			return nil, err
		}
		// Delete the file the path names, as storage resolves it.
		if forms, n := v.sc.forms(l); n == 1 {
			l = forms[0]
		}
		if v.keeps(l) == "" {
			del = append(del, l)
		}
	}
	return del, nil
}
