package status

import (
	"net/http"
	"path"
	"strings"
	"time"

	"github.com/icekeeper/icekeeper/internal/bucket"
)

// Listing responses carry S3 Tables' timestamps; icekeeper does not know
// when a bucket, namespace or table was created in an arbitrary catalog,
// so it reports when this server started.

// listBuckets is ListTableBuckets.
func (s *Server) listBuckets(w http.ResponseWriter, r *http.Request) error {
	prefix := r.URL.Query().Get("prefix")
	var out []map[string]any
	for _, b := range s.Registry.Buckets() {
		if !strings.HasPrefix(b.Name(), prefix) || s.sees(r, b.Name()) != nil {
			continue
		}
		out = append(out, s.bucketJSON(b))
	}
	if out == nil {
		out = []map[string]any{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"tableBuckets": out})
	return nil
}

// bucketJSON is a table bucket as ListTableBuckets and GetTableBucket
// answer it.
func (s *Server) bucketJSON(b *bucket.Bucket) map[string]any {
	return map[string]any{"arn": b.ARN(), "name": b.Name(), "ownerAccountId": b.ParsedARN().Account,
		"createdAt": s.started.Format(time.RFC3339), "type": "customer"}
}

// bucketTables lists the tables of the request's bucket, which the caller
// must be allowed to see.
func (s *Server) bucketTables(r *http.Request) (*bucket.Bucket, []bucket.TableID, error) {
	b, err := s.bucketOf(r)
	if err != nil {
		return nil, nil, err
	}
	if err := s.sees(r, b.Name()); err != nil {
		return nil, nil, err
	}
	ids, err := s.Tables.BucketTables(r.Context(), b)
	return b, ids, err
}

// listNamespaces is ListNamespaces.
func (s *Server) listNamespaces(w http.ResponseWriter, r *http.Request) error {
	b, ids, err := s.bucketTables(r)
	if err != nil {
		return err
	}
	prefix := r.URL.Query().Get("prefix")
	seen := map[string]bool{}
	out := []map[string]any{}
	for _, id := range ids {
		ns := id.NamespaceString()
		if seen[ns] || !strings.HasPrefix(ns, prefix) || s.authorize(r, b.Name(), ns) != nil {
			continue
		}
		seen[ns] = true
		out = append(out, map[string]any{"namespace": []string{ns}, "createdAt": s.started.Format(time.RFC3339),
			"createdBy": "icekeeper", "ownerAccountId": b.ParsedARN().Account})
	}
	writeJSON(w, http.StatusOK, map[string]any{"namespaces": out})
	return nil
}

// listTables is ListTables: the tables icekeeper maintains in the bucket.
func (s *Server) listTables(w http.ResponseWriter, r *http.Request) error {
	b, ids, err := s.bucketTables(r)
	if err != nil {
		return err
	}
	q := r.URL.Query()
	out := []map[string]any{}
	for _, id := range ids {
		ns := id.NamespaceString()
		if (q.Get("namespace") != "" && ns != q.Get("namespace")) || !strings.HasPrefix(id.Name, q.Get("prefix")) || s.authorize(r, b.Name(), ns) != nil {
			continue
		}
		out = append(out, map[string]any{"namespace": []string{ns}, "name": id.Name, "type": "customer",
			"tableARN": b.ParsedARN().TableARN(ns, id.Name), "createdAt": s.started.Format(time.RFC3339), "modifiedAt": s.started.Format(time.RFC3339)})
	}
	writeJSON(w, http.StatusOK, map[string]any{"tables": out})
	return nil
}

// scopeAllows reports whether a key's scope pattern admits an operation
// on bucket (namespace "") or on a namespace of it. A bucket-wide operation
// needs a bucket-wide scope: a key scoped to one team's namespace must not
// change settings that apply to every team's tables.
func scopeAllows(scope, bucket, namespace string) bool {
	b, ns, hasNS := strings.Cut(scope, "/")
	if ok, _ := path.Match(b, bucket); !ok {
		return false
	}
	if !hasNS {
		return true
	}
	if namespace == "" {
		return false
	}
	ok, _ := path.Match(ns, namespace)
	return ok
}

// scopeSees reports whether a scope admits anything in bucket, which is
// enough to see the bucket in listings.
func scopeSees(scope, bucket string) bool {
	b, _, _ := strings.Cut(scope, "/")
	ok, _ := path.Match(b, bucket)
	return ok
}
