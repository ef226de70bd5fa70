package main

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/icekeeper/icekeeper/internal/testkit/servers"
	"github.com/icekeeper/icekeeper/maintenance"
)

// snapshotDir lists every file under dir with its size and modification
// time: what check must leave as it found it.
func snapshotDir(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		fmt.Fprintf(&b, "%s %d %s\n", p, info.Size(), info.ModTime().Format(time.RFC3339Nano))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// check runs offline on every example in configs/: each is valid, is
// printed with its credentials masked, and nothing in the directory (or
// the home) is created or changed.
func TestCheckExamplesOffline(t *testing.T) {
	c := newCLI(t)
	const secret = "s3cr3t-v4lue-never-printed"
	for _, name := range []string{"AWS_SECRET_ACCESS_KEY", "ALIBABA_CLOUD_ACCESS_KEY_SECRET", "PGPASSWORD", "S3_SECRET_ACCESS_KEY"} {
		t.Setenv(name, secret)
	}
	for _, name := range []string{"AWS_ACCESS_KEY_ID", "ALIBABA_CLOUD_ACCESS_KEY_ID", "S3_ACCESS_KEY_ID"} {
		t.Setenv(name, "AKIDEXAMPLE")
	}
	dir := filepath.Join("..", "..", "configs")
	examples, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil || len(examples) < 6 {
		t.Fatalf("examples: %v %v", examples, err)
	}
	before, home := snapshotDir(t, dir), snapshotDir(t, c.home)
	for _, f := range examples {
		out := c.must("check", "--config", f)
		if !strings.Contains(out, "configuration "+f+": valid") || !strings.Contains(out, "icebergCompaction") {
			t.Errorf("check %s:\n%s", f, out)
		}
		if strings.Contains(out, secret) {
			t.Errorf("check %s printed a secret:\n%s", f, out)
		}
	}
	if after := snapshotDir(t, dir); after != before {
		t.Errorf("check changed configs/:\nbefore:\n%s\nafter:\n%s", before, after)
	}
	if after := snapshotDir(t, c.home); after != home {
		t.Errorf("check changed the home:\n%s", after)
	}
	// The embedded default, before demo created it: shown, not created.
	if out := c.must("check"); !strings.Contains(out, "configuration the embedded default: valid") {
		t.Errorf("check on the embedded default:\n%s", out)
	}
	if code, _, errOut := c.run("check", "--connect"); code != exitUsage || !strings.Contains(errOut, "icekeeper demo") {
		t.Errorf("check --connect before demo: exit %d, %s", code, errOut)
	}
	if after := snapshotDir(t, c.home); after != home {
		t.Errorf("check created the embedded default:\n%s", after)
	}
}

// A misspelt property exits 2 naming it and the key meant, for each
// catalog type, before anything is reached.
func TestCheckMisspeltProperty(t *testing.T) {
	c := newCLI(t)
	dir := t.TempDir()
	for typ, catalog := range map[string]string{
		"sql":  `{type: sql, uri: "file:x.db", s3.endpiont: "http://127.0.0.1:1"}`,
		"rest": `{type: rest, uri: "http://127.0.0.1:1", s3.endpiont: "http://127.0.0.1:1"}`,
		"glue": `{type: glue, s3.endpiont: "http://127.0.0.1:1"}`,
		"hive": `{type: hive, uri: "thrift://127.0.0.1:1", s3.endpiont: "http://127.0.0.1:1"}`,
	} {
		cfg := filepath.Join(dir, typ+".yaml")
		os.WriteFile(cfg, []byte("state: sqlite://state.db\nbuckets:\n  - arn: arn:aws:s3tables:us-east-1:1:bucket/bkt\n    catalog: "+catalog+"\n"), 0o644)
		for _, cmd := range []string{"check", "tables"} {
			code, _, errOut := c.run(cmd, "--config", cfg)
			if code != exitUsage || !strings.Contains(errOut, "buckets[0].catalog.s3.endpiont: unknown property for a "+typ+" catalog (did you mean s3.endpoint?)") {
				t.Errorf("%s on a %s catalog: exit %d, stderr %q", cmd, typ, code, errOut)
			}
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 4 {
		t.Errorf("a rejected configuration left files behind: %v", entries)
	}
}

// check --connect reaches the state store, each catalog and its storage:
// ok on the demo, and on a configuration whose catalog is down one
// failed line naming the endpoint, exit 1, and no store created.
func TestCheckConnect(t *testing.T) {
	c := newCLI(t)
	c.must("demo")
	c.must("noncurrent", "--table", "local/demo/events") // creates the store
	out := c.must("check", "--connect")
	for _, want := range []string{"state store", "ok: reached, schema version", "bucket local catalog", "ok: 1 tables", "bucket local storage", "ok: file://"} {
		if !strings.Contains(out, want) {
			t.Errorf("check --connect on the demo lacks %q:\n%s", want, out)
		}
	}

	dir := t.TempDir()
	cfg := filepath.Join(dir, "down.yaml")
	os.WriteFile(cfg, []byte(fmt.Sprintf(`state: sqlite://state.db
buckets:
  - arn: arn:aws:s3tables:us-east-1:1:bucket/down
    catalog: {type: rest, uri: "http://%s/iceberg"}
`, servers.RefusedAddr)), 0o644)
	code, out, _ := c.run("check", "--config", cfg, "--connect", "--connect-timeout", "5s")
	if code != exitFailed || !strings.Contains(out, "bucket down catalog") || !strings.Contains(out, "FAILED") || !strings.Contains(out, servers.RefusedAddr) {
		t.Errorf("check --connect on a catalog that is down: exit %d\n%s", code, out)
	}
	if !strings.Contains(out, "not created yet") {
		t.Errorf("check --connect does not say the store is not created:\n%s", out)
	}
	// Neither check nor a command the catalog refused created the store.
	c.run("tables", "--config", cfg, "--connect-timeout", "5s")
	c.run("run", "--config", cfg, "--table", "down/db/t", "--connect-timeout", "5s")
	if _, err := os.Stat(filepath.Join(dir, "state.db")); err == nil {
		t.Error("a state store was created for a catalog that was never reached")
	}
}

// Two buckets under two catalog names of one catalog database, and a
// third whose warehouse lies inside theirs, are a valid configuration:
// check says they are one reference domain and why, names no bucket
// apart from them, and exits 0.
func TestCheckNamesReferenceDomain(t *testing.T) {
	c := newCLI(t)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "domain.yaml")
	os.WriteFile(cfg, []byte(fmt.Sprintf(`state: sqlite://state.db
buckets:
  - arn: arn:aws:s3tables:us-east-1:1:bucket/team1
    catalogName: team1
    catalog: {type: sql, uri: "file:%[1]s/catalog.db?mode=rwc", warehouse: "file://%[1]s/wh"}
  - arn: arn:aws:s3tables:us-east-1:1:bucket/apart
    catalog: {type: sql, uri: "file:%[1]s/apart.db", warehouse: "file://%[1]s/wh-apart"}
  - arn: arn:aws:s3tables:us-east-1:1:bucket/team2
    catalogName: team2
    catalog: {type: sql, uri: "file:%[1]s/./catalog.db?_pragma=busy_timeout(5000)", warehouse: "file://%[1]s/wh/"}
  - arn: arn:aws:s3tables:us-east-1:1:bucket/inside
    readOnly: true
    catalog: {type: sql, uri: "postgres://u:hunter2@db.example/inside", warehouse: "%[1]s/wh/inside"}
`, dir)), 0o644)
	code, out, errOut := c.run("check", "--config", cfg)
	if code != 0 {
		t.Fatalf("check: exit %d, %s", code, errOut)
	}
	for _, want := range []string{
		"buckets team1, team2, inside are one reference domain: removal and erasure treat them as one",
		"team1 and team2 share the catalog database " + dir + "/catalog.db",
		"team1 and inside have nested warehouses",
		"inside is readOnly: its tables are read for references, never maintained",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("check does not say %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "apart are one") || strings.Contains(out, "apart and") || strings.Contains(out, "hunter2") {
		t.Errorf("check puts apart in the domain, or shows a password:\n%s", out)
	}
	// Nothing runs on a read-only bucket's tables.
	code, _, errOut = c.run("run", "--config", cfg, "--table", "inside/db/t", "--job", "compaction")
	if code == 0 || !strings.Contains(errOut, "inside is declared readOnly") {
		t.Errorf("run on a read-only bucket: exit %d, %s", code, errOut)
	}
	// One bucket: nothing to say.
	if out := c.must("check"); strings.Contains(out, "reference domain") {
		t.Errorf("check on the embedded default names a domain:\n%s", out)
	}
}

// The mistakes a value check or a duplicate key catches exit 2 naming
// the key and its line, and write nothing; each example with its
// variables unset names all of them in one run.
func TestCheckStrictValues(t *testing.T) {
	c := newCLI(t)
	dir := t.TempDir()
	head := "state: sqlite://state.db\nbuckets:\n  - arn: arn:aws:s3tables:us-east-1:1:bucket/bkt\n    catalog:\n      type: rest\n      uri: http://127.0.0.1:1\n"
	for name, tc := range map[string]struct{ yaml, want string }{
		"boolean":   {head + "      rest.sigv4-enabled: \"ture\"\n", `bool.yaml:7: buckets[0].catalog.rest.sigv4-enabled: "ture" is not true or false`},
		"endpoint":  {head + "      s3.endpoint: 127.0.0.1:9000\n", `endpoint.yaml:7: buckets[0].catalog.s3.endpoint: "127.0.0.1:9000" is not a URL with a scheme and a host: write http://127.0.0.1:9000`},
		"duplicate": {head + "      s3.endpoint: http://a:1\n      s3.endpoint: http://b:1\n", "duplicate.yaml:8: buckets[0].catalog.s3.endpoint: is given twice, at lines 7 and 8"},
		"misspelt":  {head + "      s3.endpiont: http://a:1\n", "misspelt.yaml:7: buckets[0].catalog.s3.endpiont: unknown property for a rest catalog (did you mean s3.endpoint?)"},
	} {
		file := map[string]string{"boolean": "bool"}[name]
		if file == "" {
			file = name
		}
		cfg := filepath.Join(dir, file+".yaml")
		os.WriteFile(cfg, []byte(tc.yaml), 0o644)
		code, out, errOut := c.run("check", "--config", cfg)
		if code != exitUsage || !strings.Contains(errOut, tc.want) || out != "" {
			t.Errorf("check on a %s mistake: exit %d, stdout %q, stderr %q; want exit %d and %q", name, code, out, errOut, exitUsage, tc.want)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 4 {
		t.Errorf("a rejected configuration left files behind: %v", entries)
	}

	for _, name := range []string{"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "SEAWEEDFS_TABLE_BUCKET_ARN", "SEAWEEDFS_S3_ENDPOINT", "SEAWEEDFS_ICEBERG_URI"} {
		t.Setenv(name, "") // restored after the test
		os.Unsetenv(name)
	}
	example := filepath.Join("..", "..", "configs", "seaweedfs.yaml")
	code, _, errOut := c.run("check", "--config", example)
	if code != exitUsage || !strings.Contains(errOut, "environment variables are not set: ") ||
		!strings.Contains(errOut, "AWS_ACCESS_KEY_ID (line ") || !strings.Contains(errOut, "AWS_SECRET_ACCESS_KEY (line ") {
		t.Errorf("check on seaweedfs.yaml with nothing set: exit %d, %s", code, errOut)
	}
}

// check shows every type's settings as key=value pairs: the maintenance
// types' nested under the type's name, record expiration's flat.
func TestSettingsText(t *testing.T) {
	days, mb := 30, 64
	for _, tc := range []struct {
		cfg  maintenance.Config
		typ  maintenance.JobType
		want string
	}{
		{maintenance.Config{Status: maintenance.Enabled, Settings: &maintenance.ExpirationSettings{Days: &days}}, maintenance.RecordExpiration, "days=30"},
		{maintenance.Config{Status: maintenance.Enabled, Settings: &maintenance.CompactionSettings{TargetFileSizeMB: &mb}}, maintenance.Compaction, "targetFileSizeMB=64"},
		{maintenance.Config{Status: maintenance.Disabled}, maintenance.Compaction, ""},
	} {
		if got := settingsText(tc.cfg, tc.typ); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.typ, got, tc.want)
		}
	}
}
