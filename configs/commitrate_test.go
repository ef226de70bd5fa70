package configs

import (
	"errors"
	"strings"
	"testing"

	"github.com/icekeeper/icekeeper/internal/bucket"
)

// A REST bucket's commit rate reaches the bucket registry; unset, nothing
// is bounded.
func TestCommitRate(t *testing.T) {
	data := []byte(`
state: sqlite://s.db
buckets:
  - arn: arn:aws:s3tables:us-east-1:1:bucket/limited
    catalog: {type: rest, uri: "https://catalog.example.com/iceberg"}
    commitRate: {perTablePerMinute: 20, perCatalogPerMinute: 120}
  - arn: arn:aws:s3tables:us-east-1:1:bucket/plain
    catalog: {type: rest, uri: "https://catalog.example.com/iceberg"}
`)
	cfg, err := Parse("icekeeper.yaml", data, func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	opts := cfg.BucketOptions()
	if want := (bucket.CommitRate{PerTable: 20, PerCatalog: 120}); opts[0].CommitRate != want {
		t.Errorf("commit rate %+v, want %+v", opts[0].CommitRate, want)
	}
	if opts[1].CommitRate != (bucket.CommitRate{}) {
		t.Errorf("a bucket without a commit rate got %+v", opts[1].CommitRate)
	}
}

func TestCommitRateErrors(t *testing.T) {
	rest := `
state: sqlite://s.db
buckets:
  - arn: arn:aws:s3tables:us-east-1:1:bucket/one
    catalog: {type: rest, uri: "https://catalog.example.com/iceberg"}
`
	for _, tc := range []struct{ name, yaml, want string }{
		{"negative per table", rest + "    commitRate: {perTablePerMinute: -1}\n",
			"icekeeper.yaml:6: buckets[0].commitRate.perTablePerMinute: -1 is below the minimum 0 (0: no bound)"},
		{"negative per catalog", rest + "    commitRate: {perCatalogPerMinute: -20}\n",
			"buckets[0].commitRate.perCatalogPerMinute: -20 is below the minimum 0 (0: no bound)"},
		{"not a number", rest + "    commitRate: {perTablePerMinute: 20/min}\n",
			`buckets[0].commitRate.perTablePerMinute: "20/min" is not a whole number`},
		{"unknown key", rest + "    commitRate: {perTable: 20}\n",
			"buckets[0].commitRate.perTable: unknown key (did you mean perTablePerMinute?)"},
		{"not a REST catalog", "state: sqlite://s.db\nbuckets:\n  - arn: arn:aws:s3tables:us-east-1:1:bucket/one\n    catalog: {type: sql, uri: \"file:x.db\"}\n    commitRate: {perTablePerMinute: 20}\n",
			"buckets[0].commitRate: applies to a rest catalog only; this bucket's catalog.type is sql"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("icekeeper.yaml", []byte(tc.yaml), func(string) (string, bool) { return "", false })
			if err == nil || !strings.Contains(err.Error(), tc.want) || !errors.Is(err, ErrInvalid) {
				t.Fatalf("error %v, want %q", err, tc.want)
			}
		})
	}
}
