package configs

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/icekeeper/icekeeper/internal/bucket"
	"github.com/icekeeper/icekeeper/maintenance"
)

// The examples are loaded with the credentials they read set and every
// other variable on its default, so they cannot rot without this failing.
func TestExamplesLoad(t *testing.T) {
	env := func(name string) (string, bool) {
		if strings.Contains(name, "KEY") || strings.Contains(name, "SECRET") || strings.Contains(name, "PASSWORD") {
			return "x-" + name, true
		}
		return "", false
	}
	files, err := filepath.Glob("*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"local.yaml", "oss-tables.yaml", "postgres-s3.yaml", "rustfs.yaml", "s3tables.yaml", "seaweedfs.yaml"}
	if strings.Join(files, ",") != strings.Join(want, ",") {
		t.Fatalf("example files = %v, want %v", files, want)
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		cfg, err := Parse(f, data, env)
		if err != nil {
			t.Errorf("%s: %v", f, err)
			continue
		}
		if len(cfg.Buckets) == 0 || cfg.Buckets[0].CatalogName == "" {
			t.Errorf("%s: bucket not resolved: %+v", f, cfg.Buckets)
		}
	}
}

func TestExampleValues(t *testing.T) {
	cfg, err := Parse("oss-tables.yaml", mustRead(t, "oss-tables.yaml"), func(n string) (string, bool) { return "secret-" + n, true })
	if err != nil {
		t.Fatal(err)
	}
	b := cfg.Buckets[0]
	if b.Parsed.Service != "osstables" || b.Name() != "lakehouse" || b.CatalogName != "lakehouse" {
		t.Errorf("bucket = %+v", b)
	}
	if got := b.Catalog["rest.signing-name"]; got != "osstables" {
		t.Errorf("signing name = %q", got)
	}
	if got := b.Catalog["s3.access-key-id"]; got != "secret-ALIBABA_CLOUD_ACCESS_KEY_ID" {
		t.Errorf("interpolated key = %q", got)
	}
	// The guides' settings: the catalog signs with the Alibaba keys, and
	// OSS is addressed virtual-hosted.
	if id, _, _, from := bucket.RESTKeys(bucket.CatalogProperties(b.Catalog)); id != "secret-ALIBABA_CLOUD_ACCESS_KEY_ID" || from != "rest.*" {
		t.Errorf("REST catalog signs with %q from %s", id, from)
	}
	if got := bucket.CatalogProperties(b.Catalog)["s3.force-virtual-addressing"]; got != "true" {
		t.Errorf("OSS addressed path-style: s3.force-virtual-addressing = %q", got)
	}
	if b.Parsed.Region != "cn-hangzhou" || b.Catalog["rest.signing-region"] != b.Parsed.Region {
		t.Errorf("region %q, signing region %q", b.Parsed.Region, b.Catalog["rest.signing-region"])
	}
	if cfg.Schedules[maintenance.Compaction] != "@hourly" {
		t.Errorf("default schedule = %q", cfg.Schedules[maintenance.Compaction])
	}
}

func TestEmbedded(t *testing.T) {
	cfg := Embedded("/data")
	if cfg.Buckets[0].Name() != "local" || cfg.State != "sqlite:///data/state.db" {
		t.Fatalf("embedded = %+v", cfg)
	}
	// The embedded config must pass the same validation as a file.
	cfg.File = "embedded"
	if err := cfg.finish(); err != nil {
		t.Fatal(err)
	}
}

func TestErrors(t *testing.T) {
	base := `
state: sqlite://s.db
buckets:
  - arn: arn:aws:s3tables:us-east-1:1:bucket/one
    catalog: {type: sql, uri: "file:x.db"}
`
	cases := []struct {
		name, yaml, want string
	}{
		{"below minimum", base + `  - arn: arn:aws:s3tables:us-east-1:1:bucket/two
    catalog: {type: sql, uri: "file:x.db"}
    maintenance:
      icebergCompaction:
        targetFileSizeMB: 0
`, "icekeeper.yaml:10: buckets[1].maintenance.icebergCompaction.targetFileSizeMB: 0 is below the minimum 1"},
		{"above maximum", base + `    maintenance: {icebergCompaction: {targetFileSizeMB: 513}}`, "buckets[0].maintenance.icebergCompaction.targetFileSizeMB: 513 is above the maximum 512"},
		{"bad strategy", base + `    maintenance: {icebergCompaction: {strategy: peano}}`, `buckets[0].maintenance.icebergCompaction.strategy: "peano" is not one of auto, binpack, sort, z-order, hilbert`},
		{"bad status", base + `    maintenance: {icebergSnapshotManagement: {status: on}}`, `buckets[0].maintenance.icebergSnapshotManagement.status: "on" is not one of enabled, disabled`},
		{"snapshots", base + `    maintenance: {icebergSnapshotManagement: {minSnapshotsToKeep: -1}}`, `icebergSnapshotManagement.minSnapshotsToKeep: -1 is below the minimum 1`},
		{"removal days", base + `    maintenance: {icebergUnreferencedFileRemoval: {nonCurrentDays: 0}}`, `icebergUnreferencedFileRemoval.nonCurrentDays: 0 is below the minimum 1`},
		{"delete files", base + `    compaction: {minDeleteFilesToRewrite: -1}`, `buckets[0].compaction.minDeleteFilesToRewrite: -1 is below the minimum 0 (0 turns delete-file compaction off)`},
		{"equality delete files", base + `    compaction: {minEqualityDeleteFilesToConvert: -1}`, `buckets[0].compaction.minEqualityDeleteFilesToConvert: -1 is below the minimum 0 (0 turns equality-delete conversion off)`},
		{"negative concurrent rewrites", base + "budget: {maxConcurrentRewrites: -1}\n", "icekeeper.yaml:6: budget.maxConcurrentRewrites: -1 is below the minimum 0 (0: no bound)"},
		{"negative bucket bytes", base + "    budget: {rewriteBytesPerHour: -5}\n", "buckets[0].budget.rewriteBytesPerHour: -5 is below the minimum 0 (0: no bound)"},
		{"share above 100", base + "budget: {rewriteBytesPerHour: 100, tableSharePercent: 101}\n", "budget.tableSharePercent: 101 is not from 1 to 100"},
		{"negative share", base + "    budget: {tableSharePercent: -1}\n", "buckets[0].budget.tableSharePercent: -1 is not from 1 to 100"},
		{"bytes as a size string", base + "budget: {rewriteBytesPerHour: 10GiB}\n", `budget.rewriteBytesPerHour: "10GiB" is not a whole number`},
		{"unknown budget key", base + "budget: {maxRewrites: 1}\n", "budget.maxRewrites: unknown key"},
		{"unknown top key", base + "lisen: x\n", "icekeeper.yaml:6: lisen: unknown key"},
		{"unknown nested key", base + `    maintenance: {icebergCompaction: {targetFileSize: 5}}`, "buckets[0].maintenance.icebergCompaction.targetFileSize: unknown key"},
		{"unknown job type", base + `    maintenance: {compaction: {}}`, "buckets[0].maintenance.compaction: unknown key"},
		{"not a number", base + `    maintenance: {icebergCompaction: {targetFileSizeMB: big}}`, `targetFileSizeMB: "big" is not a whole number`},
		{"bad arn", "state: sqlite://s.db\nbuckets:\n  - arn: arn:aws:s3:x:1:bucket/abc\n    catalog: {type: sql, uri: u}\n", `buckets[0].arn: "arn:aws:s3:x:1:bucket/abc": service "s3" is not s3tables or osstables`},
		{"missing arn", "state: sqlite://s.db\nbuckets:\n  - catalog: {type: sql}\n", "buckets[0].arn: is required"},
		{"duplicate bucket", base + "  - arn: arn:aws:s3tables:eu-west-1:2:bucket/one\n    catalog: {type: sql, uri: u}\n", `buckets[1].arn: bucket name "one" is already used by buckets[0]`},
		{"no catalog type", "state: sqlite://s.db\nbuckets:\n  - arn: arn:aws:s3tables:us-east-1:1:bucket/one\n", "buckets[0].catalog.type: is required"},
		{"bad catalog type", "state: sqlite://s.db\nbuckets:\n  - arn: arn:aws:s3tables:us-east-1:1:bucket/one\n    catalog: {type: jdbc}\n", `buckets[0].catalog.type: "jdbc" is not one of sql, rest, glue, hive`},
		{"no uri", "state: sqlite://s.db\nbuckets:\n  - arn: arn:aws:s3tables:us-east-1:1:bucket/one\n    catalog: {type: rest}\n", "buckets[0].catalog.uri: is required for a rest catalog"},
		{"no buckets", "state: sqlite://s.db\n", "buckets: at least one bucket is required"},
		{"no state", "buckets: []\n", "state: is required"},
		{"bad state", "state: mysql://x\n", `state: scheme "mysql" is not sqlite or postgres`},
		{"bad listen", base + "listen: 8080\n", `listen: "8080" is not a host:port address`},
		{"bad schedule", base + "schedules: {icebergCompaction: every hour}\n", `schedules.icebergCompaction: "every hour" is not a cron expression`},
		{"unknown schedule", base + "schedules: {icebergCompactoin: \"@hourly\"}\n", `schedules.icebergCompactoin: unknown job type (valid keys: icebergRecordExpiration, icebergCompaction, icebergSnapshotManagement, icebergUnreferencedFileRemoval, icebergErasure, icebergStatistics)`},
		{"bad retention mode", base + "    tableRetentionProperties: lenient\n", `buckets[0].tableRetentionProperties: "lenient" is not conservative or strict`},
		{"api key without secret", base + "api: {keys: [{accessKeyId: AK}]}\n", "api.keys[0].secretAccessKey: is required"},
		{"short api secret", base + "api: {keys: [{accessKeyId: AKSHORT, secretAccessKey: fifteen-chars!!}]}\n", "api.keys[0].secretAccessKey: the secret of key AKSHORT is 15 characters, at least 16 are required"},
		{"allowed host with port", base + "api: {allowedHosts: [icekeeper.internal:8080]}\n", `api.allowedHosts[0]: "icekeeper.internal:8080" is not a host name`},
		{"allowed host url", base + "api: {allowedHosts: ['http://x']}\n", `api.allowedHosts[0]: "http://x" is not a host name`},
		{"api signing name", base + "api: {signingName: s3}\n", `api.signingName: "s3" is not s3tables or osstables`},
		{"bad filter", base + "    tables: {include: ['[']}\n", `buckets[0].tables: pattern "["`},
		{"unset env", base + "  - arn: arn:aws:s3tables:us-east-1:1:bucket/two\n    catalog: {type: sql, uri: '${NOPE}'}\n", "icekeeper.yaml:7: buckets[1].catalog.uri: environment variable NOPE is not set"},
		{"list expected", "state: sqlite://s.db\nbuckets: {a: b}\n", "buckets: must be a list, found a mapping"},
		{"yaml syntax", "state: [\n", "icekeeper.yaml: "},
		{"freshness not a duration", base + "    freshnessTarget: 2\n", `buckets[0].freshnessTarget: "2" is not a duration such as 90s, 2m or 1h`},
		{"freshness negative", base + "    freshnessTarget: -2m\n", "buckets[0].freshnessTarget: -2m0s is not a target"},
		{"freshness below a second", base + "    freshnessTarget: 10ms\n", "buckets[0].freshnessTarget: 10ms is not a target: set at least 1s"},
		{"negative step aside", base + "    coexistence: {stepAside: -1h}\n", "buckets[0].coexistence.stepAside: -1h0m0s is negative"},
		{"flink lock without database", base + "    coexistence: {flinkLock: {lockId: x}}\n", "buckets[0].coexistence.flinkLock.database: is required"},
		{"flink lock on mysql", base + "    coexistence: {flinkLock: {database: 'mysql://h/db'}}\n", `buckets[0].coexistence.flinkLock.database: scheme "mysql" is not sqlite or postgres`},
		{"flink lock id too long", base + "    coexistence: {flinkLock: {database: 'sqlite://l.db', lockId: '" + strings.Repeat("x", 101) + "'}}\n", "longer than Flink's LOCK_ID column (100)"},
		{"short event token", base + "events: {tokens: [short]}\n", "events.tokens[0]: a token is 5 characters, at least 16 are required"},
		{"negative debounce", base + "events: {debounce: -1s}\n", "events.debounce: -1s is negative"},
		{"unknown coexistence key", base + "    coexistence: {stepaside: 1h}\n", "buckets[0].coexistence.stepaside: unknown key (did you mean stepAside?)"},
		{"unsigned payload in compat mode", "state: sqlite://s.db\nbuckets:\n  - arn: arn:aws:s3tables:us-east-1:1:bucket/one\n    catalog: {type: sql, uri: 'file:x.db', s3.compat-mode: 'true'}\n    s3UnsignedPayload: true\n",
			"buckets[0].s3UnsignedPayload: cannot be true with catalog s3.compat-mode: uploads would carry neither a signed body nor a checksum"},
		{"statistics beside erasure", base + "    maintenance: {icebergErasure: {status: enabled, deadlineDays: 7}, icebergStatistics: {status: enabled}}\n", "buckets[0].maintenance.icebergStatistics: cannot be enabled beside icebergErasure"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("icekeeper.yaml", []byte(tc.yaml), func(string) (string, bool) { return "", false })
			if err == nil {
				t.Fatalf("no error, want %q", tc.want)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %q does not contain %q", err, tc.want)
			}
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("error %v does not wrap ErrInvalid", err)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("error is not one line: %q", err)
			}
		})
	}
}

