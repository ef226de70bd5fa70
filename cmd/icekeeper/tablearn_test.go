package main

import (
	"context"
	"strings"
	"testing"

	"github.com/icekeeper/icekeeper/configs"
	"github.com/icekeeper/icekeeper/internal/bucket"
	"github.com/icekeeper/icekeeper/internal/demo"
)

// --table takes the table ARNs the APIs print: icekeeper's names the
// namespace and table, S3 Tables' an ID, found by name or table UUID; an
// ID that matches no table is a usage error naming what was looked for.
func TestTableARN(t *testing.T) {
	c := newCLI(t)
	demoWith(t, demo.Options{Appends: 3})
	reg := configs.Embedded(c.home).Registry()
	defer reg.Close()
	b, err := reg.Bucket("local")
	if err != nil {
		t.Fatal(err)
	}
	tbl, err := b.LoadTable(context.Background(), bucket.TableIDOf(demo.Namespace, demo.Table))
	if err != nil {
		t.Fatal(err)
	}
	uuid := tbl.Metadata().TableUUID().String()

	for _, ref := range []string{
		configs.LocalBucketARN + "/table/demo/events",
		configs.LocalBucketARN + "/table/events",
		configs.LocalBucketARN + "/table/" + uuid,
		configs.LocalBucketARN + "/table/" + strings.ToUpper(uuid),
	} {
		code, out, errOut := c.run("run", "--table", ref, "--job", "snapshots", "--dry-run")
		if code != 0 || !strings.Contains(out, "icebergSnapshotManagement: DryRun") {
			t.Errorf("--table %s: exit %d\nstdout: %s\nstderr: %s", ref, code, out, errOut)
		}
	}
	for _, tc := range []struct{ ref, want string }{
		{configs.LocalBucketARN + "/table/00000000-0000-0000-0000-000000000000",
			"none of the 1 tables of bucket local has the name or table UUID 00000000-0000-0000-0000-000000000000"},
		{configs.LocalBucketARN + "/table/demo/missing", "no such table local/demo.missing"},
		{"arn:aws:s3tables:local:000000000000:bucket/other/table/events", `unknown bucket`},
	} {
		code, _, errOut := c.run("run", "--table", tc.ref, "--job", "snapshots", "--dry-run")
		if code != 2 || !strings.Contains(errOut, tc.want) || strings.Count(strings.TrimSpace(errOut), "\n") != 0 {
			t.Errorf("--table %s: exit %d, stderr %q; want exit 2 with %q", tc.ref, code, errOut, tc.want)
		}
	}
}
