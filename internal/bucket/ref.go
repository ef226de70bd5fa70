package bucket

import (
	"fmt"
	"strings"
)

// Ref is a table reference from the command line: BUCKET/NAMESPACE/TABLE,
// where BUCKET is a bucket name or a full bucket ARN (which itself contains
// "bucket/NAME") and a nested namespace is written with dots (a.b).
type Ref struct {
	Bucket string
	Table  TableID
}

func (r Ref) String() string { return r.Bucket + "/" + r.Table.NamespaceString() + "/" + r.Table.Name }

// ParseRef parses s; errors wrap ErrBadRef and say what form is expected.
func ParseRef(s string) (Ref, error) {
	bad := func(why string) (Ref, error) {
		return Ref{}, fmt.Errorf("%w %q: %s (want BUCKET/NAMESPACE/TABLE, e.g. local/demo/events)", ErrBadRef, s, why)
	}
	rest := s
	var bucket string
	if strings.HasPrefix(s, "arn:") || strings.HasPrefix(s, "acs:") {
		i := strings.Index(s, ":bucket/")
		if i < 0 {
			return bad("ARN has no :bucket/NAME part")
		}
		j := strings.IndexByte(s[i+len(":bucket/"):], '/')
		if j < 0 {
			return bad("missing NAMESPACE/TABLE after the bucket ARN")
		}
		cut := i + len(":bucket/") + j
		bucket, rest = s[:cut], s[cut+1:]
	} else {
		var ok bool
		bucket, rest, ok = strings.Cut(s, "/")
		if !ok {
			return bad("missing NAMESPACE/TABLE")
		}
	}
	ns, name, ok := strings.Cut(rest, "/")
	switch {
	case bucket == "":
		return bad("empty bucket")
	case !ok:
		return bad("missing TABLE")
	case ns == "" || name == "":
		return bad("empty namespace or table")
	case strings.Contains(name, "/"):
		return bad("too many parts; write a nested namespace with dots")
	}
	parts := strings.Split(ns, ".")
	for _, p := range parts {
		if p == "" {
			return bad("empty namespace level")
		}
	}
	return Ref{Bucket: bucket, Table: TableID{Namespace: parts, Name: name}}, nil
}
