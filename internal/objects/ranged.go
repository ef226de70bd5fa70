package objects

import (
	"context"
	"fmt"
	"io"

	icebergio "github.com/apache/iceberg-go/io"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// RangeReader reads byte ranges of one object with a ranged GetObject
// each, and nothing else: no request when it is made, none for its size.
// iceberg-go's S3 IO opens a file with a GET of the whole object that a
// reader of ranges leaves unread, so that a footer and a few ranges cost
// a request more, and bytes in flight that were never wanted.
type RangeReader struct {
	ctx         context.Context
	client      *s3.Client
	bucket, key string
	size        int64
}

// Ranged returns a RangeReader of the object at path, of size bytes, in
// the bucket of location, when fsys is iceberg-go's S3 IO and path is in
// that bucket under a key that names only itself; otherwise ok is false
// and the caller reads through fsys.
func Ranged(ctx context.Context, fsys icebergio.IO, location, path string, size int64) (r *RangeReader, ok bool) {
	client := S3Client(fsys)
	bucket, isS3 := Bucket(location)
	if client == nil || !isS3 {
		return nil, false
	}
	key, err := Key(bucket, path)
	if err != nil {
		return nil, false
	}
	return &RangeReader{ctx: ctx, client: client, bucket: bucket, key: key, size: size}, true
}

// Bucket is the object's bucket, Key its key.
func (r *RangeReader) Bucket() string { return r.bucket }
func (r *RangeReader) Key() string    { return r.key }

// Size is the object's size as the caller gave it.
func (r *RangeReader) Size() int64 { return r.size }

// ReadAt reads len(p) bytes from off in one ranged GET; at the end of the
// object it returns what there is with io.EOF.
func (r *RangeReader) ReadAt(p []byte, off int64) (int, error) {
	if off >= r.size {
		return 0, io.EOF
	}
	n := min(int64(len(p)), r.size-off)
	if n == 0 {
		return 0, nil
	}
	out, err := r.client.GetObject(r.ctx, &s3.GetObjectInput{Bucket: aws.String(r.bucket), Key: aws.String(r.key),
		Range: aws.String(fmt.Sprintf("bytes=%d-%d", off, off+n-1))})
	if err != nil {
		return 0, fmt.Errorf("read %d bytes of s3://%s/%s at %d: %w", n, r.bucket, r.key, off, err)
	}
	defer out.Body.Close()
	k, err := io.ReadFull(out.Body, p[:n])
	if err != nil {
		return k, fmt.Errorf("read %d bytes of s3://%s/%s at %d: %w", n, r.bucket, r.key, off, err)
	}
	if n < int64(len(p)) {
		return k, io.EOF
	}
	return k, nil
}
