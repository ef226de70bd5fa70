package bucket_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/icekeeper/icekeeper/configs"
	"github.com/icekeeper/icekeeper/internal/arn"
	"github.com/icekeeper/icekeeper/internal/bucket"
	"github.com/icekeeper/icekeeper/internal/demo"
	"github.com/icekeeper/icekeeper/internal/redact"
	"github.com/icekeeper/icekeeper/internal/testkit"
	"github.com/icekeeper/icekeeper/internal/testkit/servers"
	"github.com/icekeeper/icekeeper/internal/testkit/tablecheck"
)

func TestParseRef(t *testing.T) {
	good := map[string]bucket.Ref{
		"local/demo/events": {"local", bucket.TableID{[]string{"demo"}, "events"}},
		"lake/a.b.c/t1":     {"lake", bucket.TableID{[]string{"a", "b", "c"}, "t1"}},
		"arn:aws:s3tables:us-east-1:111122223333:bucket/analytics/sales/orders": {"arn:aws:s3tables:us-east-1:111122223333:bucket/analytics", bucket.TableID{[]string{"sales"}, "orders"}},
		"acs:osstables:cn-hangzhou:123:bucket/lake/ns/t":                        {"acs:osstables:cn-hangzhou:123:bucket/lake", bucket.TableID{[]string{"ns"}, "t"}},
	}
	for in, want := range good {
		got, err := bucket.ParseRef(in)
		if err != nil {
			t.Errorf("bucket.ParseRef(%q): %v", in, err)
			continue
		}
		if got.String() != want.String() || got.Bucket != want.Bucket {
			t.Errorf("bucket.ParseRef(%q) = %+v, want %+v", in, got, want)
		}
	}
	for in, why := range map[string]string{
		"":                   "missing NAMESPACE/TABLE",
		"local":              "missing NAMESPACE/TABLE",
		"local/demo":         "missing TABLE",
		"local/demo/":        "empty namespace or table",
		"/demo/events":       "empty bucket",
		"local/a..b/t":       "empty namespace level",
		"local/a/b/c":        "too many parts",
		"arn:aws:s3tables:x": "no :bucket/NAME",
		"arn:aws:s3tables:us-east-1:1:bucket/abc": "missing NAMESPACE/TABLE after the bucket ARN",
	} {
		_, err := bucket.ParseRef(in)
		if !errors.Is(err, bucket.ErrBadRef) || !strings.Contains(err.Error(), why) {
			t.Errorf("bucket.ParseRef(%q) = %v, want bucket.ErrBadRef with %q", in, err, why)
		}
	}
}

func TestCatalogProperties(t *testing.T) {
	p := bucket.CatalogProperties(map[string]string{"type": "sql", "uri": "postgres://u:p@h:5432/db?sslmode=disable"})
	if p["sql.driver"] != "pgx" || p["sql.dialect"] != "postgres" || !strings.HasSuffix(p["uri"], "&connect_timeout=10") {
		t.Errorf("postgres props = %v", p)
	}
	p = bucket.CatalogProperties(map[string]string{"type": "sql", "uri": "file:x.db", "sql.driver": "mydriver"})
	if p["sql.driver"] != "mydriver" || p["sql.dialect"] != "sqlite" {
		t.Errorf("sqlite props = %v", p)
	}
	p = bucket.CatalogProperties(map[string]string{"type": "rest", "uri": "https://x"})
	if len(p) != 2 {
		t.Errorf("rest props changed: %v", p)
	}
	if got := redact.URI("postgres://user:secret@h/db"); strings.Contains(got, "secret") {
		t.Errorf("password not redacted: %s", got)
	}
}

