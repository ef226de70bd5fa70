package orphan

import (
	"errors"
	"fmt"
	"hash/maphash"
	"net/url"
	"path"
	"slices"
	"strings"

	"github.com/apache/iceberg-go/table"

	"github.com/icekeeper/icekeeper/tables"
)

// ErrSchemeMismatch is returned when metadata references a file under the
// table's location through another scheme or authority (s3a:// for s3://,
// another bucket name for the same path): comparing such paths with the
// listing would make a live file look unreferenced.
var ErrSchemeMismatch = errors.New("referenced path does not match the table location's scheme or authority")

// loc is a storage location split into scheme, authority (bucket) and path.
// Local paths have scheme "file", no authority and an absolute path. The
// path of an object location is its key exactly as storage names it, with
// a leading slash: never percent-decoded, never cleaned. Object names are
// opaque; reading one as a URI turns "%2e%2e" into "..".
type loc struct {
	scheme, authority, path string
}

// objectLoc splits a location that icekeeper itself wrote as loc.String
// (a mark, a listed object): scheme, authority, and the rest verbatim.
func objectLoc(s string) (loc, error) {
	if strings.HasPrefix(s, "/") {
		return loc{scheme: "file", path: s}, nil
	}
	scheme, rest, ok := strings.Cut(s, "://")
	if !ok || scheme == "" {
		return loc{}, fmt.Errorf("location %q has no scheme", s)
	}
	scheme = strings.ToLower(scheme)
	if scheme == "file" {
		if !strings.HasPrefix(rest, "/") {
			return loc{}, fmt.Errorf("location %q is not an absolute file location", s)
		}
		return loc{scheme: scheme, path: rest}, nil
	}
	slash := strings.IndexByte(rest, '/')
	if slash <= 0 {
		return loc{}, fmt.Errorf("location %q has no bucket and key", s)
	}
	return loc{scheme: scheme, authority: rest[:slash], path: rest[slash:]}, nil
}

