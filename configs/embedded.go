package configs

import (
	"os"
	"path/filepath"

	"github.com/icekeeper/icekeeper/internal/arn"
	"github.com/icekeeper/icekeeper/internal/cost"
	"github.com/icekeeper/icekeeper/maintenance"
)

// Environment variables icekeeper reads.
const (
	EnvConfig = "ICEKEEPER_CONFIG" // configuration file, like --config
	EnvHome   = "ICEKEEPER_HOME"   // data directory of the embedded default
)

// LocalBucketARN is the embedded default's single bucket.
const LocalBucketARN = "arn:aws:s3tables:local:000000000000:bucket/local"

// Home returns the embedded default's data directory: $ICEKEEPER_HOME, or
// ./icekeeper-data, as an absolute path.
func Home() (string, error) {
	dir := os.Getenv(EnvHome)
	if dir == "" {
		dir = "icekeeper-data"
	}
	return filepath.Abs(dir)
}

// embeddedCatalog is the embedded default's SQLite catalog under home.
const embeddedCatalog = "catalog.db"

// EmbeddedCreated reports whether the embedded default under home has a
// catalog, that is whether `icekeeper demo` or `serve` ever ran there.
func EmbeddedCreated(home string) bool {
	_, err := os.Stat(filepath.Join(home, embeddedCatalog))
	return err == nil
}

// Embedded returns the configuration used when no file is given: a SQLite
// catalog and a local-filesystem warehouse under home, a SQLite state store,
// and one bucket named "local". Nothing is created on disk here.
func Embedded(home string) *Config {
	parsed, err := arn.Parse(LocalBucketARN)
	if err != nil {
		panic(err) // a constant; covered by tests
	}
	cfg := &Config{
		Listen: DefaultListen,
		State:  "sqlite://" + filepath.Join(home, "state.db"),
		Prices: cost.DefaultPrices(),
		Buckets: []Bucket{{
			ARN:         LocalBucketARN,
			CatalogName: parsed.Name,
			Catalog: map[string]string{
				"type": "sql",
				// Immediate transactions: the SQL catalog reads then writes
				// in one transaction, and a deferred one cannot upgrade its
				// lock while another connection writes (SQLITE_BUSY without
				// waiting); immediate ones wait on busy_timeout instead.
				// mode=rwc: the embedded catalog is created on first
				// use; a configured one must exist.
				"uri":         "file:" + filepath.Join(home, embeddedCatalog) + "?mode=rwc&_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_txlock=immediate",
				"sql.driver":  "sqlite",
				"sql.dialect": "sqlite",
				"warehouse":   "file://" + filepath.Join(home, "warehouse"),
			},
			Maintenance: Maintenance{},
			Parsed:      parsed,
		}},
		// Short schedules, so that `icekeeper serve` on the demo shows
		// every job type run within minutes.
		Schedules: Schedules{
			maintenance.Compaction:              "@every 2m",
			maintenance.SnapshotManagement:      "@every 3m",
			maintenance.UnreferencedFileRemoval: "@every 5m",
			maintenance.RecordExpiration:        "@every 10m",
			maintenance.Erasure:                 "@every 10m",
			maintenance.Statistics:              "@every 10m",
		},
	}
	// The defaults a file gets are applied the same way, so that a file
	// that says what the embedded default says (configs/local.yaml) is
	// the same configuration.
	if err := cfg.finish(); err != nil {
		panic(err) // constants; covered by TestLocalYAMLIsTheEmbeddedDefault
	}
	return cfg
}
