// Package bucket is the table-bucket registry: it resolves a bucket by name
// or ARN, opens the bucket's Iceberg catalog lazily with the properties from
// the configuration, lists namespaces (nested too) and tables, and loads
// tables. It links in the catalogs (sql, rest, glue, hive) and file systems
// (local, S3-compatible) that users need.
package bucket

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	_ "github.com/apache/iceberg-go/catalog/glue" // registers catalog type "glue"
	_ "github.com/apache/iceberg-go/catalog/hive" // registers catalog type "hive"
	_ "github.com/apache/iceberg-go/catalog/rest" // registers catalog type "rest"
	sqlcat "github.com/apache/iceberg-go/catalog/sql"
	_ "github.com/apache/iceberg-go/io/gocloud/s3" // registers s3://, s3a://, s3n://, oss://
	"github.com/apache/iceberg-go/table"
	"github.com/aws/aws-sdk-go-v2/aws"
	_ "github.com/jackc/pgx/v5/stdlib" // database/sql driver "pgx" for SQL catalogs on PostgreSQL
	_ "modernc.org/sqlite"             // database/sql driver "sqlite", pure Go

	"github.com/icekeeper/icekeeper/internal/arn"
	"github.com/icekeeper/icekeeper/internal/redact"
)

// Sentinel errors callers branch on (the API maps them to NotFoundException).
var (
	ErrUnknownBucket = errors.New("unknown bucket")
	ErrNoSuchTable   = errors.New("no such table")
	ErrBadRef        = errors.New("malformed table reference")
)

// Registry holds the configured buckets.
type Registry struct {
	buckets []*Bucket
}

// Options is what the registry needs of a bucket: where its catalog is
// and which of its tables are maintained. Maintenance settings are not
// here; jobs.Resolver has them.
type Options struct {
	ARN    string // as configured
	Parsed arn.BucketARN
	// CatalogName is the name the catalog is opened under.
	CatalogName string
	// Catalog holds the iceberg-go catalog properties.
	Catalog map[string]string
	// CommitRate bounds the commits sent to a REST catalog.
	CommitRate CommitRate
	// Namespaces and Tables tell which namespaces and table names are
	// maintained; nil admits all.
	Namespaces, Tables func(name string) bool
	// Domain names the bucket's reference domain (tables.Domains):
	// buckets given one Domain share a catalog database or storage, and
	// removal and erasure look at the tables of all of them. Empty: a
	// domain of its own.
	Domain string
	// SameCatalog names the catalog the bucket opens within its domain:
	// buckets given one list the same tables, and the first of them
	// stands for them all. Empty: its own.
	SameCatalog string
	// ReadOnly: the bucket's tables are read for the references of its
	// domain, and never maintained.
	ReadOnly bool
	// S3UnsignedPayload sends the bodies of the S3 requests of table
	// file IO unsigned (unsignedBodies).
	S3UnsignedPayload bool
}

// New builds the registry of the buckets. Nothing is opened yet.
func New(buckets ...Options) *Registry {
	r := &Registry{}
	for _, o := range buckets {
		r.buckets = append(r.buckets, &Bucket{opts: o})
	}
	for _, b := range r.buckets {
		b.domain = []*Bucket{b}
		b.catalogOf = b
		if b.opts.Domain == "" {
			continue
		}
		b.domain = nil
		for _, o := range r.buckets {
			if o.opts.Domain == b.opts.Domain {
				b.domain = append(b.domain, o)
			}
		}
		for _, o := range b.domain {
			if b.opts.SameCatalog != "" && o.opts.SameCatalog == b.opts.SameCatalog {
				b.catalogOf = o
				break
			}
		}
	}
	return r
}

// WithLogger makes every bucket log, at debug level, how long opening its
// catalog, listing and loading tables took; it returns r.
func (r *Registry) WithLogger(l *slog.Logger) *Registry {
	for _, b := range r.buckets {
		b.logger = l.With("bucket", b.Name())
	}
	return r
}

// log is the bucket's logger, or one that discards.
func (b *Bucket) log() *slog.Logger {
	if b.logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return b.logger
}

