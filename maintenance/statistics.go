package maintenance

import "slices"

// The bounds of icebergStatistics' settings.
const (
	// MaxStatisticsColumns caps maxColumns: a blob per column is read by
	// every engine that plans with the file, and a sketch is up to 32 KiB.
	MaxStatisticsColumns = 1000
	// DefaultStatisticsColumns is maxColumns' default.
	DefaultStatisticsColumns = 100
	// DefaultMaxDriftPercent is maxDriftPercent's default: the share of a
	// table's rows that may have been removed since the sketches were last
	// computed from scratch before a run computes them again.
	DefaultMaxDriftPercent = 10
)

// StatisticsSettings are the settings of icebergStatistics: column NDV
// kept as theta sketches in the table's statistics files, and partition
// statistics beside them.
type StatisticsSettings struct {
	// Columns names the columns to keep NDV for (empty: every top-level
	// primitive column, in schema order, up to MaxColumns).
	Columns []string `json:"columns,omitempty" yaml:"columns"`
	// MaxColumns caps the columns taken when Columns is empty.
	MaxColumns *int `json:"maxColumns,omitempty" yaml:"maxColumns"`
	// PartitionStatistics writes a partition statistics file with each
	// run.
	PartitionStatistics *bool `json:"partitionStatistics,omitempty" yaml:"partitionStatistics"`
	// MaxDriftPercent is how much of a table's rows, in percent, row-level
	// deletes and overwrites may have removed since the sketches were
	// computed from scratch before a run recomputes them: until then each
	// ndv is an upper bound, and the drift is recorded beside it.
	MaxDriftPercent *int `json:"maxDriftPercent,omitempty" yaml:"maxDriftPercent"`
}

func statisticsType() Type {
	return Type{
		Name: Statistics, Alias: "statistics", Scope: TableScope, Dialect: MaintenanceDialect, Own: true,
		// 03:00, after the daily jobs that rewrite and remove: a run then
		// describes the table they left. A run reads only what changed
		// since the last, so an hourly schedule is cheap too.
		Schedule: "0 3 * * *",
		Counters: map[string]string{
			"statistics_data_files_read": "icekeeper_statistics_data_files_read_total",
			"statistics_bytes_read":      "icekeeper_statistics_bytes_read_total",
			"statistics_columns":         "icekeeper_statistics_columns_total",
			"statistics_recomputes":      "icekeeper_statistics_recomputes_total",
		},
		settingsKey: "settings.icebergStatistics",
		defaults: func() Config {
			// Off until asked for: it adds a file and a commit per run to
			// tables whose readers may not plan with statistics at all.
			return Config{Status: Disabled, Settings: &StatisticsSettings{
				MaxColumns: Int(DefaultStatisticsColumns), PartitionStatistics: Bool(true),
				MaxDriftPercent: Int(DefaultMaxDriftPercent)}}
		},
		fileSection: sectionOf[StatisticsSettings],
		hasSettings: has[StatisticsSettings],
		newSettings: newOf[StatisticsSettings],
		validate: func(c Config, add adder) {
			s := c.Statistics()
			if s == nil {
				return
			}
			checkRange(add, "maxColumns", s.MaxColumns, 1, MaxStatisticsColumns)
			checkRange(add, "maxDriftPercent", s.MaxDriftPercent, 0, 100)
			if len(s.Columns) > MaxStatisticsColumns {
				add("columns", "%d columns are more than the maximum %d", len(s.Columns), MaxStatisticsColumns)
			}
			for _, name := range s.Columns {
				if name == "" {
					add("columns", "an empty column name")
				}
			}
		},
		merge: func(out *Config, l Config) {
			layer(out, l, func(o, l *StatisticsSettings) {
				if o.Columns == nil {
					o.Columns = slices.Clone(l.Columns)
				}
				o.MaxColumns = firstInt(o.MaxColumns, l.MaxColumns)
				if o.PartitionStatistics == nil {
					o.PartitionStatistics = l.PartitionStatistics
				}
				o.MaxDriftPercent = firstInt(o.MaxDriftPercent, l.MaxDriftPercent)
			})
		},
	}
}

// Statistics is c's StatisticsSettings, nil when c sets none (or another type's).
func (c Config) Statistics() *StatisticsSettings { return settingsAs[StatisticsSettings](c) }

// Bool returns a pointer to v, for building settings literals.
func Bool(v bool) *bool { return &v }
