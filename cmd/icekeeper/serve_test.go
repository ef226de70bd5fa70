package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3tables"
	"github.com/aws/aws-sdk-go-v2/service/s3tables/types"

	"github.com/icekeeper/icekeeper/configs"
	"github.com/icekeeper/icekeeper/internal/testkit/servers"
	"github.com/icekeeper/icekeeper/jobs"
	"github.com/icekeeper/icekeeper/maintenance"
)

// writeHomeConfig writes a configuration file for the embedded layout in
// home (so a daemon can be given its own listen address and schedules),
// with optional bucket maintenance defaults.
func writeHomeConfig(t *testing.T, file, home, listen, maintenance, schedules string) {
	t.Helper()
	if maintenance != "" {
		maintenance = "\n    maintenance: " + maintenance
	}
	cfg := fmt.Sprintf(`listen: %s
state: sqlite://%s
buckets:
  - arn: %s
    catalog:
      type: sql
      uri: "file:%s?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_txlock=immediate"
      warehouse: file://%s%s
schedules: %s
`, listen, filepath.Join(home, "state.db"), configs.LocalBucketARN, filepath.Join(home, "catalog.db"), filepath.Join(home, "warehouse"), maintenance, schedules)
	if err := os.WriteFile(file, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
}

// The daemon on the demo with one-second schedules: every job type runs by
// its schedule, the SDK sees Successful runs with timestamps, `status`
// prints them, metrics count them, and SIGTERM (ctx) stops it cleanly.
func TestServeRunsSchedules(t *testing.T) {
	c := newCLI(t)
	c.must("demo")
	home := c.home
	cfgFile := filepath.Join(t.TempDir(), "icekeeper.yaml")
	addr := servers.FreeAddr(t)
	writeHomeConfig(t, cfgFile, home, addr, `{icebergRecordExpiration: {status: enabled, days: 14}}`,
		`{icebergCompaction: "@every 1s", icebergSnapshotManagement: "@every 1s", icebergUnreferencedFileRemoval: "@every 1s", icebergRecordExpiration: "@every 1s"}`)

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int)
	var logs bytes.Buffer
	go func() {
		done <- Main(ctx, []string{"serve", "--config", cfgFile, "--shutdown-grace", "10s"}, io.Discard, &logs)
	}()
	defer func() {
		cancel()
		select {
		case code := <-done:
			if code != 0 {
				t.Errorf("serve exited %d", code)
			}
		case <-time.After(30 * time.Second):
			t.Error("serve did not stop within its grace period")
		}
	}()

	sdk := s3tables.New(s3tables.Options{BaseEndpoint: aws.String("http://" + addr), Region: "us-east-1",
		Credentials: credentials.NewStaticCredentialsProvider("k", "s", "")})
	deadline := time.Now().Add(90 * time.Second)
	var st map[string]types.TableMaintenanceJobStatusValue
	for time.Now().Before(deadline) {
		out, err := sdk.GetTableMaintenanceJobStatus(context.Background(), &s3tables.GetTableMaintenanceJobStatusInput{
			TableBucketARN: aws.String(configs.LocalBucketARN), Namespace: aws.String("demo"), Name: aws.String("events")})
		if err == nil {
			st = out.Status
			done := 0
			for _, v := range st {
				if v.Status == types.JobStatusSuccessful && v.LastRunTimestamp != nil {
					done++
				}
			}
			if done == 3 {
				break
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	for typ, v := range st {
		if typ == string(maintenance.Erasure) || typ == string(maintenance.Statistics) {
			// Off until asked for.
			if v.Status != types.JobStatusDisabled {
				t.Errorf("%s: %s, want Disabled", typ, v.Status)
			}
			continue
		}
		if v.Status != types.JobStatusSuccessful {
			t.Fatalf("%s: %s %s\nlogs:\n%s", typ, v.Status, aws.ToString(v.FailureMessage), logs.String())
		}
	}
	if len(st) != 5 {
		t.Fatalf("status %v\nlogs:\n%s", st, logs.String())
	}

	code, out, errOut := c.run("status", "--endpoint", "http://"+addr, "--table", "local/demo/events")
	// The scheduler's trigger: "catch-up" when a loaded machine let a
	// fire pass before the one that ran.
	if code != 0 || !strings.Contains(out, "icebergCompaction") || !strings.Contains(out, "Successful") ||
		!strings.Contains(out, "schedule") && !strings.Contains(out, "catch-up") {
		t.Fatalf("status: %d\n%s\n%s", code, out, errOut)
	}
	// Record expiration's counters reach /metrics once a run removed
	// rows (the demo's rows span three weeks; 14 days expire some).
	var body []byte
	for {
		resp, err := http.Get("http://" + addr + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		body, _ = io.ReadAll(resp.Body)
		resp.Body.Close()
		if counterAbove0(string(body), "icekeeper_expired_records_total") && counterAbove0(string(body), "icekeeper_expired_record_files_total") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("record expiration's counters stayed at 0:\n%s\nlogs:\n%s", body, logs.String())
		}
		time.Sleep(200 * time.Millisecond)
	}
	demoLabels := `bucket="` + configs.LocalBucketARN + `",namespace="demo",table="events"`
	for _, m := range []string{`icekeeper_job_runs_total{job="icebergCompaction",status="Successful"}`, "icekeeper_queue_depth",
		`icekeeper_table_last_success_timestamp_seconds{bucket="` + configs.LocalBucketARN + `",job="icebergCompaction",namespace="demo",table="events"}`,
		`icekeeper_table_data_files{` + demoLabels + `}`, `icekeeper_table_small_files{` + demoLabels + `}`,
		`icekeeper_budget_rewrite_bytes_limit{scope="daemon"} 0`, `icekeeper_budget_rewrite_bytes_used{scope="daemon"}`} {
		if !strings.Contains(string(body), m) {
			t.Fatalf("metrics lack %s:\n%s", m, body)
		}
	}
	// The run compacted: the bytes counter moved off its 0.
	if strings.Contains(string(body), "icekeeper_compaction_input_bytes_total 0\n") {
		t.Fatalf("no compacted bytes counted:\n%s", body)
	}
	resp, err := http.Get("http://" + addr + "/icekeeper/v1/tables/" + strings.ReplaceAll(configs.LocalBucketARN, "/", "%2F") + "/demo/events/schedule")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("schedule: %v %v", resp, err)
	}
	resp.Body.Close()
	// Without limits, the queue route still shows what compaction
	// rewrote in the last hour, from the ledger.
	resp, err = http.Get("http://" + addr + "/icekeeper/v1/queue")
	if err != nil {
		t.Fatal(err)
	}
	var q struct {
		Budgets []jobs.BudgetUse `json:"budgets"`
	}
	err = json.NewDecoder(resp.Body).Decode(&q)
	resp.Body.Close()
	if err != nil || resp.StatusCode != 200 || len(q.Budgets) != 1 || q.Budgets[0].Scope != jobs.DaemonScope || q.Budgets[0].Used <= 0 || q.Budgets[0].BytesPerHour != 0 {
		t.Fatalf("queue: %d %+v %v", resp.StatusCode, q, err)
	}
}

// counterAbove0 reports whether the exposition text has the unlabelled
// counter name at a value above 0.
func counterAbove0(exposition, name string) bool {
	for _, line := range strings.Split(exposition, "\n") {
		if v, ok := strings.CutPrefix(line, name+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			return err == nil && f > 0
		}
	}
	return false
}