func TestRegistryEmbedded(t *testing.T) {
	ctx := context.Background()
	home := t.TempDir()
	reg := configs.Embedded(home).Registry()
	defer reg.Close()
	b, err := reg.Bucket(configs.LocalBucketARN)
	if err != nil {
		t.Fatal(err)
	}
	if b2, _ := reg.Bucket("local"); b2 != b {
		t.Fatal("bucket by name and by ARN differ")
	}
	if _, err := reg.Bucket("nope"); !errors.Is(err, bucket.ErrUnknownBucket) || !strings.Contains(err.Error(), "configured: local") {
		t.Fatalf("unknown bucket: %v", err)
	}
	exerciseCatalog(t, ctx, b, "file://"+filepath.Join(home, "warehouse"))
}

// The real thing: an iceberg-go SQL catalog on PostgreSQL with an s3://
// warehouse on versitygw, reached only through icekeeper's configuration.
func TestRegistryPostgresS3(t *testing.T) {
	ctx := context.Background()
	dsn := servers.Postgres(t)
	s3 := servers.S3(t)
	props := s3.Props()
	props["type"] = "sql"
	props["uri"] = dsn
	props["warehouse"] = "s3://" + s3.Bucket + "/warehouse"
	cfg, err := configs.Parse("test.yaml", []byte(fmt.Sprintf(`
state: sqlite://state.db
buckets:
  - arn: arn:aws:s3tables:eu-central-1:000000000000:bucket/lake
    catalogName: spark_writers
    catalog: %s
`, flowMap(props))), nil)
	if err != nil {
		t.Fatal(err)
	}
	reg := cfg.Registry()
	defer reg.Close()
	b, err := reg.Bucket("lake")
	if err != nil {
		t.Fatal(err)
	}
	exerciseCatalog(t, ctx, b, props["warehouse"])
}

