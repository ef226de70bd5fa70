package maintenance

import (
	"strings"
	"testing"
)

// The type table is the one place a job type is spelled out, so its rows
// must not collide: a shared alias, counter or metric would send one
// type's runs to another's name.
func TestTypeTable(t *testing.T) {
	aliases, counters, metrics := map[string]JobType{}, map[string]JobType{}, map[string]JobType{}
	for _, typ := range Types() {
		if typ.Alias == "" || typ.Schedule == "" || typ.settingsKey == "" || len(typ.Counters) == 0 {
			t.Errorf("%s: a row needs an alias, a schedule, a settings key and counters: %+v", typ.Name, typ)
		}
		if other, dup := aliases[typ.Alias]; dup {
			t.Errorf("alias %q of both %s and %s", typ.Alias, other, typ.Name)
		}
		aliases[typ.Alias] = typ.Name
		for key, name := range typ.Counters {
			if other, dup := counters[key]; dup {
				t.Errorf("counter %q of both %s and %s", key, other, typ.Name)
			}
			if other, dup := metrics[name]; dup {
				t.Errorf("metric %q of both %s and %s", name, other, typ.Name)
			}
			if !strings.HasPrefix(name, "icekeeper_") || !strings.HasSuffix(name, "_total") {
				t.Errorf("%s: counter metric %q is not icekeeper_…_total", typ.Name, name)
			}
			counters[key], metrics[name] = typ.Name, typ.Name
		}
		// Defaults validate, and carry only the type's own settings.
		d := Defaults(typ.Name)
		if err := d.Validate(typ.Name); err != nil {
			t.Errorf("%s: defaults do not validate: %v", typ.Name, err)
		}
		if d.Status == "" || DefaultStatus(typ.Name) != d.Status {
			t.Errorf("%s: DefaultStatus %q, defaults' status %q", typ.Name, DefaultStatus(typ.Name), d.Status)
		}
		if !typ.hasSettings(d) {
			t.Errorf("%s: defaults carry no settings", typ.Name)
		}
		// The configuration file's section holds the type's own settings.
		if into, done, ok := FileSection(typ.Name); !ok || into == nil || !typ.hasSettings(done()) {
			t.Errorf("%s: the file section decodes into %T and holds no settings of the type", typ.Name, into)
		}
		if got, ok := ByAlias(typ.Alias); !ok || got != typ.Name {
			t.Errorf("ByAlias(%q) = %q, %v", typ.Alias, got, ok)
		}
	}
	if got := MaintenanceTypes(); len(got) != 5 || got[0] != Compaction || got[2] != UnreferencedFileRemoval || got[3] != Erasure || got[4] != Statistics {
		t.Errorf("MaintenanceTypes() = %v", got)
	}
	if _, err := ParseJobType("compaction"); err == nil {
		t.Error("ParseJobType takes wire names only, as S3 Tables does; it took an alias")
	}
}

// NewSettings is the schema icekeeper settings types its SETTING=VALUE
// pairs by: a pointer to a struct of JSON-named fields for every type,
// which the type's own decoding accepts.
func TestNewSettings(t *testing.T) {
	for _, typ := range Types() {
		s, ok := NewSettings(typ.Name)
		if !ok || s == nil {
			t.Fatalf("%s: no settings value", typ.Name)
		}
		if !typ.hasSettings(Config{Settings: s}) {
			t.Errorf("%s: NewSettings gives %T, which is not its settings", typ.Name, s)
		}
	}
	if _, ok := NewSettings("icebergNothing"); ok {
		t.Error("NewSettings of an unknown type")
	}
}