// Buckets returns every bucket in configuration order.
func (r *Registry) Buckets() []*Bucket { return slices.Clone(r.buckets) }

// Bucket returns the bucket whose name or full ARN is ref.
func (r *Registry) Bucket(ref string) (*Bucket, error) {
	for _, b := range r.buckets {
		if b.ARN() == ref || b.Name() == ref {
			return b, nil
		}
	}
	names := make([]string, len(r.buckets))
	for i, b := range r.buckets {
		names[i] = b.Name()
	}
	return nil, fmt.Errorf("%w %q (configured: %s)", ErrUnknownBucket, ref, strings.Join(names, ", "))
}

// Close closes every catalog that was opened.
func (r *Registry) Close() {
	for _, b := range r.buckets {
		b.Close()
	}
}

// Bucket is one configured table bucket with its lazily opened catalog:
// the handle through which jobs reach a table.
type Bucket struct {
	opts Options

	logger *slog.Logger // set once, before use

	// domain and catalogOf are set by New, and never change.
	domain    []*Bucket
	catalogOf *Bucket

	mu     sync.Mutex
	cat    catalog.Catalog
	db     *sql.DB     // a SQL catalog's pool, which the catalog does not close
	awsCfg *aws.Config // shared by table file IO (WithTableIO)
}

// sqlCatalogConns bounds a SQL catalog's connections: a burst of API
// requests or jobs waits for one rather than opening a file handle or a
// server connection each. Jobs and lookups are bounded well below it.
const sqlCatalogConns = 16

// Name is the bucket's name.
func (b *Bucket) Name() string { return b.opts.Parsed.Name }

// ARN is the bucket's ARN as configured.
func (b *Bucket) ARN() string { return b.opts.ARN }

// ParsedARN is the bucket's ARN, parsed.
func (b *Bucket) ParsedARN() arn.BucketARN { return b.opts.Parsed }

// CatalogName is the name the catalog is opened under.
func (b *Bucket) CatalogName() string { return b.opts.CatalogName }

// ReadOnly reports whether the bucket is only read for its domain's
// references (configs' readOnly): nothing runs on its tables.
func (b *Bucket) ReadOnly() bool { return b.opts.ReadOnly }

// Domain returns every bucket of b's reference domain, b among them, in
// configuration order: the buckets whose tables can reference files of
// b's tables or lie inside their locations.
func (b *Bucket) Domain() []*Bucket {
	if b.domain == nil {
		return []*Bucket{b}
	}
	return slices.Clone(b.domain)
}

// Lists is the bucket that stands for b's catalog in its domain: the
// first configured that opens the same catalog (b itself, unless two
// entries open one catalog). A table is one table whichever of them it
// is reached through, and is named through this one.
func (b *Bucket) Lists() *Bucket {
	if b.catalogOf == nil {
		return b
	}
	return b.catalogOf
}

// TableName is id, a table of b, as a message about a table of from
// names it: bare within one catalog, with b's name before it otherwise
// (bucket2/ns.t), since ns.t of another bucket is another table.
func (b *Bucket) TableName(id TableID, from *Bucket) string {
	if from != nil && from.Lists() == b.Lists() {
		return id.String()
	}
	return b.Name() + "/" + id.String()
}

// Properties returns the catalog's properties as icekeeper passes them to
// iceberg-go (see CatalogProperties): what file IO built outside the
// catalog (listing, deleting objects) needs to reach the same storage.
func (b *Bucket) Properties() map[string]string { return CatalogProperties(b.opts.Catalog) }

