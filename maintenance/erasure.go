package maintenance

// ErasureSettings are the settings of icebergErasure: a row version
// removed from a table's main branch is stored in no object under the
// table's locations DeadlineDays after the commit that removed it.
type ErasureSettings struct {
	DeadlineDays *int `json:"deadlineDays,omitempty" yaml:"deadlineDays"`
}

func erasureType() Type {
	return Type{
		Name: Erasure, Alias: "erasure", Scope: TableScope, Dialect: MaintenanceDialect, Own: true,
		// 02:00, after record expiration (01:00) and removal (midnight):
		// erasure settles what they leave, and a daily run is the slack
		// its deadline is planned with (planner.ErasureSettings.Lead).
		Schedule: "0 2 * * *",
		Counters: map[string]string{
			"erasure_files_rewritten":   "icekeeper_erasure_rewritten_files_total",
			"erasure_snapshots_expired": "icekeeper_erasure_expired_snapshots_total",
			"erasure_objects_deleted":   "icekeeper_erasure_deleted_objects_total",
			"erasure_blocked_snapshots": "icekeeper_erasure_blocked_snapshots_total",
			"erasure_overdue":           "icekeeper_erasure_overdue_total",
		},
		settingsKey: "settings.icebergErasure",
		defaults: func() Config {
			// Off until asked for: it rewrites files and expires
			// snapshots below minSnapshotsToKeep when a deadline asks.
			// deadlineDays has no default; enabling without it is refused.
			return Config{Status: Disabled, Settings: &ErasureSettings{}}
		},
		fileSection: sectionOf[ErasureSettings],
		hasSettings: has[ErasureSettings],
		newSettings: newOf[ErasureSettings],
		validate: func(c Config, add adder) {
			s := c.Erasure()
			if s != nil {
				checkRange(add, "deadlineDays", s.DeadlineDays, 1, MaxDays)
			}
			// A deadline is the whole promise: enabling erasure without
			// one is refused where it is written, not at its first run.
			if c.Status == Enabled && (s == nil || s.DeadlineDays == nil) {
				add("deadlineDays", "is required to enable %s: within how many days a deleted row must be gone from storage", Erasure)
			}
		},
		merge: func(out *Config, l Config) {
			layer(out, l, func(o, l *ErasureSettings) {
				o.DeadlineDays = firstInt(o.DeadlineDays, l.DeadlineDays)
			})
		},
	}
}

// Erasure is c's ErasureSettings, nil when c sets none (or another type's).
func (c Config) Erasure() *ErasureSettings { return settingsAs[ErasureSettings](c) }