// refLoc reads a location written in table metadata the way iceberg-go's
// FileIO opens it: object store keys verbatim after the bucket (as Java's
// S3FileIO does too), file: URIs as URIs (percent-decoded) and bare paths
// verbatim.
func refLoc(s string) (loc, error) {
	if strings.HasPrefix(s, "/") {
		return loc{scheme: "file", path: s}, nil
	}
	scheme, _, ok := strings.Cut(s, ":")
	if ok && strings.EqualFold(scheme, "file") {
		u, err := url.Parse(s)
		if err != nil {
			return loc{}, fmt.Errorf("parse location %q: %w", s, err)
		}
		if u.Host != "" && !strings.EqualFold(u.Host, "localhost") {
			return loc{}, fmt.Errorf("location %q names a file on host %q", s, u.Host)
		}
		if !strings.HasPrefix(u.Path, "/") {
			return loc{}, fmt.Errorf("location %q is not an absolute file location", s)
		}
		return loc{scheme: "file", path: u.Path}, nil
	}
	return objectLoc(s)
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

// clean reports whether the path has no empty, "." or ".." segment, so
// that every storage resolves it to itself: a local file system and a
// posix-backed S3 gateway resolve "a//b", "a/./b" and "a/../b" to another
// name than the one listed, AWS S3 does not. Only clean objects are ever
// deleted.
func (l loc) clean() bool {
	return l.path != "/" && path.Clean(l.path) == l.path
}

// forms are the names under which storage may list the object a
// reference names: the reference as written, and its cleaned form, as a
// local file system or a posix-backed S3 gateway resolves it. Keeping
// every form referenced can only keep more objects, never fewer. An array,
// not a slice: this runs for every reference of every manifest.
func (l loc) forms() (f [2]loc, n int) {
	f[0] = l
	c := l
	c.path = path.Clean(l.path)
	if strings.HasSuffix(l.path, "/") && c.path != "/" {
		c.path += "/"
	}
	if c.path == l.path {
		return f, 1
	}
	f[1] = c
	return f, 2
}

// hash is l's key hashed with seed, as maphash.String(seed, l.key())
// gives it, without building the key.
func (l loc) hash(seed maphash.Seed) uint64 {
	var h maphash.Hash
	h.SetSeed(seed)
	h.WriteString(l.authority)
	h.WriteString(l.path)
	return h.Sum64()
}

// within reports whether l is below p by whole segments: p.path ends in a
// slash, and the two share scheme and authority.
func (l loc) within(p loc) bool {
	return l.scheme == p.scheme && l.authority == p.authority && strings.HasPrefix(l.path, p.path)
}

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
// locations (tables.Locations), each with a trailing slash so that
// …/events never covers …/events_v2, without prefixes nested in others.
func prefixes(meta table.Metadata) ([]loc, error) { return dirs(tables.Locations(meta)) }

// resolved returns pfx as the file system resolves them (see resolver),
// without prefixes nested in others.
func resolved(pfx []loc, res *resolver) []loc {
	out := make([]loc, len(pfx))
	for i, p := range pfx {
		out[i] = res.prefix(p)
	}
	return nest(out)
}

// dirs turns locations into listing prefixes: each ends in a slash, none
// is the root of its storage, none lies inside another.
func dirs(raw []string) ([]loc, error) {
	var out []loc
	for _, r := range raw {
		l, err := refLoc(r)
		if err != nil {
			return nil, err
		}
		if l.scheme == "file" {
			// The file system resolves the location as it resolves the
			// files below it.
			l.path = path.Clean(l.path)
		}
		if strings.Trim(l.path, "/") == "" {
			return nil, fmt.Errorf("refusing to treat the root of %s as a table location", r)
		}
		if !strings.HasSuffix(l.path, "/") {
			l.path += "/"
		}
		out = append(out, l)
	}
	return nest(out), nil
}

// nest sorts prefixes and drops those inside another.
func nest(pfx []loc) []loc {
	slices.SortFunc(pfx, func(a, b loc) int { return strings.Compare(a.String(), b.String()) })
	var kept []loc
	for _, l := range pfx {
		if !slices.ContainsFunc(kept, l.within) {
			kept = append(kept, l)
		}
	}
	return kept
}

// scope is where a table's files are: its prefixes (resolved), the
// schemes that name the same storage, and how the local file system
// resolves names.
type scope struct {
	pfx []loc
	eq  Equivalence
	res *resolver
}

// forms are the names under which storage may list the object a
// reference at l names: on local disk, the one file it resolves to (see
// resolver); in an object store, the reference as written and its cleaned
// form (loc.forms).
func (s scope) forms(l loc) ([2]loc, int) {
	if l.scheme == "file" && s.res != nil {
		return [2]loc{s.res.loc(l)}, 1
	}
	return l.forms()
}

// classify places a referenced path relative to the prefixes. It returns
// the forms of the path (see forms) that lie under a prefix, n of them,
// and how many forms the path has; none when the path is outside every
// prefix (never listed, never deleted); and ErrSchemeMismatch when its
// path is under a prefix's path but its scheme or authority differs
// without a configured equivalence.
func (s scope) classify(ref string) (in [2]loc, n, forms int, err error) {
	l, err := refLoc(ref)
	if err != nil {
		return in, 0, 0, err
	}
	all, nf := s.forms(l)
	for _, f := range all[:nf] {
		for _, p := range s.pfx {
			if !strings.HasPrefix(f.path, p.path) {
				continue
			}
			if f.authority == p.authority && s.eq.same(f.scheme, p.scheme) {
				in[n] = f
				n++
				break
			}
			if f.scheme == "file" && p.scheme == "file" {
				continue
			}
			return in, 0, nf, fmt.Errorf("%w: %s is referenced, but the table's files are listed under %s", ErrSchemeMismatch, ref, p)
		}
	}
	return in, n, nf, nil
}

// under reports whether the listed object at l is inside one of the prefixes.
func under(l loc, pfx []loc) bool {
	return slices.ContainsFunc(pfx, l.within)
}