// Catalog opens the bucket's catalog on first use. A failed open is not
// cached, so a catalog that was down is retried on the next call.
func (b *Bucket) Catalog(ctx context.Context) (catalog.Catalog, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.cat != nil {
		return b.cat, nil
	}
	props := b.Properties()
	// catalog.Load takes no deadline everywhere (the SQL catalog's first
	// query does not see ctx), so wait for it here: a catalog that does not
	// answer must fail within ctx's deadline, not hang the process.
	type result struct {
		cat catalog.Catalog
		db  *sql.DB
		err error
	}
	done := make(chan result, 1)
	start := time.Now()
	go func() {
		c, db, err := load(ctx, b.opts.CatalogName, props, b.opts.CommitRate, b.log())
		done <- result{c, db, err}
	}()
	select {
	case r := <-done:
		if r.err != nil {
			return nil, fmt.Errorf("open %s catalog of bucket %s at %s: %w", props["type"], b.Name(), redact.URI(props["uri"]), r.err)
		}
		b.cat, b.db = r.cat, r.db
		b.log().Debug("catalog opened", "type", props["type"], "uri", redact.URI(props["uri"]), "duration", time.Since(start))
		return b.cat, nil
	case <-ctx.Done():
		go func() { // close it if it ever opens
			if r := <-done; r.err == nil {
				closeCatalog(r.cat, r.db)
			}
		}()
		return nil, fmt.Errorf("open %s catalog of bucket %s at %s: %w", props["type"], b.Name(), redact.URI(props["uri"]), context.Cause(ctx))
	}
}

// Close closes the catalog if it was opened.
func (b *Bucket) Close() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.cat != nil {
		closeCatalog(b.cat, b.db)
		b.cat, b.db = nil, nil
	}
}

func closeCatalog(c catalog.Catalog, db *sql.DB) {
	if cl, ok := c.(interface{ Close() error }); ok {
		_ = cl.Close()
	}
	if db != nil {
		_ = db.Close()
	}
}

// load opens a catalog as catalog.Load does, but a SQL catalog on a pool
// of bounded size, and a REST catalog within rate.
func load(ctx context.Context, name string, props iceberg.Properties, rate CommitRate, log *slog.Logger) (catalog.Catalog, *sql.DB, error) {
	switch props["type"] {
	case "rest", "http", "https":
		c, err := loadREST(ctx, name, props, rate, log)
		return c, nil, err
	case "sql":
	default:
		c, err := catalog.Load(ctx, name, props)
		return c, nil, err
	}
	if err := sqliteExists(props); err != nil {
		return nil, nil, err
	}
	db, err := sql.Open(props[sqlcat.DriverKey], strings.TrimPrefix(props["uri"], "sql://"))
	if err != nil {
		return nil, nil, err
	}
	db.SetMaxOpenConns(sqlCatalogConns)
	c, err := sqlcat.NewCatalog(name, db, sqlcat.SupportedDialect(strings.ToLower(props[sqlcat.DialectKey])), props)
	if err != nil {
		_ = db.Close()
		return nil, nil, err
	}
	return c, db, nil
}

// ErrNoCatalogFile is returned for a SQLite catalog whose file does not
// exist: SQLite would create an empty one, and a misspelt path would show an
// empty catalog that icekeeper then maintains, silently, forever.
var ErrNoCatalogFile = errors.New("the SQLite catalog file does not exist")

// sqliteExists refuses a SQLite catalog whose file is missing, unless its
// URI asks for creation with SQLite's own mode=rwc (as the embedded
// default does) or is in memory.
func sqliteExists(props iceberg.Properties) error {
	if props[sqlcat.DriverKey] != "sqlite" {
		return nil
	}
	name, query, _ := strings.Cut(strings.TrimPrefix(props["uri"], "file:"), "?")
	q, _ := url.ParseQuery(query)
	if name == "" || name == ":memory:" || q.Get("mode") == "rwc" || q.Get("mode") == "memory" {
		return nil
	}
	if _, err := os.Stat(name); errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%w: %s (check the catalog's uri; add mode=rwc to its query to create it)", ErrNoCatalogFile, name)
	}
	return nil
}

