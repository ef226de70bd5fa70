// Package servers gives tests the real servers that scripts/test.sh starts:
// a PostgreSQL server, an S3 server (versitygw) and an Iceberg REST catalog
// with S3 Tables and S3 behind it (SeaweedFS), all on 127.0.0.1. Each test
// gets its own database, bucket or table bucket and removes it afterwards.
// A test of what SeaweedFS's filer posts starts a SeaweedFS of its own
// (SeaweedFSWebhook).
//
// When the servers' variables are unset the tests that need them are
// skipped, unless ICEKEEPER_REQUIRE_SERVERS=1 (set by scripts/test.sh and so
// by CI), where a missing server fails the test instead: CI can never pass
// by skipping the real-component tests. Under go test -short they are
// skipped whatever is set: -short is the in-process tier a contributor
// runs before every commit, and scripts/test.sh runs it under the race
// detector beside the servers.
package servers

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2/client"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/aws-sdk-go-v2/service/s3tables"
	_ "github.com/jackc/pgx/v5/stdlib"
)

// Environment variables set by scripts/test.sh.
const (
	EnvPostgres = "ICEKEEPER_TEST_POSTGRES"   // DSN of a server where the test user may CREATE DATABASE
	EnvS3       = "ICEKEEPER_TEST_S3"         // http://127.0.0.1:PORT
	EnvS3Key    = "ICEKEEPER_TEST_S3_KEY"     // access key id
	EnvS3Secret = "ICEKEEPER_TEST_S3_SECRET"  // secret access key
	EnvRequire  = "ICEKEEPER_REQUIRE_SERVERS" // "1": missing servers fail tests

	EnvToxiproxy = "ICEKEEPER_TEST_TOXIPROXY" // toxiproxy's API, http://127.0.0.1:PORT

	EnvREST       = "ICEKEEPER_TEST_REST"        // Iceberg REST catalog, http://127.0.0.1:PORT
	EnvRESTS3     = "ICEKEEPER_TEST_REST_S3"     // its S3 and S3 Tables endpoint
	EnvRESTKey    = "ICEKEEPER_TEST_REST_KEY"    // access key id for both
	EnvRESTSecret = "ICEKEEPER_TEST_REST_SECRET" // secret access key
)

func need(t testing.TB, vars ...string) {
	t.Helper()
	if testing.Short() {
		t.Skipf("needs %s; -short runs the in-process tests only", vars[0])
	}
	for _, v := range vars {
		if os.Getenv(v) == "" {
			if os.Getenv(EnvRequire) == "1" {
				t.Fatalf("%s is not set but %s=1: run the tests through scripts/test.sh", v, EnvRequire)
			}
			t.Skipf("%s is not set; scripts/test.sh starts the servers and sets it", v)
		}
	}
}

// PostgresAvailable reports whether the PostgreSQL test server is there
// (never under -short), for tests that run on it when they can and on
// SQLite otherwise.
func PostgresAvailable() bool { return !testing.Short() && os.Getenv(EnvPostgres) != "" }

// Tool returns the path of the command name (a browser, a CLI, a tool
// scripts/test.sh installs into GOPATH/bin), skipping the test when it is
// missing, or under -short, and failing it when it is missing under
// ICEKEEPER_REQUIRE_SERVERS=1.
func Tool(t testing.TB, name string) string {
	t.Helper()
	if testing.Short() {
		t.Skipf("runs %s; -short runs the in-process tests only", name)
	}
	if gopath := os.Getenv("GOPATH"); gopath != "" {
		if p := filepath.Join(gopath, "bin", name); isExecutable(p) {
			return p
		}
	}
	if home, err := os.UserHomeDir(); err == nil {
		if p := filepath.Join(home, "go", "bin", name); isExecutable(p) {
			return p
		}
	}
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	if os.Getenv(EnvRequire) == "1" {
		t.Fatalf("%s is not installed (scripts/test.sh installs what it needs)", name)
	}
	t.Skipf("%s is not installed", name)
	return ""
}

func isExecutable(p string) bool {
	st, err := os.Stat(p)
	return err == nil && !st.IsDir() && st.Mode()&0o111 != 0
}

