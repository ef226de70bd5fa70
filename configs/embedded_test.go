package configs

import (
	"path/filepath"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// configs/local.yaml is the embedded default written out: loaded, it
// resolves to what Embedded builds for ../icekeeper-data, but for the one
// difference its comment states (a configured SQLite catalog must exist,
// so its uri does not create it). A change to either that is not made to
// the other fails here.
func TestLocalYAMLIsTheEmbeddedDefault(t *testing.T) {
	file, err := Load("local.yaml")
	if err != nil {
		t.Fatal(err)
	}
	home, err := filepath.Abs(filepath.Join("..", "icekeeper-data"))
	if err != nil {
		t.Fatal(err)
	}
	embedded := Embedded(home)
	if len(file.Buckets) != 1 || len(embedded.Buckets) != 1 {
		t.Fatalf("buckets: %d in the file, %d embedded", len(file.Buckets), len(embedded.Buckets))
	}
	uri := embedded.Buckets[0].Catalog["uri"]
	if !strings.Contains(uri, "mode=rwc&") {
		t.Fatalf("the embedded catalog's uri %q does not create the catalog", uri)
	}
	embedded.Buckets[0].Catalog["uri"] = strings.Replace(uri, "mode=rwc&", "", 1)
	file.File = ""
	// As YAML, which writes a nil and an empty list alike: the file's
	// decoder makes empty lists where Embedded leaves them nil.
	a, err := yaml.Marshal(file)
	if err != nil {
		t.Fatal(err)
	}
	b, err := yaml.Marshal(embedded)
	if err != nil {
		t.Fatal(err)
	}
	if string(a) != string(b) {
		t.Errorf("local.yaml resolves to\n%s\nthe embedded default to\n%s", a, b)
	}
}
