package s3write

import (
	"bytes"
	"context"
	"crypto/md5"
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
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

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
// for a table; no multipart upload is left behind. The store acknowledges
// every object, a multipart one by checksums it computed: on versitygw,
// and on SeaweedFS, whose answers to parts carry none (the completion's
// composite does).
func TestWriteObjects(t *testing.T) {
	t.Run("versitygw", func(t *testing.T) { writeObjects(t, servers.S3(t)) })
	t.Run("seaweedfs", func(t *testing.T) { writeObjects(t, servers.SeaweedFSS3(t)) })
}

func writeObjects(t *testing.T, srv servers.S3Server) {
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
			// A multipart upload is acknowledged by checksums the store
			// computed, without an MD5 of its bytes.
			if size > part && w.(*writer).md5Bytes > 0 {
				t.Errorf("%s %d bytes: %d bytes hashed with MD5", via, size, w.(*writer).md5Bytes)
			}
			got, err := readAll(base, name)
			if err != nil || !bytes.Equal(got, data) {
				t.Fatalf("%s %d bytes: read back %d bytes, equal %v, %v", via, size, len(got), bytes.Equal(got, data), err)
			}
		}
	}
	noUploadsLeft(t, srv)
}

// A store's answer acknowledges bytes by its own digest of them: an ETag
// that is their MD5 (quoted or not, in either case), not one of another
// form; or a CRC32 checksum, alone or the composite of the parts' (with
// its part count or without), in part order whatever order the parts
// finished in.
func TestAcknowledged(t *testing.T) {
	b := []byte("the bytes of a part")
	sum := md5.Sum(b)
	etag := hex.EncodeToString(sum[:])
	for _, tc := range []struct {
		etag string
		want bool
	}{
		{`"` + etag + `"`, true},
		{strings.ToUpper(etag), true},
		{`"00000000000000000000000000000000"`, false},
		{`"` + etag + `-2"`, false}, // a multipart upload's
		{`"abc"`, false},
		{"", false},
	} {
		if got := md5ETag(b, aws.String(tc.etag)); got != tc.want {
			t.Errorf("ETag %s: acknowledged %v, want %v", tc.etag, got, tc.want)
		}
	}
	if md5ETag(b, nil) {
		t.Error("no ETag acknowledged the bytes")
	}
	// The CRC32 of "hello world" is 0x0d4a1185, which S3 writes in base64.
	if got := crcBase64(crc32.ChecksumIEEE([]byte("hello world"))); got != "DUoRhQ==" {
		t.Errorf("CRC32 of hello world: %s", got)
	}
	parts := [][]byte{[]byte("first part"), []byte("second"), []byte("third and last")}
	var crcs []byte
	w := &writer{}
	for i := len(parts) - 1; i >= 0; i-- { // finished in reverse
		w.sums = append(w.sums, partSum{int32(i + 1), crc32.ChecksumIEEE(parts[i])})
		w.done = append(w.done, types.CompletedPart{})
	}
	for _, p := range parts {
		crcs = binary.BigEndian.AppendUint32(crcs, crc32.ChecksumIEEE(p))
	}
	composite := crcBase64(crc32.ChecksumIEEE(crcs))
	for answer, want := range map[string]bool{
		composite + "-3": true,
		composite:        true,
		composite + "-2": false,
		crcBase64(crc32.ChecksumIEEE(bytes.Join(parts, nil))): false, // the whole object's
		"": false,
	} {
		if got := w.composite(answer); got != want {
			t.Errorf("completion's checksum %q: acknowledged %v, want %v", answer, got, want)
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