// RandomName returns prefix followed by 12 random hex digits.
func RandomName(prefix string) string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return prefix + hex.EncodeToString(b)
}

// Postgres creates a fresh database on the test server and returns its DSN;
// the database is dropped when the test ends.
func Postgres(t testing.TB) string {
	t.Helper()
	need(t, EnvPostgres)
	base := os.Getenv(EnvPostgres)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	admin, err := sql.Open("pgx", base)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	name := RandomName("icekeeper_test_")
	if _, err := admin.ExecContext(ctx, "CREATE DATABASE "+name); err != nil {
		t.Fatalf("create test database: %v", err)
	}
	t.Cleanup(func() {
		db, err := sql.Open("pgx", base)
		if err != nil {
			return
		}
		defer db.Close()
		_, _ = db.ExecContext(context.Background(), "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
	})
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	u.Path = "/" + name
	return u.String()
}

// S3Server describes the test S3 server and a bucket made for one test.
type S3Server struct {
	Endpoint, Key, Secret, Bucket string
	Client                        *s3.Client
}

// Props returns the iceberg-go FileIO properties that reach this server.
func (s S3Server) Props() map[string]string {
	return map[string]string{
		"s3.endpoint":          s.Endpoint,
		"s3.region":            "us-east-1",
		"s3.access-key-id":     s.Key,
		"s3.secret-access-key": s.Secret,
	}
}

// S3 creates a fresh bucket on the test S3 server; the bucket and its
// objects are removed when the test ends.
func S3(t testing.TB) S3Server {
	t.Helper()
	need(t, EnvS3, EnvS3Key, EnvS3Secret)
	return newBucket(t, S3Server{Endpoint: os.Getenv(EnvS3), Key: os.Getenv(EnvS3Key), Secret: os.Getenv(EnvS3Secret)})
}

// SeaweedFSS3 creates a fresh general-purpose bucket (not a table bucket)
// on the S3 endpoint of the REST catalog's SeaweedFS; the bucket and its
// objects are removed when the test ends.
func SeaweedFSS3(t testing.TB) S3Server {
	t.Helper()
	need(t, EnvRESTS3, EnvRESTKey, EnvRESTSecret)
	return newBucket(t, S3Server{Endpoint: os.Getenv(EnvRESTS3), Key: os.Getenv(EnvRESTKey), Secret: os.Getenv(EnvRESTSecret)})
}

// newBucket creates a fresh bucket on srv's endpoint, removed when the
// test ends.
func newBucket(t testing.TB, srv S3Server) S3Server {
	t.Helper()
	srv.Bucket = RandomName("icekeeper-test-")
	srv.Client = NewClient(srv.Endpoint, srv.Key, srv.Secret)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := srv.Client.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(srv.Bucket)}); err != nil {
		t.Fatalf("create test bucket on %s: %v", srv.Endpoint, err)
	}
	t.Cleanup(func() { EmptyAndDeleteBucket(srv.Client, srv.Bucket) })
	return srv
}

// NewClient is an S3 client of endpoint with static keys, path-style, as
// every test store on loopback is reached.
func NewClient(endpoint, key, secret string) *s3.Client {
	return s3.New(s3.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String(endpoint),
		UsePathStyle: true,
		Credentials:  credentials.NewStaticCredentialsProvider(key, secret, ""),
	})
}

// EmptyAndDeleteBucket removes every object of bucket, then the bucket.
func EmptyAndDeleteBucket(c *s3.Client, bucket string) {
	ctx := context.Background()
	p := s3.NewListObjectsV2Paginator(c, &s3.ListObjectsV2Input{Bucket: aws.String(bucket)})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return
		}
		var ids []types.ObjectIdentifier
		for _, o := range page.Contents {
			ids = append(ids, types.ObjectIdentifier{Key: o.Key})
		}
		if len(ids) > 0 {
			_, _ = c.DeleteObjects(ctx, &s3.DeleteObjectsInput{Bucket: aws.String(bucket), Delete: &types.Delete{Objects: ids, Quiet: aws.Bool(true)}})
		}
	}
	_, _ = c.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: aws.String(bucket)})
}

