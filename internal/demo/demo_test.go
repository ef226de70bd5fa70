package demo

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/icekeeper/icekeeper/configs"
	"github.com/icekeeper/icekeeper/internal/bucket"
	"github.com/icekeeper/icekeeper/internal/testkit/tablecheck"
)

func TestCreate(t *testing.T) {
	ctx := context.Background()
	home := t.TempDir()
	reg := configs.Embedded(home).Registry()
	defer reg.Close()
	b, err := reg.Bucket("local")
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	res, err := Create(ctx, b, Options{Now: now})
	if err != nil {
		t.Fatal(err)
	}
	if res.DataFiles < 200 || res.Snapshots < 20 || len(res.StrayFiles) != 3 {
		t.Fatalf("demo too small: %+v", res)
	}

	tbl, err := b.LoadTable(ctx, bucket.TableID{Namespace: []string{Namespace}, Name: Table})
	if err != nil {
		t.Fatal(err)
	}
	// The history is spread over the last weeks.
	snaps := tbl.Metadata().Snapshots()
	oldest, newest := snaps[0].TimestampMs, snaps[len(snaps)-1].TimestampMs
	if age := now.Sub(time.UnixMilli(oldest)); age < 14*24*time.Hour {
		t.Errorf("oldest snapshot is only %v old", age)
	}
	if newest > now.UnixMilli() {
		t.Errorf("newest snapshot is in the future")
	}
	// Both kinds of row-level delete exist and apply.
	tasks, err := tbl.Scan().PlanFiles(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var pos, eq int
	for _, task := range tasks {
		pos += len(task.DeleteFiles)
		eq += len(task.EqualityDeleteFiles)
	}
	if pos == 0 || eq == 0 {
		t.Errorf("position deletes on %d tasks, equality deletes on %d; want both", pos, eq)
	}
	fp, err := tablecheck.Rows(ctx, tbl, 0)
	if err != nil {
		t.Fatal(err)
	}
	if fp.Rows >= res.Rows || fp.Rows == 0 {
		t.Errorf("visible rows %d, written %d: deletes did not apply", fp.Rows, res.Rows)
	}
	// Time travel to the first snapshot still works after backdating.
	if _, err := tablecheck.Rows(ctx, tbl, snaps[0].SnapshotID); err != nil {
		t.Errorf("time travel: %v", err)
	}
	// Strays are unreferenced and a week old.
	for _, s := range res.StrayFiles {
		st, err := os.Stat(strings.TrimPrefix(s, "file://"))
		if err != nil {
			t.Fatal(err)
		}
		if now.Sub(st.ModTime()) < 7*24*time.Hour {
			t.Errorf("stray %s is only %v old", s, now.Sub(st.ModTime()))
		}
	}

	// A second run does not duplicate; --reset starts over.
	if _, err := Create(ctx, b, Options{}); !errors.Is(err, ErrExists) {
		t.Fatalf("second Create: %v, want ErrExists", err)
	}
	res2, err := Create(ctx, b, Options{Reset: true, Appends: 25, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	tbl2, err := b.LoadTable(ctx, bucket.TableID{Namespace: []string{Namespace}, Name: Table})
	if err != nil {
		t.Fatal(err)
	}
	if got := len(tbl2.Metadata().Snapshots()); got != res2.Snapshots || got != 27 {
		t.Errorf("after reset: %d snapshots, want 27", got)
	}
	if _, err := os.Stat(strings.TrimPrefix(res.StrayFiles[0], "file://")); !os.IsNotExist(err) {
		t.Errorf("reset left the old table's files: %v", err)
	}
}
