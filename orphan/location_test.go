package orphan

import (
	"errors"
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
		_, inside, err := classify(tc.ref, pfx, tc.eq)
		if inside != tc.inside || (err != nil) != tc.err {
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

func TestParseLoc(t *testing.T) {
	for in, want := range map[string]loc{
		"s3://bucket/a/b": {"s3", "bucket", "/a/b"},
		"file:///tmp/x":   {"file", "", "/tmp/x"},
		"/tmp/x":          {"file", "", "/tmp/x"},
		"S3A://bucket/k":  {"s3a", "bucket", "/k"},
	} {
		got, err := parseLoc(in)
		if err != nil || got != want {
			t.Errorf("parseLoc(%q) = %+v, %v; want %+v", in, got, err, want)
		}
	}
	if _, err := parseLoc("relative/path"); err == nil {
		t.Error("a relative path was accepted")
	}
}