// CatalogProperties returns the properties handed to catalog.Load: the
// configured ones verbatim, plus two conveniences for SQL catalogs that the
// configuration would otherwise have to spell out — the database/sql driver
// and dialect inferred from the URI when unset, and a connect timeout for
// PostgreSQL so that an unreachable server fails instead of hanging.
func CatalogProperties(configured map[string]string) iceberg.Properties {
	props := iceberg.Properties{}
	for k, v := range configured {
		props[k] = v
	}
	// Java's S3FileIO (and the OSS Tables guides) say s3.path-style-access;
	// iceberg-go says s3.force-virtual-addressing.
	if v, ok := props["s3.path-style-access"]; ok && props["s3.force-virtual-addressing"] == "" {
		props["s3.force-virtual-addressing"] = strconv.FormatBool(!strings.EqualFold(v, "true"))
	}
	if props["type"] != "sql" {
		return props
	}
	uri := props["uri"]
	isPG := strings.HasPrefix(uri, "postgres://") || strings.HasPrefix(uri, "postgresql://")
	if props["sql.driver"] == "" {
		if isPG {
			props["sql.driver"] = "pgx"
		} else {
			props["sql.driver"] = "sqlite"
		}
	}
	if props["sql.dialect"] == "" {
		if isPG {
			props["sql.dialect"] = "postgres"
		} else {
			props["sql.dialect"] = "sqlite"
		}
	}
	if isPG && !strings.Contains(uri, "connect_timeout=") {
		sep := "?"
		if strings.Contains(uri, "?") {
			sep = "&"
		}
		props["uri"] = uri + sep + "connect_timeout=10"
	}
	return props
}

// TableID names a table inside a bucket.
type TableID struct {
	Namespace []string
	Name      string
}

// TableIDOf is the table named by a dot-joined namespace (as
// NamespaceString writes it, and state keys keep it) and a name.
func TableIDOf(namespace, name string) TableID {
	return TableID{Namespace: strings.Split(namespace, "."), Name: name}
}

// NamespaceString is the namespace dot-joined, as S3 Tables and the CLI write it.
func (t TableID) NamespaceString() string { return strings.Join(t.Namespace, ".") }

// Identifier is the iceberg-go identifier of the table.
func (t TableID) Identifier() table.Identifier { return append(slices.Clone(t.Namespace), t.Name) }

func (t TableID) String() string { return t.NamespaceString() + "." + t.Name }

// Tables lists the bucket's tables that pass its namespace and table
// filters, walking nested namespaces, sorted by namespace and name.
func (b *Bucket) Tables(ctx context.Context) ([]TableID, error) {
	return b.list(ctx, b.opts.Namespaces, b.opts.Tables)
}

// AllTables lists every table of the bucket's catalog, maintained or not:
// what must be told apart from a table's own files.
func (b *Bucket) AllTables(ctx context.Context) ([]TableID, error) {
	return b.list(ctx, nil, nil)
}

func (b *Bucket) list(ctx context.Context, namespaces, tables func(string) bool) ([]TableID, error) {
	start := time.Now()
	cat, err := b.Catalog(ctx)
	if err != nil {
		return nil, err
	}
	var out []TableID
	var walk func(parent table.Identifier) error
	walk = func(parent table.Identifier) error {
		children, err := cat.ListNamespaces(ctx, parent)
		if err != nil {
			return fmt.Errorf("list namespaces of bucket %s under %q: %w", b.Name(), strings.Join(parent, "."), err)
		}
		for _, ns := range children {
			if len(ns) <= len(parent) || !slices.Equal(ns[:len(parent)], parent) {
				continue // catalogs without nesting return the same list again
			}
			name := strings.Join(ns, ".")
			if admits(namespaces, name) {
				for ident, err := range cat.ListTables(ctx, ns) {
					if err != nil {
						return fmt.Errorf("list tables of %s/%s: %w", b.Name(), name, err)
					}
					id := TableID{Namespace: catalog.NamespaceFromIdent(ident), Name: catalog.TableNameFromIdent(ident)}
					if admits(tables, id.Name) {
						out = append(out, id)
					}
				}
			}
			if err := walk(ns); err != nil {
				return err
			}
		}
		return nil
	}
	if err := walk(nil); err != nil {
		return nil, err
	}
	b.log().Debug("tables listed", "tables", len(out), "duration", time.Since(start))
	if len(out) == 0 {
		if err := b.checkCatalogName(ctx); err != nil {
			return nil, err
		}
	}
	slices.SortFunc(out, func(x, y TableID) int { return strings.Compare(x.String(), y.String()) })
	return slices.CompactFunc(out, func(x, y TableID) bool { return x.String() == y.String() }), nil
}

func admits(filter func(string) bool, name string) bool { return filter == nil || filter(name) }

