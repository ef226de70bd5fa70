package tables

import (
	"fmt"
	"net"
	"net/url"
	"path"
	"slices"
	"strings"
)

// A table knows nothing of the configuration entry it was found through:
// two entries over one catalog database (two teams' writers under two
// catalog names of one SQL catalog), or over one warehouse, hold tables
// that can reference each other's files and lie inside each other's
// locations. Removal and erasure must see all of them, so what they look
// at is the reference domain: every bucket that shares a catalog
// database, a REST catalog, or storage with another, transitively.
//
// Grouping too much costs reads; grouping too little deletes another
// table's files. So wherever two spellings may name one database or one
// location, they are taken as one.

// Member is one configured bucket as the grouping sees it.
type Member struct {
	// Bucket names the bucket (its name or ARN); the domains name it so.
	Bucket string
	// CatalogName is the name its catalog is opened under.
	CatalogName string
	// Catalog holds its catalog's properties as iceberg-go is given them
	// (bucket.CatalogProperties).
	Catalog map[string]string
}

// Domain is buckets whose tables removal and erasure look at together.
type Domain struct {
	// Buckets are its buckets, in the order given.
	Buckets []string
	// Catalogs groups Buckets by the catalog they open: the buckets of
	// one group list the same tables (two entries over one catalog, with
	// other namespace filters, say), and the first of them stands for
	// them all.
	Catalogs [][]string
	// Links say why the buckets are one domain, a bucket and an earlier
	// one at a time; none for a domain of one bucket.
	Links []Link
}

// Link is two buckets of one domain and what they share.
type Link struct {
	A, B string
	// Why is what they share, in words, with any credentials left out.
	Why string
}

func (l Link) String() string { return l.A + " and " + l.B + " " + l.Why }

// Domains groups members into reference domains, in the order of their
// first bucket; every member is in exactly one.
func Domains(members []Member) []Domain {
	n := len(members)
	parent := make([]int, n)
	for i := range parent {
		parent[i] = i
	}
	var find func(int) int
	find = func(i int) int {
		if parent[i] != i {
			parent[i] = find(parent[i])
		}
		return parent[i]
	}
	facts := make([]fact, n)
	for i, m := range members {
		facts[i] = factsOf(m)
	}
	var links []link
	for i := range members {
		for j := range i {
			why := shared(facts[j], facts[i])
			if why == "" {
				continue
			}
			links = append(links, link{j, i, why})
			if a, b := find(j), find(i); a != b {
				parent[max(a, b)] = min(a, b)
			}
		}
	}
	var out []Domain
	at := map[int]int{} // root → index in out
	for i, m := range members {
		r := find(i)
		k, ok := at[r]
		if !ok {
			k = len(out)
			at[r] = k
			out = append(out, Domain{})
		}
		d := &out[k]
		d.Buckets = append(d.Buckets, m.Bucket)
		c := slices.IndexFunc(d.Catalogs, func(g []string) bool {
			first := slices.IndexFunc(members, func(o Member) bool { return o.Bucket == g[0] })
			return facts[first].catalog != "" && facts[first].catalog == facts[i].catalog
		})
		if c < 0 {
			d.Catalogs = append(d.Catalogs, []string{m.Bucket})
		} else {
			d.Catalogs[c] = append(d.Catalogs[c], m.Bucket)
		}
	}
	for _, l := range links {
		d := &out[at[find(l.a)]]
		d.Links = append(d.Links, Link{A: members[l.a].Bucket, B: members[l.b].Bucket, Why: l.why})
	}
	return out
}

type link struct {
	a, b int
	why  string
}

// fact is what a bucket's catalog properties say of where its tables are.
type fact struct {
	// database is the catalog's store as a key: a SQL catalog's database,
	// a REST catalog's endpoint and warehouse, a Hive metastore; empty
	// when nothing names one.
	database string
	// catalog is the catalog itself: its database and, where one
	// database holds several (SQL), the catalog name.
	catalog string
	// warehouse is the warehouse location, when it is one.
	warehouse *place
	// shown are database and warehouse as the configuration writes them,
	// for the words of a link.
	shownDatabase, shownWarehouse string
}

