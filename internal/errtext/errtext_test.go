package errtext

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

func client(endpoint string) *s3.Client {
	return s3.New(s3.Options{Region: "us-east-1", BaseEndpoint: aws.String(endpoint), UsePathStyle: true,
		Credentials: credentials.NewStaticCredentialsProvider("k", "s", "")})
}

// The SDK's text for an unreachable endpoint and for an error response,
// each shortened to service, operation, status and cause.
func TestShort(t *testing.T) {
	ctx := context.Background()
	_, err := client("http://127.0.0.1:1").GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("b"), Key: aws.String("k")})
	got := Short(fmt.Errorf("open s3://b/k: %w", err))
	if want := "open s3://b/k: S3 GetObject: dial tcp 127.0.0.1:1: connect: connection refused (3 attempts)"; got != want || len(err.Error()) < 2*len(got) {
		t.Errorf("unreachable:\n%s\nwas\n%s", got, err)
	}

	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/xml")
		w.WriteHeader(http.StatusForbidden)
		fmt.Fprint(w, `<Error><Code>AccessDenied</Code><Message>no access to b</Message></Error>`)
	}))
	defer srv.Close()
	_, err = client(srv.URL).ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String("b")})
	if got := Short(err); got != "S3 ListObjectsV2: HTTP 403 Forbidden: AccessDenied: no access to b" {
		t.Errorf("error response: %s\nwas %s", got, err)
	}
	if got := Short(fmt.Errorf("a\n  b")); got != "a; b" || !strings.Contains(Short(fmt.Errorf("plain")), "plain") {
		t.Errorf("plain errors: %q", got)
	}
}
