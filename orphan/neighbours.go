package orphan

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/sourcegraph/conc/pool"

	"github.com/icekeeper/icekeeper/internal/bucket"
	"github.com/icekeeper/icekeeper/jobs"
)

// ErrSharedLocation is returned when a table's prefixes hold another
// table's files, or are a namespace or warehouse directory where tables
// are created: removal would take every file of those tables for garbage.
var ErrSharedLocation = errors.New("the table's location is shared with other tables")

// locationTTL bounds how long another table's prefixes are remembered.
// The list of tables is read afresh at every run, so a new table is never
// missed; only a table moved into this one's location (ALTER TABLE … SET
// LOCATION) within the hour could be, and its objects would still wait
// nonCurrentDays before deletion.
const locationTTL = time.Hour

// locations remembers other tables' prefixes, so that a bucket of
// thousands of tables is not loaded whole for every table's run.
type locations struct {
	mu      sync.Mutex
	entries map[string]located
}

type located struct {
	prefixes []loc
	at       time.Time
}

// neighbour is another table whose prefixes lie inside this table's.
type neighbour struct {
	table  bucket.TableID
	inside []loc // its prefixes that are under this table's, in this table's scheme
}

// sharing finds what inside the table's prefixes belongs to others: the
// prefixes of every other table of the bucket's catalog that lie there,
// and namespace or warehouse directories the prefixes contain. With
// allow unset, any of these fails the run with ErrSharedLocation; with it
// set, the other tables' prefixes are returned to be left alone.
func (j *Job) sharing(ctx context.Context, t jobs.Target, pfx []loc, allow bool) ([]loc, error) {
	if err := j.containers(ctx, t, pfx, allow); err != nil {
		return nil, err
	}
	ids, err := t.Bucket.AllTables(ctx)
	if err != nil {
		return nil, fmt.Errorf("list the tables of bucket %s: %w", t.Bucket.Name(), err)
	}
	var mu sync.Mutex
	var found []neighbour
	p := pool.New().WithContext(ctx).WithCancelOnError().WithFirstError().WithMaxGoroutines(8)
	for _, id := range ids {
		if id.String() == t.Table.String() {
			continue
		}
		p.Go(func(ctx context.Context) error {
			theirs, err := j.prefixesOf(ctx, t.Bucket, id)
			if errors.Is(err, bucket.ErrNoSuchTable) {
				return nil // dropped since the listing
			}
			if err != nil {
				return fmt.Errorf("load table %s to keep its files apart: %w", id, err)
			}
			if n := inside(id, theirs, pfx); len(n.inside) > 0 {
				mu.Lock()
				found = append(found, n)
				mu.Unlock()
			}
			return nil
		})
	}
	if err := p.Wait(); err != nil {
		return nil, err
	}
	slices.SortFunc(found, func(a, b neighbour) int { return strings.Compare(a.table.String(), b.table.String()) })
	var exclude []loc
	var named []string
	for _, n := range found {
		exclude = append(exclude, n.inside...)
		named = append(named, fmt.Sprintf("%s at %s", n.table, n.inside[0]))
	}
	if len(named) > 0 && !allow {
		return nil, fmt.Errorf("%w: %s holds %d other tables' files (%s); removal would take them for garbage: move the table, or set allowNestedTables on the bucket to remove around them",
			ErrSharedLocation, pfx[0], len(named), strings.Join(named[:min(len(named), 5)], ", "))
	}
	return exclude, nil
}

// inside returns the prefixes of another table that lie under one of pfx,
// compared by authority and path whatever the scheme (s3a:// names the
// same object as s3:// often enough that guessing otherwise is unsafe).
func inside(id bucket.TableID, theirs, pfx []loc) neighbour {
	n := neighbour{table: id}
	for _, o := range theirs {
		for _, p := range pfx {
			if o.authority == p.authority && strings.HasPrefix(o.path, p.path) {
				o.scheme = p.scheme
				n.inside = append(n.inside, o)
				break
			}
		}
	}
	return n
}

// containers refuses a table whose prefixes contain the catalog's
// warehouse or a directory of the table's namespaces, where the catalog
// puts new tables.
func (j *Job) containers(ctx context.Context, t jobs.Target, pfx []loc, allow bool) error {
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
		for _, p := range pfx {
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

// prefixesOf returns another table's prefixes, loading it when they are
// not remembered or are older than locationTTL.
func (j *Job) prefixesOf(ctx context.Context, b *bucket.Bucket, id bucket.TableID) ([]loc, error) {
	key := b.ARN() + "\x00" + id.String()
	j.locations.mu.Lock()
	e, ok := j.locations.entries[key]
	j.locations.mu.Unlock()
	if ok && time.Since(e.at) < locationTTL {
		return e.prefixes, nil
	}
	tbl, err := b.LoadTable(ctx, id)
	if err != nil {
		return nil, err
	}
	pfx, err := prefixes(tbl.Metadata())
	if err != nil {
		return nil, err
	}
	j.locations.mu.Lock()
	if j.locations.entries == nil {
		j.locations.entries = map[string]located{}
	}
	j.locations.entries[key] = located{prefixes: pfx, at: time.Now()}
	j.locations.mu.Unlock()
	return pfx, nil
}