func TestInterpolation(t *testing.T) {
	env := map[string]string{"KEY": "abc", "EMPTY": ""}
	lookup := func(n string) (string, bool) { v, ok := env[n]; return v, ok }
	d := decoder{file: "f", env: lookup}
	for in, want := range map[string]string{
		"${KEY}":       "abc",
		"a-${KEY}-b":   "a-abc-b",
		"$${KEY}":      "${KEY}",
		"${EMPTY}x":    "x",
		"cost: $5":     "cost: $5",
		"trailing $":   "trailing $",
		"${KEY}${KEY}": "abcabc",
		"${KEY:-x}":    "abc",
		"${NOPE:-x}":   "x",
		"${EMPTY:-y}":  "y",
		"${NOPE:-}z":   "z",
		"${NOPE:-a:b}": "a:b",
	} {
		got, missing, err := d.interpolate(in, "k")
		if err != nil || len(missing) > 0 || got != want {
			t.Errorf("interpolate(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, missing, _ := d.interpolate("a${NOPE}b${KEY}${ALSO}", "k"); len(missing) != 2 || missing[0] != "NOPE" || missing[1] != "ALSO" {
		t.Errorf("unset variables %v, want NOPE and ALSO", missing)
	}
	if _, _, err := d.interpolate("${KEY", "k"); err == nil {
		t.Error("unterminated ${ accepted")
	}
}

func TestResolveLayers(t *testing.T) {
	cfg, err := Parse("f.yaml", []byte(`
state: sqlite:///abs/state.db
buckets:
  - arn: arn:aws:s3tables:us-east-1:1:bucket/one
    catalog: {type: sql, uri: "file:x.db"}
    maintenance:
      icebergCompaction: {targetFileSizeMB: 128}
      icebergSnapshotManagement: {status: disabled}
`), nil)
	if err != nil {
		t.Fatal(err)
	}
	m := cfg.Buckets[0].Maintenance
	api := maintenance.Config{Settings: &maintenance.CompactionSettings{Strategy: maintenance.StrategyBinpack}}
	got := maintenance.Resolve(maintenance.Compaction, api, m.For(maintenance.Compaction))
	if *got.Compaction().TargetFileSizeMB != 128 || got.Compaction().Strategy != maintenance.StrategyBinpack || got.Status != maintenance.Enabled {
		t.Errorf("resolved compaction = %+v %+v", got, *got.Compaction())
	}
	snap := maintenance.Resolve(maintenance.SnapshotManagement, m.For(maintenance.SnapshotManagement))
	if snap.Status != maintenance.Disabled || *snap.SnapshotManagement().MinSnapshotsToKeep != 1 {
		t.Errorf("resolved snapshots = %+v", snap)
	}
	if cfg.State != "sqlite:///abs/state.db" {
		t.Errorf("absolute state path changed: %s", cfg.State)
	}
	if k := cfg.Buckets[0].Defaults().Knobs; k.MinDeleteFilesToRewrite != DefaultMinDeleteFilesToRewrite || k.MinManifestsToRewrite != DefaultMinManifestsToRewrite ||
		k.MinEqualityDeleteFilesToConvert != DefaultMinEqualityDeleteFilesToConvert || k.ConvertKeyIndex {
		t.Errorf("unset compaction knobs resolve to %+v", k)
	}
	cfg.Buckets[0].Compaction.ConvertKeyIndex = true
	if k := cfg.Buckets[0].Defaults().Knobs; !k.ConvertKeyIndex {
		t.Errorf("convertKeyIndex: true resolves to %+v", k)
	}
	off := 0
	cfg.Buckets[0].Compaction.MinDeleteFilesToRewrite = &off
	cfg.Buckets[0].Compaction.MinEqualityDeleteFilesToConvert = &off
	if k := cfg.Buckets[0].Defaults().Knobs; k.MinDeleteFilesToRewrite != 0 || k.MinEqualityDeleteFilesToConvert != 0 {
		t.Errorf("minDeleteFilesToRewrite and minEqualityDeleteFilesToConvert: 0 resolve to %+v", k)
	}
}

func TestFilter(t *testing.T) {
	f := Filter{Include: []string{"prod_*", "events"}, Exclude: []string{"prod_tmp*"}}
	for name, want := range map[string]bool{"prod_a": true, "events": true, "prod_tmp1": false, "dev": false} {
		if got := f.Match(name); got != want {
			t.Errorf("Match(%q) = %v, want %v", name, got, want)
		}
	}
	if !(Filter{}).Match("anything") {
		t.Error("empty filter must match everything")
	}
}

func mustRead(t *testing.T, f string) []byte {
	t.Helper()
	data, err := os.ReadFile(f)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// Relative paths (the state store, a SQLite catalog's DSN, a local
// warehouse) are relative to the file, not to the working directory.
func TestRelativePaths(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "conf")
	file := filepath.Join(dir, "ik.yaml")
	data := []byte(`state: sqlite://data/state.db
buckets:
  - arn: arn:aws:s3tables:us-east-1:1:bucket/one
    catalog: {type: sql, uri: "file:data/catalog.db?_pragma=busy_timeout(10000)", warehouse: "file://./data/wh", sql.driver: sqlite}
  - arn: arn:aws:s3tables:us-east-1:1:bucket/two
    catalog: {type: sql, uri: "file:/abs/catalog.db", warehouse: "file:///abs/wh", sql.driver: sqlite}
  - arn: arn:aws:s3tables:us-east-1:1:bucket/three
    catalog: {type: rest, uri: "https://cat.example/iceberg", warehouse: "s3://w/"}
`)
	cfg, err := Parse(file, data, os.LookupEnv)
	if err != nil {
		t.Fatal(err)
	}
	if want := "sqlite://" + filepath.Join(dir, "data/state.db"); cfg.State != want {
		t.Errorf("state = %q, want %q", cfg.State, want)
	}
	for i, want := range [][2]string{
		{"file:" + filepath.Join(dir, "data/catalog.db") + "?_pragma=busy_timeout(10000)", "file://" + filepath.Join(dir, "data/wh")},
		{"file:/abs/catalog.db", "file:///abs/wh"},
		{"https://cat.example/iceberg", "s3://w/"},
	} {
		if got := [2]string{cfg.Buckets[i].Catalog["uri"], cfg.Buckets[i].Catalog["warehouse"]}; got != want {
			t.Errorf("buckets[%d] uri, warehouse = %q, want %q", i, got, want)
		}
	}
}

// Load reads at most MaxFileSize, and says what is wrong with a path that
// is not a configuration file.
func TestLoadBounds(t *testing.T) {
	dir := t.TempDir()
	if _, err := Load(dir); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "is a directory") {
		t.Errorf("directory: %v", err)
	}
	big := filepath.Join(dir, "big.yaml")
	os.WriteFile(big, []byte("# "+strings.Repeat("x", MaxFileSize)+"\n"), 0o644)
	if _, err := Load(big); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "larger than 1 MiB") {
		t.Errorf("big file: %v", err)
	}
	if _, err := os.Stat("/dev/urandom"); err == nil {
		if _, err := Load("/dev/urandom"); !errors.Is(err, ErrInvalid) {
			t.Errorf("/dev/urandom: %v", err)
		}
	}
}

