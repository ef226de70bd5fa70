package jobs

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/icekeeper/icekeeper/internal/cost"
	"github.com/icekeeper/icekeeper/internal/state"
	"github.com/icekeeper/icekeeper/maintenance"
)

// testFigures are a test job's figures: Values, which it counts when
// counted is set.
type testFigures struct {
	Common
	Values  map[string]float64 `json:"values,omitempty"`
	Bytes   int64              `json:"bytes,omitempty"`
	Defer   int64              `json:"deferred,omitempty"`
	counted bool
}

func (f *testFigures) Counters() map[string]float64 {
	if !f.counted {
		return nil
	}
	return f.Values
}
func (*testFigures) Text() string { return "" }

// define is the definition of test job type typ, which runs run: its
// figures start empty, it has no settings of its own and none of the
// optional behaviours.
func define(typ maintenance.JobType, run func(ctx context.Context, r *Run[struct{}], fig *testFigures) error) *Definition[struct{}, *testFigures] {
	return &Definition[struct{}, *testFigures]{
		Name:     typ,
		Settings: func(maintenance.Settings) (struct{}, error) { return struct{}{}, nil },
		Figures:  func(struct{}, Options) *testFigures { return &testFigures{} },
		Run:      run,
	}
}

// Every counter is there before any run, at 0, so an alert on its rate
// sees a series; a run adds to its own counters only, and each table's
// last success is a gauge an alert can compare with time().
func TestMetrics(t *testing.T) {
	ctx := context.Background()
	store, err := state.Open(ctx, "sqlite://"+filepath.Join(t.TempDir(), "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	reg := prometheus.NewPedanticRegistry()
	m := NewMetrics(reg, store)
	for _, name := range counterMetrics() {
		if n, err := testutil.GatherAndCount(reg, name); err != nil || n != 1 {
			t.Errorf("%s: %d series before any run, %v", name, n, err)
		}
	}
	if n, _ := testutil.GatherAndCount(reg, "icekeeper_job_runs_total"); n != len(maintenance.JobTypes())*4 {
		t.Errorf("icekeeper_job_runs_total has %d series before any run, want %d", n, len(maintenance.JobTypes())*4)
	}

	key := state.TableKey{Bucket: "arn:aws:s3tables:us-east-1:1:bucket/b", Namespace: "db", Name: "t"}
	finished := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	run := state.Run{Table: key, Type: maintenance.Compaction, Trigger: "test", Started: finished.Add(-time.Second)}
	if run.ID, err = store.StartRun(ctx, run); err != nil {
		t.Fatal(err)
	}
	run.Finished, run.Status = finished, state.Successful
	if err := store.FinishRun(ctx, run); err != nil {
		t.Fatal(err)
	}
	marked := []state.Mark{{Table: key, Path: "s3://b/t/a", MarkedAt: finished.Add(-48 * time.Hour)}, {Table: key, Path: "s3://b/t/b", MarkedAt: finished},
		{Table: key, Path: "s3://b/t/c", MarkedAt: finished.Add(-72 * time.Hour)}}
	if err := store.PutMarks(ctx, marked); err != nil {
		t.Fatal(err)
	}
	if _, err := store.ProtectMarks(ctx, key, []string{"s3://b/t/c"}, finished); err != nil {
		t.Fatal(err)
	}
	spent := &cost.Figures{Requests: 12, ByKind: map[string]int64{"GET": 10, "PUT": 2}, ProcessedObjects: 7, ProcessedBytes: 1000,
		USD: 0.00001, S3TablesUSD: 0.00002}
	m.Observe(run, Outcome{Status: state.Successful, Figures: &testFigures{Common: Common{Cost: spent},
		Values: map[string]float64{"bytes_compacted": 1000, "files_compacted": 7}, counted: true}})

	want := `
# HELP icekeeper_compaction_input_bytes_total Sum of bytes_compacted over all runs.
# TYPE icekeeper_compaction_input_bytes_total counter
icekeeper_compaction_input_bytes_total 1000
# HELP icekeeper_compaction_input_files_total Sum of files_compacted over all runs.
# TYPE icekeeper_compaction_input_files_total counter
icekeeper_compaction_input_files_total 7
# HELP icekeeper_deleted_bytes_total Sum of bytes_deleted over all runs.
# TYPE icekeeper_deleted_bytes_total counter
icekeeper_deleted_bytes_total 0
# HELP icekeeper_table_last_success_timestamp_seconds When the last successful run of a job type on the table finished.
# TYPE icekeeper_table_last_success_timestamp_seconds gauge
icekeeper_table_last_success_timestamp_seconds{bucket="arn:aws:s3tables:us-east-1:1:bucket/b",job="icebergCompaction",namespace="db",table="t"} ` + fmt.Sprint(finished.Unix()) + `
# HELP icekeeper_table_noncurrent_objects Objects marked noncurrent and not protected, awaiting deletion.
# TYPE icekeeper_table_noncurrent_objects gauge
icekeeper_table_noncurrent_objects{bucket="arn:aws:s3tables:us-east-1:1:bucket/b",namespace="db",table="t"} 2
# HELP icekeeper_table_oldest_noncurrent_mark_timestamp_seconds When the table's oldest unprotected noncurrent mark was made.
# TYPE icekeeper_table_oldest_noncurrent_mark_timestamp_seconds gauge
icekeeper_table_oldest_noncurrent_mark_timestamp_seconds{bucket="arn:aws:s3tables:us-east-1:1:bucket/b",namespace="db",table="t"} ` + fmt.Sprint(finished.Add(-48*time.Hour).Unix()) + `
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "icekeeper_compaction_input_bytes_total",
		"icekeeper_compaction_input_files_total", "icekeeper_deleted_bytes_total", "icekeeper_table_last_success_timestamp_seconds",
		"icekeeper_table_noncurrent_objects", "icekeeper_table_oldest_noncurrent_mark_timestamp_seconds"); err != nil {
		t.Fatal(err)
	}
	if got := testutil.ToFloat64(m.runs.WithLabelValues(string(maintenance.Compaction), string(state.Successful))); got != 1 {
		t.Fatalf("successful compaction runs = %v", got)
	}
	// What the run cost, by job type.
	job := string(maintenance.Compaction)
	for _, c := range []struct {
		name string
		got  prometheus.Collector
		want float64
	}{
		{"bytes processed", m.bytesProcessed.WithLabelValues(job), 1000},
		{"objects processed", m.objectsProcessed.WithLabelValues(job), 7},
		{"GET requests", m.requests.WithLabelValues(job, "GET"), 10},
		{"PUT requests", m.requests.WithLabelValues(job, "PUT"), 2},
		{"requests' price", m.spent.WithLabelValues(job, "requests"), 0.00001},
		{"S3 Tables' price", m.spent.WithLabelValues(job, "s3tables"), 0.00002},
	} {
		if got := testutil.ToFloat64(c.got); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}
