package bucket

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"net/url"
	"strings"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/catalog/rest"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"

	"github.com/icekeeper/icekeeper/internal/cost"
	"github.com/icekeeper/icekeeper/internal/redact"
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

// loadREST opens a REST catalog with the options iceberg-go's Load would
// read from the properties, and three more. Load signs SigV4 requests with
// the host's default AWS credentials only: when the configuration names
// keys, an AWS configuration holding them signs instead. And iceberg-go's
// errors drop the HTTP status and the request ("REST error: failed to
// decode error response"): every error response passes through
// statusTransport, which puts them into the message. And table loads are
// conditional where the server sends ETags (etagTransport). And commits
// keep to rate, and requests the catalog refuses for its own rate wait and
// are sent again (rateTransport), logged to log.
func loadREST(ctx context.Context, name string, props iceberg.Properties, rate CommitRate, log *slog.Logger) (catalog.Catalog, error) {
	others := maps.Clone(props)
	take := func(k string) (string, bool) {
		v, ok := others[k]
		delete(others, k)
		return v, ok && v != ""
	}
	take("type")
	uri, _ := take("uri")
	var opts []rest.Option
	base := http.DefaultTransport.(*http.Transport).Clone()
	if v, ok := take("rest.tls.skip-verify"); ok && strings.EqualFold(v, "true") {
		base.TLSClientConfig = &tls.Config{InsecureSkipVerify: true}
	}
	opts = append(opts, rest.WithCustomTransport(restTransport(base, name+" at "+redact.URI(uri), rate, log)))
	sigv4, _ := take("rest.sigv4-enabled")
	region, _ := take("rest.signing-region")
	service, _ := take("rest.signing-name")
	if strings.EqualFold(sigv4, "true") {
		opts = append(opts, rest.WithSigV4RegionSvc(region, service))
		if id, secret, token, _ := RESTKeys(props); id != "" {
			cfg, err := awsconfig.LoadDefaultConfig(ctx, awsconfig.WithRegion(region),
				awsconfig.WithCredentialsProvider(credentials.NewStaticCredentialsProvider(id, secret, token)))
			if err != nil {
				return nil, fmt.Errorf("configure SigV4 signing: %w", err)
			}
			opts = append(opts, rest.WithAwsConfig(cfg))
		}
	}
	for k, opt := range map[string]func(string) rest.Option{
		"warehouse": rest.WithWarehouseLocation, "metadata_location": rest.WithMetadataLocation, "prefix": rest.WithPrefix,
		"token": rest.WithOAuthToken, "credential": rest.WithCredential,
		"scope": rest.WithScope, "audience": rest.WithAudience, "resource": rest.WithResource,
	} {
		if v, ok := take(k); ok {
			opts = append(opts, opt(v))
		}
	}
	// oauth2-server-uri is the portable name, rest.authorization-url its
	// older alias; the portable one wins, as in iceberg-go.
	authURL, ok := take("oauth2-server-uri")
	if alias, aliased := take("rest.authorization-url"); !ok && aliased {
		authURL, ok = alias, true
	}
	if ok {
		u, err := url.Parse(authURL)
		if err != nil || u.Scheme == "" || u.Host == "" {
			return nil, fmt.Errorf("oauth2-server-uri %q is not an absolute URL", authURL)
		}
		opts = append(opts, rest.WithAuthURI(u))
	}
	opts = append(opts, rest.WithAdditionalProps(others))
	return rest.NewCatalog(ctx, name, uri, opts...)
}

// restTransport is the chain of a REST catalog's requests over base,
// outermost first: rate (rateTransport: every attempt it makes below is
// one request to the catalog), cost (cost.Transport counts each), error
// messages (statusTransport), conditional loads (etagTransport).
func restTransport(base http.RoundTripper, catalog string, rate CommitRate, log *slog.Logger) http.RoundTripper {
	counted := cost.Transport{Base: statusTransport{newETagTransport(base, defaultETagBytes)}, Catalog: true}
	return newRateTransport(counted, catalog, rate, log)
}

// statusTransport puts the request and the HTTP status into the message
// of every error response, in the Iceberg REST error form iceberg-go
// decodes: a server's own message is kept after them, and a body that is
// not an Iceberg error (a proxy's HTML, an empty 404) is quoted.
type statusTransport struct{ base http.RoundTripper }

func (t statusTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := t.base.RoundTrip(r)
	if err != nil || resp.StatusCode < 400 {
		return resp, err
	}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	what := fmt.Sprintf("%s %s: HTTP %d %s", r.Method, r.URL.Path, resp.StatusCode, http.StatusText(resp.StatusCode))
	var e struct {
		Error struct {
			Message string `json:"message"`
			Type    string `json:"type"`
			Code    int    `json:"code"`
		} `json:"error"`
	}
	if json.Unmarshal(body, &e) == nil && (e.Error.Message != "" || e.Error.Type != "") {
		e.Error.Message = what + ": " + e.Error.Message
	} else {
		e.Error.Message, e.Error.Type, e.Error.Code = what, http.StatusText(resp.StatusCode), resp.StatusCode
		if text := strings.Join(strings.Fields(string(body)), " "); text != "" {
			e.Error.Message += ": " + text[:min(len(text), 200)]
		}
	}
	out, _ := json.Marshal(e)
	resp.Body = io.NopCloser(bytes.NewReader(out))
	resp.ContentLength = int64(len(out))
	resp.Header.Set("Content-Type", "application/json")
	resp.Header.Del("Content-Encoding")
	return resp, nil
}
