package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3tables"
	"github.com/aws/aws-sdk-go-v2/service/s3tables/types"

	"github.com/icekeeper/icekeeper/configs"
	"github.com/icekeeper/icekeeper/internal/testkit"
	"github.com/icekeeper/icekeeper/internal/testkit/servers"
	"github.com/icekeeper/icekeeper/status"
)

// The demo dropped and created again under its name (`demo --reset`, as a
// dbt full refresh does) while the daemon runs: the first event about the
// new table makes it a table of its own. It inherits none of the dropped
// table's runs, settings or marks; its compaction lag counts its own small
// files, so the event queues its compaction at once (the dropped table's
// higher sequence numbers made every new snapshot look handled, and
// compaction waited for its cron fire); the dropped table's runs stay
// readable as its own.
func TestServeDropAndCreate(t *testing.T) {
	c := newCLI(t)
	c.must("demo")
	home := c.home
	cfgFile := filepath.Join(t.TempDir(), "icekeeper.yaml")
	addr := servers.FreeAddr(t)
	const token = "lifecycle-event-token-0123456789"
	// No schedule fires during the test: what runs, an event queues.
	never := `"0 0 1 1 *"`
	cfg := fmt.Sprintf(`listen: %s
state: sqlite://%s
events:
  tokens: [%q]
  debounce: 100ms
buckets:
  - arn: %s
    freshnessTarget: 2m
    catalog:
      type: sql
      uri: "file:%s?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_txlock=immediate"
      warehouse: file://%s
schedules: {icebergCompaction: %s, icebergSnapshotManagement: %s, icebergUnreferencedFileRemoval: %s, icebergRecordExpiration: %s}
`, addr, filepath.Join(home, "state.db"), token, configs.LocalBucketARN, filepath.Join(home, "catalog.db"), filepath.Join(home, "warehouse"),
		never, never, never, never)
	if err := os.WriteFile(cfgFile, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	// The dropped table's history: a compaction and a removal run, a
	// setting put through the API.
	c.must("run", "--config", cfgFile, "--table", "local/demo/events", "--job", "compaction")
	c.must("run", "--config", cfgFile, "--table", "local/demo/events", "--job", "unreferenced")

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int)
	var logs testkit.LogBuffer
	go func() {
		done <- Main(ctx, []string{"serve", "--config", cfgFile, "--shutdown-grace", "10s", "--log-level", "debug"}, io.Discard, &logs)
	}()
	defer func() {
		cancel()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			t.Error("serve did not stop within its grace period")
		}
	}()
	sdk := s3tables.New(s3tables.Options{BaseEndpoint: aws.String("http://" + addr), Region: "us-east-1",
		Credentials: credentials.NewStaticCredentialsProvider("k", "s", "")})
	table := func() (*string, *string, *string) {
		return aws.String(configs.LocalBucketARN), aws.String("demo"), aws.String("events")
	}
	jobStatus := func() map[string]types.TableMaintenanceJobStatusValue {
		t.Helper()
		arn, ns, name := table()
		out, err := sdk.GetTableMaintenanceJobStatus(context.Background(), &s3tables.GetTableMaintenanceJobStatusInput{TableBucketARN: arn, Namespace: ns, Name: name})
		if err != nil {
			t.Fatalf("job status: %v\nlogs:\n%s", err, logs.String())
		}
		return out.Status
	}
	var before map[string]types.TableMaintenanceJobStatusValue
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if _, err := http.Get("http://" + addr + "/readyz"); err == nil {
			if before = jobStatus(); before[string(types.TableMaintenanceJobTypeIcebergCompaction)].Status == types.JobStatusSuccessful {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the daemon never showed the compaction run: %v\nlogs:\n%s", before, logs.String())
		}
	}
	// The daemon must be quiet before the reset: a check that loaded the
	// new table half made (before the demo backdates its history) would
	// queue its compaction a minute out, as for fresh work, and hold the
	// event's check off until then. Its first check of the table queues
	// what the old table needs (snapshot management, at once), and that
	// run's end checks the table again, at the scheduler's next tick (a
	// second) after the debounce; quiet is nothing queued or running at
	// both ends of 2.5 s without a check, after the first. (With the
	// queue looked at only at the end, a window that began while that
	// run was still going passed as quiet, and its end's check met the
	// reset.)
	checked := fmt.Sprintf(`"msg":"freshness checked","table":%q`, configs.LocalBucketARN+"/demo/events")
	queueEmpty := func() bool {
		resp, err := http.Get("http://" + addr + "/icekeeper/v1/queue")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var q struct {
			Queue []json.RawMessage `json:"queue"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&q); err != nil {
			t.Fatal(err)
		}
		return len(q.Queue) == 0
	}
	for deadline := time.Now().Add(60 * time.Second); ; {
		n, empty := strings.Count(logs.String(), checked), queueEmpty()
		time.Sleep(2500 * time.Millisecond)
		if n > 0 && empty && strings.Count(logs.String(), checked) == n && queueEmpty() {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the daemon never went quiet\nlogs:\n%s", logs.String())
		}
	}
	arn, ns, name := table()
	if _, err := sdk.PutTableMaintenanceConfiguration(context.Background(), &s3tables.PutTableMaintenanceConfigurationInput{
		TableBucketARN: arn, Namespace: ns, Name: name, Type: types.TableMaintenanceTypeIcebergSnapshotManagement,
		Value: &types.TableMaintenanceConfigurationValue{Status: types.MaintenanceStatusEnabled,
			Settings: &types.TableMaintenanceSettingsMemberIcebergSnapshotManagement{Value: types.IcebergSnapshotManagementSettings{
				MinSnapshotsToKeep: aws.Int32(7), MaxSnapshotAgeHours: aws.Int32(240)}}}}); err != nil {
		t.Fatal(err)
	}

	reset := time.Now()
	c.must("demo", "--reset")
	event := `{"specversion":"1.0","id":"1","source":"test","type":"icekeeper.table.changed","data":{"namespace":["demo"],"name":"events"}}`
	req, _ := http.NewRequest(http.MethodPost, "http://"+addr+status.EventsPath, strings.NewReader(event))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/cloudevents+json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("event: %s", resp.Status)
	}

	// The event's check queues the new table's compaction, whose run is
	// the new table's first.
	compaction := string(types.TableMaintenanceJobTypeIcebergCompaction)
	var after map[string]types.TableMaintenanceJobStatusValue
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		after = jobStatus()
		if v := after[compaction]; v.Status == types.JobStatusSuccessful && v.LastRunTimestamp != nil && v.LastRunTimestamp.After(reset) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the event did not run the new table's compaction: %+v\nlogs:\n%s", after[compaction], logs.String())
		}
	}
	// Removal ran only on the dropped table: the new one has not run it.
	if v := after[string(types.TableMaintenanceJobTypeIcebergUnreferencedFileRemoval)]; v.Status != types.JobStatusNotYetRun {
		t.Errorf("removal of the new table: %s at %v, want Not_Yet_Run", v.Status, v.LastRunTimestamp)
	}
	cfgOut, err := sdk.GetTableMaintenanceConfiguration(context.Background(), &s3tables.GetTableMaintenanceConfigurationInput{TableBucketARN: arn, Namespace: ns, Name: name})
	if err != nil {
		t.Fatal(err)
	}
	sm := cfgOut.Configuration[string(types.TableMaintenanceTypeIcebergSnapshotManagement)]
	if s, ok := sm.Settings.(*types.TableMaintenanceSettingsMemberIcebergSnapshotManagement); !ok || aws.ToInt32(s.Value.MinSnapshotsToKeep) != 1 {
		t.Errorf("snapshot management of the new table: %+v, want the default (the dropped table's 7 not inherited)", sm.Settings)
	}

	// The dropped table, with its runs and settings, as its own.
	resp, err = http.Get("http://" + addr + "/icekeeper/v1/buckets/" + strings.ReplaceAll(configs.LocalBucketARN, "/", "%2F") + "/dropped-tables")
	if err != nil {
		t.Fatal(err)
	}
	var dropped struct {
		Tables []struct {
			Name      string                     `json:"name"`
			TableUUID string                     `json:"tableUUID"`
			DroppedAt time.Time                  `json:"droppedAt"`
			Runs      map[string]json.RawMessage `json:"runs"`
			Config    map[string]json.RawMessage `json:"configuration"`
		} `json:"tables"`
	}
	err = json.NewDecoder(resp.Body).Decode(&dropped)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	// Its runs: the two one-shot runs, and the snapshot management the
	// daemon's first check queued for it.
	if len(dropped.Tables) != 1 || dropped.Tables[0].Name != "events" || len(dropped.Tables[0].Runs) != 3 || dropped.Tables[0].DroppedAt.Before(reset) ||
		dropped.Tables[0].Runs[compaction] == nil || dropped.Tables[0].Runs[string(types.TableMaintenanceJobTypeIcebergUnreferencedFileRemoval)] == nil ||
		dropped.Tables[0].Runs[string(types.TableMaintenanceJobTypeIcebergSnapshotManagement)] == nil ||
		!strings.Contains(string(dropped.Tables[0].Config[string(types.TableMaintenanceTypeIcebergSnapshotManagement)]), `"minSnapshotsToKeep":7`) {
		t.Fatalf("dropped tables: %+v, want the old demo table with its three runs and its setting", dropped)
	}
}