// A 16-character secret is enough; allowed hosts may be names or IPs.
func TestAPIConfig(t *testing.T) {
	yaml := `state: sqlite://s.db
buckets:
  - arn: arn:aws:s3tables:us-east-1:1:bucket/one
    catalog: {type: sql, uri: "file:x.db"}
api:
  keys: [{accessKeyId: AKOK, secretAccessKey: sixteen-chars-ok}]
  allowedHosts: [icekeeper.internal, 10.0.0.7, "[fd00::1]", ICEKEEPER.example.]
`
	cfg, err := Parse("icekeeper.yaml", []byte(yaml), func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.API.AllowedHosts) != 4 || cfg.API.Keys[0].SecretAccessKey != "sixteen-chars-ok" {
		t.Fatalf("api = %+v", cfg.API)
	}
}

func TestBudget(t *testing.T) {
	example, err := Parse("postgres-s3.yaml", mustRead(t, "postgres-s3.yaml"), func(n string) (string, bool) { return "x", true })
	if err != nil {
		t.Fatal(err)
	}
	if example.Budget.MaxConcurrentRewrites != 4 || example.Buckets[0].Budget.RewriteBytesPerHour != 200<<30 {
		t.Fatalf("the example's budgets: %+v, %+v", example.Budget, example.Buckets[0].Budget)
	}
	data := []byte(`
state: sqlite://s.db
budget: {maxConcurrentRewrites: 4, rewriteBytesPerHour: 1099511627776}
buckets:
  - arn: arn:aws:s3tables:us-east-1:1:bucket/one
    catalog: {type: sql, uri: "file:x.db"}
    budget: {maxConcurrentRewrites: 1, rewriteBytesPerHour: 1000, tableSharePercent: 100}
  - arn: arn:aws:s3tables:us-east-1:1:bucket/two
    catalog: {type: sql, uri: "file:x.db"}
`)
	cfg, err := Parse("icekeeper.yaml", data, func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	if want := (Budget{MaxConcurrentRewrites: 4, RewriteBytesPerHour: 1 << 40, TableSharePercent: 25}); cfg.Budget != want {
		t.Errorf("daemon budget %+v, want %+v (the default share applied)", cfg.Budget, want)
	}
	if want := (Budget{MaxConcurrentRewrites: 1, RewriteBytesPerHour: 1000, TableSharePercent: 100}); cfg.Buckets[0].Budget != want {
		t.Errorf("bucket budget %+v, want %+v", cfg.Buckets[0].Budget, want)
	}
	if cfg.Buckets[1].Budget != (Budget{}) {
		t.Errorf("a bucket without a budget got %+v (no share without a bytes limit)", cfg.Buckets[1].Budget)
	}
}

func TestFreshnessAndCoexistence(t *testing.T) {
	data := []byte(`
state: sqlite://s.db
events: {tokens: ["${TOKEN}"]}
buckets:
  - arn: arn:aws:s3tables:us-east-1:1:bucket/one
    catalog: {type: sql, uri: "file:x.db"}
    freshnessTarget: 2m
    coexistence:
      stepAside: 30m
      flinkLock: {database: "sqlite://flink-locks.db"}
  - arn: arn:aws:s3tables:us-east-1:1:bucket/two
    catalog: {type: sql, uri: "file:x.db"}
    coexistence: {stepAside: 0s}
  - arn: arn:aws:s3tables:us-east-1:1:bucket/three
    catalog: {type: sql, uri: "file:x.db"}
`)
	cfg, err := Parse("icekeeper.yaml", data, func(n string) (string, bool) { return "a-webhook-token-of-some-length", n == "TOKEN" })
	if err != nil {
		t.Fatal(err)
	}
	one, two, three := cfg.Buckets[0], cfg.Buckets[1], cfg.Buckets[2]
	if one.FreshnessTarget != 2*time.Minute || one.Defaults().Knobs.FreshnessTargetSeconds != 120 {
		t.Errorf("freshness target %v (knob %d s), want 2m", one.FreshnessTarget, one.Defaults().Knobs.FreshnessTargetSeconds)
	}
	if *one.Coexistence.StepAside != 30*time.Minute || *two.Coexistence.StepAside != 0 || *three.Coexistence.StepAside != DefaultStepAside {
		t.Errorf("step aside %v, %v, %v; want 30m, 0s and the default", *one.Coexistence.StepAside, *two.Coexistence.StepAside, *three.Coexistence.StepAside)
	}
	if fl := one.Coexistence.FlinkLock; fl == nil || fl.LockID != DefaultFlinkLockID || two.Coexistence.FlinkLock != nil {
		t.Errorf("Flink lock %+v, want the default lock id on bucket one only", fl)
	}
	if !cfg.Events.On() || cfg.Events.Backstop != DefaultEventsBackstop {
		t.Errorf("events %+v, want on with the default backstop", cfg.Events)
	}
}

// A key given twice in one mapping is refused naming both lines, at any
// depth, in icekeeper's keys as in catalog properties and job settings.
func TestDuplicateKeys(t *testing.T) {
	base := "state: sqlite://s.db\nbuckets:\n  - arn: arn:aws:s3tables:us-east-1:1:bucket/one\n    catalog:\n      type: sql\n      uri: file:x.db\n"
	for _, tc := range []struct{ name, yaml, want string }{
		{"top level", base + "state: sqlite://other.db\n", "icekeeper.yaml:7: state: is given twice, at lines 1 and 7; YAML would silently keep the last: remove one"},
		{"catalog property", base + "      s3.endpoint: http://a:1\n      s3.endpoint: http://b:1\n", "icekeeper.yaml:8: buckets[0].catalog.s3.endpoint: is given twice, at lines 7 and 8"},
		{"bucket key", base + "    readOnly: true\n    readOnly: false\n", "icekeeper.yaml:8: buckets[0].readOnly: is given twice, at lines 7 and 8"},
		{"job setting", base + "    maintenance:\n      icebergCompaction:\n        targetFileSizeMB: 256\n        targetFileSizeMB: 128\n",
			"icekeeper.yaml:10: buckets[0].maintenance.icebergCompaction.targetFileSizeMB: is given twice, at lines 9 and 10"},
		{"job type", base + "    maintenance:\n      icebergCompaction: {status: enabled}\n      icebergCompaction: {status: disabled}\n",
			"icekeeper.yaml:9: buckets[0].maintenance.icebergCompaction: is given twice, at lines 8 and 9"},
		{"flow mapping", base + "schedules: {icebergCompaction: '@hourly', icebergCompaction: '@daily'}\n", "icekeeper.yaml:7: schedules.icebergCompaction: is given twice, on line 7"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("icekeeper.yaml", []byte(tc.yaml), func(string) (string, bool) { return "", false })
			if err == nil || !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want %q", err, tc.want)
			}
		})
	}
}

