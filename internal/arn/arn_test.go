package arn

import (
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	good := map[string]BucketARN{
		"arn:aws:s3tables:us-east-1:111122223333:bucket/analytics": {"aws", "s3tables", "us-east-1", "111122223333", "analytics"},
		"arn:aws-cn:s3tables:cn-north-1:111122223333:bucket/a-b-c": {"aws-cn", "s3tables", "cn-north-1", "111122223333", "a-b-c"},
		"acs:osstables:cn-hangzhou:1234567890:bucket/lake":         {"", "osstables", "cn-hangzhou", "1234567890", "lake"},
		"arn:aws:s3tables:local:000000000000:bucket/local":         {"aws", "s3tables", "local", "000000000000", "local"},
		"arn:aws:s3tables:us-east-1:admin:bucket/warehouse":        {"aws", "s3tables", "us-east-1", "admin", "warehouse"}, // SeaweedFS
	}
	for in, want := range good {
		got, err := Parse(in)
		if err != nil {
			t.Errorf("Parse(%q): %v", in, err)
			continue
		}
		if got != want {
			t.Errorf("Parse(%q) = %+v, want %+v", in, got, want)
		}
		if got.String() != in {
			t.Errorf("String() = %q, want %q", got.String(), in)
		}
	}
	bad := map[string]string{
		"":                                 "not a table-bucket ARN",
		"arn:aws:s3:us-east-1:1:bucket/x1": "service \"s3\"",
		"arn:aws:s3tables:us-east-1:a.b:bucket/abc": "account \"a.b\"",
		"arn:aws:s3tables:us-east-1::bucket/abc":    "account \"\"",
		"arn:aws:s3tables:us-east-1:1:table/abc":    "does not start with bucket/",
		"arn:aws:s3tables:us-east-1:1:bucket/A_B":   "bucket name \"A_B\"",
		"arn:aws:s3tables:us-east-1:1:bucket/ab":    "bucket name \"ab\"",
		"arn:aws:s3tables:US:1:bucket/abc":          "region \"US\"",
		"acs:osstables:cn-hangzhou:1:bucket":        "does not start with bucket/",
		"acs:osstables:cn-hangzhou":                 "not a table-bucket ARN",
		"arn:aws:s3tables:us-east-1:1":              "not a table-bucket ARN",
	}
	for in, wantErr := range bad {
		_, err := Parse(in)
		if err == nil || !strings.Contains(err.Error(), wantErr) {
			t.Errorf("Parse(%q) error = %v, want it to contain %q", in, err, wantErr)
		}
	}
}
