// Package client is the client of icekeeper's API, as `icekeeper status`
// uses it: the S3 Tables calls through the AWS SDK, icekeeper's own
// routes through SigV4-signed HTTP. It shares no code with the server.
package client

import (
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

func (c *Client) get(ctx context.Context, u string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	sum := sha256.Sum256(nil)
	if err := v4.NewSigner().SignHTTP(ctx, c.Creds, req, hex.EncodeToString(sum[:]), c.SigningName, "us-east-1", time.Now()); err != nil {
		return err
	}
	resp, err := c.HTTP.Do(req)
	if err != nil {
		return fmt.Errorf("GET %s: %w", u, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if resp.StatusCode != http.StatusOK {
		var e struct{ Message string }
		_ = json.Unmarshal(body, &e)
		return fmt.Errorf("GET %s: %s %s: %s", u, resp.Status, resp.Header.Get("X-Amzn-ErrorType"), e.Message)
	}
	return json.Unmarshal(body, v)
}
