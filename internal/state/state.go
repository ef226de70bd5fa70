// Package state is icekeeper's durable state: maintenance-configuration
// overrides written through the API, the history of job runs, noncurrent-file
// marks of unreferenced file removal, and job leases. One interface, Store,
// has two real backends on database/sql: SQLite (pure Go, the embedded
// default) and PostgreSQL (shared by several replicas). Both run the same
// versioned migrations and the same test suite.
package state

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"time"

	"github.com/riverqueue/river/riverdriver"

	"github.com/icekeeper/icekeeper/maintenance"
)

// TableKey names a table: its bucket's ARN, its namespace (dot-joined when
// nested) and its name.
type TableKey struct {
	Bucket    string `json:"bucket"`
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
}

func (k TableKey) String() string { return k.Bucket + "/" + k.Namespace + "/" + k.Name }

// RunStatus is the outcome of a job run. The first four are S3 Tables' job
// status values; Running and Skipped are icekeeper's.
type RunStatus string

// Run outcomes.
const (
	Successful RunStatus = "Successful"
	Failed     RunStatus = "Failed"
	Disabled   RunStatus = "Disabled"
	Skipped    RunStatus = "Skipped" // the job had nothing it could do (e.g. not implemented for this table)
	Running    RunStatus = "Running"
)

// Run is one execution of one job type on one table.
type Run struct {
	ID             int64               `json:"id"`
	Table          TableKey            `json:"table"`
	Type           maintenance.JobType `json:"type"`
	Trigger        string              `json:"trigger"` // "cli", "schedule", "api"
	Started        time.Time           `json:"started"`
	Finished       time.Time           `json:"finished,omitzero"`
	Status         RunStatus           `json:"status"`
	FailureMessage string              `json:"failureMessage,omitempty"`
	Metrics        json.RawMessage     `json:"metrics,omitempty"`
	// Evaluation is what the run's job saw of the table, when it left a
	// verdict a later run may rest on (nil otherwise). It is kept with
	// the run, not in its figures, and not served.
	Evaluation *Evaluation `json:"-"`
}

// Evaluation is what a full evaluation of a table saw: the current
// snapshot and metadata file, and the identity of the settings it ran
// with. A run that skipped because nothing changed carries the
// evaluation it rested on, so the chain keeps the time and run of the
// last full one.
type Evaluation struct {
	RunID            int64     // the run that evaluated in full
	At               time.Time // when it did
	SnapshotID       int64     // -1: the table had no current snapshot
	MetadataLocation string    // "" where the catalog gives none
	SettingsHash     string
	// ValidUntil is when the clock alone may change the job's decision
	// (a snapshot ages past its max age); zero when it cannot.
	ValidUntil time.Time
}

// Mark records that an unreferenced object was made noncurrent. A mark an
// operator restored is protected: the object is kept, and not marked again,
// until the operator releases it or the table references it again.
type Mark struct {
	Table        TableKey  `json:"-"`
	Path         string    `json:"path"`
	Size         int64     `json:"size"`
	LastModified time.Time `json:"lastModified"`
	MarkedAt     time.Time `json:"markedAt"`
	RunID        int64     `json:"runId"`
	ProtectedAt  time.Time `json:"protectedAt,omitzero"`
}

// Protected reports whether an operator restored the object.
func (m Mark) Protected() bool { return !m.ProtectedAt.IsZero() }

// MarkStat summarises a table's unprotected noncurrent marks.
type MarkStat struct {
	Count  int
	Oldest time.Time
}

// ErrNotFound is returned when a looked-up record does not exist.
var ErrNotFound = errors.New("not found")

// Store is icekeeper's durable state: every part below, on one database.
// Implementations are safe for concurrent use. Consumers take the part
// they need, so that what each one may touch is visible in its type.
type Store interface {
	Overrides
	History
	Marks
	Leases
	Queue
	RefIndex
	KeyIndex
	Ledger
	HealthHistory
	ErasureBlocks
	Tables
	// Ping checks that the store answers: the daemon's readiness.
	Ping(ctx context.Context) error
	Close() error
}

// Overrides are the maintenance configurations written through the API.
type Overrides interface {
	// TableConfig returns the per-table overrides set through the API.
	TableConfig(ctx context.Context, t TableKey) (map[maintenance.JobType]maintenance.Config, error)
	PutTableConfig(ctx context.Context, t TableKey, typ maintenance.JobType, c maintenance.Config) error
	// BucketConfig returns the per-bucket overrides set through the API.
	BucketConfig(ctx context.Context, bucketARN string) (map[maintenance.JobType]maintenance.Config, error)
	PutBucketConfig(ctx context.Context, bucketARN string, typ maintenance.JobType, c maintenance.Config) error
	// AllOverrides returns every table's and every bucket's overrides.
	AllOverrides(ctx context.Context) (map[TableKey]map[maintenance.JobType]maintenance.Config, map[string]map[maintenance.JobType]maintenance.Config, error)
}

