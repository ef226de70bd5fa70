package maintenance

// MaxDays caps unreferencedDays, nonCurrentDays and record expiration's
// days at about 100 years, so that conversions to durations never overflow.
const MaxDays = 36500

// RemovalSettings are the settings of icebergUnreferencedFileRemoval.
type RemovalSettings struct {
	UnreferencedDays *int `json:"unreferencedDays,omitempty" yaml:"unreferencedDays"`
	NonCurrentDays   *int `json:"nonCurrentDays,omitempty" yaml:"nonCurrentDays"`
}

func removalType() Type {
	return Type{
		Name: UnreferencedFileRemoval, Alias: "unreferenced", Scope: BucketScope, Dialect: MaintenanceDialect,
		Schedule: "@daily",
		Counters: map[string]string{
			"objects_marked":   "icekeeper_marked_objects_total",
			"objects_unmarked": "icekeeper_unmarked_objects_total",
			"objects_deleted":  "icekeeper_deleted_objects_total",
			"bytes_deleted":    "icekeeper_deleted_bytes_total",
			// Manifest lists and manifests read from storage, and taken
			// from the reference index instead.
			"manifests_read":       "icekeeper_removal_manifests_read_total",
			"manifests_from_index": "icekeeper_removal_manifests_from_index_total",
		},
		settingsKey: "settings.icebergUnreferencedFileRemoval",
		defaults: func() Config {
			return Config{Status: Enabled, Settings: &RemovalSettings{UnreferencedDays: Int(3), NonCurrentDays: Int(10)}}
		},
		fileSection: sectionOf[RemovalSettings],
		hasSettings: has[RemovalSettings],
		newSettings: newOf[RemovalSettings],
		validate: func(c Config, add adder) {
			if s := c.Removal(); s != nil {
				checkRange(add, "unreferencedDays", s.UnreferencedDays, 1, MaxDays)
				checkRange(add, "nonCurrentDays", s.NonCurrentDays, 1, MaxDays)
			}
		},
		merge: func(out *Config, l Config) {
			layer(out, l, func(o, l *RemovalSettings) {
				o.UnreferencedDays = firstInt(o.UnreferencedDays, l.UnreferencedDays)
				o.NonCurrentDays = firstInt(o.NonCurrentDays, l.NonCurrentDays)
			})
		},
	}
}

// Removal is c's RemovalSettings, nil when c sets none (or another type's).
func (c Config) Removal() *RemovalSettings { return settingsAs[RemovalSettings](c) }
