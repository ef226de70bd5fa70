package redact

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"testing"
)

func TestURI(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"https://cat.example/iceberg?token=s3cr3t", "https://cat.example/iceberg?token=***"},
		{"https://cat.example/iceberg?warehouse=w&Credential=a:b&x=1", "https://cat.example/iceberg?warehouse=w&Credential=***&x=1"},
		{"postgres://ik:hunter2@db:5432/ik?sslmode=disable", "postgres://ik:***@db:5432/ik?sslmode=disable"},
		{"s3://b/k?X-Amz-Signature=abc&X-Amz-Security-Token=def&api_key=1&sig=2", "s3://b/k?X-Amz-Signature=***&X-Amz-Security-Token=***&api_key=***&sig=***"},
		{"file:/data/catalog.db?_pragma=busy_timeout(10000)", "file:/data/catalog.db?_pragma=busy_timeout(10000)"},
		{"http://user@host/p", "http://user@host/p"},
		// Not a URL url.Parse accepts: the password is masked all the same.
		{"postgres://u:s3cret@[::1/x", "postgres://u:***@[::1/x"},
		{"postgres://u:p@ss@db%zz/ik?password=x", "postgres://u:***@db%zz/ik?password=***"},
	} {
		if got := URI(tc.in); got != tc.want {
			t.Errorf("URI(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestText(t *testing.T) {
	in := `open rest catalog: Get "https://cat.example/iceberg?token=s3cr3t/v1/config": dial tcp 127.0.0.1:1: connect: refused; password=hunter2 and postgres://u:pw@h/db`
	got := Text(in)
	for _, secret := range []string{"s3cr3t", "hunter2", ":pw@"} {
		if strings.Contains(got, secret) {
			t.Errorf("Text left %q in %q", secret, got)
		}
	}
	if !strings.Contains(got, "dial tcp 127.0.0.1:1: connect: refused") || !strings.Contains(got, "https://cat.example/iceberg?token=***") {
		t.Errorf("Text changed more than the secrets: %q", got)
	}
}

func TestHandler(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(Handler(slog.NewJSONHandler(&buf, nil))).With("uri", "https://h/?token=t1")
	log.Info("load https://h/?token=t2", "err", errors.New("GET https://h/?token=t3 failed"),
		slog.Group("catalog", "uri", "postgres://u:t4@h/db"), "n", 3)
	out := buf.String()
	for _, secret := range []string{"t1", "t2", "t3", "t4"} {
		if strings.Contains(out, "="+secret) || strings.Contains(out, ":"+secret+"@") {
			t.Errorf("log line keeps %s: %s", secret, out)
		}
	}
	if !strings.Contains(out, `"n":3`) {
		t.Errorf("other attributes changed: %s", out)
	}
}
