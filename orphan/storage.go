package orphan

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/sourcegraph/conc/pool"

	"github.com/icekeeper/icekeeper/internal/cost"
)

// Object is one listed object.
type Object struct {
	Loc          loc
	Size         int64
	LastModified time.Time
}

// Storage lists and deletes the objects of a table's prefixes.
type Storage interface {
	// List calls fn for every object under prefix; calls are serialized.
	List(ctx context.Context, prefix loc, fn func(Object) error) error
	// Delete removes the objects and returns the per-object failures; an
	// object that is already gone is not a failure.
	Delete(ctx context.Context, objs []loc) map[string]error
}

// storageFor returns the Storage that serves the scheme of prefix, built
// from the bucket's catalog properties (s3.endpoint, s3.region, keys).
func storageFor(ctx context.Context, prefix loc, props map[string]string) (Storage, error) {
	switch prefix.scheme {
	case "file":
		return localStorage{}, nil
	case "s3", "s3a", "s3n", "oss":
		return newS3Storage(ctx, props)
	}
	return nil, fmt.Errorf("unreferenced file removal does not support %s:// locations", prefix.scheme)
}

type localStorage struct{}

func (localStorage) List(ctx context.Context, prefix loc, fn func(Object) error) error {
	root := strings.TrimSuffix(prefix.path, "/")
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) && p == root {
				return fs.SkipAll // a table without files yet
			}
			return err
		}
		if d.IsDir() {
			return ctx.Err()
		}
		info, err := d.Info()
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil // removed while we walked
			}
			return err
		}
		if !info.Mode().IsRegular() {
			return nil
		}
		return fn(Object{Loc: loc{scheme: "file", path: p}, Size: info.Size(), LastModified: info.ModTime()})
	})
	if err != nil {
		return fmt.Errorf("list %s: %w", root, err)
	}
	return nil
}

// Delete removes each file whose directory still resolves to itself: a
// directory swapped for a symlink since the listing would make the name
// reach another file, perhaps another table's.
func (localStorage) Delete(ctx context.Context, objs []loc) map[string]error {
	errs := map[string]error{}
	for _, o := range objs {
		dir := filepath.Dir(o.path)
		if r, err := filepath.EvalSymlinks(dir); err == nil && r != dir {
			errs[o.String()] = fmt.Errorf("not deleted: its directory %s resolves to %s since it was listed", dir, r)
			continue
		}
		if err := os.Remove(o.path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs[o.String()] = err
		}
	}
	return errs
}

type s3Storage struct {
	client *s3.Client
}

func newS3Storage(ctx context.Context, props map[string]string) (*s3Storage, error) {
	region := props["s3.region"]
	if region == "" {
		region = props["client.region"]
	}
	if region == "" {
		region = "us-east-1"
	}
	opts := []func(*awsconfig.LoadOptions) error{awsconfig.WithRegion(region)}
	if id := props["s3.access-key-id"]; id != "" {
		opts = append(opts, awsconfig.WithCredentialsProvider(
			credentials.NewStaticCredentialsProvider(id, props["s3.secret-access-key"], props["s3.session-token"])))
	}
	cfg, err := awsconfig.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("configure S3 client: %w", err)
	}
	// Every request is counted into the run's cost meter (after loading:
	// the SDK sets AWS_CA_BUNDLE on its own client type only).
	cfg.HTTPClient = cost.Client{Base: cfg.HTTPClient}
	endpoint := props["s3.endpoint"]
	client := s3.NewFromConfig(cfg, func(o *s3.Options) {
		if endpoint != "" {
			o.BaseEndpoint = aws.String(endpoint)
			// Custom endpoints (MinIO, versitygw, OSS) address buckets by
			// path unless told otherwise, as iceberg-go's S3 FileIO does.
			o.UsePathStyle = props["s3.force-virtual-addressing"] != "true"
		}
	})
	return &s3Storage{client: client}, nil
}

// fanOutDepth is how many directory levels List expands before listing
// flat: table/{data,metadata}/{partition}/ for the usual layouts.
const fanOutDepth = 2

