// Package configs owns icekeeper's configuration file: its schema, defaults,
// ${ENV} interpolation, strict validation with key paths, the embedded
// default used when no file is given, and the example files beside it.
//
// Like Prometheus' config package, Load returns either a fully valid value
// with defaults applied or an error naming the file, the key path and the
// reason; no consumer ever sees a half-valid configuration.
package configs

import (
	"time"

	"github.com/icekeeper/icekeeper/internal/arn"
	"github.com/icekeeper/icekeeper/internal/cost"
	"github.com/icekeeper/icekeeper/maintenance"
)

// DefaultListen is the API address when the file does not set `listen`.
const DefaultListen = "127.0.0.1:8080"

// Config is the whole configuration file.
type Config struct {
	// Listen is the API's host:port.
	Listen string `yaml:"listen"`
	// State is the state store's DSN: sqlite://PATH or postgres://….
	State string `yaml:"state"`
	// Buckets are the table buckets icekeeper maintains.
	Buckets []Bucket `yaml:"buckets"`
	// Schedules are the daemon's cron expressions per job type.
	Schedules Schedules `yaml:"schedules"`
	// API configures the API's authentication.
	API API `yaml:"api"`
	// Budget bounds compaction's rewrites across every bucket (the
	// daemon's budget); each bucket may set its own besides.
	Budget Budget `yaml:"budget"`
	// Events configures the event route (POST /icekeeper/v1/events) and
	// the freshness scheduling it drives.
	Events Events `yaml:"events"`
	// Prices price each run's cost (requests, and what S3 Tables would
	// charge for the same compaction); unset fields keep S3 Tables'
	// published prices (cost.DefaultPrices).
	Prices cost.Prices `yaml:"prices"`

	// File is the path the configuration was loaded from ("" for the
	// embedded default); error messages and relative paths use it.
	File string `yaml:"-"`
}

// API configures the HTTP API.
type API struct {
	// SigningName is the SigV4 service name requests must be signed for:
	// s3tables (default) or osstables.
	SigningName string `yaml:"signingName"`
	// Keys are the access keys allowed to call the API. Without keys the
	// API is unauthenticated and only listens on loopback addresses.
	Keys []APIKey `yaml:"keys"`
	// MetricsAuth, when set, is the bearer token GET /metrics requires
	// (Prometheus: authorization.credentials in the scrape config).
	// Unset, /metrics is open, like /healthz and /readyz.
	MetricsAuth string `yaml:"metricsAuth"`
	// AllowedHosts are the host names (no port) a request's Host header may
	// carry, besides loopback names, while no keys are configured: a page
	// that rebinds its own name to 127.0.0.1 must not reach the API.
	// With keys, Host is not restricted.
	AllowedHosts []string `yaml:"allowedHosts"`
}

// MinSecretLength is the fewest characters an API key's secret may have.
const MinSecretLength = 16

// APIKey is one access key of the API.
type APIKey struct {
	AccessKeyID     string `yaml:"accessKeyId"`
	SecretAccessKey string `yaml:"secretAccessKey"`
	// Scopes limit the key to some buckets or namespaces: "BUCKET" or
	// "BUCKET/NAMESPACE" (globs allowed). Empty: every bucket.
	Scopes []string `yaml:"scopes"`
	// ReadOnly keys may only read: every request but GET is refused.
	ReadOnly bool `yaml:"readOnly"`
}

// Schedules holds one cron expression per job type, keyed by the job
// type's name (robfig/cron standard five-field syntax or descriptors such
// as @hourly). A job type left out runs on its default schedule, from
// maintenance's type table.
type Schedules map[maintenance.JobType]string

// For returns the cron expression of job type t.
func (s Schedules) For(t maintenance.JobType) string { return s[t] }