func factsOf(m Member) fact {
	var f fact
	props := m.Catalog
	switch typ := props["type"]; typ {
	case "sql":
		f.database, f.shownDatabase = sqlDatabase(props["uri"], props["sql.driver"])
		if f.database != "" {
			f.catalog = f.database + "\x00" + m.CatalogName
		}
	case "rest", "http", "https":
		// A REST catalog's warehouse is a name the server resolves: the
		// endpoint and that name are the catalog, whatever the client
		// calls it.
		if ep := endpoint(props["uri"]); ep != "" {
			f.database = "rest\x00" + ep + "\x00" + strings.TrimRight(props["warehouse"], "/")
			f.catalog = f.database
			f.shownDatabase = "the REST catalog " + redactURI(props["uri"])
			if w := props["warehouse"]; w != "" {
				f.shownDatabase += " (warehouse " + w + ")"
			}
		}
		return f
	case "hive":
		if ep := endpoint(props["uri"]); ep != "" {
			f.database, f.catalog = "hive\x00"+ep, "hive\x00"+ep
			f.shownDatabase = "the Hive metastore " + redactURI(props["uri"])
		}
	case "glue":
		// One Glue catalog per account and region: its databases are the
		// namespaces, and no catalog name separates them.
		id := "glue\x00" + props["glue.id"] + "\x00" + props["glue.region"] + "\x00" + props["glue.endpoint"]
		f.database, f.catalog = id, id
		f.shownDatabase = "the Glue catalog"
		if v := props["glue.id"]; v != "" {
			f.shownDatabase += " " + v
		}
		if v := props["glue.region"]; v != "" {
			f.shownDatabase += " in " + v
		}
	}
	if w := props["warehouse"]; w != "" {
		if p, ok := placeOf(w); ok {
			f.warehouse, f.shownWarehouse = &p, w
		}
	}
	return f
}

// shared is what a and b share, in words, or "".
func shared(a, b fact) string {
	switch {
	case a.catalog != "" && a.catalog == b.catalog:
		return "open one catalog, " + a.shownDatabase
	case a.database != "" && a.database == b.database:
		return "share the catalog database " + a.shownDatabase
	case a.warehouse != nil && b.warehouse != nil && a.warehouse.covers(*b.warehouse):
		if b.warehouse.covers(*a.warehouse) {
			return "share the warehouse " + a.shownWarehouse
		}
		return fmt.Sprintf("have nested warehouses: %s contains %s", a.shownWarehouse, b.shownWarehouse)
	case a.warehouse != nil && b.warehouse != nil && b.warehouse.covers(*a.warehouse):
		return fmt.Sprintf("have nested warehouses: %s contains %s", b.shownWarehouse, a.shownWarehouse)
	}
	return ""
}

// sqlDatabase is the database a SQL catalog's URI names, as a key that
// two spellings of one database share, and as shown.
func sqlDatabase(uri, driver string) (key, shown string) {
	uri = strings.TrimPrefix(uri, "sql://") // as the catalog is opened
	if uri == "" {
		return "", ""
	}
	if u, err := url.Parse(uri); err == nil && (u.Scheme == "postgres" || u.Scheme == "postgresql") {
		return postgresDatabase(u)
	}
	if driver == "sqlite" || driver == "" {
		return sqliteDatabase(uri)
	}
	// Another driver: its options (timeouts, TLS) are not the database.
	base, _, _ := strings.Cut(uri, "?")
	return driver + "\x00" + base, redactURI(base)
}

// postgresDatabase keys a PostgreSQL URI by host, port and database:
// user, password and options (connect_timeout, which icekeeper appends,
// sslmode) change how it is reached, not what it is.
func postgresDatabase(u *url.URL) (key, shown string) {
	q := u.Query()
	hosts := u.Host
	if h := q.Get("host"); h != "" {
		hosts = h // a Unix socket directory, or hosts given as options
	}
	port := q.Get("port")
	var addrs []string
	for _, h := range strings.Split(hosts, ",") {
		host, p, err := net.SplitHostPort(h)
		if err != nil {
			host, p = h, ""
		}
		p = firstOf(p, port, "5432")
		host = strings.ToLower(strings.Trim(host, "[]"))
		if host == "" || host == "localhost" {
			host = "127.0.0.1" // what an empty host or localhost reaches on the same machine
		}
		addrs = append(addrs, net.JoinHostPort(host, p))
	}
	slices.Sort(addrs)
	db := firstOf(q.Get("dbname"), strings.TrimPrefix(u.Path, "/"), u.User.Username())
	return "postgres\x00" + strings.Join(addrs, ",") + "\x00" + db,
		"postgres://" + strings.Join(addrs, ",") + "/" + db
}

