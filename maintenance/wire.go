package maintenance

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// wireConfig is the S3 Tables JSON shape of a job type's configuration:
// {"status":"enabled","settings":{"icebergCompaction":{…}}} for the
// maintenance types, whose settings are a union named by type, and
// {"status":"enabled","settings":{"days":30}} for record expiration.
type wireConfig struct {
	Status   Status        `json:"status,omitempty"`
	Settings *wireSettings `json:"settings,omitempty"`
}

type wireSettings struct {
	Compaction         *CompactionSettings `json:"icebergCompaction,omitempty"`
	SnapshotManagement *SnapshotSettings   `json:"icebergSnapshotManagement,omitempty"`
	Removal            *RemovalSettings    `json:"icebergUnreferencedFileRemoval,omitempty"`
	Days               *int                `json:"days,omitempty"`
}

// MarshalJSON writes c in the S3 Tables wire shape.
func (c Config) MarshalJSON() ([]byte, error) {
	w := wireConfig{Status: c.Status}
	if c.Compaction != nil || c.SnapshotManagement != nil || c.Removal != nil {
		w.Settings = &wireSettings{Compaction: c.Compaction, SnapshotManagement: c.SnapshotManagement, Removal: c.Removal}
	}
	if c.RecordExpiration != nil && c.RecordExpiration.Days != nil {
		w.Settings = &wireSettings{Days: c.RecordExpiration.Days}
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
	*c = w.toConfig()
	return nil
}

func (w wireConfig) toConfig() Config {
	c := Config{Status: w.Status}
	if w.Settings != nil {
		c.Compaction, c.SnapshotManagement, c.Removal = w.Settings.Compaction, w.Settings.SnapshotManagement, w.Settings.Removal
		if w.Settings.Days != nil {
			c.RecordExpiration = &ExpirationSettings{Days: w.Settings.Days}
		}
	}
	return c
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
	if s := w.Settings; s != nil && t == RecordExpiration && s.Days == nil && s.Compaction == nil && s.SnapshotManagement == nil && s.Removal == nil {
		return Config{}, fmt.Errorf("%w: settings.days: is required when settings are given", ErrInvalid)
	}
	if s := w.Settings; s != nil {
		n := 0
		for _, set := range []bool{s.Compaction != nil, s.SnapshotManagement != nil, s.Removal != nil, s.Days != nil} {
			if set {
				n++
			}
		}
		if n != 1 {
			return Config{}, fmt.Errorf("%w: settings: must have exactly one member, found %d", ErrInvalid, n)
		}
	}
	c := w.toConfig()
	if err := c.Validate(t); err != nil {
		return Config{}, err
	}
	return c, nil
}
