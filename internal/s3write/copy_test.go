package s3write

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/icekeeper/icekeeper/internal/testkit/servers"
)

// Ranges copied into an object around S3's part limits read back as the
// bytes written and copied, in order: a range after bytes that do not
// make a part (folded when they are the source's own bytes before it,
// else completed from the range), ranges one after another, a range too
// short to copy (refused, written by the caller), full parts and bytes
// after a copy, and copies refused in an upload begun with checksummed
// parts.
// No upload is left behind.
func TestCopyRange(t *testing.T) {
	srv := servers.S3(t)
	ctx := context.Background()
	base := ioFor(t, ctx, srv)
	f := Wrap(ctx, base, "s3://"+srv.Bucket+"/t").(*FS)
	rng := rand.New(rand.NewPCG(3, 4))
	src := make([]byte, 23<<20)
	for i := range src {
		src[i] = byte(rng.Uint32())
	}
	srcName := "s3://" + srv.Bucket + "/t/data/src.bin"
	if _, err := f.client.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(srv.Bucket), Key: aws.String("t/data/src.bin"), Body: bytes.NewReader(src)}); err != nil {
		t.Fatal(err)
	}
	r := bytes.NewReader(src)
	type step struct {
		write      []byte // written first
		off, n     int64  // then this range copied
		wantCopied bool
	}
	for i, steps := range [][]step{
		{{write: src[:4], off: 4, n: 6 << 20, wantCopied: true}, {off: 6<<20 + 4, n: 5 << 20, wantCopied: true}, {write: []byte("footer")}},
		{{write: []byte("PAR1"), off: 4, n: 7 << 20, wantCopied: false}, {off: 0, n: 11 << 20, wantCopied: true}},
		{{write: bytes.Repeat([]byte("x"), 100), off: 1 << 20, n: 11 << 20, wantCopied: true}, {write: []byte("tail")}},
		{{write: bytes.Repeat([]byte("y"), 6<<20), off: 0, n: 5 << 20, wantCopied: true}},
		// Parts uploaded before any copy: the upload has checksums, and
		// its copies are refused.
		{{off: 0, n: 4 << 20, wantCopied: false}, {off: 0, n: 5 << 20, wantCopied: false}, {off: 0, n: 11 << 20, wantCopied: false}},
		// Full parts uploaded between and after copies.
		{{off: 0, n: 6 << 20, wantCopied: true}, {write: src[1:(17 << 20)], off: 2, n: 11 << 20, wantCopied: true}, {write: src[5 : 9<<20]}},
		{{write: src[:100], off: 100, n: 5<<20 + 99, wantCopied: false}},
	} {
		name := "s3://" + srv.Bucket + "/t/data/out-" + strconv.Itoa(i) + ".bin"
		w, err := f.Create(name)
		if err != nil {
			t.Fatal(err)
		}
		var want []byte
		copies := &Copies{}
		for j, s := range steps {
			if _, err := w.Write(s.write); err != nil {
				t.Fatal(err)
			}
			want = append(want, s.write...)
			if s.n == 0 {
				continue
			}
			copied, err := w.(*writer).CopyRange(copies, r, srcName, s.off, s.n)
			if err != nil || copied != s.wantCopied {
				t.Fatalf("case %d step %d: copied %v, %v; want %v", i, j, copied, err, s.wantCopied)
			}
			if !copied {
				w.Write(src[s.off : s.off+s.n])
			}
			want = append(want, src[s.off:s.off+s.n]...)
		}
		if err := w.Close(); err != nil {
			t.Fatalf("case %d: %v", i, err)
		}
		if !w.(*writer).Acknowledged() {
			t.Errorf("case %d: the parts uploaded around the copies are not all acknowledged", i)
		}
		got, err := readAll(base, name)
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("case %d: read back %d bytes, want %d, equal %v: %v", i, len(got), len(want), bytes.Equal(got, want), err)
		}
	}
	noUploadsLeft(t, srv)
}

// A range is copied only when the copy can be a part of its own, at least
// S3's smallest, after completing the part being written.
func TestSplitCopy(t *testing.T) {
	for _, tc := range []struct {
		start, end int64
		want       int
	}{
		{0, 5 << 20, 1},
		{0, maxCopyPartBytes, 1},
		{0, maxCopyPartBytes + 1, 1},            // the short rest joins the last piece
		{0, maxCopyPartBytes + MinPartBytes, 2}, // a piece of its own
		{7, 2*maxCopyPartBytes + (6 << 20), 3},
	} {
		got := splitCopy(tc.start, tc.end)
		if len(got) != tc.want || got[0].start != tc.start || got[len(got)-1].end != tc.end {
			t.Errorf("splitCopy(%d, %d) = %v, want %d pieces", tc.start, tc.end, got, tc.want)
		}
		for i, s := range got {
			if s.end-s.start > 5<<30 || i < len(got)-1 && s.end-s.start < MinPartBytes || i > 0 && s.start != got[i-1].end {
				t.Errorf("splitCopy(%d, %d): piece %d is %v", tc.start, tc.end, i, s)
			}
		}
	}
}

// A part copy that fails (here its source is gone) fails the object: the
// multipart upload is aborted, nothing is left, and the error names the
// file; it is not taken for a store that refuses part copies.
func TestFailedCopyIsAborted(t *testing.T) {
	srv := servers.S3(t)
	ctx := context.Background()
	base := ioFor(t, ctx, srv)
	f := Wrap(ctx, base, "s3://"+srv.Bucket+"/t").(*FS)
	name := "s3://" + srv.Bucket + "/t/data/out.bin"
	w, err := f.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	copies := &Copies{}
	src := bytes.NewReader(make([]byte, 6<<20))
	if _, err := w.(*writer).CopyRange(copies, src, "s3://"+srv.Bucket+"/t/data/gone.bin", 0, 6<<20); err == nil || !strings.Contains(err.Error(), "out.bin") {
		t.Fatalf("a copy of a missing object: %v", err)
	}
	if copies.Refused(srv.Bucket) {
		t.Error("a failed copy was taken for a refusal")
	}
	if err := w.Close(); err == nil {
		t.Fatal("closing an object whose copy failed succeeded")
	}
	if _, err := readAll(base, name); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("the failed object: %v", err)
	}
	noUploadsLeft(t, srv)
}
