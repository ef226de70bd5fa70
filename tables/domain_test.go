package tables

import (
	"slices"
	"strings"
	"testing"
)

func sqlite(uri, warehouse string) map[string]string {
	return map[string]string{"type": "sql", "uri": uri, "sql.driver": "sqlite", "sql.dialect": "sqlite", "warehouse": warehouse}
}

func postgres(uri, warehouse string) map[string]string {
	return map[string]string{"type": "sql", "uri": uri, "sql.driver": "pgx", "sql.dialect": "postgres", "warehouse": warehouse}
}

func rest(uri, warehouse string) map[string]string {
	return map[string]string{"type": "rest", "uri": uri, "warehouse": warehouse}
}

// grouping is Domains' answer as bucket names: domains joined by " | ",
// buckets by ",", catalogs of one domain by ";".
func grouping(ds []Domain) (domains, catalogs string) {
	var dd, cc []string
	for _, d := range ds {
		dd = append(dd, strings.Join(d.Buckets, ","))
		var gs []string
		for _, g := range d.Catalogs {
			gs = append(gs, strings.Join(g, ","))
		}
		cc = append(cc, strings.Join(gs, ";"))
	}
	return strings.Join(dd, " | "), strings.Join(cc, " | ")
}

func TestDomains(t *testing.T) {
	for _, tc := range []struct {
		name     string
		members  []Member
		domains  string // as grouping writes them
		catalogs string
		why      string // in the first link, when there is one
	}{
		{
			name: "two catalog names of one SQLite file, spelt with other pragmas",
			members: []Member{
				{"b1", "team1", sqlite("file:/data/cat.db?mode=rwc&_pragma=busy_timeout(10000)", "file:///wh/one")},
				{"b2", "team2", sqlite("file:///data/./cat.db?_pragma=journal_mode(WAL)", "s3://other/wh")},
			},
			domains: "b1,b2", catalogs: "b1;b2", why: "share the catalog database /data/cat.db",
		},
		{
			name: "one SQLite catalog under one name twice (other namespace filters): one catalog",
			members: []Member{
				{"b1", "lake", sqlite("/data/cat.db", "/wh")},
				{"b2", "lake", sqlite("file:/data/cat.db?mode=rwc", "/wh")},
			},
			domains: "b1,b2", catalogs: "b1,b2", why: "open one catalog",
		},
		{
			name: "two SQLite files",
			members: []Member{
				{"b1", "lake", sqlite("file:/data/one.db", "file:///wh/one")},
				{"b2", "lake", sqlite("file:/data/two.db", "file:///wh/two")},
			},
			domains: "b1 | b2", catalogs: "b1 | b2",
		},
		{
			name: "in-memory SQLite databases are each their own",
			members: []Member{
				{"b1", "lake", sqlite("file::memory:", "/wh/one")},
				{"b2", "lake", sqlite(":memory:", "/wh/two")},
			},
			domains: "b1 | b2", catalogs: "b1 | b2",
		},
		{
			name: "PostgreSQL with and without connect_timeout, other users, the default port",
			members: []Member{
				{"b1", "team1", postgres("postgres://alice:secret@DB.example:5432/iceberg?connect_timeout=10", "s3://lake/one")},
				{"b2", "team2", postgres("postgresql://bob@db.example/iceberg?sslmode=disable", "s3://lake/two")},
				{"b3", "team3", postgres("postgres://alice@db.example:5433/iceberg", "s3://lake/three")},
				{"b4", "team4", postgres("postgres://alice@db.example/other", "s3://lake/four")},
			},
			domains: "b1,b2 | b3 | b4", catalogs: "b1;b2 | b3 | b4", why: "share the catalog database postgres://db.example:5432/iceberg",
		},
		{
			name: "s3a:// and s3:// name one bucket; a trailing slash is no other place",
			members: []Member{
				{"b1", "one", sqlite("/c/one.db", "s3a://lake/wh/")},
				{"b2", "two", sqlite("/c/two.db", "s3://lake/wh")},
			},
			domains: "b1,b2", catalogs: "b1;b2", why: "share the warehouse s3a://lake/wh/",
		},
		{
			name: "a warehouse inside another, file: and plain paths alike",
			members: []Member{
				{"b1", "one", sqlite("/c/one.db", "file:///wh")},
				{"b2", "two", sqlite("/c/two.db", "/wh/team2")},
				{"b3", "three", sqlite("/c/three.db", "file:/wh//team3/../team3x")},
			},
			domains: "b1,b2,b3", catalogs: "b1;b2;b3", why: "have nested warehouses: file:///wh contains /wh/team2",
		},
		{
			name: "a string prefix that is not a path prefix",
			members: []Member{
				{"b1", "one", sqlite("/c/one.db", "/wh/a")},
				{"b2", "two", sqlite("/c/two.db", "/wh/ab")},
				{"b3", "three", sqlite("/c/three.db", "s3://wh/a")},
			},
			domains: "b1 | b2 | b3", catalogs: "b1 | b2 | b3",
		},
		{
			name: "other buckets of one store",
			members: []Member{
				{"b1", "one", sqlite("/c/one.db", "s3://lake/wh")},
				{"b2", "two", sqlite("/c/two.db", "s3://lakehouse/wh")},
			},
			domains: "b1 | b2", catalogs: "b1 | b2",
		},
		{
			name: "a bucket's root holds every warehouse in it",
			members: []Member{
				{"b1", "one", sqlite("/c/one.db", "s3://lake/wh/x")},
				{"b2", "two", sqlite("/c/two.db", "s3://lake")},
			},
			domains: "b1,b2", catalogs: "b1;b2", why: "have nested warehouses: s3://lake contains s3://lake/wh/x",
		},
		{
			name: "one REST endpoint and warehouse name, spelt two ways; another warehouse name is another catalog",
			members: []Member{
				{"b1", "x", rest("http://Rest.example:80/iceberg/", "analytics")},
				{"b2", "y", rest("http://rest.example/iceberg", "analytics")},
				{"b3", "x", rest("http://rest.example/iceberg", "finance")},
			},
			domains: "b1,b2 | b3", catalogs: "b1,b2 | b3", why: "open one catalog, the REST catalog http://Rest.example:80/iceberg/ (warehouse analytics)",
		},
		{
			name: "a REST warehouse is a name, never a location",
			members: []Member{
				{"b1", "x", rest("http://rest.example", "/wh")},
				{"b2", "y", sqlite("/c/two.db", "/wh")},
			},
			domains: "b1 | b2", catalogs: "b1 | b2",
		},
		{
			name: "transitively: a shares a database with b, b a warehouse with c",
			members: []Member{
				{"a", "a", sqlite("/c/one.db", "/wh/a")},
				{"c", "c", sqlite("/c/three.db", "/wh/b/c")},
				{"b", "b", sqlite("/c/one.db", "/wh/b")},
				{"d", "d", sqlite("/c/four.db", "/wh/d")},
			},
			domains: "a,c,b | d", catalogs: "a;c;b | d", why: "share the catalog database /c/one.db",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ds := Domains(tc.members)
			domains, catalogs := grouping(ds)
			if domains != tc.domains || catalogs != tc.catalogs {
				t.Fatalf("domains %q, catalogs %q; want %q, %q (%+v)", domains, catalogs, tc.domains, tc.catalogs, ds)
			}
			var links []Link
			for _, d := range ds {
				if len(d.Buckets) > 1 && len(d.Links) == 0 {
					t.Errorf("domain %v has no link saying why", d.Buckets)
				}
				links = append(links, d.Links...)
			}
			if tc.why == "" && len(links) > 0 {
				t.Errorf("links %v, want none", links)
			}
			if tc.why != "" && (len(links) == 0 || !strings.Contains(links[0].Why, tc.why)) {
				t.Errorf("links %v, want the first to say %q", links, tc.why)
			}
			for _, l := range links {
				if strings.Contains(l.String(), "secret") {
					t.Errorf("a link shows a password: %s", l)
				}
			}
		})
	}
}

// Every member is in exactly one domain, whatever the order.
func TestDomainsPartition(t *testing.T) {
	members := []Member{
		{"a", "a", sqlite("/c/one.db", "/wh/a")},
		{"b", "b", sqlite("/c/two.db", "/wh/b")},
		{"c", "c", sqlite("/c/one.db", "/wh/c")},
		{"d", "d", sqlite("/c/four.db", "/wh/b/d")},
	}
	for range 4 {
		members = append(members[1:], members[0])
		var seen []string
		for _, d := range Domains(members) {
			seen = append(seen, d.Buckets...)
			var inCatalogs []string
			for _, g := range d.Catalogs {
				inCatalogs = append(inCatalogs, g...)
			}
			if slices.Sort(inCatalogs); !slices.Equal(inCatalogs, slices.Sorted(slices.Values(d.Buckets))) {
				t.Errorf("catalogs %v of domain %v", d.Catalogs, d.Buckets)
			}
		}
		slices.Sort(seen)
		if !slices.Equal(seen, []string{"a", "b", "c", "d"}) {
			t.Fatalf("buckets %v", seen)
		}
		if n := len(Domains(members)); n != 2 {
			t.Fatalf("%d domains, want a+c and b+d", n)
		}
	}
}
