package orphan

import (
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"

	"github.com/apache/iceberg-go/table"
)

// ErrSchemeMismatch is returned when metadata references a file under the
// table's location through another scheme or authority (s3a:// for s3://,
// another bucket name for the same path): comparing such paths with the
// listing would make a live file look unreferenced.
var ErrSchemeMismatch = errors.New("referenced path does not match the table location's scheme or authority")

// loc is a storage location split into scheme, authority (bucket) and path.
// Local paths have scheme "file", no authority and an absolute path.
type loc struct {
	scheme, authority, path string
}

func parseLoc(s string) (loc, error) {
	if strings.HasPrefix(s, "/") {
		return loc{scheme: "file", path: s}, nil
	}
	u, err := url.Parse(s)
	if err != nil {
		return loc{}, fmt.Errorf("parse location %q: %w", s, err)
	}
	if u.Scheme == "" {
		return loc{}, fmt.Errorf("location %q has no scheme", s)
	}
	p := u.Path
	if u.Opaque != "" {
		p = u.Opaque
	}
	if !strings.HasPrefix(p, "/") {
		p = "/" + p
	}
	return loc{scheme: strings.ToLower(u.Scheme), authority: u.Host, path: p}, nil
}

func (l loc) String() string {
	if l.scheme == "file" {
		return "file://" + l.path
	}
	return l.scheme + "://" + l.authority + l.path
}

// key is what the reference set stores and listing looks up: the location
// without its scheme, which callers have already checked or canonicalised.
func (l loc) key() string { return l.authority + l.path }

// Equivalence lists groups of schemes that name the same storage, e.g.
// {{"s3", "s3a", "s3n"}}. Without a group, schemes must be equal.
type Equivalence [][]string

func (e Equivalence) same(a, b string) bool {
	if a == b {
		return true
	}
	for _, g := range e {
		if slices.Contains(g, a) && slices.Contains(g, b) {
			return true
		}
	}
	return false
}

// prefixes are the directories whose objects belong to the table: its
// location and the write.data.path / write.metadata.path it sets, each with
// a trailing slash so that …/events never covers …/events_v2, without
// prefixes nested in others.
func prefixes(meta table.Metadata) ([]loc, error) {
	raw := []string{meta.Location()}
	props := meta.Properties()
	for _, k := range []string{table.WriteDataPathKey, table.WriteMetadataPathKey} {
		if v := props[k]; v != "" {
			raw = append(raw, v)
		}
	}
	var out []loc
	for _, r := range raw {
		l, err := parseLoc(r)
		if err != nil {
			return nil, err
		}
		if l.path == "/" || l.path == "" {
			return nil, fmt.Errorf("refusing to treat the root of %s as a table location", r)
		}
		if !strings.HasSuffix(l.path, "/") {
			l.path += "/"
		}
		out = append(out, l)
	}
	slices.SortFunc(out, func(a, b loc) int { return strings.Compare(a.String(), b.String()) })
	var kept []loc
	for _, l := range out {
		covered := false
		for _, k := range kept {
			if k.scheme == l.scheme && k.authority == l.authority && strings.HasPrefix(l.path, k.path) {
				covered = true
			}
		}
		if !covered {
			kept = append(kept, l)
		}
	}
	return kept, nil
}

// classify places a referenced path relative to the table's prefixes. It
// returns the canonical key and true when the path is under a prefix; false
// when it is outside every prefix (never listed, never deleted); and
// ErrSchemeMismatch when its path is under a prefix's path but its scheme
// or authority differs without a configured equivalence.
func classify(ref string, pfx []loc, eq Equivalence) (string, bool, error) {
	l, err := parseLoc(ref)
	if err != nil {
		return "", false, err
	}
	for _, p := range pfx {
		if !strings.HasPrefix(l.path, p.path) {
			continue
		}
		if l.authority == p.authority && eq.same(l.scheme, p.scheme) {
			return l.key(), true, nil
		}
		if l.scheme == "file" && p.scheme == "file" {
			continue
		}
		return "", false, fmt.Errorf("%w: %s is referenced, but the table's files are listed under %s", ErrSchemeMismatch, ref, p)
	}
	return "", false, nil
}

// under reports whether the listed object at l is inside one of the prefixes
// (same scheme and authority, path below the prefix).
func under(l loc, pfx []loc) bool {
	for _, p := range pfx {
		if l.scheme == p.scheme && l.authority == p.authority && strings.HasPrefix(l.path, p.path) {
			return true
		}
	}
	return false
}
