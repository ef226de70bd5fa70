package main

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// run --json prints valid JSON in which object names read exactly as they
// are, whatever they hold, and credentials are masked.
func TestRunJSONKeepsNames(t *testing.T) {
	names := []string{`s3://b/ns/t/data/q"uote.parquet`, `s3://b/ns/t/data/caf\u00e9`, "s3://b/ns/t/data/café-日本 100%.parquet"}
	results := map[string]any{"icebergCompaction": map[string]any{
		"status":  "Successful",
		"figures": map[string]any{"files": names, "source": "https://h/o?X-Amz-Signature=s1gn&a=1"},
	}}
	var out bytes.Buffer
	if err := writeJSON(&out, results); err != nil {
		t.Fatal(err)
	}
	var back struct {
		Compaction struct {
			Figures struct {
				Files  []string `json:"files"`
				Source string   `json:"source"`
			} `json:"figures"`
		} `json:"icebergCompaction"`
	}
	if err := json.Unmarshal(out.Bytes(), &back); err != nil {
		t.Fatalf("invalid JSON: %v\n%s", err, out.String())
	}
	if !reflect.DeepEqual(back.Compaction.Figures.Files, names) {
		t.Errorf("names %q, want %q", back.Compaction.Figures.Files, names)
	}
	if got := back.Compaction.Figures.Source; got != "https://h/o?X-Amz-Signature=***&a=1" {
		t.Errorf("source %q", got)
	}
	if strings.Contains(out.String(), "s1gn") || !strings.Contains(out.String(), "\n  \"icebergCompaction\": {") {
		t.Errorf("output:\n%s", out.String())
	}
}