// Bucket is one table bucket: the catalog that lists its tables and the
// maintenance defaults that apply to them.
type Bucket struct {
	// ARN is the table bucket's ARN (S3 Tables or OSS Tables form).
	ARN string `yaml:"arn"`
	// CatalogName is the name the catalog is opened under. The SQL catalog
	// keeps tables per catalog name, so it must match what writers used.
	// Default: the bucket's name from the ARN.
	CatalogName string `yaml:"catalogName"`
	// Catalog holds iceberg-go catalog properties, passed to catalog.Load
	// verbatim (type, uri, warehouse, s3.endpoint, rest.sigv4-enabled, …).
	Catalog map[string]string `yaml:"catalog"`
	// PassThroughProperties names catalog properties icekeeper does not
	// know that are nevertheless passed to iceberg-go: every other
	// property must be one the bucket's catalog type reads.
	PassThroughProperties []string `yaml:"passThroughProperties"`
	// Maintenance holds this bucket's defaults for the job types.
	Maintenance Maintenance `yaml:"maintenance"`
	// TableRetentionProperties says how a table's history.expire.*
	// properties and ref retention combine with icebergSnapshotManagement's
	// settings: "conservative" (default) keeps whichever keeps more;
	// "strict" fails such tables with S3 Tables' message, as S3 Tables does.
	TableRetentionProperties string `yaml:"tableRetentionProperties"`
	// Compaction holds icebergCompaction's options beyond S3 Tables'.
	Compaction CompactionOptions `yaml:"compaction"`
	// Expiration holds icebergSnapshotManagement's opt-ins.
	Expiration Expiration `yaml:"expiration"`
	// SchemeEquivalence lists groups of URI schemes that name the same
	// storage (e.g. [[s3, s3a, s3n]]). Unreferenced file removal fails a
	// table whose metadata names listed files through another scheme,
	// unless the two are in one group here.
	SchemeEquivalence [][]string `yaml:"schemeEquivalence"`
	// MaxDeletesPerRun caps deletions of unreferenced file removal per
	// table and run (default 100000), a safety valve.
	MaxDeletesPerRun int `yaml:"maxDeletesPerRun"`
	// AllowNestedTables lets unreferenced file removal run on a table
	// whose location holds other tables' files, or is a namespace or
	// warehouse directory; it then leaves every other table's prefixes
	// alone. Without it such a table fails removal, naming the others.
	AllowNestedTables bool `yaml:"allowNestedTables"`
	// ReadOnly declares a bucket icekeeper does not maintain but whose
	// tables share storage or a catalog database with buckets it does:
	// removal and erasure of those keep what its tables reference and
	// hold, and nothing ever runs on its tables.
	ReadOnly bool `yaml:"readOnly"`
	// RemoveDroppedTables lets unreferenced file removal take the files
	// that tables dropped from the bucket's catalog without a purge left
	// under their locations, with removal's two phases and checks (see
	// the README's "Dropped tables' leftovers"). Off by default.
	RemoveDroppedTables bool `yaml:"removeDroppedTables"`
	// S3UnsignedPayload sends the objects and parts icekeeper uploads for
	// table files (data, manifests, metadata) unsigned, checked by the
	// storage against their CRC32 checksum instead of a signed SHA-256
	// that both sides compute over every byte; other requests stay
	// signed. Over https the SDK sends uploads so already; over http (a
	// store on loopback or in the cluster) it saves both the client's and
	// the server's CPU. CRC32 finds corruption, not tampering: turn it on
	// only where the network to the S3 endpoint is trusted. Default off.
	S3UnsignedPayload bool `yaml:"s3UnsignedPayload"`
	// Budget bounds compaction's rewrites in this bucket, within the
	// daemon's budget.
	Budget Budget `yaml:"budget"`
	// CommitRate bounds the commits sent to a REST catalog.
	CommitRate CommitRate `yaml:"commitRate"`
	// FreshnessTarget bounds how long a small file, a delete file or an
	// expired snapshot of a table may wait before compaction or snapshot
	// management takes it (0: no target; those wait for their schedule).
	// A table's icekeeper.freshness-target property overrides it.
	FreshnessTarget time.Duration `yaml:"freshnessTarget"`
	// Coexistence says how icekeeper shares the bucket's tables with
	// other maintainers.
	Coexistence Coexistence `yaml:"coexistence"`
	// Namespaces and Tables filter what icekeeper maintains, by glob.
	Namespaces Filter `yaml:"namespaces"`
	Tables     Filter `yaml:"tables"`

	// Parsed is ARN, parsed; set by Load.
	Parsed arn.BucketARN `yaml:"-"`
}

