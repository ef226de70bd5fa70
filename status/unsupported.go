package status

import (
	"fmt"
	"net/http"
)

// unsupported are the S3 Tables operations icekeeper does not serve, as
// the AWS SDK sends them: creating, deleting and renaming buckets,
// namespaces and tables (the catalog owns those), policies, encryption,
// storage classes, metrics, replication, tags, and
// UpdateTableMetadataLocation. A client calling one gets AWS's error for
// an operation the service does not know, naming it, rather than a
// NotFoundException it would read as "no such table".
var unsupported = []struct{ op, pattern string }{
	{"CreateTableBucket", "PUT /buckets"},
	{"DeleteTableBucket", "DELETE /buckets/{arn}"},
	{"GetTableBucketEncryption", "GET /buckets/{arn}/encryption"},
	{"PutTableBucketEncryption", "PUT /buckets/{arn}/encryption"},
	{"DeleteTableBucketEncryption", "DELETE /buckets/{arn}/encryption"},
	{"GetTableBucketMetricsConfiguration", "GET /buckets/{arn}/metrics"},
	{"PutTableBucketMetricsConfiguration", "PUT /buckets/{arn}/metrics"},
	{"DeleteTableBucketMetricsConfiguration", "DELETE /buckets/{arn}/metrics"},
	{"GetTableBucketPolicy", "GET /buckets/{arn}/policy"},
	{"PutTableBucketPolicy", "PUT /buckets/{arn}/policy"},
	{"DeleteTableBucketPolicy", "DELETE /buckets/{arn}/policy"},
	{"GetTableBucketStorageClass", "GET /buckets/{arn}/storage-class"},
	{"PutTableBucketStorageClass", "PUT /buckets/{arn}/storage-class"},
	{"CreateNamespace", "PUT /namespaces/{arn}"},
	{"DeleteNamespace", "DELETE /namespaces/{arn}/{namespace}"},
	{"GetTableReplicationStatus", "GET /replication-status"},
	{"GetTableBucketReplication", "GET /table-bucket-replication"},
	{"PutTableBucketReplication", "PUT /table-bucket-replication"},
	{"DeleteTableBucketReplication", "DELETE /table-bucket-replication"},
	{"GetTableReplication", "GET /table-replication"},
	{"PutTableReplication", "PUT /table-replication"},
	{"DeleteTableReplication", "DELETE /table-replication"},
	{"CreateTable", "PUT /tables/{arn}/{namespace}"},
	{"DeleteTable", "DELETE /tables/{arn}/{namespace}/{name}"},
	{"GetTableEncryption", "GET /tables/{arn}/{namespace}/{name}/encryption"},
	{"UpdateTableMetadataLocation", "PUT /tables/{arn}/{namespace}/{name}/metadata-location"},
	{"GetTablePolicy", "GET /tables/{arn}/{namespace}/{name}/policy"},
	{"PutTablePolicy", "PUT /tables/{arn}/{namespace}/{name}/policy"},
	{"DeleteTablePolicy", "DELETE /tables/{arn}/{namespace}/{name}/policy"},
	{"RenameTable", "PUT /tables/{arn}/{namespace}/{name}/rename"},
	{"GetTableStorageClass", "GET /tables/{arn}/{namespace}/{name}/storage-class"},
	{"ListTagsForResource", "GET /tag/{arn}"},
	{"TagResource", "POST /tag/{arn}"},
	{"UntagResource", "DELETE /tag/{arn}"},
}

func (s *Server) unsupportedRoutes(api func(string, handlerFunc)) {
	for _, u := range unsupported {
		api(u.pattern, func(http.ResponseWriter, *http.Request) error {
			return &apiError{status: http.StatusBadRequest, kind: "UnknownOperationException", msg: fmt.Sprintf("icekeeper does not implement the S3 Tables operation %s; it serves the maintenance calls and reads and lists what the catalog holds", u.op)}
		})
	}
}
