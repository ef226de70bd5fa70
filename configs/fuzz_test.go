package configs

import (
	"errors"
	"strings"
	"testing"

	"github.com/icekeeper/icekeeper/maintenance"
)

// FuzzParse feeds arbitrary YAML to the loader: it never panics, every
// error is a one-line ErrInvalid, and what it accepts is complete.
func FuzzParse(f *testing.F) {
	f.Add("state: sqlite://s.db\nbuckets:\n  - arn: arn:aws:s3tables:us-east-1:1:bucket/one\n    catalog: {type: sql, uri: x}\n")
	f.Add("state: sqlite://s.db\nbuckets:\n  - arn: arn:aws:s3tables:us-east-1:1:bucket/one\n    catalog: {type: sql, uri: x}\n    maintenance: {icebergCompaction: {targetFileSizeMB: 7}}\n")
	f.Add("listen: ':x'\nbuckets: [1, 2]\n")
	f.Add("a: &x [*x]\n")
	f.Fuzz(func(t *testing.T, doc string) {
		cfg, err := Parse("fuzz.yaml", []byte(doc), func(string) (string, bool) { return "v", true })
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("error does not wrap ErrInvalid: %v", err)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("multi-line error: %q", err)
			}
			return
		}
		if cfg.Listen == "" || cfg.State == "" || len(cfg.Buckets) == 0 || cfg.Buckets[0].Parsed.Name == "" || cfg.Schedules[maintenance.Compaction] == "" {
			t.Fatalf("accepted an incomplete configuration: %+v", cfg)
		}
	})
}