// History is the record of job runs.
type History interface {
	// StartRun records a run in state Running and returns its ID.
	StartRun(ctx context.Context, r Run) (int64, error)
	// FinishRun records the outcome of the run r.ID.
	FinishRun(ctx context.Context, r Run) error
	// LastRuns returns the latest finished run of each job type of t
	// that ran: a recorded Disabled run says only that the type was off
	// at its fire, and is left out.
	LastRuns(ctx context.Context, t TableKey) (map[maintenance.JobType]Run, error)
	// LastEvaluation returns the evaluation recorded with the latest
	// successful run of typ on t; false when there is none, or that run
	// left no verdict.
	LastEvaluation(ctx context.Context, t TableKey, typ maintenance.JobType) (Evaluation, bool, error)
	// LastSuccesses returns, for every table and job type that has one,
	// the latest successful run.
	LastSuccesses(ctx context.Context) ([]Run, error)
	// Runs returns up to limit runs of t and typ, newest first.
	Runs(ctx context.Context, t TableKey, typ maintenance.JobType, limit int) ([]Run, error)
	// LatestRuns returns the latest finished run of every table and job
	// type, and the latest successful one where that is older; with since
	// set, only runs that finished at or after since.
	LatestRuns(ctx context.Context, since time.Time) ([]Run, error)
	// FailRunning marks t's runs of typ still recorded as Running as Failed
	// with msg: a worker that held them died. It returns how many.
	FailRunning(ctx context.Context, t TableKey, typ maintenance.JobType, msg string, now time.Time) (int, error)
	// RunningRuns returns the runs still recorded as Running that started
	// before startedBefore, oldest first.
	RunningRuns(ctx context.Context, startedBefore time.Time) ([]Run, error)
	// FailRun marks the run r.ID Failed with msg, finished at now, if it
	// is still Running, keeping any figures it has; it reports whether
	// it did.
	FailRun(ctx context.Context, r Run, msg string, now time.Time) (bool, error)
	// DailySums sums, per UTC day from since on, numbers t's finished
	// runs of every type recorded in their figures: paths name them by
	// their keys, dot-separated ("cost.usd"); a run without a number
	// there adds 0. Days without runs are absent; the days come oldest
	// first.
	DailySums(ctx context.Context, t TableKey, since time.Time, paths ...string) ([]DaySums, error)
}

// DaySums are the sums DailySums reads for one UTC day: Sums[i] is the
// sum at the i-th path, over Runs runs.
type DaySums struct {
	Day  time.Time
	Runs int
	Sums []float64
}

// Marks are the noncurrent marks of unreferenced file removal.
type Marks interface {
	// PutMarks inserts or replaces noncurrent marks.
	PutMarks(ctx context.Context, marks []Mark) error
	// Marks returns t's noncurrent marks, protected ones included, ordered
	// by path.
	Marks(ctx context.Context, t TableKey) ([]Mark, error)
	// DeleteMarks removes t's marks of the given paths and returns how
	// many were removed; no paths removes nothing.
	DeleteMarks(ctx context.Context, t TableKey, paths []string) (int, error)
	// MarkStats returns, per table with unprotected marks, how many there
	// are and when the oldest was made.
	MarkStats(ctx context.Context) (map[TableKey]MarkStat, error)
	// ProtectMarks protects t's unprotected marks of paths (all of them
	// when paths is nil) as of at and returns how many it protected.
	ProtectMarks(ctx context.Context, t TableKey, paths []string, at time.Time) (int, error)
}

// RefIndex is unreferenced file removal's reference index: for each
// manifest list and manifest of a table, what it references. Those files
// are immutable, so a run reads only the ones it has not seen. The store
// keeps the references opaque; package orphan encodes them and checks
// every row before trusting it, so a row is a cache, never the truth.
type RefIndex interface {
	// IndexedRefs returns those of t's rows whose path is in paths.
	IndexedRefs(ctx context.Context, t TableKey, paths []string) (map[string]IndexRow, error)
	// PutIndexedRefs inserts or replaces t's rows.
	PutIndexedRefs(ctx context.Context, t TableKey, rows []IndexRow) error
	// ForgetIndexedRefs removes t's rows but those of a path in keep
	// written for tableUUID, and returns how many it removed.
	ForgetIndexedRefs(ctx context.Context, t TableKey, tableUUID string, keep []string) (int, error)
}

