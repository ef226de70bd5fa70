package bucket

import (
	"context"
	"fmt"
	"net/http"
	"time"

	s3io "github.com/apache/iceberg-go/io/gocloud/s3"
	"github.com/apache/iceberg-go/utils"
	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"

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
		cfg, err := sharedAWSConfig(ctx, props)
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
func sharedAWSConfig(ctx context.Context, props map[string]string) (*aws.Config, error) {
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
	return cfg, nil
}
