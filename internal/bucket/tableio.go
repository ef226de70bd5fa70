package bucket

import (
	"context"
	"fmt"
	"net/http"
	"time"

	s3io "github.com/apache/iceberg-go/io/gocloud/s3"
	"github.com/apache/iceberg-go/utils"
	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go/middleware"

	"github.com/icekeeper/icekeeper/internal/cost"
)

// WithTableIO returns ctx carrying the AWS configuration the bucket's
// table file IO shares: a table's IO is built from the context it is
// asked for with (tbl.FS(ctx)), so a run that calls this once reuses one
// HTTP client, and its connections, for every file it reads and writes,
// and the client counts each request into the cost meter ctx carries.
//
// iceberg-go builds a table's S3 file IO at every load: it resolves a
// fresh AWS configuration (which parses the whole CA bundle when
// AWS_CA_BUNDLE is set) and a fresh HTTP transport, so no connection is
// reused from one load to the next. A need-ordered fire loads every table
// of a fleet; on S3 with 20 ms round trips that was 13 ms of CPU and a new
// connection per table. With a configuration in ctx, iceberg-go starts
// from it, and the properties of the load (the catalog's, and on a REST
// catalog those its table load returns) still override its region,
// credentials and endpoint, so vended credentials keep working. Two
// properties a REST catalog could return are not applied over a shared
// configuration, s3.proxy-uri and s3.connect-timeout; set them in the
// bucket's catalog properties instead.
func (b *Bucket) WithTableIO(ctx context.Context) context.Context {
	props := b.Properties()
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.awsCfg == nil {
		cfg, err := sharedAWSConfig(ctx, props, b.opts.S3UnsignedPayload)
		if err != nil {
			// Left to iceberg-go, which reports it where the load fails.
			b.log().Debug("no shared AWS configuration for table loads", "error", err)
			return ctx
		}
		b.awsCfg = cfg
	}
	return utils.WithAwsConfig(ctx, b.awsCfg)
}

// sharedAWSConfig is iceberg-go's configuration for props, with its own
// S3 transport tuning (many connections to one host, kept 90 s) on the
// HTTP client it would otherwise have built per load.
func sharedAWSConfig(ctx context.Context, props map[string]string, unsigned bool) (*aws.Config, error) {
	cfg, err := s3io.ParseAWSConfig(ctx, props)
	if err != nil {
		return nil, fmt.Errorf("resolve the AWS configuration of table file IO: %w", err)
	}
	if c, ok := cfg.HTTPClient.(*awshttp.BuildableClient); ok {
		cfg.HTTPClient = c.WithTransportOptions(func(t *http.Transport) {
			t.MaxIdleConns, t.MaxIdleConnsPerHost, t.MaxConnsPerHost = 256, 256, 2048
			t.IdleConnTimeout = 90 * time.Second
		})
	}
	cfg.HTTPClient = cost.Client{Base: cfg.HTTPClient}
	if unsigned {
		cfg.APIOptions = append(cfg.APIOptions, unsignedBodies)
	}
	return cfg, nil
}

// unsignedBodies sends the bodies of object uploads (PutObject,
// UploadPart) unsigned, each with its CRC32 checksum: their SigV4
// signature then covers the checksum's header (x-amz-checksum-crc32), not
// a SHA-256 of every byte of the body. Every other request is signed as
// before; their bodies are small.
//
// Over https the SDK already sends uploads so, with the checksum in a
// trailer. Over http it hashes every byte it uploads with SHA-256 to sign
// the body, and the server hashes every byte again to check it: writing a
// compaction's output through versitygw or SeaweedFS's S3 gateway on
// loopback, that was 6–10% of icekeeper's CPU, and 0.1–0.2 s of weed's
// per 134 MB (BENCHMARKS.md). The server still checks each body against its
// CRC32, which finds corruption but not tampering; hence an opt-in
// (configs' s3UnsignedPayload) for endpoints on loopback or a trusted
// network. A compaction's output is also read back and its rows proven
// before it is committed.
//
// An upload that names no checksum is given CRC32, so that no body goes
// without one, whatever the SDK's default (AWS_REQUEST_CHECKSUM_CALCULATION).
// The payload hash is set before the SDK's own middleware would compute
// it: the checksum middleware and ComputePayloadSHA256 leave a hash
// already set alone, and over https the checksum middleware replaces it
// with its trailer's, as it would have anyway.
func unsignedBodies(st *middleware.Stack) error {
	return st.Initialize.Add(middleware.InitializeMiddlewareFunc("icekeeper:UnsignedPayload",
		func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
			switch p := in.Parameters.(type) {
			case *s3.PutObjectInput:
				p.ChecksumAlgorithm = withChecksum(p.ChecksumAlgorithm, p.ContentMD5, p.ChecksumCRC32, p.ChecksumCRC32C, p.ChecksumCRC64NVME, p.ChecksumSHA1, p.ChecksumSHA256)
				ctx = v4.SetPayloadHash(ctx, unsignedPayloadHash)
			case *s3.UploadPartInput:
				p.ChecksumAlgorithm = withChecksum(p.ChecksumAlgorithm, p.ContentMD5, p.ChecksumCRC32, p.ChecksumCRC32C, p.ChecksumCRC64NVME, p.ChecksumSHA1, p.ChecksumSHA256)
				ctx = v4.SetPayloadHash(ctx, unsignedPayloadHash)
			}
			return next.HandleInitialize(ctx, in)
		}), middleware.Before)
}

// withChecksum is an upload's checksum algorithm: CRC32 where it names
// none and gives no checksum of its own.
func withChecksum(alg types.ChecksumAlgorithm, given ...*string) types.ChecksumAlgorithm {
	if alg != "" {
		return alg
	}
	for _, g := range given {
		if g != nil {
			return alg
		}
	}
	return types.ChecksumAlgorithmCrc32
}

// unsignedPayloadHash is SigV4's payload hash of an unsigned body.
const unsignedPayloadHash = "UNSIGNED-PAYLOAD"