// RESTServer describes the Iceberg REST catalog (SeaweedFS) and a table
// bucket made for one test.
type RESTServer struct {
	URI, S3Endpoint, Key, Secret string
	Bucket, BucketARN            string
}

// Props returns the catalog properties of the table bucket: the REST
// catalog with SigV4 (signing name s3tables) and S3 file IO at the
// server's S3 endpoint. The signer reads its credentials from the
// environment, which REST sets for the test.
func (s RESTServer) Props() map[string]string {
	return map[string]string{
		"type":                 "rest",
		"uri":                  s.URI,
		"warehouse":            "s3://" + s.Bucket,
		"rest.sigv4-enabled":   "true",
		"rest.signing-name":    "s3tables",
		"rest.signing-region":  "us-east-1",
		"s3.endpoint":          s.S3Endpoint,
		"s3.region":            "us-east-1",
		"s3.access-key-id":     s.Key,
		"s3.secret-access-key": s.Secret,
	}
}

// S3 is the table bucket as an S3 bucket of the server's S3 endpoint.
func (s RESTServer) S3() S3Server {
	return S3Server{Endpoint: s.S3Endpoint, Key: s.Key, Secret: s.Secret, Bucket: s.Bucket,
		Client: NewClient(s.S3Endpoint, s.Key, s.Secret)}
}

// REST creates a fresh table bucket on the REST catalog's server, and sets
// the AWS credential variables the REST catalog's SigV4 signer reads for
// the test's duration (so a test using it cannot run in parallel).
func REST(t testing.TB) RESTServer {
	t.Helper()
	need(t, EnvREST, EnvRESTS3, EnvRESTKey, EnvRESTSecret)
	srv := RESTServer{URI: os.Getenv(EnvREST), S3Endpoint: os.Getenv(EnvRESTS3), Key: os.Getenv(EnvRESTKey), Secret: os.Getenv(EnvRESTSecret),
		Bucket: RandomName("icekeeper-")}
	if st, ok := t.(interface{ Setenv(string, string) }); ok {
		st.Setenv("AWS_ACCESS_KEY_ID", srv.Key)
		st.Setenv("AWS_SECRET_ACCESS_KEY", srv.Secret)
		st.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	}
	client := s3tables.New(s3tables.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String(srv.S3Endpoint),
		Credentials:  credentials.NewStaticCredentialsProvider(srv.Key, srv.Secret, ""),
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := client.CreateTableBucket(ctx, &s3tables.CreateTableBucketInput{Name: aws.String(srv.Bucket)})
	if err != nil {
		t.Fatalf("create table bucket on %s: %v", srv.S3Endpoint, err)
	}
	srv.BucketARN = aws.ToString(out.Arn)
	return srv
}

// WithLatency returns s reached through a proxy that holds every response
// back by latency, as a remote object store's round trip does; the proxy
// is removed when the test ends.
func (s S3Server) WithLatency(t testing.TB, latency time.Duration) S3Server {
	t.Helper()
	need(t, EnvToxiproxy)
	u, err := url.Parse(s.Endpoint)
	if err != nil {
		t.Fatal(err)
	}
	c := toxiproxy.NewClient(os.Getenv(EnvToxiproxy))
	p, err := c.CreateProxy(RandomName("s3-"), "127.0.0.1:0", u.Host)
	if err != nil {
		t.Fatalf("create latency proxy to %s: %v", u.Host, err)
	}
	t.Cleanup(func() { _ = p.Delete() })
	if _, err := p.AddToxic("latency", "latency", "downstream", 1, toxiproxy.Attributes{"latency": latency.Milliseconds()}); err != nil {
		t.Fatalf("add latency to %s: %v", u.Host, err)
	}
	s.Endpoint = "http://" + p.Listen
	s.Client = NewClient(s.Endpoint, s.Key, s.Secret)
	return s
}

// RefusedAddr is an address that refuses connections: port 1 (tcpmux),
// which nothing on a test machine listens on. A port FreeAddr found free
// may be taken by another test's server a moment later, and then answers
// (a 404 reads as a missing file, not as unreachable storage).
const RefusedAddr = "127.0.0.1:1"

// FreeAddr returns a loopback address nothing listens on at the moment:
// for a server a test starts (for a service that is down, RefusedAddr).
func FreeAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}
