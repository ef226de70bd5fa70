package s3write

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"hash/crc32"
	"io"
	"io/fs"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"testing/iotest"

	icebergio "github.com/apache/iceberg-go/io"
	_ "github.com/apache/iceberg-go/io/gocloud/s3" // registers s3://
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/icekeeper/icekeeper/internal/objects"
	"github.com/icekeeper/icekeeper/internal/testkit/servers"
)

// ioFor is iceberg-go's S3 file IO for srv's bucket, as a table's is.
func ioFor(t *testing.T, ctx context.Context, srv servers.S3Server) icebergio.WriteFileIO {
	t.Helper()
	fsys, err := icebergio.LoadFS(ctx, srv.Props(), "s3://"+srv.Bucket+"/t")
	if err != nil {
		t.Fatal(err)
	}
	return fsys.(icebergio.WriteFileIO)
}

// Objects of every size around the part boundaries, written by Write and
// by ReadFrom, read back byte for byte, through the IO iceberg-go builds
// for a table; no multipart upload is left behind.
func TestWriteObjects(t *testing.T) {
	srv := servers.S3(t)
	ctx := context.Background()
	base := ioFor(t, ctx, srv)
	if _, ok := Wrap(ctx, base, "s3://"+srv.Bucket+"/t").(*FS); !ok {
		t.Fatal("iceberg-go's S3 IO was not wrapped")
	}
	const part = 5 << 20 // S3's smallest part
	wrapped := Wrap(ctx, base, "s3://"+srv.Bucket+"/t").(*FS)
	f := newFS(ctx, base, wrapped.client, srv.Bucket, part)
	rng := rand.New(rand.NewPCG(1, 2))
	for _, size := range []int{0, 1, 1000, part - 1, part, part + 1, 3*part + 17} {
		for _, via := range []string{"write", "readfrom"} {
			data := make([]byte, size)
			for i := range data {
				data[i] = byte(rng.Uint32())
			}
			name := "s3://" + srv.Bucket + "/t/data/" + via + "-" + strings.Repeat("x", size%7) + "-" + strconv.Itoa(size) + ".bin"
			w, err := f.Create(name)
			if err != nil {
				t.Fatal(err)
			}
			switch via {
			case "write": // in uneven pieces, as an encoder writes
				for rest := data; len(rest) > 0; {
					n := min(len(rest), 1+rng.IntN(3<<20))
					if k, err := w.Write(rest[:n]); err != nil || k != n {
						t.Fatalf("write %d of %d: %d %v", n, size, k, err)
					}
					rest = rest[n:]
				}
			case "readfrom":
				if n, err := w.ReadFrom(iotest.HalfReader(bytes.NewReader(data))); err != nil || n != int64(size) {
					t.Fatalf("read from: %d of %d, %v", n, size, err)
				}
			}
			if err := w.Close(); err != nil {
				t.Fatalf("%s %d bytes: %v", via, size, err)
			}
			if !w.(*writer).Acknowledged() {
				t.Errorf("%s %d bytes: the store's answers acknowledge not every part", via, size)
			}
			got, err := readAll(base, name)
			if err != nil || !bytes.Equal(got, data) {
				t.Fatalf("%s %d bytes: read back %d bytes, equal %v, %v", via, size, len(got), bytes.Equal(got, data), err)
			}
		}
	}
	noUploadsLeft(t, srv)
}

