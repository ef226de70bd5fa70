package objects

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	icebergio "github.com/apache/iceberg-go/io"
	_ "github.com/apache/iceberg-go/io/gocloud/s3" // registers s3://
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/icekeeper/icekeeper/internal/testkit/servers"
)

// On S3 (versitygw): a stored object is not gone, a missing one is. With
// storage refused, a file whose name holds "301" — which gocloud's S3
// driver reports as not existing — is an error, not gone.
func TestGoneOnS3(t *testing.T) {
	srv := servers.S3(t)
	ctx := context.Background()
	loc := "s3://" + srv.Bucket + "/t"
	fsys, err := icebergio.LoadFS(ctx, srv.Props(), loc)
	if err != nil {
		t.Fatal(err)
	}
	const key = "t/data/00000-0-ae9fba4e-ffa9-4304-ace4-d137f301b191.parquet"
	if _, err := srv.Client.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(srv.Bucket), Key: aws.String(key), Body: bytes.NewReader([]byte("rows"))}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		path string
		gone bool
	}{
		{"s3://" + srv.Bucket + "/" + key, false},
		{"s3a://" + srv.Bucket + "/" + key, false},
		{"s3://" + srv.Bucket + "/t/data/missing-301.parquet", true},
	} {
		if gone, err := Gone(ctx, fsys, loc, tc.path); err != nil || gone != tc.gone {
			t.Errorf("Gone(%s) = %v, %v; want %v", tc.path, gone, err, tc.gone)
		}
	}

	// A path a manifest could name but that is not the table's own
	// object — another bucket, a key storage could resolve elsewhere — is
	// an error: never looked for, never "gone".
	other := servers.S3(t)
	for _, p := range []string{
		"s3://" + other.Bucket + "/t/data/f.parquet",
		"s3://" + srv.Bucket + "/t/data/%2e%2e/%2E%2E/" + key,
		"s3://" + srv.Bucket + "/t//data/f.parquet",
		"s3://" + srv.Bucket + "/t/../t/data/f.parquet",
		"s3://" + srv.Bucket + "/t/data%2Ff.parquet",
	} {
		if gone, err := Gone(ctx, fsys, loc, p); gone || err == nil {
			t.Errorf("Gone(%s) = %v, %v; want an error", p, gone, err)
		}
	}

	props := srv.Props()
	props["s3.endpoint"] = "http://" + servers.RefusedAddr
	down, err := icebergio.LoadFS(ctx, props, "s3://"+srv.Bucket+"/t")
	if err != nil {
		t.Fatal(err)
	}
	path := "s3://" + srv.Bucket + "/" + key
	if _, err := down.Open(path); !errors.Is(err, fs.ErrNotExist) {
		// The reason for this package: if gocloud stops mapping a
		// refused connection to NotFound, this test says so.
		t.Logf("gocloud no longer reports a refused read of %s as missing: %v", path, err)
	}
	if gone, err := Gone(ctx, down, loc, path); gone || err == nil {
		t.Fatalf("refused storage: gone %v, error %v; want an error", gone, err)
	}
}

// On local disk, Gone is the file's absence.
func TestGoneLocal(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "f.parquet")
	if err := os.WriteFile(p, []byte("rows"), 0o644); err != nil {
		t.Fatal(err)
	}
	fsys := icebergio.LocalFS{}
	if gone, err := Gone(context.Background(), fsys, dir, p); gone || err != nil {
		t.Fatalf("stored file: %v %v", gone, err)
	}
	if gone, err := Gone(context.Background(), fsys, dir, filepath.Join(dir, "g.parquet")); !gone || err != nil {
		t.Fatalf("missing file: %v %v", gone, err)
	}
}

func TestKey(t *testing.T) {
	for _, tc := range []struct {
		path, key string
		err       error
	}{
		{"s3://b/t/data/f.parquet", "t/data/f.parquet", nil},
		{"s3a://b/t/data/f.parquet", "t/data/f.parquet", nil},
		{"s3://b/t/data/a%20b.parquet", "t/data/a%20b.parquet", nil}, // an escape of an ordinary character is kept as spelled
		{"s3://other/t/f", "", ErrOtherBucket},
		{"s3://b-other/t/f", "", ErrOtherBucket},
		{"gs://b/t/f", "", ErrInvalidKey},
		{"b/t/f", "", ErrInvalidKey},
		{"s3://b/", "", ErrInvalidKey},
		{"s3://b", "", ErrInvalidKey},
		{"s3://b/t//f", "", ErrInvalidKey},
		{"s3://b/t/./f", "", ErrInvalidKey},
		{"s3://b/t/../u/f", "", ErrInvalidKey},
		{"s3://b/t/%2e%2e/u/f", "", ErrInvalidKey},
		{"s3://b/t/%2E/f", "", ErrInvalidKey},
		{"s3://b/t/a%2fb", "", ErrInvalidKey},
		{"s3://b/t/a%5Cb", "", ErrInvalidKey},
		{"s3://b/t/%zz", "", ErrInvalidKey},
	} {
		key, err := Key("b", tc.path)
		if key != tc.key || !errors.Is(err, tc.err) || (tc.err == nil) != (err == nil) {
			t.Errorf("Key(b, %s) = %q, %v; want %q, %v", tc.path, key, err, tc.key, tc.err)
		}
	}
}
