package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/icekeeper/icekeeper/configs"
	"github.com/icekeeper/icekeeper/internal/bucket"
)

// A table dropped without a purge, from the command line: `run --dropped`
// records the drop from a listing and marks what it left, `noncurrent
// --dropped` shows it with its size, and a run past nonCurrentDays
// deletes it. Off (removeDroppedTables unset), only a dry run looks.
func TestRunDropped(t *testing.T) {
	c := newCLI(t)
	c.must("demo")
	home := c.home
	cfgFile := filepath.Join(t.TempDir(), "icekeeper.yaml")
	write := func(extra string) {
		writeHomeConfig(t, cfgFile, home, "127.0.0.1:0", "", "{}")
		data, err := os.ReadFile(cfgFile)
		if err != nil {
			t.Fatal(err)
		}
		s := strings.Replace(string(data), "    catalog:\n", extra+"    catalog:\n", 1)
		if err := os.WriteFile(cfgFile, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("")
	// A run makes the table known to the registry.
	c.must("run", "--config", cfgFile, "--table", "local/demo/events", "--job", "snapshots")

	cfg, err := configs.Load(cfgFile)
	if err != nil {
		t.Fatal(err)
	}
	reg := cfg.Registry()
	defer reg.Close()
	b, _ := reg.Bucket("local")
	cat, err := b.Catalog(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	demoID := bucket.TableID{Namespace: []string{"demo"}, Name: "events"}
	tbl, err := b.LoadTable(context.Background(), demoID)
	if err != nil {
		t.Fatal(err)
	}
	location := strings.TrimPrefix(tbl.Location(), "file://")
	if err := cat.DropTable(context.Background(), demoID.Identifier()); err != nil {
		t.Fatal(err)
	}
	at := func(d time.Duration) string { return time.Now().Add(d).UTC().Format(time.RFC3339) }

	out := c.must("run", "--config", cfgFile, "--dropped", "local", "--dry-run", "--now", at(4*24*time.Hour))
	if !strings.Contains(out, "demo.events, dropped") || !strings.Contains(out, "would mark noncurrent") {
		t.Fatalf("dry run without removeDroppedTables:\n%s", out)
	}
	if out := c.must("run", "--config", cfgFile, "--dropped", "local", "--now", at(4*24*time.Hour), "--allow-clock-shift"); !strings.Contains(out, "Disabled") {
		t.Fatalf("a real run without removeDroppedTables:\n%s", out)
	}

	write("    removeDroppedTables: true\n")
	out = c.must("run", "--config", cfgFile, "--dropped", "local", "--now", at(4*24*time.Hour), "--allow-clock-shift", "--json")
	var runs []struct {
		Status  string `json:"status"`
		Figures struct {
			Marked int `json:"marked"`
		} `json:"figures"`
	}
	if err := json.Unmarshal([]byte(out), &runs); err != nil || len(runs) != 1 || runs[0].Status != "Successful" || runs[0].Figures.Marked == 0 {
		t.Fatalf("+4d: %v\n%s", err, out)
	}
	out = c.must("noncurrent", "--config", cfgFile, "--dropped", "local")
	if !strings.Contains(out, "demo.events") || !strings.Contains(out, "DROPPED TABLE") {
		t.Fatalf("noncurrent --dropped:\n%s", out)
	}
	if _, err := os.Stat(location); err != nil {
		t.Fatalf("marked files deleted at once: %v", err)
	}
	out = c.must("run", "--config", cfgFile, "--dropped", "local", "--now", at(15*24*time.Hour), "--allow-clock-shift")
	if !strings.Contains(out, "deleted:") {
		t.Fatalf("+15d:\n%s", out)
	}
	left := 0
	filepath.WalkDir(location, func(_ string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			left++
		}
		return nil
	})
	if left != 0 {
		t.Errorf("%d files of the dropped table left under %s", left, location)
	}
	// Nothing left: the next run records it collected, and later ones
	// have nothing to look at.
	c.must("run", "--config", cfgFile, "--dropped", "local", "--now", at(16*24*time.Hour), "--allow-clock-shift")
	if out := c.must("run", "--config", cfgFile, "--dropped", "local"); !strings.Contains(out, "no table dropped from local has files left") {
		t.Errorf("after the collection:\n%s", out)
	}
}