// A store's answer acknowledges an upload by its own digest of the bytes
// it took: a CRC32 checksum where it gives one (which then decides), else
// an ETag that is their MD5. Anything else acknowledges nothing.
func TestAcknowledged(t *testing.T) {
	b := []byte("the bytes of a part")
	sum := md5.Sum(b)
	etag := `"` + hex.EncodeToString(sum[:]) + `"`
	var c [4]byte
	binary.BigEndian.PutUint32(c[:], crc32.ChecksumIEEE(b))
	crc := base64.StdEncoding.EncodeToString(c[:])
	for _, tc := range []struct {
		name           string
		checksum, etag string
		want           bool
	}{
		{"its CRC32", crc, "", true},
		{"its CRC32 and its MD5", crc, etag, true},
		{"its MD5, quoted", "", etag, true},
		{"its MD5, unquoted, in capitals", "", strings.ToUpper(strings.Trim(etag, `"`)), true},
		{"another CRC32, its MD5", base64.StdEncoding.EncodeToString([]byte{1, 2, 3, 4}), etag, false},
		{"another MD5", "", `"00000000000000000000000000000000"`, false},
		{"a multipart ETag", "", `"` + hex.EncodeToString(sum[:]) + `-2"`, false},
		{"an ETag of another form", "", `"abc"`, false},
		{"nothing", "", "", false},
	} {
		var checksum, etag *string
		if tc.checksum != "" {
			checksum = aws.String(tc.checksum)
		}
		if tc.etag != "" {
			etag = aws.String(tc.etag)
		}
		if got := acknowledged(b, checksum, etag); got != tc.want {
			t.Errorf("%s: acknowledged %v, want %v", tc.name, got, tc.want)
		}
	}
}

// Paths a rewrite never makes but a bug or a hostile name could: another
// bucket, a URL without a scheme, empty, "." and ".." segments. Each is
// refused before a request is made.
func TestCreateRefusesOtherPaths(t *testing.T) {
	f := newFS(context.Background(), nil, s3.New(s3.Options{Region: "us-east-1"}), "bucket", PartBytes)
	for _, name := range []string{
		"s3://other/t/data/f.parquet",
		"s3://bucket-other/t/f",
		"bucket/t/f",
		"/t/f",
		"gs://bucket/t/f",
		"s3://bucket/t//f",
		"s3://bucket/t/../u/f",
		"s3://bucket/t/./f",
		"s3://bucket/t/%2e%2e/u/f",
		"s3://bucket/t/a%2Fb",
		"s3://bucket/",
		"s3://bucket",
		"s3:///t/f",
	} {
		if w, err := f.Create(name); err == nil {
			w.Close()
			t.Errorf("Create(%q) was accepted", name)
		} else if !errors.Is(err, objects.ErrInvalidKey) && !errors.Is(err, objects.ErrOtherBucket) {
			t.Errorf("Create(%q): %v", name, err)
		}
	}
}

// A failed upload is aborted: the object is not there, no part stays, and
// the error names the file.
func TestFailedUploadIsAborted(t *testing.T) {
	srv := servers.S3(t)
	ctx := context.Background()
	base := ioFor(t, ctx, srv)
	f := newFS(ctx, base, Wrap(ctx, base, "s3://"+srv.Bucket+"/t").(*FS).client, srv.Bucket, 5<<20)
	name := "s3://" + srv.Bucket + "/t/data/broken.bin"
	w, err := f.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	// Two parts go out; then the source fails.
	src := io.MultiReader(bytes.NewReader(make([]byte, 11<<20)), iotest.ErrReader(errors.New("disk gone")))
	if _, err := w.ReadFrom(src); err == nil || !strings.Contains(err.Error(), "broken.bin") {
		t.Fatalf("read from a failing source: %v", err)
	}
	if err := w.Close(); err == nil {
		t.Fatal("closing a failed upload succeeded")
	}
	if w.(*writer).Acknowledged() {
		t.Error("a failed upload is acknowledged")
	}
	if _, err := readAll(base, name); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("the failed object: %v", err)
	}
	noUploadsLeft(t, srv)
	if _, err := w.Write([]byte("x")); !errors.Is(err, fs.ErrClosed) {
		t.Fatalf("write after close: %v", err)
	}
}

func noUploadsLeft(t *testing.T, srv servers.S3Server) {
	t.Helper()
	out, err := srv.Client.ListMultipartUploads(context.Background(), &s3.ListMultipartUploadsInput{Bucket: aws.String(srv.Bucket)})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Uploads) > 0 {
		t.Fatalf("%d multipart uploads left behind", len(out.Uploads))
	}
}

func readAll(fsys icebergio.IO, name string) ([]byte, error) {
	f, err := fsys.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(f)
}
