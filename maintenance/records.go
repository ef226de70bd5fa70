package maintenance

// ExpirationSettings are the settings of record expiration: rows older
// than Days, by the table's expiration column, are removed.
type ExpirationSettings struct {
	Days *int `json:"days,omitempty" yaml:"days"`
}

func recordExpirationType() Type {
	return Type{
		Name: RecordExpiration, Alias: "records", Scope: TableScope, Dialect: RecordExpirationDialect,
		// 01:00, an hour apart from removal's midnight, so that the two
		// do not start together.
		Schedule: "0 1 * * *",
		Counters: map[string]string{
			"records_expired": "icekeeper_expired_records_total",
			// Data files the expired rows were in, dropped or rewritten.
			"files_expired": "icekeeper_expired_record_files_total",
		},
		settingsKey: "settings.days",
		defaults: func() Config {
			// Off until asked for, as in S3 Tables: it deletes rows. Days
			// has no default; enabling it without days is refused.
			return Config{Status: Disabled, Settings: &ExpirationSettings{}}
		},
		fileSection: sectionOf[ExpirationSettings],
		hasSettings: has[ExpirationSettings],
		newSettings: newOf[ExpirationSettings],
		validate: func(c Config, add adder) {
			if s := c.RecordExpiration(); s != nil {
				checkRange(add, "days", s.Days, 1, MaxDays)
			}
		},
		merge: func(out *Config, l Config) {
			layer(out, l, func(o, l *ExpirationSettings) {
				o.Days = firstInt(o.Days, l.Days)
			})
		},
	}
}

// RecordExpiration is c's ExpirationSettings, nil when c sets none (or another type's).
func (c Config) RecordExpiration() *ExpirationSettings { return settingsAs[ExpirationSettings](c) }
