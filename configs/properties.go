package configs

import (
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

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

// A property's kind says what its value must look like. iceberg-go reads
// a value it cannot parse as if the property were unset (a boolean
// "ture" is false, an endpoint without a scheme a relative path), so a
// mistyped value is as silent as a misspelt key; Load refuses both.
type propertyKind int

const (
	kindText propertyKind = iota
	kindBool
	kindURL // http or https, with a host
	kindCount
	kindMillis
	kindDuration
	kindSeconds // seconds as a number, or a duration (s3.connect-timeout)
)

// propertyKinds are the kinds of the properties whose values iceberg-go
// (v0.7.0) or icekeeper parse; every other property is text.
var propertyKinds = map[string]propertyKind{
	"s3.remote-signing-enabled":          kindBool,
	"s3.force-virtual-addressing":        kindBool,
	"s3.compat-mode":                     kindBool,
	"s3.path-style-access":               kindBool,
	"gcs.usejsonapi":                     kindBool,
	"gcs.no-auth":                        kindBool,
	"adls.auth.managed-identity.enabled": kindBool,
	"init_catalog_tables":                kindBool,
	"rest.sigv4-enabled":                 kindBool,
	"rest.tls.skip-verify":               kindBool,
	"rest-metrics-reporting-enabled":     kindBool,
	"rest.metrics-reporting-enabled":     kindBool,
	"glue.skip-archive":                  kindBool,

	"s3.endpoint":            kindURL,
	"s3.signer.uri":          kindURL,
	"s3.proxy-uri":           kindURL,
	"oauth2-server-uri":      kindURL,
	"rest.authorization-url": kindURL,
	"glue.endpoint":          kindURL,

	"glue.max-retries":   kindCount,
	"lock-check-retries": kindCount,

	"iceberg.hive.lock-check-min-wait-ms": kindMillis,
	"iceberg.hive.lock-check-max-wait-ms": kindMillis,
	"rest-metrics-reporting-timeout-ms":   kindMillis,
	"gcs.oauth2.token-expires-at":         kindMillis,

	"lock-check-min-wait-time": kindDuration,
	"lock-check-max-wait-time": kindDuration,

	"s3.connect-timeout": kindSeconds,
}

// urlSchemes are the schemes a URL property may have; http and https
// when not listed.
var urlSchemes = map[string][]string{
	"s3.proxy-uri": {"http", "https", "socks5"},
}

// checkValue says why value is not one property key of a catalog of type
// typ may hold, or "" when it is.
func checkValue(typ, key, value string) string {
	kind := propertyKinds[key]
	schemes := urlSchemes[key]
	if key == "uri" {
		// A SQL catalog's uri is a database DSN, which need not be a URL.
		switch typ {
		case "rest":
			kind = kindURL
		case "hive":
			kind, schemes = kindURL, []string{"thrift"}
		}
	}
	switch kind {
	case kindBool:
		// The spellings strconv.ParseBool and Java's Boolean.parseBoolean
		// both read alike.
		switch value {
		case "true", "True", "TRUE", "false", "False", "FALSE":
			return ""
		}
		return fmt.Sprintf("%q is not true or false", value)
	case kindURL:
		if schemes == nil {
			schemes = []string{"http", "https"}
		}
		return checkURL(value, schemes)
	case kindCount, kindMillis:
		n, err := strconv.ParseInt(strings.TrimSpace(value), 10, 64)
		if err != nil {
			if kind == kindMillis {
				return fmt.Sprintf("%q is not a whole number of milliseconds", value)
			}
			return fmt.Sprintf("%q is not a whole number", value)
		}
		if n < 0 {
			return fmt.Sprintf("%d is below the minimum 0", n)
		}
	case kindDuration:
		if d, err := time.ParseDuration(value); err != nil || d <= 0 {
			return fmt.Sprintf("%q is not a positive duration such as 50ms or 5s", value)
		}
	case kindSeconds:
		if s, err := strconv.ParseFloat(value, 64); err == nil {
			if s <= 0 {
				return fmt.Sprintf("%q is not a positive number of seconds", value)
			}
			return ""
		}
		if d, err := time.ParseDuration(value); err != nil || d <= 0 {
			return fmt.Sprintf("%q is neither seconds as a number (10) nor a positive duration (10s)", value)
		}
	}
	return ""
}

// checkURL says why value is not an absolute URL with one of schemes and
// a host, with the likely fix: an endpoint written as host:port is the
// usual mistake, and iceberg-go would take it as a path.
func checkURL(value string, schemes []string) string {
	u, err := url.Parse(value)
	if err == nil && slices.Contains(schemes, strings.ToLower(u.Scheme)) && u.Host != "" {
		return ""
	}
	if err == nil && u.Scheme != "" && u.Host != "" {
		return fmt.Sprintf("%q has scheme %s, not %s", value, u.Scheme, strings.Join(schemes, " or "))
	}
	fix := make([]string, len(schemes))
	for i, sc := range schemes {
		fix[i] = sc + "://" + strings.TrimLeft(value, "/")
	}
	return fmt.Sprintf("%q is not a URL with a scheme and a host: write %s", value, strings.Join(fix, " or "))
}
