package maintenance

// MaxSnapshotAgeHoursLimit caps maxSnapshotAgeHours at about 100 years so
// that the conversion to milliseconds can never overflow.
const MaxSnapshotAgeHoursLimit = 876000

// SnapshotSettings are the settings of icebergSnapshotManagement.
type SnapshotSettings struct {
	MinSnapshotsToKeep  *int `json:"minSnapshotsToKeep,omitempty" yaml:"minSnapshotsToKeep"`
	MaxSnapshotAgeHours *int `json:"maxSnapshotAgeHours,omitempty" yaml:"maxSnapshotAgeHours"`
}

func snapshotManagementType() Type {
	return Type{
		Name: SnapshotManagement, Alias: "snapshots", Scope: TableScope, Dialect: MaintenanceDialect,
		Schedule: "0 */6 * * *",
		Counters: map[string]string{
			"snapshots_expired": "icekeeper_expired_snapshots_total",
			"refs_removed":      "icekeeper_removed_refs_total",
		},
		settingsKey: "settings.icebergSnapshotManagement",
		defaults: func() Config {
			return Config{Status: Enabled, Settings: &SnapshotSettings{MinSnapshotsToKeep: Int(1), MaxSnapshotAgeHours: Int(120)}}
		},
		fileSection: sectionOf[SnapshotSettings],
		hasSettings: has[SnapshotSettings],
		newSettings: newOf[SnapshotSettings],
		validate: func(c Config, add adder) {
			if s := c.SnapshotManagement(); s != nil {
				checkRange(add, "minSnapshotsToKeep", s.MinSnapshotsToKeep, 1, 1<<31-1)
				checkRange(add, "maxSnapshotAgeHours", s.MaxSnapshotAgeHours, 1, MaxSnapshotAgeHoursLimit)
			}
		},
		merge: func(out *Config, l Config) {
			layer(out, l, func(o, l *SnapshotSettings) {
				o.MinSnapshotsToKeep = firstInt(o.MinSnapshotsToKeep, l.MinSnapshotsToKeep)
				o.MaxSnapshotAgeHours = firstInt(o.MaxSnapshotAgeHours, l.MaxSnapshotAgeHours)
			})
		},
	}
}

// SnapshotManagement is c's SnapshotSettings, nil when c sets none (or another type's).
func (c Config) SnapshotManagement() *SnapshotSettings { return settingsAs[SnapshotSettings](c) }
