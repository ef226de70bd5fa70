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
	if got, want := Short(err), "S3 ListObjectsV2: HTTP 403 Forbidden from "+srv.URL+"/b: AccessDenied: no access to b"; got != want {
		t.Errorf("error response: %s\nwant %s\nwas %s", got, want, err)
	}
	if got := Short(fmt.Errorf("a\n  b")); got != "a; b" || !strings.Contains(Short(fmt.Errorf("plain")), "plain") {
		t.Errorf("plain errors: %q", got)
	}
}

// A 404 names the URL that answered, without its query: an endpoint that
// is not the service meant answers 404 to everything, and the message
// must say which one did.
func TestShortNotFoundNamesURL(t *testing.T) {
	ctx := context.Background()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodHead {
			w.WriteHeader(http.StatusNotFound)
			return
		}
		w.Header().Set("Content-Type", "text/html")
		w.WriteHeader(http.StatusNotFound)
		fmt.Fprint(w, "<html><body>404 page not found</body></html>")
	}))
	defer srv.Close()
	_, err := client(srv.URL).HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String("b"), Key: aws.String("t/metadata/v1.json")})
	got := Short(fmt.Errorf("stat s3://b/t/metadata/v1.json: %w", err))
	if want := "stat s3://b/t/metadata/v1.json: S3 HeadObject: HTTP 404 Not Found from " + srv.URL + "/b/t/metadata/v1.json: "; !strings.HasPrefix(got, want) {
		t.Errorf("HEAD:\n got %s\nwant %s…", got, want)
	}
	_, err = client(srv.URL).GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("b"), Key: aws.String("k")})
	if got, want := Short(err), "S3 GetObject: HTTP 404 Not Found from "+srv.URL+"/b/k: "; !strings.HasPrefix(got, want) || strings.Contains(got, "x-id") {
		t.Errorf("GET:\n got %s\nwant %s… without the query", got, want)
	}
}
