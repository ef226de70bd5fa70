package maintenance

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestDecodeConfig(t *testing.T) {
	c, err := DecodeConfig(Compaction, []byte(`{"status":"enabled","settings":{"icebergCompaction":{"targetFileSizeMB":256,"strategy":"sort"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	if c.Status != Enabled || *c.Compaction().TargetFileSizeMB != 256 || c.Compaction().Strategy != StrategySort {
		t.Fatalf("decoded %+v", c)
	}
	for body, want := range map[string]string{
		`{"status":"enabled","settings":{"icebergCompaction":{"targetFileSizeMB":0}}}`:            "targetFileSizeMB: 0 is below the minimum 1",
		`{"status":"enabled","settings":{"icebergCompaction":{"targetFileSizeMB":"x"}}}`:          "cannot unmarshal",
		`{"status":"enabled","settings":{"icebergSnapshotManagement":{"minSnapshotsToKeep":1}}}`:  "does not belong to icebergCompaction",
		`{"status":"enabled","settings":{}}`:                                                      "exactly one member, found 0",
		`{"status":"enabled","settings":{"icebergCompaction":{},"icebergSnapshotManagement":{}}}`: "exactly one member, found 2",
		`{"status":"paused"}`:                   `"paused" is not one of enabled, disabled`,
		`{"settings":{"icebergCompaction":{}}}`: "status: is required",
		`{"status":"enabled","extra":1}`:        "unknown field",
		`{"status":"enabled"} {}`:               "trailing data",
		`not json`:                              "invalid character",
		`{"status":"enabled","settings":{"icebergCompaction":{"strategy":"peano"}}}`: `"peano" is not one of auto, binpack, sort, z-order, hilbert`,
	} {
		_, err := DecodeConfig(Compaction, []byte(body))
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), want) {
			t.Errorf("DecodeConfig(%s) = %v, want ErrInvalid with %q", body, err, want)
		}
	}
	for _, s := range []Strategy{StrategyAuto, StrategyBinpack, StrategySort, StrategyZOrder, StrategyHilbert} {
		body := `{"status":"enabled","settings":{"icebergCompaction":{"strategy":"` + string(s) + `"}}}`
		if c, err := DecodeConfig(Compaction, []byte(body)); err != nil || c.Compaction().Strategy != s {
			t.Errorf("DecodeConfig(%s) = %+v, %v", body, c, err)
		}
	}
	for body, want := range map[string]string{
		`{"status":"enabled","settings":{"icebergUnreferencedFileRemoval":{"unreferencedDays":0}}}`:   "unreferencedDays: 0 is below the minimum 1",
		`{"status":"enabled","settings":{"icebergUnreferencedFileRemoval":{"nonCurrentDays":40000}}}`: "nonCurrentDays: 40000 is above the maximum 36500",
	} {
		if _, err := DecodeConfig(UnreferencedFileRemoval, []byte(body)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("DecodeConfig(%s) = %v, want %q", body, err, want)
		}
	}
}

func TestWireRoundTrip(t *testing.T) {
	c := Config{Status: Enabled, Settings: &SnapshotSettings{MinSnapshotsToKeep: Int(3), MaxSnapshotAgeHours: Int(48)}}
	data, err := c.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"status":"enabled","settings":{"icebergSnapshotManagement":{"minSnapshotsToKeep":3,"maxSnapshotAgeHours":48}}}`; string(data) != want {
		t.Fatalf("wire = %s, want %s", data, want)
	}
	back, err := DecodeConfig(SnapshotManagement, data)
	if err != nil || *back.SnapshotManagement().MaxSnapshotAgeHours != 48 {
		t.Fatalf("round trip: %+v %v", back, err)
	}
}

func TestResolveOrder(t *testing.T) {
	api := Config{Settings: &RemovalSettings{NonCurrentDays: Int(2)}}
	file := Config{Status: Disabled, Settings: &RemovalSettings{UnreferencedDays: Int(7), NonCurrentDays: Int(30)}}
	got := Resolve(UnreferencedFileRemoval, api, file)
	if got.Status != Disabled || *got.Removal().UnreferencedDays != 7 || *got.Removal().NonCurrentDays != 2 {
		t.Fatalf("resolved %+v %+v", got, *got.Removal())
	}
	def := Resolve(Compaction)
	if def.Status != Enabled || *def.Compaction().TargetFileSizeMB != 512 || def.Compaction().Strategy != StrategyAuto {
		t.Fatalf("defaults %+v", def)
	}
	for _, typ := range JobTypes() {
		if err := Defaults(typ).Validate(typ); err != nil {
			t.Errorf("defaults of %s invalid: %v", typ, err)
		}
	}
	if _, err := ParseJobType("icebergCompaction"); err != nil {
		t.Error(err)
	}
	if _, err := ParseJobType("compaction"); err == nil {
		t.Error("accepted a wrong job type")
	}
}

func TestRecordExpirationConfig(t *testing.T) {
	c, err := DecodeConfig(RecordExpiration, []byte(`{"status":"enabled","settings":{"days":30}}`))
	if err != nil {
		t.Fatal(err)
	}
	if c.Status != Enabled || *c.RecordExpiration().Days != 30 {
		t.Fatalf("decoded %+v", c)
	}
	data, err := c.MarshalJSON()
	if want := `{"status":"enabled","settings":{"days":30}}`; err != nil || string(data) != want {
		t.Fatalf("wire = %s %v, want %s", data, err, want)
	}
	def := Resolve(RecordExpiration)
	if def.Status != Disabled || def.RecordExpiration() == nil || def.RecordExpiration().Days != nil {
		t.Fatalf("defaults %+v", def)
	}
	if data, _ := def.MarshalJSON(); string(data) != `{"status":"disabled"}` {
		t.Errorf("defaults on the wire = %s", data)
	}
	got := Resolve(RecordExpiration, Config{Status: Enabled}, Config{Settings: &ExpirationSettings{Days: Int(7)}})
	if got.Status != Enabled || *got.RecordExpiration().Days != 7 {
		t.Errorf("layers resolved to %+v", got)
	}
	for body, want := range map[string]string{
		`{"status":"enabled","settings":{"days":0}}`:                                    "days: 0 is below the minimum 1",
		`{"status":"enabled","settings":{"days":40000}}`:                                "days: 40000 is above the maximum 36500",
		`{"status":"enabled","settings":{}}`:                                            "settings.days: is required",
		`{"status":"enabled","settings":{"days":"30"}}`:                                 "cannot unmarshal",
		`{"status":"enabled","settings":{"icebergCompaction":{"targetFileSizeMB":64}}}`: "does not belong to icebergRecordExpiration",
		`{"status":"enabled","settings":{"days":3,"hours":1}}`:                          "unknown field",
	} {
		if _, err := DecodeConfig(RecordExpiration, []byte(body)); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), want) {
			t.Errorf("DecodeConfig(%s) = %v, want ErrInvalid with %q", body, err, want)
		}
	}
	if _, err := DecodeConfig(Compaction, []byte(`{"status":"enabled","settings":{"days":30}}`)); err == nil || !strings.Contains(err.Error(), "settings.days: does not belong to icebergCompaction") {
		t.Errorf("days on compaction: %v", err)
	}
}

// Every type's configuration goes through the wire and back through the
// lenient reader the state store uses, and through the strict one; a
// member the reader does not know (from another version) is ignored.
func TestWireEveryType(t *testing.T) {
	for _, typ := range JobTypes() {
		c := Defaults(typ)
		if typ == RecordExpiration {
			c.RecordExpiration().Days = Int(30)
		}
		data, err := c.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		var back Config
		if err := back.UnmarshalJSON(data); err != nil || !reflect.DeepEqual(back, c) {
			t.Errorf("%s: %s read back as %+v (%v), want %+v", typ, data, back, err, c)
		}
		if strict, err := DecodeConfig(typ, data); err != nil || !reflect.DeepEqual(strict, c) {
			t.Errorf("%s: %s decoded as %+v (%v)", typ, data, strict, err)
		}
	}
	var c Config
	if err := c.UnmarshalJSON([]byte(`{"status":"enabled","settings":{"icebergFutureType":{"x":1},"icebergCompaction":{"targetFileSizeMB":64}}}`)); err != nil ||
		c.Compaction() == nil || *c.Compaction().TargetFileSizeMB != 64 {
		t.Errorf("lenient read: %+v %v", c, err)
	}
}
