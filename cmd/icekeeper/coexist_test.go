package main

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/icekeeper/icekeeper/internal/flinklock"
)

// `icekeeper run` on a bucket with coexistence.flinkLock honours the lock
// a Flink job holds in the configured database: compaction is Skipped,
// naming the holder, exit 0, the table untouched; once Flink releases it,
// the run takes and releases it. The lock ID is the default template,
// Flink's Table.name() of the table: local.demo.events.
func TestRunHonoursFlinkLock(t *testing.T) {
	c := newCLI(t)
	c.must("demo")
	locks := filepath.Join(c.home, "flink-locks.db")
	config := filepath.Join(c.home, "icekeeper.yaml")
	if err := os.WriteFile(config, []byte(fmt.Sprintf(`state: sqlite://%[1]s/state.db
buckets:
  - arn: arn:aws:s3tables:local:000000000000:bucket/local
    catalog: {type: sql, uri: "file:%[1]s/catalog.db", sql.driver: sqlite, sql.dialect: sqlite, warehouse: "file://%[1]s/warehouse"}
    coexistence:
      flinkLock: {database: "sqlite://%[2]s"}
`, c.home, locks)), 0o644); err != nil {
		t.Fatal(err)
	}
	// The Flink job creates the table and takes its lock, in its own SQL.
	l, err := flinklock.Open(context.Background(), "sqlite://"+locks)
	if err != nil {
		t.Fatal(err)
	}
	l.Close()
	db, err := sql.Open("sqlite", locks)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	flink := flinklock.NewInstanceID()
	if _, err := db.Exec(`INSERT INTO flink_maintenance_lock (LOCK_TYPE, LOCK_ID, INSTANCE_ID) VALUES ('m', 'local.demo.events', ?)`, flink); err != nil {
		t.Fatal(err)
	}
	// The table's current metadata file, as the SQL catalog records it.
	catalog, err := sql.Open("sqlite", filepath.Join(c.home, "catalog.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer catalog.Close()
	current := func() string {
		t.Helper()
		var loc string
		if err := catalog.QueryRow(`SELECT metadata_location FROM iceberg_tables WHERE table_namespace = 'demo' AND table_name = 'events'`).Scan(&loc); err != nil {
			t.Fatal(err)
		}
		return loc
	}
	before := current()
	out := c.must("run", "--config", config, "--table", "local/demo/events", "--job", "compaction")
	// The message folds to fit a terminal: its words are what counts.
	if !strings.Contains(strings.Join(strings.Fields(out), " "), "icebergCompaction: Skipped — another maintainer: Flink's maintenance lock \"local.demo.events\" is held by instance "+flink) {
		t.Fatalf("run under Flink's lock:\n%s", out)
	}
	if after := current(); after != before {
		t.Fatalf("the table changed under Flink's lock: metadata %s, then %s", before, after)
	}
	if _, err := db.Exec(`DELETE FROM flink_maintenance_lock WHERE LOCK_TYPE = 'm' AND LOCK_ID = 'local.demo.events' AND INSTANCE_ID = ?`, flink); err != nil {
		t.Fatal(err)
	}
	out = c.must("run", "--config", config, "--table", "local/demo/events", "--job", "compaction")
	if !strings.Contains(out, "icebergCompaction: Successful") || current() == before {
		t.Fatalf("run with the lock free did not compact:\n%s", out)
	}
	var rows int
	if err := db.QueryRow(`SELECT COUNT(*) FROM flink_maintenance_lock`).Scan(&rows); err != nil || rows != 0 {
		t.Fatalf("%d lock rows after the run (%v), want 0", rows, err)
	}
}
