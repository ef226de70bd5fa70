package maintenance

import "cmp"

// Strategy selects how compaction orders rows in its output.
type Strategy string

// Compaction strategies as S3 Tables names them.
const (
	StrategyAuto    Strategy = "auto"
	StrategyBinpack Strategy = "binpack"
	StrategySort    Strategy = "sort"
	StrategyZOrder  Strategy = "z-order"
	// StrategyHilbert orders rows along a Hilbert curve over the sort
	// order's columns. S3 Tables does not offer it; Iceberg 1.12's
	// rewrite_data_files does.
	StrategyHilbert Strategy = "hilbert"
)

// MinTargetFileSizeMB and MaxTargetFileSizeMB bound targetFileSizeMB.
// AWS documents 64–512; icekeeper accepts down to 1 MB so that small test
// and demo tables can be compacted meaningfully.
const (
	MinTargetFileSizeMB = 1
	MaxTargetFileSizeMB = 512
)

// CompactionSettings are the settings of icebergCompaction.
type CompactionSettings struct {
	TargetFileSizeMB *int     `json:"targetFileSizeMB,omitempty" yaml:"targetFileSizeMB"`
	Strategy         Strategy `json:"strategy,omitempty" yaml:"strategy"`
}

func compactionType() Type {
	return Type{
		Name: Compaction, Alias: "compaction", Scope: TableScope, Dialect: MaintenanceDialect,
		Schedule: "@hourly",
		Counters: map[string]string{
			"bytes_compacted": "icekeeper_compaction_input_bytes_total",
			"files_compacted": "icekeeper_compaction_input_files_total",
			"files_written":   "icekeeper_compaction_output_files_total",
			// Position delete files and deletion vectors that delete-file
			// compaction replaced.
			"deletes_rewritten": "icekeeper_compaction_deletes_rewritten_total",
			// Equality delete files that equality-delete conversion
			// replaced with position deletes or deletion vectors.
			"equality_deletes_converted": "icekeeper_compaction_equality_deletes_converted_total",
			// What conversion wrote for them, the rows they matched, the
			// key column and delete file bytes it read, and the chunks of
			// keys it held at once.
			"convert_deletes_written": "icekeeper_compaction_convert_deletes_written_total",
			"convert_rows_matched":    "icekeeper_compaction_convert_rows_matched_total",
			"convert_bytes_read":      "icekeeper_compaction_convert_bytes_read_total",
			"convert_chunks":          "icekeeper_compaction_convert_chunks_total",
		},
		settingsKey: "settings.icebergCompaction",
		defaults: func() Config {
			return Config{Status: Enabled, Settings: &CompactionSettings{TargetFileSizeMB: Int(512), Strategy: StrategyAuto}}
		},
		fileSection: sectionOf[CompactionSettings],
		hasSettings: has[CompactionSettings],
		newSettings: newOf[CompactionSettings],
		validate: func(c Config, add adder) {
			s := c.Compaction()
			if s == nil {
				return
			}
			checkRange(add, "targetFileSizeMB", s.TargetFileSizeMB, MinTargetFileSizeMB, MaxTargetFileSizeMB)
			switch s.Strategy {
			case "", StrategyAuto, StrategyBinpack, StrategySort, StrategyZOrder, StrategyHilbert:
			default:
				add("strategy", "%q is not one of auto, binpack, sort, z-order, hilbert", s.Strategy)
			}
		},
		merge: func(out *Config, l Config) {
			layer(out, l, func(o, l *CompactionSettings) {
				o.TargetFileSizeMB = firstInt(o.TargetFileSizeMB, l.TargetFileSizeMB)
				o.Strategy = cmp.Or(o.Strategy, l.Strategy)
			})
		},
	}
}

// Compaction is c's CompactionSettings, nil when c sets none (or another type's).
func (c Config) Compaction() *CompactionSettings { return settingsAs[CompactionSettings](c) }