// Budget bounds compaction's rewrites in a scope (a bucket, or the whole
// daemon): only compaction counts, by the input bytes its runs rewrite.
// Zero values leave a bound off.
type Budget struct {
	// MaxConcurrentRewrites is how many compaction runs may rewrite at
	// once in the scope, across replicas (0: no bound).
	MaxConcurrentRewrites int `yaml:"maxConcurrentRewrites"`
	// RewriteBytesPerHour bounds the input bytes compaction rewrites in
	// the scope over any sliding hour (0: no bound). A run takes the
	// groups of its plan that fit; the rest is deferred, and queued first
	// at the next fire.
	RewriteBytesPerHour int64 `yaml:"rewriteBytesPerHour"`
	// TableSharePercent is the share, 1 to 100, of the smaller hourly
	// bytes limit that applies to a table that one run may take (default
	// 25 when a bytes limit is set), so one huge table cannot starve the
	// rest. A run with any budget left still takes its first group when
	// that group is larger (an overdraft the ledger charges).
	TableSharePercent int `yaml:"tableSharePercent"`
}

// Coexistence is how icekeeper shares tables with other maintainers:
// Flink's in-job maintenance, Spark procedures, a managed service.
type Coexistence struct {
	// StepAside is how long compaction leaves a table alone after
	// another maintainer rewrote it (a REPLACE snapshot, or an
	// equality-delete conversion, that icekeeper did not commit), instead
	// of racing it (default 1h; 0s: never step aside).
	StepAside *time.Duration `yaml:"stepAside"`
	// FlinkLock, when set, makes every run take and honour the table's
	// maintenance lock in the JDBC lock table Flink's maintenance uses.
	FlinkLock *FlinkLock `yaml:"flinkLock"`
}

// DefaultStepAside is coexistence.stepAside when unset.
const DefaultStepAside = time.Hour

// FlinkLock is the lock database of Flink's TableMaintenance
// (JdbcLockFactory's flink_maintenance_lock table).
type FlinkLock struct {
	// Database is the lock database: sqlite://PATH or postgres://…, the
	// one the Flink job's lock configuration names.
	Database string `yaml:"database"`
	// LockID is the lock ID of a table, as the table's Flink job sets it:
	// {catalog} (catalogName), {namespace}, {table} and {bucket} are
	// replaced by the table's. Default "{catalog}.{namespace}.{table}":
	// Flink's sink locks by the table's full name unless the job sets
	// flink-maintenance.lock.lock-id. The job must use
	// flink-maintenance.lock.type=jdbc for a row to exist at all.
	LockID string `yaml:"lockId"`
}

// DefaultFlinkLockID is coexistence.flinkLock.lockId when unset.
const DefaultFlinkLockID = "{catalog}.{namespace}.{table}"

// Events configures the event route and freshness scheduling.
type Events struct {
	// Tokens are bearer tokens a webhook may send instead of a SigV4
	// signature (MinIO's, SeaweedFS's and RustFS's webhook targets send a
	// fixed Authorization header); at least MinSecretLength characters.
	Tokens []string `yaml:"tokens"`
	// Debounce is how long a table's check waits after its first event
	// (default 5s): the objects of one commit cost one check.
	Debounce time.Duration `yaml:"debounce"`
	// Backstop is how often a table with a freshness target is checked
	// when no event comes. Default: 1h once events are configured (tokens
	// set, or enabled), else a quarter of the table's target.
	Backstop time.Duration `yaml:"backstop"`
	// Enabled says events are sent (through SigV4 with the API's keys,
	// when no token is set): polls back them up only every Backstop.
	Enabled bool `yaml:"enabled"`
}

// DefaultEventsBackstop is events.backstop when events are on.
const DefaultEventsBackstop = time.Hour

// On reports whether events are configured.
func (e Events) On() bool { return e.Enabled || len(e.Tokens) > 0 }

