// Package objects answers whether a table's file is gone from storage,
// without believing a "not found" that storage never said.
//
// iceberg-go's S3 file IO reports gocloud's error codes, and gocloud's S3
// driver maps every SDK operation error whose message contains "301" (a
// heuristic for S3's redirect of a wrong-region bucket) to NotFound:
// refused connections, throttling and denied requests included. Iceberg's
// file names carry UUIDs, and about one in a hundred holds "301", so for
// those a failed read of a file that is there reads as the file being
// gone. Where "gone" is a conclusion — erasure's proof that erased files
// no longer exist — it is asked of S3 itself.
package objects

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"net/url"
	"strings"

	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/io/gocloud/blobfs"
	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// ErrOtherBucket is returned for a path outside the table's bucket.
var ErrOtherBucket = errors.New("path is not in the table's bucket")

// ErrInvalidKey is returned for an object key that could name another
// object than it spells.
var ErrInvalidKey = errors.New("object key with an empty, \".\" or \"..\" segment, or an escaped one")

// Bucket returns the bucket of an s3://, s3a:// or s3n:// location.
func Bucket(location string) (string, bool) {
	bucket, _, ok := split(location)
	return bucket, ok
}

// Key returns the object key of path, an s3, s3a or s3n URL that must be
// in bucket. It refuses a key that storage or a proxy could resolve to
// another object: an empty, "." or ".." segment, or one that percent-
// decodes to those or holds an escaped "/".
func Key(bucket, path string) (string, error) {
	b, key, ok := split(path)
	if !ok {
		return "", fmt.Errorf("%s: not an S3 URL: %w", path, ErrInvalidKey)
	}
	if b != bucket {
		return "", fmt.Errorf("%s: %w %s", path, ErrOtherBucket, bucket)
	}
	if !fs.ValidPath(key) || key == "." {
		return "", fmt.Errorf("%s: %w", path, ErrInvalidKey)
	}
	for seg := range strings.SplitSeq(key, "/") {
		u, err := url.PathUnescape(seg)
		if err != nil || u == "." || u == ".." || strings.ContainsAny(u, "/\\") {
			return "", fmt.Errorf("%s: %w", path, ErrInvalidKey)
		}
	}
	return key, nil
}

// split cuts an s3://, s3a:// or s3n:// URL into its bucket and key.
func split(location string) (bucket, key string, ok bool) {
	scheme, rest, ok := strings.Cut(location, "://")
	if !ok || (scheme != "s3" && scheme != "s3a" && scheme != "s3n") {
		return "", "", false
	}
	bucket, key, _ = strings.Cut(rest, "/")
	return bucket, key, bucket != ""
}

// Gone reports whether the file at path, of the table at location, is
// absent from fsys. On iceberg-go's S3 IO it is a HeadObject whose answer
// is a 404, for a key in the table's bucket (Key); any other failure is
// an error, never "gone". Elsewhere it is fsys.Open failing with
// fs.ErrNotExist.
func Gone(ctx context.Context, fsys icebergio.IO, location, path string) (bool, error) {
	if client := S3Client(fsys); client != nil {
		bucket, ok := Bucket(location)
		if !ok {
			return false, fmt.Errorf("look for %s: table location %s is not an S3 URL", path, location)
		}
		key, err := Key(bucket, path)
		if err != nil {
			return false, fmt.Errorf("look for %w", err)
		}
		_, err = client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
		var re *awshttp.ResponseError
		switch {
		case err == nil:
			return false, nil
		case errors.As(err, &re) && re.HTTPStatusCode() == http.StatusNotFound:
			return true, nil
		default:
			return false, fmt.Errorf("look for %s: %w", path, err)
		}
	}
	f, err := fsys.Open(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return true, nil
	case err != nil:
		return false, fmt.Errorf("look for %s: %w", path, err)
	}
	f.Close()
	return false, nil
}

// Unwrapper is an IO that passes to another what it does not do itself
// (a wrapper that records the files created, say): the IO under it is
// looked for through Unwrap.
type Unwrapper interface {
	Unwrap() icebergio.IO
}

// S3Client returns the S3 client under fsys when it is iceberg-go's S3
// blob IO, or wraps it (Unwrapper), else nil.
func S3Client(fsys icebergio.IO) *s3.Client {
	for {
		if bfs, ok := fsys.(*blobfs.FileIO); ok {
			var client *s3.Client
			if !bfs.Bucket.As(&client) {
				return nil
			}
			return client
		}
		u, ok := fsys.(Unwrapper)
		if !ok {
			return nil
		}
		fsys = u.Unwrap()
	}
}
