package maintenance

import (
	"fmt"
	"slices"
	"strings"
	"sync"
)

// JobType names a maintenance job exactly as S3 Tables does on the wire.
type JobType string

// The job types. The first three are S3 Tables' maintenance job types, by
// their wire names. Record expiration has calls of its own in S3 Tables
// (PutTableRecordExpirationConfiguration, …) and no name on the wire;
// icekeeper names it in the same style for its configuration file, CLI
// and history.
const (
	Compaction              JobType = "icebergCompaction"
	SnapshotManagement      JobType = "icebergSnapshotManagement"
	UnreferencedFileRemoval JobType = "icebergUnreferencedFileRemoval"
	RecordExpiration        JobType = "icebergRecordExpiration"
	// Erasure is icekeeper's own: deleted rows physically gone by a
	// deadline. It has no S3 Tables counterpart; its configuration and
	// status travel as the maintenance types' do, its configuration only
	// to a client that asks for it (Type.Own).
	Erasure JobType = "icebergErasure"
	// Statistics is icekeeper's own too: the table statistics (column
	// NDV as theta sketches in Puffin files, and partition statistics)
	// that query engines plan with, kept current from each change.
	Statistics JobType = "icebergStatistics"
)

// Scope says where S3 Tables keeps a job type's configuration.
type Scope int

// Values of Scope.
const (
	// TableScope: per table (PutTableMaintenanceConfiguration).
	TableScope Scope = iota
	// BucketScope: per table bucket (PutTableBucketMaintenanceConfiguration).
	BucketScope
)

// Dialect says which S3 Tables calls report a job type's status, and so
// how its statuses are spelled.
type Dialect int

// Values of Dialect.
const (
	// MaintenanceDialect: GetTableMaintenanceJobStatus ("Not_Yet_Run").
	MaintenanceDialect Dialect = iota
	// RecordExpirationDialect: GetTableRecordExpirationJobStatus
	// ("NotYetRun").
	RecordExpirationDialect
)

// Type is everything icekeeper knows of a job type apart from how it runs:
// the one place a job type is spelled out. The configuration file, the
// scheduler, the API, the CLI and the metrics all read it from here, and
// the daemon refuses to start unless it has an executor for each row.
type Type struct {
	Name JobType
	// Alias is the short name `icekeeper run --job` accepts.
	Alias   string
	Scope   Scope
	Dialect Dialect
	// Own marks a type S3 Tables does not have: its settings are a member
	// of the settings union that AWS clients cannot decode, so the API
	// answers them only to a client that asks (icekeeper's own).
	Own bool
	// Schedule is the daemon's default cron expression.
	Schedule string
	// Counters maps each counter a run's figures report to its metric:
	// every key a job's figures count must be here, or /metrics drops it.
	Counters map[string]string

	// The settings hooks, in the type's own settings file: the built-in
	// configuration, whether a layer carries this type's settings, their
	// validation, and laying one layer's settings under out's.
	settingsKey string // where the settings sit in the wire shape
	defaults    func() Config
	// defaultStatus is defaults' status, kept apart so that resolving a
	// status alone builds no settings.
	defaultStatus Status
	hasSettings   func(Config) bool
	// newSettings is a new, empty value of the type's settings, to decode
	// the wire shape into.
	newSettings func() any
	validate    func(Config, adder)
	merge       func(out *Config, layer Config)
	// fileSection is the type's section of a bucket's maintenance in the
	// configuration file: a value to decode the section into (its status
	// and its settings, flat), and what it then says.
	fileSection func() (into any, done func() Config)
}

// FileSection is what the configuration file's section of job type t
// decodes into (a pointer to a struct of its status and its settings,
// flat), and the configuration it then holds; false for a type not in
// the table.
func FileSection(t JobType) (into any, done func() Config, ok bool) {
	typ, ok := Lookup(t)
	if !ok {
		return nil, nil, false
	}
	into, done = typ.fileSection()
	return into, done, true
}

// adder collects one validation failure of a setting.
type adder func(key, format string, args ...any)

// table is the type table, built once, on first use, and never changed:
// the API reads it on every request.
type table struct {
	types       []Type
	byName      map[JobType]int
	byAlias     map[string]JobType
	names       []JobType
	maintenance []JobType
}

// theTable builds the table once. Its rows hold maps and closures that
// no caller may change; Types and the lists hand out copies of the
// slices, so that no caller can reorder another's.
var theTable = sync.OnceValue(func() *table {
	t := &table{
		// The order icekeeper runs them in for `--job all`: record
		// expiration first (it removes rows, so compaction does not
		// rewrite them), then compaction (it creates garbage), then
		// snapshot expiration (it makes garbage unreferenced), then
		// removal (it collects it), then erasure (it settles, by their
		// deadline, the removed rows the others left stored), then
		// statistics (it describes the table the others left).
		types: []Type{
			recordExpirationType(),
			compactionType(),
			snapshotManagementType(),
			removalType(),
			erasureType(),
			statisticsType(),
		},
		byName:  map[JobType]int{},
		byAlias: map[string]JobType{},
	}
	for i := range t.types {
		typ := &t.types[i]
		typ.defaultStatus = typ.defaults().Status
		t.byName[typ.Name] = i
		t.byAlias[typ.Alias] = typ.Name
		t.names = append(t.names, typ.Name)
		if typ.Dialect == MaintenanceDialect {
			t.maintenance = append(t.maintenance, typ.Name)
		}
	}
	return t
})

// Types returns every job type in the order icekeeper runs them for
// `--job all` (see theTable). The rows' maps and functions are shared:
// callers read them and never change them.
func Types() []Type { return slices.Clone(theTable().types) }

// Lookup returns job type t's row of the type table.
func Lookup(t JobType) (Type, bool) {
	tt := theTable()
	i, ok := tt.byName[t]
	if !ok {
		return Type{}, false
	}
	return tt.types[i], true
}

// JobTypes lists every job type's name, in Types' order.
func JobTypes() []JobType { return slices.Clone(theTable().names) }

// MaintenanceTypes lists the job types of S3 Tables' maintenance calls
// (GetTableMaintenanceJobStatus and the maintenance configurations), in
// Types' order, which is also the order S3 Tables documents them in.
func MaintenanceTypes() []JobType { return slices.Clone(theTable().maintenance) }

// ParseJobType returns the job type named s by its wire name, or an error
// listing the valid names.
func ParseJobType(s string) (JobType, error) {
	if t, ok := Lookup(JobType(s)); ok {
		return t.Name, nil
	}
	names := make([]string, 0, 4)
	for _, t := range JobTypes() {
		names = append(names, string(t))
	}
	return "", fmt.Errorf("unknown job type %q (want one of %s)", s, strings.Join(names, ", "))
}

// NewSettings is a new, empty value of job type t's settings (a pointer
// to its settings struct, e.g. *ErasureSettings): the schema of the keys
// a user may set, by their JSON names. False for a type not in the table.
func NewSettings(t JobType) (any, bool) {
	typ, ok := Lookup(t)
	if !ok {
		return nil, false
	}
	return typ.newSettings(), true
}

// ByAlias returns the job type whose short name is s.
func ByAlias(s string) (JobType, bool) {
	t, ok := theTable().byAlias[s]
	return t, ok
}
