package configs

import (
	"slices"
	"strings"

	"github.com/icekeeper/icekeeper/internal/suggest"
)

// The catalog properties a bucket may set are those iceberg-go (v0.7.0:
// its catalog packages and its file IO) or icekeeper reads for that
// catalog type. A misspelt one (s3.endpiont) is not an error to
// iceberg-go: it is passed on, unread, and the S3 client then goes to
// AWS with the configured keys. So every key is checked here, and a
// property this list does not know is passed only when the bucket names
// it in passThroughProperties.

// fileIOProperties are read by iceberg-go's file IO (S3, GCS, ADLS) for
// every catalog type, and s3.path-style-access by icekeeper.
func fileIOProperties() []string {
	return []string{
		"s3.region", "client.region", "s3.endpoint", "s3.access-key-id", "s3.secret-access-key",
		"s3.session-token", "s3.proxy-uri", "s3.connect-timeout", "s3.signer.uri",
		"s3.remote-signing-enabled", "s3.force-virtual-addressing", "s3.compat-mode",
		"s3.path-style-access",
		"gcs.endpoint", "gcs.service.host", "gcs.keypath", "gcs.jsonkey", "gcs.credtype",
		"gcs.usejsonapi", "gcs.oauth2.token", "gcs.oauth2.token-expires-at", "gcs.no-auth",
		"adls.auth.shared-key.account.name", "adls.auth.shared-key.account.key", "adls.endpoint",
		"adls.protocol", "adls.auth.managed-identity.enabled", "adls.client-id",
	}
}

// propertyPrefixes are families of keys named per instance: an HTTP header
// of the REST catalog, an ADLS account's SAS token or connection string.
func propertyPrefixes(typ string) []string {
	p := []string{"adls.sas-token.", "adls.connection-string."}
	if typ == "rest" {
		p = append(p, "header.")
	}
	return p
}

// catalogProperties returns the keys a catalog of type typ reads, file IO
// included.
func catalogProperties(typ string) []string {
	keys := []string{"type", "uri", "warehouse", "metrics-reporter-impl"}
	switch typ {
	case "sql":
		keys = append(keys, "sql.driver", "sql.dialect", "init_catalog_tables", "jdbc.schema-version")
	case "rest":
		// rest.access-key-id, -secret-access-key and -session-token sign
		// SigV4 requests (internal/bucket.RESTKeys).
		keys = append(keys, "rest.access-key-id", "rest.secret-access-key", "rest.session-token",
			"metadata_location", "token", "credential", "scope", "audience", "resource", "prefix",
			"oauth2-server-uri", "rest.authorization-url", "rest.sigv4-enabled", "rest.signing-region",
			"rest.signing-name", "rest.tls.skip-verify", "namespace-separator", "snapshot-loading-mode",
			"rest-metrics-reporting-enabled", "rest.metrics-reporting-enabled", "rest-metrics-reporting-timeout-ms")
	case "glue":
		keys = append(keys, "glue.id", "glue.skip-archive", "glue.access-key-id", "glue.secret-access-key",
			"glue.session-token", "glue.region", "glue.endpoint", "glue.max-retries", "glue.retry-mode")
	case "hive":
		keys = append(keys, "iceberg.hive.lock-check-min-wait-ms", "iceberg.hive.lock-check-max-wait-ms",
			"lock-check-min-wait-time", "lock-check-max-wait-time", "lock-check-retries")
	}
	return append(keys, fileIOProperties()...)
}

// checkProperty says why key may not be set on a catalog of type typ, or
// "" when it may.
func checkProperty(typ, key string, passThrough []string) string {
	known := catalogProperties(typ)
	if slices.Contains(known, key) || slices.Contains(passThrough, key) {
		return ""
	}
	for _, p := range propertyPrefixes(typ) {
		if strings.HasPrefix(key, p) && len(key) > len(p) {
			return ""
		}
	}
	hint := suggest.DidYouMean(key, known)
	if hint == "" {
		// Another catalog type's key: say so rather than list them all.
		for _, other := range CatalogTypes {
			if other != typ && slices.Contains(catalogProperties(other), key) {
				hint = " (it is a " + other + " catalog's property)"
				break
			}
		}
	}
	return "unknown property for a " + typ + " catalog" + hint +
		"; a property icekeeper does not know is passed to iceberg-go only when passThroughProperties lists it"
}
