package main

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3tables"

	"github.com/icekeeper/icekeeper/internal/bucket"
	"github.com/icekeeper/icekeeper/maintenance"
	"github.com/icekeeper/icekeeper/status/client"
)

func cmdStatus(ctx context.Context, env *cliEnv, args []string) error {
	fs := newFlagSet(env, "status", "--endpoint URL --table BUCKET/NAMESPACE/TABLE",
		"Prints a table's maintenance status and recent runs from a running\n"+
			"icekeeper's API. Credentials: --access-key-id/--secret-access-key or\n"+
			"$AWS_ACCESS_KEY_ID/$AWS_SECRET_ACCESS_KEY when the API requires them.")
	endpoint := fs.String("endpoint", "http://127.0.0.1:8080", "the API's URL")
	ref := fs.String("table", "", "table: BUCKET/NAMESPACE/TABLE (BUCKET a name or ARN), or the table ARN the API prints")
	// The environment is read after parsing: a flag's default is printed
	// by -h, and the secret must not be.
	keyID := fs.String("access-key-id", "", "access key (default $AWS_ACCESS_KEY_ID)")
	secret := fs.String("secret-access-key", "", "secret key (default $AWS_SECRET_ACCESS_KEY)")
	signing := fs.String("signing-name", "s3tables", "SigV4 service name the API expects")
	runs := fs.Int("runs", 5, "recent runs to show per job type")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *keyID == "" && *secret == "" {
		*keyID, *secret = os.Getenv("AWS_ACCESS_KEY_ID"), os.Getenv("AWS_SECRET_ACCESS_KEY")
	}
	if u, err := url.Parse(*endpoint); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return usagef("--endpoint: %q is not an http:// or https:// URL (e.g. http://127.0.0.1:8080)", *endpoint)
	}
	plain, byID := tableRef(*ref)
	if byID {
		return usagef("--table %s names its table by an ID, which status cannot look up through the API: give BUCKET/NAMESPACE/TABLE or BUCKET_ARN/table/NAMESPACE/TABLE", *ref)
	}
	r, err := bucket.ParseRef(plain)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	c := client.New(*endpoint, *keyID, *secret, *signing)
	arn, err := c.BucketARN(ctx, r.Bucket)
	if err != nil {
		return err
	}
	ns := r.Table.NamespaceString()
	st, err := c.SDK.GetTableMaintenanceJobStatus(ctx, &s3tables.GetTableMaintenanceJobStatusInput{
		TableBucketARN: aws.String(arn), Namespace: aws.String(ns), Name: aws.String(r.Table.Name)})
	if err != nil {
		return fmt.Errorf("job status of %s: %w", *ref, err)
	}
	rec, err := c.SDK.GetTableRecordExpirationJobStatus(ctx, &s3tables.GetTableRecordExpirationJobStatusInput{
		TableArn: st.TableARN})
	if err != nil {
		return fmt.Errorf("record expiration status of %s: %w", *ref, err)
	}
	history, err := c.Runs(ctx, arn, ns, r.Table.Name, *runs)
	if err != nil {
		return err
	}
	writeln(env.stdout, "%s", aws.ToString(st.TableARN))
	var table strings.Builder
	tw := tabwriter.NewWriter(&table, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "JOB\tSTATUS\tLAST RUN\tMESSAGE")
	for _, typ := range maintenance.MaintenanceTypes() {
		v := st.Status[string(typ)]
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", typ, v.Status, lastRun(v.LastRunTimestamp), aws.ToString(v.FailureMessage))
	}
	msg := aws.ToString(rec.FailureMessage)
	if m := rec.Metrics; m != nil {
		msg = fmt.Sprintf("%d records, %d data files (%d bytes) removed", aws.ToInt64(m.DeletedRecords), aws.ToInt64(m.DeletedDataFiles), aws.ToInt64(m.RemovedFilesSize))
	}
	fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", maintenance.RecordExpiration, rec.Status, lastRun(rec.LastRunTimestamp), msg)
	fmt.Fprintln(tw, "\nRECENT RUNS\tSTATUS\tSTARTED\tDURATION\tTRIGGER")
	for _, typ := range maintenance.JobTypes() {
		for _, run := range history[string(typ)] {
			d := "-"
			if !run.Finished.IsZero() {
				d = run.Finished.Sub(run.Started).Round(time.Millisecond).String()
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", typ, run.Status, run.Started.UTC().Format(time.RFC3339), d, run.Trigger)
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	// A failure message folds under its own column, whole: it is the one
	// thing here worth reading to its end.
	text := table.String()
	hang := strings.Index(text, "MESSAGE")
	for _, l := range strings.Split(strings.TrimSuffix(text, "\n"), "\n") {
		writeln(env.stdout, "%s", fitLine(l, hang, false))
	}
	return nil
}

func lastRun(t *time.Time) string {
	if t == nil {
		return "-"
	}
	return t.UTC().Format(time.RFC3339)
}