func flowMap(m map[string]string) string {
	var parts []string
	for k, v := range m {
		parts = append(parts, fmt.Sprintf("%q: %q", k, v))
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

// exerciseCatalog writes tables as a writer would, then lists and loads
// them through the bucket: nested namespaces, filters, row round trip.
func exerciseCatalog(t *testing.T, ctx context.Context, b *bucket.Bucket, warehouse string) {
	t.Helper()
	cat, err := b.Catalog(ctx)
	if err != nil {
		t.Fatal(err)
	}
	sc := iceberg.NewSchema(0, iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
		iceberg.NestedField{ID: 2, Name: "name", Type: iceberg.PrimitiveTypes.String})
	for _, ns := range []table.Identifier{{"sales"}, {"sales", "eu"}, {"scratch"}} {
		if err := cat.CreateNamespace(ctx, ns, nil); err != nil {
			t.Fatalf("create namespace %v: %v", ns, err)
		}
	}
	var written *table.Table
	for _, id := range []table.Identifier{{"sales", "orders"}, {"sales", "eu", "orders"}, {"scratch", "tmp_1"}} {
		tbl, err := cat.CreateTable(ctx, id, sc)
		if err != nil {
			t.Fatalf("create %v: %v", id, err)
		}
		if !strings.HasPrefix(tbl.Location(), warehouse) {
			t.Fatalf("table location %s is not under %s", tbl.Location(), warehouse)
		}
		if written, err = testkit.AppendRandom(ctx, tbl, 100, 0, rand.New(rand.NewPCG(1, 1))); err != nil {
			t.Fatalf("append to %v: %v", id, err)
		}
	}
	ids, err := b.Tables(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, id := range ids {
		got = append(got, id.String())
	}
	if want := "sales.eu.orders,sales.orders,scratch.tmp_1"; strings.Join(got, ",") != want {
		t.Fatalf("tables = %v, want %s", got, want)
	}
	filtered := bucket.New(bucket.Options{ARN: b.ARN(), Parsed: b.ParsedARN(), CatalogName: b.CatalogName(), Catalog: b.Properties(),
		Namespaces: configs.Filter{Exclude: []string{"scratch"}}.Match, Tables: configs.Filter{Include: []string{"orders"}}.Match})
	defer filtered.Close()
	if ids, err = filtered.Buckets()[0].Tables(ctx); err != nil || len(ids) != 2 {
		t.Fatalf("filtered tables = %v, %v", ids, err)
	}

	tbl, err := b.LoadTable(ctx, bucket.TableID{Namespace: []string{"scratch"}, Name: "tmp_1"})
	if err != nil {
		t.Fatal(err)
	}
	want, err := tablecheck.Rows(ctx, written, 0)
	if err != nil {
		t.Fatal(err)
	}
	fp, err := tablecheck.Rows(ctx, tbl, 0)
	if err != nil {
		t.Fatal(err)
	}
	if !fp.Equal(want) || fp.Rows != 100 {
		t.Fatalf("loaded rows %v, written %v", fp, want)
	}
	if _, err := b.LoadTable(ctx, bucket.TableID{Namespace: []string{"sales"}, Name: "missing"}); !errors.Is(err, bucket.ErrNoSuchTable) {
		t.Fatalf("missing table: %v", err)
	}
	if _, err := b.LoadTable(ctx, bucket.TableID{Namespace: []string{"nons"}, Name: "t"}); !errors.Is(err, bucket.ErrNoSuchTable) {
		t.Fatalf("missing namespace: %v", err)
	}
	exerciseRefresh(t, ctx, b, cat, sc)
	_ = catalog.ErrNoSuchTable
}

// exerciseRefresh checks Refresh against loads: an unchanged table is the
// one the caller had; a table committed to, or dropped and created again
// under its name, is the catalog's current one; a dropped one is missing.
func exerciseRefresh(t *testing.T, ctx context.Context, b *bucket.Bucket, cat catalog.Catalog, sc *iceberg.Schema) {
	t.Helper()
	for _, id := range []bucket.TableID{{Namespace: []string{"sales"}, Name: "orders"}, {Namespace: []string{"sales", "eu"}, Name: "orders"}} {
		known, err := b.LoadTable(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		// A SQL catalog's unchanged table is not loaded again.
		if got, err := b.Refresh(ctx, id, known); err != nil || got != known {
			t.Fatalf("refresh of unchanged %s: %v, %v; want the table known", id, got, err)
		}
		if got, err := b.Refresh(ctx, id, nil); err != nil || got.MetadataLocation() != known.MetadataLocation() {
			t.Fatalf("refresh of %s with nothing known: %v, %v", id, got, err)
		}
		after, err := testkit.AppendRandom(ctx, known, 10, 0, rand.New(rand.NewPCG(2, 2)))
		if err != nil {
			t.Fatal(err)
		}
		if got, err := b.Refresh(ctx, id, known); err != nil || got.MetadataLocation() != after.MetadataLocation() || got == known {
			t.Fatalf("refresh of %s after a commit: %v, %v; want %s", id, got, err, after.MetadataLocation())
		}
	}
	// A name's table dropped and created again: the same name, another
	// table, whatever the caller held.
	id := bucket.TableID{Namespace: []string{"sales"}, Name: "orders"}
	old, err := b.LoadTable(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if err := cat.DropTable(ctx, id.Identifier()); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Refresh(ctx, id, old); !errors.Is(err, bucket.ErrNoSuchTable) {
		t.Fatalf("refresh of a dropped table: %v", err)
	}
	if _, err := cat.CreateTable(ctx, id.Identifier(), sc); err != nil {
		t.Fatal(err)
	}
	got, err := b.Refresh(ctx, id, old)
	if err != nil || got.Metadata().TableUUID() == old.Metadata().TableUUID() {
		t.Fatalf("refresh of a table created again: %v, %v", got, err)
	}
}

// Unreachable catalogs fail within the deadline, naming the endpoint.
func TestUnreachableCatalog(t *testing.T) {
	addr := servers.RefusedAddr
	// A listener that accepts and never answers: the hang case.
	silent, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	go func() {
		for {
			c, err := silent.Accept()
			if err != nil {
				return
			}
			defer c.Close()
		}
	}()
	a, _ := arn.Parse("arn:aws:s3tables:us-east-1:1:bucket/down")
	for name, props := range map[string]map[string]string{
		"postgres refused": {"type": "sql", "uri": "postgres://u@" + addr + "/db?sslmode=disable"},
		"rest refused":     {"type": "rest", "uri": "http://" + addr + "/iceberg"},
		"rest silent":      {"type": "rest", "uri": "http://" + silent.Addr().String() + "/iceberg"},
	} {
		t.Run(name, func(t *testing.T) {
			reg := bucket.New(bucket.Options{ARN: a.String(), Parsed: a, CatalogName: "down", Catalog: props})
			defer reg.Close()
			b := reg.Buckets()[0]
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
			defer cancel()
			start := time.Now()
			_, err := b.Tables(ctx)
			if err == nil {
				t.Fatal("listing an unreachable catalog succeeded")
			}
			if d := time.Since(start); d > 5*time.Second {
				t.Fatalf("took %v", d)
			}
			if !strings.Contains(err.Error(), "down") {
				t.Fatalf("error does not name the bucket: %v", err)
			}
			if strings.Contains(props["uri"], "postgres") && !strings.Contains(err.Error(), addr) {
				t.Fatalf("error does not name the endpoint %s: %v", addr, err)
			}
		})
	}
}

// A misspelt SQLite catalog path is an error naming the path, and nothing
// is created; a catalog name that matches no table says which names the
// database holds.
func TestWrongCatalogIsAnError(t *testing.T) {
	home := t.TempDir()
	cfg := configs.Embedded(home)
	reg := cfg.Registry()
	defer reg.Close()
	b, _ := reg.Bucket("local")
	ctx := context.Background()
	if _, err := demo.Create(ctx, b, demo.Options{Appends: 1}); err != nil {
		t.Fatal(err)
	}
	a := b.ParsedARN()
	props := b.Properties()
	open := func(props map[string]string, catalogName string) ([]bucket.TableID, error) {
		reg := bucket.New(bucket.Options{ARN: a.String(), Parsed: a, CatalogName: catalogName, Catalog: props})
		defer reg.Close()
		return reg.Buckets()[0].Tables(ctx)
	}

	misspelt := maps.Clone(props)
	missing := filepath.Join(home, "catalgo.db")
	misspelt["uri"] = "file:" + missing + "?_pragma=busy_timeout(10000)"
	if _, err := open(misspelt, b.CatalogName()); !errors.Is(err, bucket.ErrNoCatalogFile) || !strings.Contains(err.Error(), missing) {
		t.Errorf("misspelt path: %v", err)
	}
	if _, err := os.Stat(missing); err == nil {
		t.Errorf("%s was created", missing)
	}

	if _, err := open(props, "lakehouse"); !errors.Is(err, bucket.ErrCatalogName) || !strings.Contains(err.Error(), `"`+b.CatalogName()+`"`) {
		t.Errorf("catalog name matching nothing: %v", err)
	}
	if ids, err := open(props, b.CatalogName()); err != nil || len(ids) != 1 {
		t.Errorf("the right name: %v, %v", ids, err)
	}
}

// Table loads of a bucket on S3 share one AWS configuration and its
// connections, rather than building both at every load, and read the
// same rows. A second bucket on the same catalog with a wrong secret
// still fails: the catalog's own credentials win over the shared
// configuration.
func TestTableLoadsShareConnections(t *testing.T) {
	ctx := context.Background()
	srv := servers.S3(t)
	counter, proxied := srv.Counted(t)
	home := t.TempDir()
	mk := func(name, secret string) bucket.Options {
		props := proxied.Props()
		props["s3.secret-access-key"] = secret
		props["type"], props["uri"], props["warehouse"] = "sql", "file:"+filepath.Join(home, "catalog.db")+"?mode=rwc", "s3://"+srv.Bucket+"/warehouse"
		a := "arn:aws:s3tables:us-east-1:000000000000:bucket/" + name
		parsed, err := arn.Parse(a)
		if err != nil {
			t.Fatal(err)
		}
		return bucket.Options{ARN: a, Parsed: parsed, CatalogName: "c", Catalog: props}
	}
	reg := bucket.New(mk("good", srv.Secret), mk("bad", "not-the-secret"))
	defer reg.Close()
	good, bad := reg.Buckets()[0], reg.Buckets()[1]
	tbl := testkit.NewTable(t, good, "ns", "t", iceberg.NewSchema(0, iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true}))
	written, err := testkit.AppendRandom(ctx, tbl, 100, 0, rand.New(rand.NewPCG(1, 1)))
	if err != nil {
		t.Fatal(err)
	}
	want, err := tablecheck.Rows(ctx, written, 0)
	if err != nil {
		t.Fatal(err)
	}
	id := bucket.TableID{Namespace: []string{"ns"}, Name: "t"}
	if _, err := good.LoadTable(ctx, id); err != nil {
		t.Fatal(err)
	}
	conns := counter.Conns()
	for range 20 {
		if tbl, err = good.LoadTable(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	if n := counter.Conns() - conns; n > 2 {
		t.Errorf("20 table loads opened %d connections, want them to reuse one", n)
	}
	if got, err := tablecheck.Rows(ctx, tbl, 0); err != nil || !got.Equal(want) {
		t.Fatalf("rows through a shared configuration: %v %v, want %v", got, err, want)
	}
	if _, err := bad.LoadTable(ctx, id); err == nil {
		t.Fatal("a bucket with a wrong secret loaded the table")
	}
}

// The registry places each bucket as its options say: the buckets of one
// domain, and within it the first of those that open one catalog
// standing for them all; a bucket given no domain is one of its own.
func TestDomainOptions(t *testing.T) {
	opts := func(name, domain, same string) bucket.Options {
		a := "arn:aws:s3tables:us-east-1:1:bucket/" + name
		parsed, err := arn.Parse(a)
		if err != nil {
			t.Fatal(err)
		}
		return bucket.Options{ARN: a, Parsed: parsed, CatalogName: name, Domain: domain, SameCatalog: same}
	}
	reg := bucket.New(opts("aaa", "d", "aaa"), opts("alone", "", ""), opts("bbb", "d", "bbb"), opts("aa2", "d", "aaa"))
	b := func(name string) *bucket.Bucket {
		x, err := reg.Bucket(name)
		if err != nil {
			t.Fatal(err)
		}
		return x
	}
	names := func(bs []*bucket.Bucket) string {
		var out []string
		for _, x := range bs {
			out = append(out, x.Name())
		}
		return strings.Join(out, ",")
	}
	for name, want := range map[string]string{"aaa": "aaa,bbb,aa2", "bbb": "aaa,bbb,aa2", "aa2": "aaa,bbb,aa2", "alone": "alone"} {
		if got := names(b(name).Domain()); got != want {
			t.Errorf("domain of %s: %s, want %s", name, got, want)
		}
	}
	if b("aa2").Lists() != b("aaa") || b("bbb").Lists() != b("bbb") || b("alone").Lists() != b("alone") {
		t.Error("the bucket standing for a catalog is not the first that opens it")
	}
	id := bucket.TableID{Namespace: []string{"ns"}, Name: "t"}
	for _, tc := range []struct{ of, from, want string }{{"bbb", "aaa", "bbb/ns.t"}, {"aaa", "aa2", "ns.t"}, {"aa2", "aaa", "ns.t"}, {"alone", "alone", "ns.t"}, {"bbb", "alone", "bbb/ns.t"}} {
		if got := b(tc.of).TableName(id, b(tc.from)); got != tc.want {
			t.Errorf("%s's ns.t named from %s: %q, want %q", tc.of, tc.from, got, tc.want)
		}
	}
}