// icekeeper's own booleans are the words true and false: a 1 or a yes is
// refused, not read as whatever strconv makes of it.
func TestBooleans(t *testing.T) {
	base := "state: sqlite://s.db\nbuckets:\n  - arn: arn:aws:s3tables:us-east-1:1:bucket/one\n    catalog: {type: sql, uri: file:x.db}\n"
	for _, v := range []string{"1", "t", "yes", "ture", "'on'"} {
		_, err := Parse("icekeeper.yaml", []byte(base+"    readOnly: "+v+"\n"), func(string) (string, bool) { return "", false })
		if err == nil || !strings.Contains(err.Error(), "icekeeper.yaml:5: buckets[0].readOnly: ") || !strings.Contains(err.Error(), "is not true or false") {
			t.Errorf("readOnly: %s: %v", v, err)
		}
	}
	cfg, err := Parse("icekeeper.yaml", []byte(base+"    readOnly: True\n"), func(string) (string, bool) { return "", false })
	if err != nil || !cfg.Buckets[0].ReadOnly {
		t.Errorf("readOnly: True: %v", err)
	}
}

// Validation after decoding names the line of the key, or of the
// nearest key above a missing one.
func TestErrorLines(t *testing.T) {
	for _, tc := range []struct{ yaml, want string }{
		{"state: sqlite://s.db\nbuckets:\n  - arn: arn:aws:s3tables:us-east-1:1:bucket/one\n    catalog:\n      uri: file:x.db\n",
			"icekeeper.yaml:4: buckets[0].catalog.type: is required"},
		{"state: sqlite://s.db\nbuckets:\n  - catalog: {type: sql}\n", "icekeeper.yaml:3: buckets[0].arn: is required"},
		{"listen: 8080\nstate: sqlite://s.db\n", `icekeeper.yaml:1: listen: "8080" is not a host:port address`},
		{"state: sqlite://s.db\n", "icekeeper.yaml: buckets: at least one bucket is required"},
	} {
		_, err := Parse("icekeeper.yaml", []byte(tc.yaml), func(string) (string, bool) { return "", false })
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("error %v, want %q", err, tc.want)
		}
	}
}

