package configs

import (
	"errors"
	"strings"
	"testing"
)

// A misspelt catalog or storage property is an error naming it and the
// key meant, for every catalog type, and a property passThroughProperties
// names goes through.
func TestCatalogProperties(t *testing.T) {
	catalog := map[string]string{
		"sql":  `{type: sql, uri: "file:x.db", %s: v}`,
		"rest": `{type: rest, uri: "http://127.0.0.1:1", %s: v}`,
		"glue": `{type: glue, %s: v}`,
		"hive": `{type: hive, uri: "thrift://127.0.0.1:1", %s: v}`,
	}
	parse := func(typ, key, extra string) error {
		yaml := "state: sqlite://s.db\nbuckets:\n  - arn: arn:aws:s3tables:us-east-1:1:bucket/one\n    catalog: " +
			strings.Replace(catalog[typ], "%s", key, 1) + "\n" + extra
		_, err := Parse("icekeeper.yaml", []byte(yaml), func(string) (string, bool) { return "", false })
		return err
	}
	for _, tc := range []struct{ typ, key, want string }{
		{"sql", "s3.endpiont", "did you mean s3.endpoint?"},
		{"sql", "sql.dialekt", "did you mean sql.dialect?"},
		{"rest", "s3.endpiont", "did you mean s3.endpoint?"},
		{"rest", "rest.signing-nmae", "did you mean rest.signing-name?"},
		{"rest", "rest.sigv4-enable", "did you mean rest.sigv4-enabled?"},
		{"glue", "glue.regoin", "did you mean glue.region?"},
		{"glue", "s3.acess-key-id", "did you mean s3.access-key-id?"},
		{"hive", "lock-check-retry", "did you mean lock-check-retries?"},
		{"sql", "glue.id", "it is a glue catalog's property"},
		{"rest", "sql.driver", "it is a sql catalog's property"},
		{"hive", "completely.unrelated", "unknown property for a hive catalog;"},
	} {
		t.Run(tc.typ+"/"+tc.key, func(t *testing.T) {
			err := parse(tc.typ, tc.key, "")
			if err == nil {
				t.Fatalf("%s accepted on a %s catalog", tc.key, tc.typ)
			}
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("error %v does not wrap ErrInvalid (exit 2)", err)
			}
			if !strings.Contains(err.Error(), "buckets[0].catalog."+tc.key+": ") || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %q does not name the key and %q", err, tc.want)
			}
		})
	}
	for typ := range catalog {
		for _, key := range []string{"s3.endpoint", "s3.path-style-access", "adls.sas-token.myaccount"} {
			if err := parse(typ, key, ""); err != nil {
				t.Errorf("%s on a %s catalog: %v", key, typ, err)
			}
		}
	}
	if err := parse("rest", "header.X-Tenant", ""); err != nil {
		t.Errorf("a REST header property: %v", err)
	}
	if err := parse("sql", "header.X-Tenant", ""); err == nil {
		t.Error("a header property accepted on a sql catalog, which sends no HTTP request")
	}
	if err := parse("rest", "vendor.flag", "    passThroughProperties: [vendor.flag]\n"); err != nil {
		t.Errorf("a property passThroughProperties names: %v", err)
	}
	if err := parse("rest", "vendor.flag", "    passThroughProperties: [other.flag]\n"); err == nil {
		t.Error("a property passThroughProperties does not name was accepted")
	}
	if err := parse("rest", "s3.endpoint", "    passThroughProperties: ['']\n"); err == nil || !strings.Contains(err.Error(), "passThroughProperties[0]") {
		t.Errorf("an empty pass-through name: %v", err)
	}
}

// icekeeper's own keys get the same suggestion.
func TestUnknownKeySuggests(t *testing.T) {
	_, err := Parse("icekeeper.yaml", []byte("state: sqlite://s.db\nschedulez: {}\nbuckets: []\n"), func(string) (string, bool) { return "", false })
	if err == nil || !strings.Contains(err.Error(), "schedulez: unknown key (did you mean schedules?)") {
		t.Fatalf("err = %v", err)
	}
}