// ErrCatalogName is returned when a SQL catalog's database holds tables,
// but none under the bucket's catalog name: writers used another name.
var ErrCatalogName = errors.New("the catalog database holds no table under the bucket's catalog name")

// sqlDB is the database of the bucket's catalog, opened if need be; nil
// for a catalog that is not a SQL one.
func (b *Bucket) sqlDB(ctx context.Context) (*sql.DB, error) {
	if _, err := b.Catalog(ctx); err != nil {
		return nil, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.db, nil
}

// checkCatalogName says which catalog names a SQL catalog's database holds
// when the bucket's own name has no table there; any other catalog is not
// checked.
func (b *Bucket) checkCatalogName(ctx context.Context) error {
	b.mu.Lock()
	db := b.db
	b.mu.Unlock()
	if db == nil {
		return nil
	}
	rows, err := db.QueryContext(ctx, "SELECT DISTINCT catalog_name FROM iceberg_tables ORDER BY catalog_name")
	if err != nil {
		return nil // no table was ever created: an empty catalog, truly
	}
	defer rows.Close()
	var names []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			return nil
		}
		if n == b.opts.CatalogName {
			return nil
		}
		names = append(names, fmt.Sprintf("%q", n))
	}
	if len(names) == 0 {
		return nil
	}
	return fmt.Errorf("%w: bucket %s reads catalog %q, the database holds tables of %s; set catalogName to the name the writers use",
		ErrCatalogName, b.Name(), b.opts.CatalogName, strings.Join(names, ", "))
}

