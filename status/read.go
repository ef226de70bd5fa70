package status

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
	"github.com/icekeeper/icekeeper/jobs"
)

// The read routes of S3 Tables, answered from the catalog. Timestamps that
// an arbitrary catalog does not record (creation, modification) are the
// server's start, as in the listings; the version token is derived from
// the metadata location, so it changes with every commit, as AWS's does.
func (s *Server) readRoutes(api func(string, handlerFunc)) {
	api("GET /buckets/{arn}", s.getTableBucket)
	api("GET /namespaces/{arn}/{namespace}", s.getNamespace)
	api("GET /get-table", s.getTable)
	api("GET /tables/{arn}/{namespace}/{name}/metadata-location", s.getMetadataLocation)
}

// getTableBucket is GetTableBucket.
func (s *Server) getTableBucket(w http.ResponseWriter, r *http.Request) error {
	b, err := s.bucketOf(r)
	if err != nil {
		return err
	}
	if err := s.sees(r, b.Name()); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, s.bucketJSON(b))
	return nil
}

// getNamespace is GetNamespace.
func (s *Server) getNamespace(w http.ResponseWriter, r *http.Request) error {
	b, err := s.bucketOf(r)
	if err != nil {
		return err
	}
	ns := r.PathValue("namespace")
	if err := s.authorize(r, b.Name(), ns); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(r.Context(), 30*time.Second)
	defer cancel()
	cat, err := b.Catalog(ctx)
	if err != nil {
		return err
	}
	ok, err := cat.CheckNamespaceExists(ctx, strings.Split(ns, "."))
	if err != nil && !errors.Is(err, catalog.ErrNoSuchNamespace) {
		return fmt.Errorf("look up namespace %s/%s: %w", b.Name(), ns, err)
	}
	if !ok {
		return notFound(fmt.Sprintf("namespace %s does not exist in table bucket %s", ns, b.Name()))
	}
	writeJSON(w, http.StatusOK, map[string]any{"namespace": strings.Split(ns, "."), "createdAt": s.started.Format(time.RFC3339),
		"createdBy": b.ParsedARN().Account, "ownerAccountId": b.ParsedARN().Account})
	return nil
}

// getTable is GetTable, by bucket ARN, namespace and name, or by table ARN.
func (s *Server) getTable(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	bucketARN, ns, name := q.Get("tableBucketARN"), q.Get("namespace"), q.Get("name")
	if a := q.Get("tableArn"); a != "" {
		var ok bool
		if bucketARN, ns, name, ok = splitTableARN(a); !ok {
			return badRequest(fmt.Sprintf("invalid table ARN %q (want TABLE_BUCKET_ARN/table/NAMESPACE/NAME)", a))
		}
	}
	if bucketARN == "" || ns == "" || name == "" {
		return badRequest("give tableArn, or tableBucketARN, namespace and name")
	}
	t, tbl, err := s.loadTable(r, bucketARN, ns, name)
	if err != nil {
		return err
	}
	started := s.started.Format(time.RFC3339)
	writeJSON(w, http.StatusOK, map[string]any{
		"name": name, "namespace": t.Table.Namespace, "tableARN": tableARN(t), "type": "customer", "format": "ICEBERG",
		"createdAt": started, "createdBy": t.Bucket.ParsedARN().Account, "modifiedAt": started, "modifiedBy": t.Bucket.ParsedARN().Account,
		"ownerAccountId": t.Bucket.ParsedARN().Account, "versionToken": versionToken(tbl), "metadataLocation": tbl.MetadataLocation(),
		"warehouseLocation": tbl.Location()})
	return nil
}

// getMetadataLocation is GetTableMetadataLocation.
func (s *Server) getMetadataLocation(w http.ResponseWriter, r *http.Request) error {
	_, tbl, err := s.loadTable(r, r.PathValue("arn"), r.PathValue("namespace"), r.PathValue("name"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"versionToken": versionToken(tbl), "metadataLocation": tbl.MetadataLocation(),
		"warehouseLocation": tbl.Location()})
	return nil
}

func (s *Server) loadTable(r *http.Request, bucketARN, ns, name string) (jobs.Target, *table.Table, error) {
	t, err := s.targetOf(r, bucketARN, ns, name)
	if err != nil {
		return t, nil, err
	}
	ctx, cancel := context.WithTimeout(r.Context(), 30*time.Second)
	defer cancel()
	tbl, err := t.Bucket.LoadTable(ctx, t.Table)
	return t, tbl, err
}

// splitTableARN splits the table ARNs this server hands out.
func splitTableARN(a string) (bucketARN, ns, name string, ok bool) {
	bucketARN, rest, ok := strings.Cut(a, "/table/")
	if !ok {
		return "", "", "", false
	}
	ns, name, ok = strings.Cut(rest, "/")
	return bucketARN, ns, name, ok && ns != "" && name != "" && !strings.Contains(name, "/")
}

func versionToken(tbl *table.Table) string {
	sum := sha256.Sum256([]byte(tbl.MetadataLocation()))
	return hex.EncodeToString(sum[:10])
}
