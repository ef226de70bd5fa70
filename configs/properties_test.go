package configs

import (
	"cmp"
	"errors"
	"strings"
	"testing"
)

// A misspelt catalog or storage property is an error naming it and the
// key meant, for every catalog type, and a property passThroughProperties
// names goes through.
func TestCatalogProperties(t *testing.T) {
	catalog := map[string]string{
		"sql":  `{type: sql, uri: "file:x.db", %s: %v}`,
		"rest": `{type: rest, uri: "http://127.0.0.1:1", %s: %v}`,
		"glue": `{type: glue, %s: %v}`,
		"hive": `{type: hive, uri: "thrift://127.0.0.1:1", %s: %v}`,
	}
	// A value of the key's kind, so that only the key is in question.
	valid := map[string]string{"s3.endpoint": "http://127.0.0.1:1", "s3.path-style-access": "true"}
	parse := func(typ, key, extra string) error {
		yaml := "state: sqlite://s.db\nbuckets:\n  - arn: arn:aws:s3tables:us-east-1:1:bucket/one\n    catalog: " +
			strings.NewReplacer("%s", key, "%v", cmp.Or(valid[key], "v")).Replace(catalog[typ]) + "\n" + extra
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

// The values of the properties iceberg-go parses are checked by kind:
// iceberg-go reads a value it cannot parse as if it were unset. Each
// mistake names the file, its line and the key.
func TestCatalogPropertyValues(t *testing.T) {
	for _, tc := range []struct{ typ, key, value, want string }{
		{"rest", "rest.sigv4-enabled", "ture", `icekeeper.yaml:5: buckets[0].catalog.rest.sigv4-enabled: "ture" is not true or false`},
		{"rest", "rest.sigv4-enabled", "yes", `"yes" is not true or false`},
		{"rest", "rest.sigv4-enabled", "1", `"1" is not true or false`},
		{"sql", "s3.path-style-access", "on", `buckets[0].catalog.s3.path-style-access: "on" is not true or false`},
		{"sql", "s3.endpoint", "127.0.0.1:9000", `icekeeper.yaml:5: buckets[0].catalog.s3.endpoint: "127.0.0.1:9000" is not a URL with a scheme and a host: write http://127.0.0.1:9000 or https://127.0.0.1:9000`},
		{"sql", "s3.endpoint", "minio:9000", `"minio:9000" is not a URL with a scheme and a host`},
		{"sql", "s3.endpoint", "ftp://minio:9000", `"ftp://minio:9000" has scheme ftp, not http or https`},
		{"rest", "uri", "127.0.0.1:8181", `buckets[0].catalog.uri: "127.0.0.1:8181" is not a URL with a scheme and a host`},
		{"hive", "uri", "http://metastore:9083", `"http://metastore:9083" has scheme http, not thrift`},
		{"rest", "oauth2-server-uri", "/v1/oauth/tokens", `is not a URL with a scheme and a host`},
		{"glue", "glue.max-retries", "three", `buckets[0].catalog.glue.max-retries: "three" is not a whole number`},
		{"hive", "iceberg.hive.lock-check-min-wait-ms", "50ms", `"50ms" is not a whole number of milliseconds`},
		{"hive", "lock-check-max-wait-time", "5", `"5" is not a positive duration such as 50ms or 5s`},
		{"sql", "s3.connect-timeout", "soon", `"soon" is neither seconds as a number (10) nor a positive duration (10s)`},
		{"sql", "s3.connect-timeout", "-1", `"-1" is not a positive number of seconds`},
	} {
		t.Run(tc.key+"="+tc.value, func(t *testing.T) {
			yaml := "state: sqlite://s.db\nbuckets:\n  - arn: arn:aws:s3tables:us-east-1:1:bucket/one\n    catalog:\n      " +
				tc.key + ": '" + tc.value + "'\n      type: " + tc.typ + "\n"
			if uri := map[string]string{"sql": "file:x.db", "rest": "http://127.0.0.1:1", "hive": "thrift://127.0.0.1:1"}[tc.typ]; uri != "" && tc.key != "uri" {
				yaml += "      uri: " + uri + "\n"
			}
			_, err := Parse("icekeeper.yaml", []byte(yaml), func(string) (string, bool) { return "", false })
			if err == nil || !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want ErrInvalid saying %q\n%s", err, tc.want, yaml)
			}
		})
	}
	for _, tc := range []struct{ typ, key, value string }{
		{"rest", "rest.sigv4-enabled", "true"},
		{"rest", "rest.sigv4-enabled", "False"},
		{"sql", "s3.endpoint", "https://s3.us-east-1.amazonaws.com"},
		{"sql", "s3.endpoint", "http://[::1]:9000"},
		{"sql", "s3.proxy-uri", "socks5://127.0.0.1:1080"},
		{"sql", "s3.connect-timeout", "2.5"},
		{"sql", "s3.connect-timeout", "10s"},
		{"glue", "glue.max-retries", "0"},
		{"sql", "s3.region", "not-checked ${x}"},
	} {
		yaml := "state: sqlite://s.db\nbuckets:\n  - arn: arn:aws:s3tables:us-east-1:1:bucket/one\n    catalog:\n      type: " + tc.typ +
			"\n      uri: 'http://127.0.0.1:1'\n      " + tc.key + ": '" + strings.ReplaceAll(tc.value, "$", "$$") + "'\n"
		if _, err := Parse("icekeeper.yaml", []byte(yaml), func(string) (string, bool) { return "", false }); err != nil {
			t.Errorf("%s: %s on a %s catalog: %v", tc.key, tc.value, tc.typ, err)
		}
	}
}