// MetadataLocations returns the current metadata file of every table of
// a SQL catalog, by TableID.String, in one query: what a load would read
// first, for a caller that only needs to know whether a table changed. A
// table under a namespace stored otherwise (nested namespaces have more
// than one spelling) may be missing; callers load those. Other catalogs
// return errors.ErrUnsupported.
func (b *Bucket) MetadataLocations(ctx context.Context) (map[string]string, error) {
	db, err := b.sqlDB(ctx)
	if err != nil {
		return nil, err
	}
	if db == nil {
		return nil, errors.ErrUnsupported
	}
	rows, err := db.QueryContext(ctx, "SELECT table_namespace, table_name, metadata_location FROM iceberg_tables WHERE catalog_name = "+
		placeholder(b.Properties()["sql.dialect"]), b.opts.CatalogName)
	if err != nil {
		return nil, fmt.Errorf("read the metadata locations of bucket %s: %w", b.Name(), err)
	}
	defer rows.Close()
	out := map[string]string{}
	for rows.Next() {
		var ns, name string
		var loc sql.NullString
		if err := rows.Scan(&ns, &name, &loc); err != nil {
			return nil, fmt.Errorf("read the metadata locations of bucket %s: %w", b.Name(), err)
		}
		if loc.Valid {
			out[TableID{Namespace: strings.Split(ns, "."), Name: name}.String()] = loc.String
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read the metadata locations of bucket %s: %w", b.Name(), err)
	}
	return out, nil
}

// CurrentMetadata returns the current metadata file of every table of the
// bucket's catalog, the bucket's table filters aside, by TableID.String:
// one query on a SQL catalog (MetadataLocations), one load per table
// elsewhere and for the tables that query misses.
func (b *Bucket) CurrentMetadata(ctx context.Context) (map[string]string, error) {
	ids, err := b.AllTables(ctx)
	if err != nil {
		return nil, err
	}
	locs, err := b.MetadataLocations(ctx)
	switch {
	case errors.Is(err, errors.ErrUnsupported):
		locs = map[string]string{}
	case err != nil:
		return nil, err
	}
	for _, id := range ids {
		if _, ok := locs[id.String()]; ok {
			continue
		}
		tbl, err := b.LoadTable(ctx, id)
		if err != nil {
			return nil, err
		}
		locs[id.String()] = tbl.MetadataLocation()
	}
	return locs, nil
}

// placeholder is the first bind parameter in dialect's SQL.
func placeholder(dialect string) string {
	if dialect == "postgres" {
		return "$1"
	}
	return "?"
}

// next is the bind parameter after p: "$2" after "$1", "?" after "?".
func next(p string) string {
	if n, err := strconv.Atoi(strings.TrimPrefix(p, "$")); err == nil {
		return "$" + strconv.Itoa(n+1)
	}
	return p
}

// Admits reports whether the bucket's namespace and table filters let id
// be maintained: whether Tables would list it.
func (b *Bucket) Admits(id TableID) bool {
	return admits(b.opts.Namespaces, id.NamespaceString()) && admits(b.opts.Tables, id.Name)
}

// Exists reports whether the table is in the catalog, without loading
// its metadata (cheap enough for every API request); a missing table is
// ErrNoSuchTable.
func (b *Bucket) Exists(ctx context.Context, id TableID) error {
	cat, err := b.Catalog(ctx)
	if err != nil {
		return err
	}
	ok, err := cat.CheckTableExists(ctx, id.Identifier())
	if err != nil && !errors.Is(err, catalog.ErrNoSuchNamespace) && !errors.Is(err, catalog.ErrNoSuchTable) {
		return fmt.Errorf("look up table %s/%s: %w", b.Name(), id, err)
	}
	if !ok {
		return fmt.Errorf("%w %s/%s", ErrNoSuchTable, b.Name(), id)
	}
	return nil
}

// Refresh returns the table as the catalog has it now, given known, the
// table as the caller last saw it: known itself when the catalog's
// current metadata file is still known's, else a fresh load. On a SQL
// catalog that check is one indexed query, and an unchanged table costs no
// metadata file read or parsed (a table's metadata file is written once,
// under a new name at every commit, so an equal location is the same
// table). Other catalogs, a nil known, and a table the query does not find
// (a namespace stored under another spelling) are loaded: on a REST
// catalog whose server sends ETags, conditionally (etagTransport).
func (b *Bucket) Refresh(ctx context.Context, id TableID, known *table.Table) (*table.Table, error) {
	if known == nil {
		return b.LoadTable(ctx, id)
	}
	db, err := b.sqlDB(ctx)
	if err != nil {
		return nil, err
	}
	if db == nil {
		return b.LoadTable(ctx, id)
	}
	p := placeholder(b.Properties()["sql.dialect"])
	q := "SELECT metadata_location FROM iceberg_tables WHERE catalog_name = " + p + " AND table_namespace = " + next(p) +
		" AND table_name = " + next(next(p))
	rows, err := db.QueryContext(ctx, q, b.opts.CatalogName, id.NamespaceString(), id.Name)
	if err != nil {
		return nil, fmt.Errorf("read the metadata location of %s/%s: %w", b.Name(), id, err)
	}
	defer rows.Close()
	same := false
	for rows.Next() {
		var loc sql.NullString
		if err := rows.Scan(&loc); err != nil {
			return nil, fmt.Errorf("read the metadata location of %s/%s: %w", b.Name(), id, err)
		}
		same = same || loc.Valid && loc.String == known.MetadataLocation()
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read the metadata location of %s/%s: %w", b.Name(), id, err)
	}
	if same {
		b.log().Debug("table unchanged", "table", id.String(), "metadata", known.MetadataLocation())
		return known, nil
	}
	return b.LoadTable(ctx, id)
}

// LoadTable loads the table fresh from the catalog. Callers must not keep
// the result across runs: a long-lived process holding table objects keeps
// every earlier metadata version alive.
func (b *Bucket) LoadTable(ctx context.Context, id TableID) (*table.Table, error) {
	cat, err := b.Catalog(ctx)
	if err != nil {
		return nil, err
	}
	start := time.Now()
	tbl, err := cat.LoadTable(b.WithTableIO(ctx), id.Identifier())
	if err != nil {
		b.log().Debug("table not loaded", "table", id.String(), "duration", time.Since(start), "error", err)
		if errors.Is(err, catalog.ErrNoSuchTable) || errors.Is(err, catalog.ErrNoSuchNamespace) {
			return nil, fmt.Errorf("%w %s/%s", ErrNoSuchTable, b.Name(), id)
		}
		return nil, fmt.Errorf("load table %s/%s: %w", b.Name(), id, err)
	}
	b.log().Debug("table loaded", "table", id.String(), "metadata", tbl.MetadataLocation(), "duration", time.Since(start))
	return tbl, nil
}
