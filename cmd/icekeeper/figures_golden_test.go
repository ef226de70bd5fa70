package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/icekeeper/icekeeper/compactor"
	"github.com/icekeeper/icekeeper/erasure"
	"github.com/icekeeper/icekeeper/expire"
	"github.com/icekeeper/icekeeper/expire/records"
	"github.com/icekeeper/icekeeper/maintenance"
	"github.com/icekeeper/icekeeper/orphan"
	"github.com/icekeeper/icekeeper/statistics"
)

// TestStoredFiguresKeepTheirShape decodes the figures of one recorded run
// per job type (testdata/figures, taken from the state store of real runs)
// into today's figure types, strictly, and encodes them again: a renamed,
// dropped or retyped field fails here, because the run history and the
// API serve figures stored by older versions.
func TestStoredFiguresKeepTheirShape(t *testing.T) {
	figures := map[maintenance.JobType]func() any{
		maintenance.Compaction:              func() any { return &compactor.Figures{} },
		maintenance.SnapshotManagement:      func() any { return &expire.Figures{} },
		maintenance.UnreferencedFileRemoval: func() any { return &orphan.Figures{} },
		maintenance.RecordExpiration:        func() any { return &records.ExpirationFigures{} },
		maintenance.Erasure:                 func() any { return &erasure.Figures{} },
		maintenance.Statistics:              func() any { return &statistics.Figures{} },
	}
	for _, typ := range maintenance.JobTypes() {
		t.Run(string(typ), func(t *testing.T) {
			stored, err := os.ReadFile(filepath.Join("testdata", "figures", string(typ)+".json"))
			if err != nil {
				t.Fatal(err)
			}
			newFigures, ok := figures[typ]
			if !ok {
				t.Fatalf("no figures type for %s", typ)
			}
			fig := newFigures()
			dec := json.NewDecoder(bytes.NewReader(stored))
			dec.DisallowUnknownFields()
			if err := dec.Decode(fig); err != nil {
				t.Fatalf("stored figures do not decode: %v", err)
			}
			again, err := json.Marshal(fig)
			if err != nil {
				t.Fatal(err)
			}
			if want, got := exactJSON(t, stored), exactJSON(t, again); !reflect.DeepEqual(got, want) {
				t.Errorf("figures encode differently than stored:\n got %s\nwant %s", again, stored)
			}
		})
	}
}

// exactJSON decodes b keeping numbers exact (snapshot IDs exceed float64).
func exactJSON(t *testing.T, b []byte) any {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatal(err)
	}
	return v
}
