package orphan

import (
	"errors"
	"hash/maphash"
	"strings"
	"testing"
)

func TestClassify(t *testing.T) {
	pfx := []loc{{scheme: "s3", authority: "b", path: "/wh/db/events/"}}
	for _, tc := range []struct {
		ref    string
		eq     Equivalence
		inside bool
		err    bool
	}{
		{"s3://b/wh/db/events/data/x.parquet", nil, true, false},
		{"s3://b/wh/db/events_v2/data/x.parquet", nil, false, false}, // sibling sharing a string
		{"s3://other/wh/x.parquet", nil, false, false},               // elsewhere entirely
		{"s3a://b/wh/db/events/data/x.parquet", nil, false, true},    // same object, other scheme
		{"s3a://b/wh/db/events/data/x.parquet", Equivalence{{"s3", "s3a", "s3n"}}, true, false},
		{"oss://b/wh/db/events/data/x.parquet", Equivalence{{"s3", "s3a"}}, false, true},
		{"s3://alias--table-s3/wh/db/events/data/x.parquet", nil, false, true}, // another authority, same path
	} {
		_, n, _, err := scope{pfx: pfx, eq: tc.eq}.classify(tc.ref)
		if inside := n > 0; inside != tc.inside || (err != nil) != tc.err {
			t.Errorf("classify(%s, %v) = %v, %v; want inside=%v err=%v", tc.ref, tc.eq, inside, err, tc.inside, tc.err)
		}
		if err != nil && (!errors.Is(err, ErrSchemeMismatch) || !strings.Contains(err.Error(), tc.ref)) {
			t.Errorf("error %v does not name %s", err, tc.ref)
		}
	}
}

func TestUnderRespectsBoundaries(t *testing.T) {
	pfx := []loc{{scheme: "file", path: "/wh/events/"}}
	for path, want := range map[string]bool{
		"/wh/events/data/a":    true,
		"/wh/events_v2/data/a": false,
		"/wh/events":           false,
		"/wh/other/a":          false,
	} {
		if got := under(loc{scheme: "file", path: path}, pfx); got != want {
			t.Errorf("under(%s) = %v, want %v", path, got, want)
		}
	}
	if under(loc{scheme: "s3", path: "/wh/events/data/a"}, pfx) {
		t.Error("another scheme counted as under a file prefix")
	}
}

func TestRefLoc(t *testing.T) {
	for in, want := range map[string]loc{
		"s3://bucket/a/b":           {"s3", "bucket", "/a/b"},
		"S3A://bucket/k":            {"s3a", "bucket", "/k"},
		"s3://b/t/a%20b.parquet":    {"s3", "b", "/t/a%20b.parquet"}, // keys are opaque, as iceberg-go reads them
		"s3://b/t//data/x":          {"s3", "b", "/t//data/x"},
		"file:///tmp/x":             {"file", "", "/tmp/x"},
		"file:/tmp/x":               {"file", "", "/tmp/x"}, // Hadoop's spelling
		"file:///tmp/a%20b.parquet": {"file", "", "/tmp/a b.parquet"},
		"/tmp/x":                    {"file", "", "/tmp/x"},
		"/tmp/a%20b":                {"file", "", "/tmp/a%20b"},
	} {
		got, err := refLoc(in)
		if err != nil || got != want {
			t.Errorf("refLoc(%q) = %+v, %v; want %+v", in, got, err, want)
		}
	}
	for _, bad := range []string{"relative/path", "s3://bucket", "s3:///key", "file://host/tmp/x"} {
		if _, err := refLoc(bad); err == nil {
			t.Errorf("refLoc(%q) was accepted", bad)
		}
	}
}

// A mark holds a listed name verbatim; reading it back must give the same
// name, never a percent-decoded one that storage resolves elsewhere.
func TestObjectLocIsVerbatim(t *testing.T) {
	for _, l := range []loc{
		{"file", "", "/wh/t/%2e%2e/victim/keep.parquet"},
		{"s3", "b", "/wh/t/%2e%2e/%2E%2E/x"},
		{"s3", "b", "/wh/t/q\"uote%5C.parquet"},
		{"oss", "b", "/wh/t/café %25.parquet"},
	} {
		got, err := objectLoc(l.String())
		if err != nil || got != l {
			t.Errorf("objectLoc(%q) = %+v, %v; want %+v", l.String(), got, err, l)
		}
	}
}

func TestCleanAndForms(t *testing.T) {
	for p, clean := range map[string]bool{
		"/t/data/x":      true,
		"/t/%2e%2e/x":    true, // a literal name: deleted as such
		"/t//data/x":     false,
		"/t/./data/x":    false,
		"/t/data/../x":   false,
		"/t/data/x/":     false, // a directory marker
		"/t/data/x/..":   false,
		"/":              false,
		"/t/data/x.json": true,
	} {
		if got := (loc{"s3", "b", p}).clean(); got != clean {
			t.Errorf("clean(%s) = %v, want %v", p, got, clean)
		}
	}
	forms, n := loc{"s3", "b", "/t//data/./x"}.forms()
	if n != 2 || forms[0].path != "/t//data/./x" || forms[1].path != "/t/data/x" {
		t.Errorf("forms = %+v", forms[:n])
	}
	if f, n := (loc{"s3", "b", "/t/data/x"}).forms(); n != 1 {
		t.Errorf("a clean location has forms %+v", f[:n])
	}
}

// A reference through "//" or "/./" is referenced under both its literal
// key (AWS S3) and its clean one (a file system, a posix-backed gateway).
func TestClassifyForms(t *testing.T) {
	pfx := []loc{{scheme: "s3", authority: "b", path: "/wh/t/"}}
	in, n, _, err := scope{pfx: pfx}.classify("s3://b/wh/t//data/x.parquet")
	if err != nil || n != 2 || in[0].key() != "b/wh/t//data/x.parquet" || in[1].key() != "b/wh/t/data/x.parquet" {
		t.Errorf("forms %v, %v", in[:n], err)
	}
	// "..": the literal key is inside, the resolved one is not.
	in, n, _, err = scope{pfx: pfx}.classify("s3://b/wh/t/data/../../u/x.parquet")
	if err != nil || n != 1 || in[0].key() != "b/wh/t/data/../../u/x.parquet" {
		t.Errorf("forms %v, %v", in[:n], err)
	}
	// A location hashes as its key does.
	seed := maphash.MakeSeed()
	if l := (loc{"s3", "b", "/wh/t/x"}); l.hash(seed) != maphash.String(seed, l.key()) {
		t.Error("loc.hash differs from the hash of its key")
	}
	fpfx, _ := dirs([]string{"file:///wh//t/"})
	if len(fpfx) != 1 || fpfx[0].path != "/wh/t/" {
		t.Errorf("a file location is not cleaned: %+v", fpfx)
	}
}
