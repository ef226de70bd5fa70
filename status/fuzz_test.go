package status

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/icekeeper/icekeeper/internal/maintenance"
)

// FuzzDecodeValue feeds arbitrary bodies to the configuration parser: it
// must never panic, and whatever it accepts must be valid and re-encode.
func FuzzDecodeValue(f *testing.F) {
	for _, seed := range []string{
		`{"value":{"status":"enabled","settings":{"icebergCompaction":{"targetFileSizeMB":256,"strategy":"sort"}}}}`,
		`{"value":{"status":"disabled"}}`,
		`{"value":{"status":"enabled","settings":{"icebergSnapshotManagement":{"minSnapshotsToKeep":1,"maxSnapshotAgeHours":2}}}}`,
		`{"value":null}`, `[]`, `{"value":{"settings":{}}}`, `{"value":{"status":"enabled","settings":{"icebergCompaction":{"targetFileSizeMB":-1}}}}`,
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, body string) {
		for _, typ := range maintenance.JobTypes {
			r := httptest.NewRequest(http.MethodPut, "/", strings.NewReader(body))
			cfg, err := decodeValue(r, typ)
			if err != nil {
				continue
			}
			if err := cfg.Validate(typ); err != nil {
				t.Fatalf("accepted an invalid configuration %s: %v", body, err)
			}
			if _, err := cfg.MarshalJSON(); err != nil {
				t.Fatal(err)
			}
		}
	})
}
