package redact

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// Figures naming objects with quotes, backslashes, non-ASCII letters and
// percent signs come out as valid JSON, each string as it was, keys in
// their order; credentials inside a figure's string are masked.
func TestJSON(t *testing.T) {
	names := []string{
		`s3://bucket/ns/t/data/q"uote.parquet`,
		`s3://bucket/ns/t/data/back\slash.parquet`,
		`s3://bucket/ns/t/data/café-日本.parquet`,
		`s3://bucket/ns/t/data/100%.parquet`,
		`s3://bucket/ns/t/data/a%20b.parquet`,
		`s3://bucket/ns/t/data/customer_key=42/f.parquet`,
		`data/"quoted"\name=é`,
	}
	figures := struct {
		Zeta    int      `json:"zeta"`
		Files   []string `json:"files"`
		Alpha   float64  `json:"alpha"`
		Source  string   `json:"source"`
		Catalog string   `json:"catalog"`
		Nested  any      `json:"nested"`
	}{
		Zeta:    1,
		Files:   names,
		Alpha:   0.5,
		Source:  `https://b.s3.amazonaws.com/k?X-Amz-Signature=abc123&X-Amz-Date=20260101`,
		Catalog: `postgres://ik:hunter2@db:5432/ik?sslmode=disable`,
		Nested:  map[string]any{"ok": true, "none": nil, "big": int64(1) << 60, "msg": `GET "https://h/p?token=t0k3n" failed`},
	}
	raw, err := json.Marshal(figures)
	if err != nil {
		t.Fatal(err)
	}
	got, err := JSON(raw)
	if err != nil {
		t.Fatal(err)
	}
	if !json.Valid(got) {
		t.Fatalf("invalid JSON: %s", got)
	}
	for _, secret := range []string{"abc123", "hunter2", "t0k3n"} {
		if strings.Contains(string(got), secret) {
			t.Errorf("%s kept in %s", secret, got)
		}
	}
	var back struct {
		Files   []string       `json:"files"`
		Source  string         `json:"source"`
		Catalog string         `json:"catalog"`
		Nested  map[string]any `json:"nested"`
	}
	if err := json.Unmarshal(got, &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back.Files, names) {
		t.Errorf("names changed:\n got %q\nwant %q", back.Files, names)
	}
	if want := `https://b.s3.amazonaws.com/k?X-Amz-Signature=***&X-Amz-Date=20260101`; back.Source != want {
		t.Errorf("source %q, want %q", back.Source, want)
	}
	if want := `postgres://ik:***@db:5432/ik?sslmode=disable`; back.Catalog != want {
		t.Errorf("catalog %q, want %q", back.Catalog, want)
	}
	// Keys keep their order and numbers their digits.
	if !strings.HasPrefix(string(got), `{"zeta":1,"files":[`) || !strings.Contains(string(got), `"big":1152921504606846976`) {
		t.Errorf("shape changed: %s", got)
	}
	for _, in := range []string{`[]`, `{}`, `[1,[2,{}],{"a":[]}]`, `"s"`, `null`} {
		if out, err := JSON([]byte(in)); err != nil || string(out) != in {
			t.Errorf("JSON(%s) = %s, %v", in, out, err)
		}
	}
	if _, err := JSON([]byte(`{"a":`)); err == nil {
		t.Error("truncated JSON accepted")
	}
}

// A URI is masked in place: what it carries unescaped stays so.
func TestURIKeepsText(t *testing.T) {
	for _, in := range []string{`s3://b/café/日本.parquet`, `s3://b/q"x`, `https://h/a b?x=é#frag`} {
		if got := URI(in); got != in {
			t.Errorf("URI(%q) = %q", in, got)
		}
	}
	if got, want := URI(`https://u:p@ss@h/é?token=x#f`), `https://u:***@h/é?token=***#f`; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}
