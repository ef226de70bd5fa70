package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/icekeeper/icekeeper/internal/health"
	"github.com/icekeeper/icekeeper/planner"
)

// tables shows the clustering score beside the health score, with the
// depth behind it, and a dash for a table without a sort order; --json
// carries the whole measure. No line is wider than a terminal.
func TestTablesShowClustering(t *testing.T) {
	deep := tableHealth{Bucket: "local", Namespace: "ns", Table: "clicks", Health: health.Health{
		Files: health.Files{DataFiles: 10, Clustering: &planner.Clustering{Columns: []string{"user_id"}, Depth: 8, DeepPartitions: 1,
			Files: 10, Overlapping: 8, Score: 20}},
		Score: health.Score{Total: 100, SmallFiles: 40, EqualityDeletes: 40, PositionDeletes: 20}}}
	unsorted := tableHealth{Bucket: "local", Namespace: "ns", Table: "logs", Health: health.Health{Score: health.Score{Total: 100}}}
	var out bytes.Buffer
	if err := printTables(&cliEnv{stdout: &out}, []tableHealth{deep, unsorted}); err != nil {
		t.Fatal(err)
	}
	// The clustering measure widens the table past a terminal: each table
	// gets a line of its own, its figures beneath.
	lines := strings.Split(out.String(), "\n")
	if lines[0] != "local/ns/clicks" || !strings.HasPrefix(lines[1], "    health 100/100, clustering 20/100 (depth 8 on user_id), 10 data files") ||
		!strings.Contains(out.String(), "\nlocal/ns/logs\n    health 100/100, clustering -,") {
		t.Fatalf("tables:\n%s", out.String())
	}
	for _, l := range lines {
		if len(l) > maxLine {
			t.Errorf("line of %d: %q", len(l), l)
		}
	}
	// Narrow enough, they are a table.
	out.Reset()
	if err := printTables(&cliEnv{stdout: &out}, []tableHealth{unsorted}); err != nil {
		t.Fatal(err)
	}
	lines = strings.Split(out.String(), "\n")
	if !strings.Contains(lines[0], "HEALTH   CLUSTERING") || !strings.Contains(lines[1], "100/100  -") {
		t.Fatalf("tables:\n%s", out.String())
	}
	js, err := json.Marshal(deep)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(js), `"clustering":{"columns":["user_id"],"depth":8,"deepPartitions":1,"files":10,"overlapping":8,"score":20}`) {
		t.Fatalf("json: %s", js)
	}
	if js, _ := json.Marshal(unsorted); strings.Contains(string(js), "clustering") {
		t.Fatalf("json of an unsorted table: %s", js)
	}
}
