package maintenance

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// The S3 Tables JSON shape of a job type's configuration is
// {"status":"enabled","settings":{"icebergCompaction":{…}}} for the
// maintenance types, whose settings are a union with a member named by
// each type, and {"status":"enabled","settings":{"days":30}} for record
// expiration, whose settings are the object itself. Each type's row says
// which: its settingsKey names its member ("settings.icebergCompaction")
// or, for a type of the record expiration dialect, its one field
// ("settings.days").
type wireConfig struct {
	Status   Status                     `json:"status,omitempty"`
	Settings map[string]json.RawMessage `json:"settings,omitempty"`
}

// member is where typ's settings sit in the settings object, and whether
// they are the object itself rather than a member of it.
func (typ Type) member() (name string, flat bool) {
	return strings.TrimPrefix(typ.settingsKey, "settings."), typ.Dialect == RecordExpirationDialect
}

// MarshalJSON writes c in the S3 Tables wire shape.
func (c Config) MarshalJSON() ([]byte, error) {
	w := wireConfig{Status: c.Status}
	for _, typ := range theTable().types {
		if !typ.hasSettings(c) {
			continue
		}
		raw, err := json.Marshal(c.Settings)
		if err != nil {
			return nil, err
		}
		name, flat := typ.member()
		if !flat {
			w.Settings = map[string]json.RawMessage{name: raw}
		} else if err := json.Unmarshal(raw, &w.Settings); err != nil {
			return nil, err
		}
	}
	return json.Marshal(w)
}

// UnmarshalJSON reads the S3 Tables wire shape leniently (unknown fields are
// ignored) so that values stored by older versions still load. Input from
// users goes through DecodeConfig, which is strict.
func (c *Config) UnmarshalJSON(data []byte) error {
	var w wireConfig
	if err := json.Unmarshal(data, &w); err != nil {
		return err
	}
	*c = Config{Status: w.Status}
	if owners, _ := w.owners(); len(owners) > 0 {
		typ := owners[0]
		settings := typ.newSettings()
		if err := json.Unmarshal(w.body(typ), settings); err != nil {
			return err
		}
		c.Settings = settings
	}
	return nil
}

// owners are the types whose settings the settings object holds, in type
// order, and the keys that belong to none.
func (w wireConfig) owners() (owners []Type, unknown []string) {
	known := map[string]bool{}
	for _, typ := range theTable().types {
		name, _ := typ.member()
		known[name] = true
		if _, ok := w.Settings[name]; ok {
			owners = append(owners, typ)
		}
	}
	for key := range w.Settings {
		if !known[key] {
			unknown = append(unknown, key)
		}
	}
	return owners, unknown
}

// body is the JSON of typ's settings in the settings object.
func (w wireConfig) body(typ Type) []byte {
	name, flat := typ.member()
	if !flat {
		return w.Settings[name]
	}
	b, _ := json.Marshal(map[string]json.RawMessage{name: w.Settings[name]})
	return b
}

// DecodeConfig parses a user's configuration of job type t in the wire
// shape, strictly: unknown fields, wrong types, a settings union with other
// than exactly one member or a member for another type, and out-of-range
// values are errors wrapping ErrInvalid.
func DecodeConfig(t JobType, data []byte) (Config, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var w wireConfig
	if err := dec.Decode(&w); err != nil {
		return Config{}, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	if dec.More() {
		return Config{}, fmt.Errorf("%w: trailing data after the JSON value", ErrInvalid)
	}
	if w.Status == "" {
		return Config{}, fmt.Errorf("%w: status: is required (enabled or disabled)", ErrInvalid)
	}
	c := Config{Status: w.Status}
	if w.Settings != nil {
		owners, unknown := w.owners()
		if len(unknown) > 0 {
			return Config{}, fmt.Errorf("%w: settings: json: unknown field %q", ErrInvalid, unknown[0])
		}
		own, _ := Lookup(t)
		if _, flat := own.member(); flat && len(owners) == 0 {
			return Config{}, fmt.Errorf("%w: %s: is required when settings are given", ErrInvalid, own.settingsKey)
		}
		if len(owners) != 1 {
			return Config{}, fmt.Errorf("%w: settings: must have exactly one member, found %d", ErrInvalid, len(owners))
		}
		typ := owners[0]
		settings := typ.newSettings()
		sd := json.NewDecoder(bytes.NewReader(w.body(typ)))
		sd.DisallowUnknownFields()
		if err := sd.Decode(settings); err != nil {
			return Config{}, fmt.Errorf("%w: %s: %v", ErrInvalid, typ.settingsKey, err)
		}
		c.Settings = settings
	}
	if err := c.Validate(t); err != nil {
		return Config{}, err
	}
	return c, nil
}
