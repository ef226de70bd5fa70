// Package client is the client of icekeeper's API, as `icekeeper status`
// uses it: the S3 Tables calls through the AWS SDK, icekeeper's own
// routes through SigV4-signed HTTP. It shares no code with the server.
package client

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3tables"

	"github.com/icekeeper/icekeeper/internal/state"
)

// Client is the API's own client: the S3 Tables calls through the AWS
// SDK, icekeeper's extra routes through SigV4-signed HTTP.
type Client struct {
	Endpoint    string
	SigningName string
	Creds       aws.Credentials
	SDK         *s3tables.Client
	HTTP        *http.Client
}

// New returns a client for endpoint; empty keys sign with a
// placeholder key, which an unauthenticated server ignores.
func New(endpoint, keyID, secret, signingName string) *Client {
	if keyID == "" {
		keyID, secret = "anonymous", "anonymous"
	}
	if signingName == "" {
		signingName = "s3tables"
	}
	creds := aws.Credentials{AccessKeyID: keyID, SecretAccessKey: secret}
	return &Client{Endpoint: strings.TrimSuffix(endpoint, "/"), SigningName: signingName, Creds: creds,
		SDK: s3tables.New(s3tables.Options{BaseEndpoint: aws.String(endpoint), Region: "us-east-1",
			Credentials: credentials.NewStaticCredentialsProvider(keyID, secret, "")}),
		HTTP: &http.Client{Timeout: 30 * time.Second}}
}

// BucketARN resolves a bucket name (or ARN) through ListTableBuckets.
func (c *Client) BucketARN(ctx context.Context, ref string) (string, error) {
	if strings.HasPrefix(ref, "arn:") || strings.HasPrefix(ref, "acs:") {
		return ref, nil
	}
	out, err := c.SDK.ListTableBuckets(ctx, &s3tables.ListTableBucketsInput{})
	if err != nil {
		return "", fmt.Errorf("list table buckets at %s: %w", c.Endpoint, err)
	}
	for _, b := range out.TableBuckets {
		if aws.ToString(b.Name) == ref {
			return aws.ToString(b.Arn), nil
		}
	}
	return "", fmt.Errorf("no table bucket named %q at %s", ref, c.Endpoint)
}

// Runs returns recent runs of a table from the history route.
func (c *Client) Runs(ctx context.Context, bucketARN, namespace, name string, limit int) (map[string][]state.Run, error) {
	u := fmt.Sprintf("%s/icekeeper/v1/tables/%s/%s/%s/runs?limit=%d", c.Endpoint, url.PathEscape(bucketARN), url.PathEscape(namespace), url.PathEscape(name), limit)
	var out struct {
		Runs map[string][]state.Run `json:"runs"`
	}
	return out.Runs, c.get(ctx, u, &out)
}

// includeOwn asks the configuration calls for icekeeper's own job types
// too (icebergErasure); the server leaves them out for AWS clients, whose
// SDKs cannot decode their settings.
const includeOwn = "include=icekeeper"

// Error is an error answer of the API: its HTTP status, S3 Tables error
// type and message.
type Error struct {
	Method, URL string
	Status      string
	Type        string
	Message     string
}

func (e *Error) Error() string {
	return fmt.Sprintf("%s %s: %s %s: %s", e.Method, e.URL, e.Status, e.Type, e.Message)
}

// TableConfig is GetTableMaintenanceConfiguration with icekeeper's own
// types: each type's configuration in the S3 Tables wire shape.
func (c *Client) TableConfig(ctx context.Context, bucketARN, namespace, name string) (map[string]json.RawMessage, error) {
	var out struct {
		Configuration map[string]json.RawMessage `json:"configuration"`
	}
	return out.Configuration, c.get(ctx, c.tableURL(bucketARN, namespace, name)+"?"+includeOwn, &out)
}

// BucketConfig is GetTableBucketMaintenanceConfiguration with icekeeper's
// own types.
func (c *Client) BucketConfig(ctx context.Context, bucketARN string) (map[string]json.RawMessage, error) {
	var out struct {
		Configuration map[string]json.RawMessage `json:"configuration"`
	}
	return out.Configuration, c.get(ctx, c.bucketURL(bucketARN)+"?"+includeOwn, &out)
}

// RecordExpiration is GetTableRecordExpirationConfiguration.
func (c *Client) RecordExpiration(ctx context.Context, tableARN string) (json.RawMessage, error) {
	var out struct {
		Configuration json.RawMessage `json:"configuration"`
	}
	return out.Configuration, c.get(ctx, c.Endpoint+"/table-record-expiration?tableArn="+url.QueryEscape(tableARN), &out)
}

// PutTableConfig is PutTableMaintenanceConfiguration of typ, for any
// table-scoped maintenance type (the SDK's union has no member for
// icekeeper's own): value is the wire shape, {"status":…,"settings":…}.
func (c *Client) PutTableConfig(ctx context.Context, bucketARN, namespace, name, typ string, value json.RawMessage) error {
	return c.put(ctx, c.tableURL(bucketARN, namespace, name)+"/"+url.PathEscape(typ), value)
}

// PutBucketConfig is PutTableBucketMaintenanceConfiguration of typ.
func (c *Client) PutBucketConfig(ctx context.Context, bucketARN, typ string, value json.RawMessage) error {
	return c.put(ctx, c.bucketURL(bucketARN)+"/"+url.PathEscape(typ), value)
}

// PutRecordExpiration is PutTableRecordExpirationConfiguration.
func (c *Client) PutRecordExpiration(ctx context.Context, tableARN string, value json.RawMessage) error {
	return c.put(ctx, c.Endpoint+"/table-record-expiration?tableArn="+url.QueryEscape(tableARN), value)
}

func (c *Client) tableURL(bucketARN, namespace, name string) string {
	return fmt.Sprintf("%s/tables/%s/%s/%s/maintenance", c.Endpoint, url.PathEscape(bucketARN), url.PathEscape(namespace), url.PathEscape(name))
}

func (c *Client) bucketURL(bucketARN string) string {
	return fmt.Sprintf("%s/buckets/%s/maintenance", c.Endpoint, url.PathEscape(bucketARN))
}

func (c *Client) get(ctx context.Context, u string, v any) error {
	body, err := c.do(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	return json.Unmarshal(body, v)
}

func (c *Client) put(ctx context.Context, u string, value json.RawMessage) error {
	body, err := json.Marshal(map[string]json.RawMessage{"value": value})
	if err != nil {
		return err
	}
	_, err = c.do(ctx, http.MethodPut, u, body)
	return err
}

// do sends a SigV4-signed request and returns the body of a 2xx answer,
// or the API's error as an *Error.
func (c *Client) do(ctx context.Context, method, u string, payload []byte) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, method, u, bytes.NewReader(payload))
	if err != nil {
		return nil, err
	}
	if payload != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	sum := sha256.Sum256(payload)
	if err := v4.NewSigner().SignHTTP(ctx, c.Creds, req, hex.EncodeToString(sum[:]), c.SigningName, "us-east-1", time.Now()); err != nil {
		return nil, err
	}
	resp, err := c.HTTP.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", method, u, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if resp.StatusCode/100 != 2 {
		var e struct{ Message string }
		_ = json.Unmarshal(body, &e)
		return nil, &Error{Method: method, URL: u, Status: resp.Status, Type: resp.Header.Get("X-Amzn-ErrorType"), Message: e.Message}
	}
	return body, nil
}
