package maintenance

import (
	"errors"
	"strings"
	"testing"
)

// icebergStatistics' settings: defaults, layers, and the ranges refused
// where they are written.
func TestStatisticsConfig(t *testing.T) {
	def := Resolve(Statistics)
	s := def.Statistics()
	if def.Status != Disabled || s == nil || *s.MaxColumns != DefaultStatisticsColumns || !*s.PartitionStatistics ||
		*s.MaxDriftPercent != DefaultMaxDriftPercent || s.Columns != nil {
		t.Fatalf("defaults %+v %+v", def, s)
	}
	got := Resolve(Statistics, Config{Status: Enabled, Settings: &StatisticsSettings{Columns: []string{"id"}}},
		Config{Settings: &StatisticsSettings{PartitionStatistics: Bool(false)}})
	if gs := got.Statistics(); got.Status != Enabled || len(gs.Columns) != 1 || *gs.PartitionStatistics || *gs.MaxColumns != DefaultStatisticsColumns {
		t.Errorf("layers resolved to %+v %+v", got, gs)
	}
	c, err := DecodeConfig(Statistics, []byte(`{"status":"enabled","settings":{"icebergStatistics":{"columns":["id","name"],"maxDriftPercent":5}}}`))
	if err != nil || len(c.Statistics().Columns) != 2 || *c.Statistics().MaxDriftPercent != 5 {
		t.Fatalf("decoded %+v, %v", c, err)
	}
	for body, want := range map[string]string{
		`{"status":"enabled","settings":{"icebergStatistics":{"maxColumns":0}}}`:          "maxColumns: 0 is below the minimum 1",
		`{"status":"enabled","settings":{"icebergStatistics":{"maxDriftPercent":101}}}`:   "maxDriftPercent: 101 is above the maximum 100",
		`{"status":"enabled","settings":{"icebergStatistics":{"columns":["id",""]}}}`:     "columns: an empty column name",
		`{"status":"enabled","settings":{"icebergStatistics":{"columns":"id"}}}`:          "cannot unmarshal",
		`{"status":"enabled","settings":{"icebergStatistics":{"partitionStatistics":1}}}`: "cannot unmarshal",
	} {
		if _, err := DecodeConfig(Statistics, []byte(body)); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), want) {
			t.Errorf("DecodeConfig(%s) = %v, want ErrInvalid with %q", body, err, want)
		}
	}
}
