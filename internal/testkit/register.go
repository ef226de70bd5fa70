package testkit

import (
	"context"
	"database/sql"
	"strings"
	"testing"

	"github.com/apache/iceberg-go/table"

	"github.com/icekeeper/icekeeper/internal/bucket"
)

// Register does what a catalog's register_table does: a table named
// ns.name at an existing metadata file, loaded. On a SQL catalog, whose
// iceberg-go catalog has no call for it, it writes the catalog's row.
func Register(t testing.TB, b *bucket.Bucket, ns, name, metadata string) *table.Table {
	t.Helper()
	ctx := context.Background()
	cat, err := b.Catalog(ctx)
	if err != nil {
		t.Fatal(err)
	}
	type registers interface {
		RegisterTable(ctx context.Context, identifier table.Identifier, metadataLoc string) (*table.Table, error)
	}
	if r, ok := cat.(registers); ok {
		tbl, err := r.RegisterTable(ctx, table.Identifier{ns, name}, metadata)
		if err != nil {
			t.Fatalf("register %s.%s at %s: %v", ns, name, metadata, err)
		}
		return tbl
	}
	props := b.Properties()
	db, err := sql.Open(props["sql.driver"], strings.TrimPrefix(props["uri"], "sql://"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	q := `INSERT INTO iceberg_tables (catalog_name, table_namespace, table_name, iceberg_type, metadata_location) VALUES (?, ?, ?, 'TABLE', ?)`
	if props["sql.dialect"] == "postgres" {
		q = `INSERT INTO iceberg_tables (catalog_name, table_namespace, table_name, iceberg_type, metadata_location) VALUES ($1, $2, $3, 'TABLE', $4)`
	}
	if _, err := db.ExecContext(context.Background(), q, b.CatalogName(), ns, name, metadata); err != nil {
		t.Fatalf("register %s.%s at %s: %v", ns, name, metadata, err)
	}
	tbl, err := b.LoadTable(context.Background(), bucket.TableID{Namespace: []string{ns}, Name: name})
	if err != nil {
		t.Fatalf("load %s.%s registered at %s: %v", ns, name, metadata, err)
	}
	return tbl
}