// sqliteDatabase keys a SQLite URI by its file, cleaned: the query holds
// pragmas and modes, not another database. An in-memory database is its
// own unless spelt identically.
func sqliteDatabase(uri string) (key, shown string) {
	name, query, _ := strings.Cut(uri, "?")
	q, _ := url.ParseQuery(query)
	if rest, ok := strings.CutPrefix(name, "file:"); ok {
		name = rest
		if r, ok := strings.CutPrefix(rest, "//"); ok {
			host, p, _ := strings.Cut(r, "/")
			if host == "" || host == "localhost" {
				name = "/" + p
			}
		}
	}
	if name == "" || name == ":memory:" || q.Get("mode") == "memory" {
		return "sqlite-memory\x00" + uri, uri
	}
	name = path.Clean(name)
	return "sqlite\x00" + name, name
}

// endpoint is a service URI as a key: scheme and host in lower case, the
// default port and a trailing slash dropped; "" when it is not a URI.
func endpoint(uri string) string {
	u, err := url.Parse(uri)
	if err != nil || u.Host == "" {
		return strings.TrimRight(uri, "/")
	}
	scheme := strings.ToLower(u.Scheme)
	host, port, err := net.SplitHostPort(u.Host)
	if err != nil {
		host, port = u.Host, ""
	}
	if (scheme == "http" && port == "80") || (scheme == "https" && port == "443") || (scheme == "thrift" && port == "9083") {
		port = ""
	}
	host = strings.ToLower(host)
	if port != "" {
		host = net.JoinHostPort(host, port)
	}
	p := strings.TrimRight(path.Clean("/"+u.Path), "/")
	return scheme + "://" + host + p
}

// place is a storage location, compared by authority and path whatever
// the scheme: s3a:// and s3:// name the same objects often enough that
// telling them apart would be a guess, and a wrong guess deletes.
type place struct {
	local     bool
	authority string
	path      string // cleaned, without a trailing slash; "" is the root
}

// placeOf is the location w, if it is one: a REST catalog's warehouse,
// for one, is a name.
func placeOf(w string) (place, bool) {
	if strings.HasPrefix(w, "/") {
		return place{local: true, path: cleanPath(w)}, true
	}
	if rest, ok := strings.CutPrefix(w, "file:"); ok {
		if r, ok := strings.CutPrefix(rest, "//"); ok {
			host, p, _ := strings.Cut(r, "/")
			if host != "" && host != "localhost" {
				return place{local: true, path: cleanPath("//" + host + "/" + p)}, true
			}
			rest = "/" + p
		}
		return place{local: true, path: cleanPath(rest)}, true
	}
	scheme, rest, ok := strings.Cut(w, "://")
	if !ok || scheme == "" {
		return place{}, false
	}
	authority, p, _ := strings.Cut(rest, "/")
	return place{authority: strings.ToLower(authority), path: cleanPath("/" + p)}, true
}

func cleanPath(p string) string {
	// path.Clean keeps a leading "//" only as "/": two spellings of one
	// directory become one.
	c := path.Clean("/" + strings.TrimLeft(p, "/"))
	return strings.TrimSuffix(c, "/")
}

// covers reports whether o lies at p or under it: a path prefix, not a
// string prefix (/wh/a does not cover /wh/ab).
func (p place) covers(o place) bool {
	if p.local != o.local || p.authority != o.authority {
		return false
	}
	return p.path == "" || o.path == p.path || strings.HasPrefix(o.path, p.path+"/")
}

// redactURI drops the password from a URI for the words of a link.
func redactURI(s string) string {
	u, err := url.Parse(s)
	if err != nil || u.User == nil {
		return s
	}
	if _, has := u.User.Password(); has {
		u.User = url.UserPassword(u.User.Username(), "xxxxx")
	}
	return u.String()
}

func firstOf(vs ...string) string {
	for _, v := range vs {
		if v != "" {
			return v
		}
	}
	return ""
}