// IndexRow is what one manifest list or manifest references.
type IndexRow struct {
	// Path names the manifest list or manifest as the metadata does.
	Path string
	// TableUUID is the UUID of the table whose metadata it was read for.
	TableUUID string
	// Refs is the encoded list of references (package orphan's format).
	Refs []byte
}

// KeyIndex is equality-delete conversion's key index: for each data file
// of a table it has read, every row's key (the equality fields' values,
// encoded) and the row's position, so that a later run finds the rows of
// a deleted key by looking the key up instead of reading every data file
// again. Data files are immutable, so an entry stays true while its file
// is live. The store keeps entries opaque and returns what it was given;
// package compactor encodes them and checks each one before trusting it,
// so the index is a cache, never the truth.
//
// An index is named by its table and KeyIndexName (the table's UUID and
// the equality field set). Its entries are in segments, each one batch
// written in hash order after every existing segment and keyed by
// (segment, hash): indexing a file of n rows writes n rows, appended,
// whatever the index already holds, and a lookup of K keys seeks each
// segment for them (MergeKeySegments keeps the segments few).
type KeyIndex interface {
	// KeyFiles returns the data files of t's index ix, complete or not,
	// ordered by ID; none when the index does not exist.
	KeyFiles(ctx context.Context, t TableKey, ix KeyIndexName) ([]KeyFile, error)
	// AddKeyFile records f (its ID and Complete ignored) in t's index ix,
	// creating the index, as not complete, and returns it with its ID.
	AddKeyFile(ctx context.Context, t TableKey, ix KeyIndexName, f KeyFile) (KeyFile, error)
	// PutKeys stores entries of files of t's index ix as a new segment,
	// in one transaction, and returns its number. The caller sorts them
	// by hash: the segment is then written in key order.
	PutKeys(ctx context.Context, t TableKey, ix KeyIndexName, entries []KeyEntry) (int64, error)
	// CompleteKeyFile marks file id of t's index ix complete: every entry
	// of its rows is stored. It returns ErrNotFound when the file is not
	// (or no longer) in the index.
	CompleteKeyFile(ctx context.Context, t TableKey, ix KeyIndexName, id int64) error
	// LookupKeys calls fn with each entry of t's index ix whose hash is in
	// hashes, reading at most a few hundred hashes per query; an error
	// from fn stops it and is returned.
	LookupKeys(ctx context.Context, t TableKey, ix KeyIndexName, hashes []int64, fn func(KeyEntry) error) error
	// MergeKeySegments merges segments segs of t's index ix into one
	// (nothing when fewer than two), then, if the index has more than max
	// segments, every segment but the biggest into one. A merge writes in
	// hash order and leaves out the entries of files no longer in the
	// index. It returns how many segments it merged (0: none).
	MergeKeySegments(ctx context.Context, t TableKey, ix KeyIndexName, segs []int64, max int) (int, error)
	// ForgetKeyFiles removes files ids from t's index ix and returns how
	// many it removed. Their entries stay until one sweep of the index
	// deletes them, once the rows of forgotten files outnumber those of
	// the files it keeps: the caller ignores entries of files it does
	// not know.
	ForgetKeyFiles(ctx context.Context, t TableKey, ix KeyIndexName, ids []int64) (int, error)
	// DropKeyIndexes removes t's indexes, files and entries but those
	// written for keepUUID ("" drops all), and returns how many indexes
	// it removed.
	DropKeyIndexes(ctx context.Context, t TableKey, keepUUID string) (int, error)
}

// KeyIndexName names one key index of a table: the UUID of the table its
// files were read for (a table recreated under the same name never
// reuses another's entries) and its equality field set, whose IDs,
// sorted, make the key.
type KeyIndexName struct {
	TableUUID string
	Fields    string // e.g. "1" or "1,6"
}

// KeyFile is a data file in a key index. Path, Size and Records are the
// file's as the table's metadata gave them when it was read; a file whose
// metadata no longer agrees is not the file indexed. Complete is set once
// every entry of its rows is stored: a file indexed by a run that died
// midway has entries missing, and is read again.
type KeyFile struct {
	ID       int64
	Path     string
	Size     int64
	Records  int64
	Complete bool
}

// KeyEntry is one row of a data file in a key index: Hash is the hash of
// its key, File the KeyFile's ID, Pos the row's position in the file, and
// Entry the opaque encoding package compactor writes (the key itself and
// a checksum).
type KeyEntry struct {
	Hash  int64
	File  int64
	Pos   int64
	Entry []byte
}

