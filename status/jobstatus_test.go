package status

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3tables"
	"github.com/aws/aws-sdk-go-v2/service/s3tables/types"

	"github.com/icekeeper/icekeeper/configs"
	"github.com/icekeeper/icekeeper/internal/state"
	"github.com/icekeeper/icekeeper/jobs"
	"github.com/icekeeper/icekeeper/maintenance"
)

func TestStatusOf(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	on, off := maintenance.Config{Status: maintenance.Enabled}, maintenance.Config{Status: maintenance.Disabled}
	for _, tc := range []struct {
		name string
		cfg  maintenance.Config
		run  state.Run
		ran  bool
		d    notYetRun
		want wireStatus
	}{
		{"never ran", on, state.Run{}, false, maintenanceDialect, wireStatus{Status: "Not_Yet_Run"}},
		{"never ran, records", on, state.Run{}, false, recordsDialect, wireStatus{Status: "NotYetRun"}},
		{"successful", on, state.Run{Status: state.Successful, Finished: at}, true, maintenanceDialect, wireStatus{Status: "Successful", LastRunTimestamp: "2026-01-02T03:04:05Z", FailureMessage: ""}},
		{"failed", on, state.Run{Status: state.Failed, Finished: at, FailureMessage: "boom"}, true, maintenanceDialect, wireStatus{Status: "Failed", LastRunTimestamp: "2026-01-02T03:04:05Z", FailureMessage: "boom"}},
		{"skipped is failed", on, state.Run{Status: state.Skipped, Finished: at, FailureMessage: "not available"}, true, maintenanceDialect, wireStatus{Status: "Failed", LastRunTimestamp: "2026-01-02T03:04:05Z", FailureMessage: "not available"}},
		{"disabled hides a failure", off, state.Run{Status: state.Failed, Finished: at, FailureMessage: "boom"}, true, maintenanceDialect, wireStatus{Status: "Disabled"}},
		{"disabled, never ran", off, state.Run{}, false, recordsDialect, wireStatus{Status: "Disabled"}},
	} {
		if got := statusOf(tc.cfg, tc.run, tc.ran, tc.d); got != tc.want {
			t.Errorf("%s: %+v, want %+v", tc.name, got, tc.want)
		}
	}
}

// A job type disabled, fired while disabled (which records a Disabled
// run), then enabled again reports its last real run, or Not_Yet_Run; the
// record-expiration status likewise, in its own spelling.
func TestReenabledReportsLastRealRun(t *testing.T) {
	f := newServer(t, configs.API{})
	ctx := context.Background()
	c := client(f.url, "any", "any")
	run := func(typ maintenance.JobType, want state.RunStatus) {
		t.Helper()
		if out, err := f.runner.Run(ctx, f.Target(), typ, "test", jobs.Options{}); err != nil || out.Status != want {
			t.Fatalf("%s: %+v %v", typ, out, err)
		}
	}
	put := func(typ maintenance.JobType, status maintenance.Status) {
		t.Helper()
		if err := f.Store.PutTableConfig(ctx, f.Target().Key(), typ, maintenance.Config{Status: status}); err != nil {
			t.Fatal(err)
		}
	}
	recordStatus := func() string {
		t.Helper()
		out, err := c.GetTableRecordExpirationJobStatus(ctx, &s3tables.GetTableRecordExpirationJobStatusInput{TableArn: aws.String(bucketARN + "/table/demo/events")})
		if err != nil {
			t.Fatal(err)
		}
		return string(out.Status)
	}
	run(maintenance.SnapshotManagement, state.Successful)
	put(maintenance.SnapshotManagement, maintenance.Disabled)
	put(maintenance.RecordExpiration, maintenance.Disabled)
	run(maintenance.SnapshotManagement, state.Disabled)
	run(maintenance.RecordExpiration, state.Disabled)
	if st := jobStatus(t, c)[string(maintenance.SnapshotManagement)]; st.Status != types.JobStatusDisabled {
		t.Fatalf("while disabled: %+v", st)
	}
	put(maintenance.SnapshotManagement, maintenance.Enabled)
	put(maintenance.RecordExpiration, maintenance.Enabled)
	if st := jobStatus(t, c)[string(maintenance.SnapshotManagement)]; st.Status != types.JobStatusSuccessful || st.LastRunTimestamp == nil {
		t.Fatalf("enabled again after a successful run: %+v", st)
	}
	if got := recordStatus(); got != "NotYetRun" {
		t.Fatalf("record expiration enabled again, never really run: %s", got)
	}
}

// The job status carries the latest run's cost, read loosely: figures
// without one, or with one of another shape, give none.
func TestStatusCost(t *testing.T) {
	on := maintenance.Config{Status: maintenance.Enabled}
	run := state.Run{Status: state.Successful, Finished: time.Now(),
		Metrics: []byte(`{"inputFiles":8,"cost":{"requests":12,"byKind":{"GET":10,"PUT":2},"usd":0.000014,"s3TablesUSD":0.0012}}`)}
	s := &Server{}
	got := s.status(on, run, true, maintenanceDialect).Cost
	if got == nil || got.Requests != 12 || got.ByKind["GET"] != 10 || got.S3TablesUSD != 0.0012 {
		t.Fatalf("cost %+v", got)
	}
	for i, m := range []string{``, `{}`, `{"cost":"free"}`, `not json`} {
		run.ID, run.Metrics = int64(i+1), []byte(m)
		if got := s.status(on, run, true, maintenanceDialect).Cost; got != nil {
			t.Errorf("figures %q: cost %+v, want none", m, got)
		}
	}
}