// List expands the first directory levels under the prefix with delimited
// listings, then lists every directory found there flat, many in parallel:
// one flat listing of a million keys is a thousand sequential round trips,
// a thousand directories listed eight at a time are not.
func (s *s3Storage) List(ctx context.Context, prefix loc, fn func(Object) error) error {
	var mu sync.Mutex
	emit := func(objs []types.Object) error {
		mu.Lock()
		defer mu.Unlock()
		for _, o := range objs {
			obj := Object{Loc: loc{scheme: prefix.scheme, authority: prefix.authority, path: "/" + aws.ToString(o.Key)}, Size: aws.ToInt64(o.Size)}
			if o.LastModified != nil {
				obj.LastModified = *o.LastModified
			}
			if err := fn(obj); err != nil {
				return err
			}
		}
		return nil
	}
	level := []string{strings.TrimPrefix(prefix.path, "/")}
	for depth := 0; depth < fanOutDepth && len(level) > 0; depth++ {
		var next []string
		p := pool.New().WithContext(ctx).WithCancelOnError().WithFirstError().WithMaxGoroutines(listParallelism)
		for _, dir := range level {
			p.Go(func(ctx context.Context) error {
				subs, err := s.listDelimited(ctx, prefix.authority, dir, emit)
				mu.Lock()
				next = append(next, subs...)
				mu.Unlock()
				return err
			})
		}
		if err := p.Wait(); err != nil {
			return err
		}
		level = next
	}
	p := pool.New().WithContext(ctx).WithCancelOnError().WithFirstError().WithMaxGoroutines(listParallelism)
	for _, dir := range level {
		p.Go(func(ctx context.Context) error { return s.listFlat(ctx, prefix.authority, dir, emit) })
	}
	return p.Wait()
}

// listParallelism bounds concurrent listing requests.
const listParallelism = 16

// listDelimited lists one directory level: it emits the objects directly
// in dir and returns its subdirectories.
func (s *s3Storage) listDelimited(ctx context.Context, bucket, dir string, emit func([]types.Object) error) ([]string, error) {
	pg := s3.NewListObjectsV2Paginator(s.client, &s3.ListObjectsV2Input{Bucket: aws.String(bucket), Prefix: aws.String(dir), Delimiter: aws.String("/")})
	var subs []string
	for pg.HasMorePages() {
		page, err := pg.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("list s3://%s/%s: %w", bucket, dir, err)
		}
		if err := emit(page.Contents); err != nil {
			return nil, err
		}
		for _, cp := range page.CommonPrefixes {
			subs = append(subs, aws.ToString(cp.Prefix))
		}
	}
	return subs, nil
}

func (s *s3Storage) listFlat(ctx context.Context, bucket, prefix string, emit func([]types.Object) error) error {
	pg := s3.NewListObjectsV2Paginator(s.client, &s3.ListObjectsV2Input{Bucket: aws.String(bucket), Prefix: aws.String(prefix)})
	for pg.HasMorePages() {
		page, err := pg.NextPage(ctx)
		if err != nil {
			return fmt.Errorf("list s3://%s/%s: %w", bucket, prefix, err)
		}
		if err := emit(page.Contents); err != nil {
			return err
		}
	}
	return nil
}

// Delete removes objects with DeleteObjects, 1,000 keys a request (the S3
// maximum); the SDK retries throttling and transient errors.
func (s *s3Storage) Delete(ctx context.Context, objs []loc) map[string]error {
	errs := map[string]error{}
	byBucket := map[string][]loc{}
	for _, o := range objs {
		byBucket[o.authority] = append(byBucket[o.authority], o)
	}
	for bucket, list := range byBucket {
		for i := 0; i < len(list); i += 1000 {
			batch := list[i:min(i+1000, len(list))]
			ids := make([]types.ObjectIdentifier, len(batch))
			for j, o := range batch {
				ids[j] = types.ObjectIdentifier{Key: aws.String(strings.TrimPrefix(o.path, "/"))}
			}
			out, err := s.client.DeleteObjects(ctx, &s3.DeleteObjectsInput{Bucket: aws.String(bucket), Delete: &types.Delete{Objects: ids, Quiet: aws.Bool(true)}})
			if err != nil {
				for _, o := range batch {
					errs[o.String()] = err
				}
				continue
			}
			for _, e := range out.Errors {
				l := loc{scheme: batch[0].scheme, authority: bucket, path: "/" + aws.ToString(e.Key)}
				errs[l.String()] = fmt.Errorf("%s: %s", aws.ToString(e.Code), aws.ToString(e.Message))
			}
		}
	}
	return errs
}
