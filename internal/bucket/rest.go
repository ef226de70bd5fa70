package bucket

import (
	"context"
	"crypto/tls"
	"fmt"
	"maps"
	"strings"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/catalog/rest"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
)

// RESTKeys returns the keys that sign a SigV4 REST catalog's requests, and
// the properties they came from: rest.access-key-id, rest.secret-access-key
// and rest.session-token (the names of the OSS Tables and Kafka Connect
// guides), else the s3.* keys, which most configurations share between
// catalog and storage. Without either, iceberg-go's default (the host's
// AWS credential chain) signs.
func RESTKeys(props iceberg.Properties) (id, secret, token, source string) {
	for _, p := range []string{"rest.", "s3."} {
		if id := props[p+"access-key-id"]; id != "" {
			return id, props[p+"secret-access-key"], props[p+"session-token"], p + "*"
		}
	}
	return "", "", "", ""
}

// loadREST opens a REST catalog. iceberg-go's property-driven Load signs
// SigV4 requests with the host's default AWS credentials only; when the
// configuration names keys, the catalog is built with an AWS configuration
// holding them instead, and the other properties are handed over as Load
// would read them.
func loadREST(ctx context.Context, name string, props iceberg.Properties) (catalog.Catalog, error) {
	id, secret, token, _ := RESTKeys(props)
	if !strings.EqualFold(props["rest.sigv4-enabled"], "true") || id == "" {
		return catalog.Load(ctx, name, props)
	}
	region, service := props["rest.signing-region"], props["rest.signing-name"]
	cfg, err := awsconfig.LoadDefaultConfig(ctx, awsconfig.WithRegion(region),
		awsconfig.WithCredentialsProvider(credentials.NewStaticCredentialsProvider(id, secret, token)))
	if err != nil {
		return nil, fmt.Errorf("configure SigV4 signing: %w", err)
	}
	opts := []rest.Option{rest.WithAwsConfig(cfg), rest.WithSigV4RegionSvc(region, service)}
	others := maps.Clone(props)
	take := func(k string) (string, bool) {
		v, ok := others[k]
		delete(others, k)
		return v, ok && v != ""
	}
	for _, k := range []string{"type", "uri", "rest.sigv4-enabled", "rest.signing-region", "rest.signing-name"} {
		take(k)
	}
	for _, k := range []string{"token", "credential", "oauth2-server-uri", "rest.authorization-url"} {
		if _, ok := take(k); ok {
			return nil, fmt.Errorf("%s is OAuth2, rest.sigv4-enabled is SigV4: configure one way of signing the REST catalog", k)
		}
	}
	if v, ok := take("warehouse"); ok {
		opts = append(opts, rest.WithWarehouseLocation(v))
	}
	if v, ok := take("metadata_location"); ok {
		opts = append(opts, rest.WithMetadataLocation(v))
	}
	if v, ok := take("prefix"); ok {
		opts = append(opts, rest.WithPrefix(v))
	}
	if v, ok := take("rest.tls.skip-verify"); ok && strings.EqualFold(v, "true") {
		opts = append(opts, rest.WithTLSConfig(&tls.Config{InsecureSkipVerify: true}))
	}
	opts = append(opts, rest.WithAdditionalProps(others))
	return rest.NewCatalog(ctx, name, props["uri"], opts...)
}