// Every unset variable of a file is named in one error, with its line
// and key: each example, with nothing set, names all of those it needs.
func TestUnsetVariablesAtOnce(t *testing.T) {
	files, err := filepath.Glob("*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	needed := regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)\}`) // no default
	for _, f := range files {
		data := mustRead(t, f)
		want := map[string]bool{}
		for _, m := range needed.FindAllSubmatch(data, -1) {
			want[string(m[1])] = true
		}
		_, err := Parse(f, data, func(string) (string, bool) { return "", false })
		if len(want) == 0 {
			if err != nil {
				t.Errorf("%s, which needs no variable: %v", f, err)
			}
			continue
		}
		if err == nil || !errors.Is(err, ErrInvalid) {
			t.Errorf("%s with no variable set: %v", f, err)
			continue
		}
		for name := range want {
			if !strings.Contains(err.Error(), name+" (line ") && !strings.Contains(err.Error(), "environment variable "+name+" is not set") {
				t.Errorf("%s: the error does not name %s with its line: %v", f, name, err)
			}
		}
		if n := len(want); n > 1 && !strings.Contains(err.Error(), fmt.Sprintf("%d environment variables are not set: ", n)) {
			t.Errorf("%s: %v, want %d variables named", f, err, n)
		}
	}
	_, err = Parse("f.yaml", []byte("state: ${A}\nlisten: ${B}:8080\nbuckets:\n  - arn: ${A}\n"), func(string) (string, bool) { return "", false })
	if want := "f.yaml: 2 environment variables are not set: A (line 1, state), B (line 2, listen); set them, or give a default as ${NAME:-default}"; err == nil || err.Error() != want {
		t.Errorf("error %v, want %q", err, want)
	}
}