// CompactionOptions tune compaction for streaming-fed tables.
type CompactionOptions struct {
	// MinFileAgeMinutes leaves data files committed less than this many
	// minutes ago alone, so compaction does not compete with a writer
	// still adding files around them (default 0: no minimum).
	MinFileAgeMinutes int `yaml:"minFileAgeMinutes"`
	// MinManifestsToRewrite: once the current snapshot has this many small
	// data manifests (under half of commit.manifest.target-size-bytes),
	// compaction merges them by partition (default 16; 0 turns it off).
	MinManifestsToRewrite *int `yaml:"minManifestsToRewrite"`
	// MinDeleteFilesToRewrite: once the data files of a partition that
	// compaction does not rewrite have their position deletes in this many
	// distinct files, those deletes are rewritten into one file per data
	// file, or one Puffin file on v3 (default 5; 0 turns it off).
	MinDeleteFilesToRewrite *int `yaml:"minDeleteFilesToRewrite"`
	// MinEqualityDeleteFilesToConvert: once a partition has this many
	// equality delete files, compaction converts them into position
	// deletes (v2) or deletion vectors (v3) instead of rewriting the
	// well-sized data files they apply to (default 1; 0 turns it off).
	MinEqualityDeleteFilesToConvert *int `yaml:"minEqualityDeleteFilesToConvert"`
	// ConvertKeyIndex keeps a key index of the converted tables in the
	// state store: a later conversion reads the new equality deletes, the
	// new data files and one index row per deleted key, not the key
	// columns of every file. It costs the first run several times its
	// time and the store about 80 bytes a key on disk (default off).
	ConvertKeyIndex bool `yaml:"convertKeyIndex"`
	// SkipRowCheck turns off the row check of every rewritten group
	// (default off: every group's rows are checked by their row digest
	// before it is committed). The check reads each input and output a
	// second time; see BENCHMARKS.md for its cost.
	SkipRowCheck bool `yaml:"skipRowCheck"`
}

// DefaultMinManifestsToRewrite is compaction.minManifestsToRewrite when unset.
const DefaultMinManifestsToRewrite = 16

// DefaultMinDeleteFilesToRewrite is compaction.minDeleteFilesToRewrite when
// unset: Spark's rewrite_position_delete_files starts at 5 input files too.
const DefaultMinDeleteFilesToRewrite = 5

// DefaultMinEqualityDeleteFilesToConvert is
// compaction.minEqualityDeleteFilesToConvert when unset. An upsert stream
// writes one equality delete file per checkpoint, and every reader pays
// for each one left (it loads and hashes its keys before returning a
// row), while conversion reads only the key columns of the files the
// deletes reach: so a run converts whatever it finds.
const DefaultMinEqualityDeleteFilesToConvert = 1

// Expiration holds snapshot management's opt-in extras; both are off by
// default, as in S3 Tables, where expiration changes metadata only.
type Expiration struct {
	// DeleteExpiredFiles deletes, right after the commit, the files that
	// only expired snapshots referenced — never one a kept snapshot or
	// metadata file still reaches.
	DeleteExpiredFiles bool `yaml:"deleteExpiredFiles"`
	// PruneUnusedSchemasAndSpecs removes schemas and partition specs that
	// no kept snapshot uses (never the current ones).
	PruneUnusedSchemasAndSpecs bool `yaml:"pruneUnusedSchemasAndSpecs"`
}

// Name is the bucket's name, the last part of its ARN.
func (b Bucket) Name() string { return b.Parsed.Name }

// Filter selects names by glob patterns (path.Match syntax). A name is
// selected when Include is empty or one of its patterns matches, and no
// Exclude pattern matches.
type Filter struct {
	Include []string `yaml:"include"`
	Exclude []string `yaml:"exclude"`
}

// Match reports whether name passes the filter. Patterns were validated at
// load, so match errors cannot occur here.
func (f Filter) Match(name string) bool {
	ok := len(f.Include) == 0
	for _, p := range f.Include {
		if globMatch(p, name) {
			ok = true
			break
		}
	}
	for _, p := range f.Exclude {
		if globMatch(p, name) {
			return false
		}
	}
	return ok
}

// Maintenance holds a bucket's defaults for each job type, flat in the file:
//
//	maintenance:
//	  icebergCompaction: {status: enabled, targetFileSizeMB: 256, strategy: auto}
//
// Its sections are the type table's (maintenance.FileSection): a job
// type's settings are declared once, in its settings file in package
// maintenance. Record expiration is off unless enabled here or through the
// API; each table names its column in the table property
// icekeeper.record-expiration.column.
type Maintenance map[maintenance.JobType]maintenance.Config

// For returns the bucket's layer for job type t (zero when unset).
func (m Maintenance) For(t maintenance.JobType) maintenance.Config { return m[t] }