// LedgerKeep is how long the rewrite ledger keeps a row: budgets look
// back an hour; the rest is for a person reading the table.
const LedgerKeep = 24 * time.Hour

// Ledger is the record of the bytes compaction rewrote, by bucket, that
// rewrite budgets sum over a sliding hour.
type Ledger interface {
	// RecordRewrite appends bytes rewritten in the bucket (its ARN) at
	// at, and forgets rows older than LedgerKeep before at. Zero or
	// negative bytes record nothing.
	RecordRewrite(ctx context.Context, bucket string, at time.Time, bytes int64) error
	// RewrittenSince returns the bytes rewritten at or after since, per
	// bucket ARN; buckets without any are absent.
	RewrittenSince(ctx context.Context, since time.Time) (map[string]int64, error)
}

// HealthKeep and HealthKeepPerTable bound a table's health history: the
// dashboard charts the last 30 days, and a table that changes all day
// keeps its latest samples, not an unbounded row count.
const (
	HealthKeep         = 30 * 24 * time.Hour
	HealthKeepPerTable = 1000
)

// HealthSample is a table's health as computed for one of its metadata
// files. Health is the JSON the API serves (package health's), opaque
// here.
type HealthSample struct {
	Table            TableKey
	At               time.Time
	MetadataLocation string
	Health           json.RawMessage
}

// HealthHistory is each table's health over time.
type HealthHistory interface {
	// RecordHealth stores s unless s.Table has a sample of the same
	// metadata location already, and reports whether it stored it. It
	// forgets every table's samples older than HealthKeep before s.At,
	// and s.Table's beyond its newest HealthKeepPerTable.
	RecordHealth(ctx context.Context, s HealthSample) (bool, error)
	// HealthSamples returns t's samples taken at or after since, oldest
	// first.
	HealthSamples(ctx context.Context, t TableKey, since time.Time) ([]HealthSample, error)
}

// ErasureBlock is a file that held row versions erasure removed, still
// stored because another table of the bucket references it: Holder is
// that table, Removed when the rows were removed (zero: before the oldest
// snapshot the metadata kept), Due their deadline, FirstSeen when a run
// first found the reference.
type ErasureBlock struct {
	Table     TableKey
	Path      string
	Holder    TableKey
	Removed   time.Time
	Due       time.Time
	FirstSeen time.Time
}

// ErasureBlocks are erasure's blocks by other tables. Once erasure
// expired every snapshot of a table that reached such a file, the
// table's metadata no longer names it: the store remembers it, so that
// every later run checks it again until it is gone or no table holds it.
type ErasureBlocks interface {
	// PutErasureBlocks inserts blocks, or updates the holder and times
	// of a path already blocked, keeping its FirstSeen.
	PutErasureBlocks(ctx context.Context, blocks []ErasureBlock) error
	// ErasureBlocks returns t's blocks, ordered by path.
	ErasureBlocks(ctx context.Context, t TableKey) ([]ErasureBlock, error)
	// DeleteErasureBlocks removes t's blocks of paths and returns how many
	// it removed; no paths removes nothing.
	DeleteErasureBlocks(ctx context.Context, t TableKey, paths []string) (int, error)
}

// Leases are named, expiring locks: one job per table at a time.
type Leases interface {
	// AcquireLease takes or renews the named lease for holder until now+ttl.
	// It fails (false, nil) while another holder's lease has not expired.
	AcquireLease(ctx context.Context, name, holder string, now time.Time, ttl time.Duration) (bool, error)
	// ReleaseLease gives up holder's lease; releasing a lease one does not
	// hold is a no-op.
	ReleaseLease(ctx context.Context, name, holder string) error
	// LeaseHolder returns who holds the named lease at now; "" when no
	// one does, or the lease expired.
	LeaseHolder(ctx context.Context, name string, now time.Time) (string, error)
}

// Queue is the daemon's job queue: River's tables on the store's
// database (package jobs owns their use), and the last cron fire of each
// job type.
type Queue interface {
	// Engine is the River driver on the store's database.
	Engine() riverdriver.Driver[*sql.Tx]
	// QueueDepth counts the jobs waiting or running.
	QueueDepth(ctx context.Context) (int, error)
	// LastFire and SetLastFire keep the last cron fire of each job type.
	LastFire(ctx context.Context, typ maintenance.JobType) (time.Time, error)
	SetLastFire(ctx context.Context, typ maintenance.JobType, at time.Time) error
}
