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
	"strings"

	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/io/gocloud/blobfs"
	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// Gone reports whether the file at path is absent from fsys. On
// iceberg-go's S3 IO it is a HeadObject whose answer is a 404; any other
// failure is an error, never "gone". Elsewhere it is fsys.Open failing
// with fs.ErrNotExist.
func Gone(ctx context.Context, fsys icebergio.IO, path string) (bool, error) {
	if client, bucket, key, ok := s3Object(fsys, path); ok {
		_, err := client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
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

// s3Object returns the S3 client under fsys and path's bucket and key,
// when fsys is iceberg-go's S3 blob IO and path an s3, s3a or s3n URL.
func s3Object(fsys icebergio.IO, path string) (client *s3.Client, bucket, key string, ok bool) {
	bfs, isBlob := fsys.(*blobfs.FileIO)
	if !isBlob || !bfs.Bucket.As(&client) || client == nil {
		return nil, "", "", false
	}
	scheme, rest, found := strings.Cut(path, "://")
	if !found || (scheme != "s3" && scheme != "s3a" && scheme != "s3n") {
		return nil, "", "", false
	}
	bucket, key, _ = strings.Cut(rest, "/")
	if bucket == "" || key == "" {
		return nil, "", "", false
	}
	return client, bucket, key, true
}
