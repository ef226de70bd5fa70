package status

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3tables"
	"github.com/aws/aws-sdk-go-v2/service/s3tables/types"

	"github.com/icekeeper/icekeeper/configs"
	"github.com/icekeeper/icekeeper/expire/records"
	"github.com/icekeeper/icekeeper/jobs"
	"github.com/icekeeper/icekeeper/maintenance"
)

// The three record expiration calls through the AWS SDK: disabled until
// configured; enabling on a table without an expiration column is refused
// with why and stores nothing; once configured, a run's status and
// metrics are reported as S3 Tables spells them.
func TestRecordExpirationCalls(t *testing.T) {
	f := newServer(t, configs.API{})
	ctx := context.Background()
	c := client(f.url, "any", "any")
	tableARN := aws.String(bucketARN + "/table/demo/events")
	getConfig := func() *types.TableRecordExpirationConfigurationValue {
		t.Helper()
		out, err := c.GetTableRecordExpirationConfiguration(ctx, &s3tables.GetTableRecordExpirationConfigurationInput{TableArn: tableARN})
		if err != nil {
			t.Fatal(err)
		}
		return out.Configuration
	}
	getStatus := func() *s3tables.GetTableRecordExpirationJobStatusOutput {
		t.Helper()
		out, err := c.GetTableRecordExpirationJobStatus(ctx, &s3tables.GetTableRecordExpirationJobStatusInput{TableArn: tableARN})
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	put := func(status types.TableRecordExpirationStatus, days int32) error {
		v := &types.TableRecordExpirationConfigurationValue{Status: status}
		if days != 0 {
			v.Settings = &types.TableRecordExpirationSettings{Days: aws.Int32(days)}
		}
		_, err := c.PutTableRecordExpirationConfiguration(ctx, &s3tables.PutTableRecordExpirationConfigurationInput{TableArn: tableARN, Value: v})
		return err
	}
	var bad *types.BadRequestException
	var notFound *types.NotFoundException

	// The demo table names its column; without it, enabling is refused.
	tx := f.Load().NewTransaction()
	if err := tx.RemoveProperties([]string{records.ExpirationColumnProperty}); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if cfg := getConfig(); cfg.Status != types.TableRecordExpirationStatusDisabled || cfg.Settings != nil {
		t.Fatalf("before any configuration: %+v", cfg)
	}
	if st := getStatus(); st.Status != types.TableRecordExpirationJobStatusDisabled {
		t.Fatalf("status before any configuration: %s", st.Status)
	}
	if err := put(types.TableRecordExpirationStatusEnabled, 10); !errors.As(err, &bad) || !strings.Contains(err.Error(), records.ExpirationColumnProperty) {
		t.Fatalf("enabled on a table without an expiration column: %v", err)
	}
	if err := put(types.TableRecordExpirationStatusEnabled, 0); !errors.As(err, &bad) || !strings.Contains(err.Error(), "without settings.days") {
		t.Fatalf("enabled without days: %v", err)
	}
	if cfg := getConfig(); cfg.Status != types.TableRecordExpirationStatusDisabled {
		t.Fatalf("a refused configuration was stored: %+v", cfg)
	}

	tx = f.Load().NewTransaction()
	if err := tx.SetProperties(iceberg.Properties{records.ExpirationColumnProperty: "ts"}); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := put(types.TableRecordExpirationStatusEnabled, 10); err != nil {
		t.Fatal(err)
	}
	if cfg := getConfig(); cfg.Status != types.TableRecordExpirationStatusEnabled || aws.ToInt32(cfg.Settings.Days) != 10 {
		t.Fatalf("after Put: %+v", cfg)
	}
	if st := getStatus(); st.Status != types.TableRecordExpirationJobStatusNotYetRun || st.Metrics != nil {
		t.Fatalf("before a run: %+v", st)
	}

	before := time.Now().Add(-time.Second).Truncate(time.Second)
	out, err := f.runner.Run(ctx, f.Target(), maintenance.RecordExpiration, "test", jobs.Options{})
	if err != nil || out.Status != "Successful" {
		t.Fatalf("run: %+v %v", out, err)
	}
	fig := out.Figures.(*records.ExpirationFigures)
	if fig.DeletedRecords == 0 {
		t.Fatalf("setup: the demo table's 21 days of events had none older than 10 days: %+v", fig)
	}
	st := getStatus()
	if st.Status != types.TableRecordExpirationJobStatusSuccessful || st.LastRunTimestamp == nil || st.LastRunTimestamp.Before(before) || st.Metrics == nil ||
		aws.ToInt64(st.Metrics.DeletedRecords) != fig.DeletedRecords || aws.ToInt64(st.Metrics.DeletedDataFiles) != fig.DeletedDataFiles ||
		aws.ToInt64(st.Metrics.RemovedFilesSize) != fig.RemovedFilesSize {
		t.Fatalf("after a run: %+v %+v, figures %+v", st, st.Metrics, fig)
	}

	if err := put(types.TableRecordExpirationStatusDisabled, 0); err != nil {
		t.Fatal(err)
	}
	if st := getStatus(); st.Status != types.TableRecordExpirationJobStatusDisabled || st.Metrics != nil {
		t.Fatalf("disabled: %+v", st)
	}

	// Bad input: a malformed ARN, out-of-range days, a table that does not
	// exist.
	for name, call := range map[string]func() error{
		"Get with a bucket ARN": func() error {
			_, err := c.GetTableRecordExpirationConfiguration(ctx, &s3tables.GetTableRecordExpirationConfigurationInput{TableArn: aws.String(bucketARN)})
			return err
		},
		"status of a malformed ARN": func() error {
			_, err := c.GetTableRecordExpirationJobStatus(ctx, &s3tables.GetTableRecordExpirationJobStatusInput{TableArn: aws.String("arn:aws:s3tables:x/table/demo/events")})
			return err
		},
		"days out of range": func() error { return put(types.TableRecordExpirationStatusEnabled, 40000) },
	} {
		if err := call(); !errors.As(err, &bad) {
			t.Errorf("%s: %v, want BadRequestException", name, err)
		}
	}
	_, err = c.GetTableRecordExpirationConfiguration(ctx, &s3tables.GetTableRecordExpirationConfigurationInput{TableArn: aws.String(bucketARN + "/table/demo/nope")})
	if !errors.As(err, &notFound) {
		t.Errorf("a table that does not exist: %v", err)
	}
}
