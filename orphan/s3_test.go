package orphan

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/icekeeper/icekeeper/configs"
	"github.com/icekeeper/icekeeper/internal/bucket"
	"github.com/icekeeper/icekeeper/internal/demo"
	"github.com/icekeeper/icekeeper/internal/state"
	"github.com/icekeeper/icekeeper/internal/testkit"
	"github.com/icekeeper/icekeeper/internal/testkit/servers"
	"github.com/icekeeper/icekeeper/internal/testkit/tablecheck"
	"github.com/icekeeper/icekeeper/jobs"
	"github.com/icekeeper/icekeeper/maintenance"
)

// On real S3 (versitygw) with a SQL catalog on PostgreSQL: strays are
// marked and later deleted through ListObjectsV2 and DeleteObjects, while
// a sibling table's objects, another bucket's objects and every referenced
// file survive; a reference through s3a:// fails the run unless s3 and s3a
// are configured as one.
func TestS3(t *testing.T) {
	ctx := context.Background()
	srv := servers.S3(t)
	other := servers.S3(t)
	cfg := sqlS3Config(t, srv)
	reg := cfg.Registry()
	defer reg.Close()
	b, _ := reg.Bucket("lake")
	tbl := testkit.NewTable(t, b, "db", "events", demo.Schema())
	var err error
	for i := 0; i < 3; i++ {
		if tbl, err = testkit.AppendRandom(ctx, tbl, 50, 1_000_000, rand.New(rand.NewPCG(7, 7))); err != nil {
			t.Fatal(err)
		}
	}
	before, err := tablecheck.Rows(ctx, tbl, 0)
	if err != nil {
		t.Fatal(err)
	}
	loc := strings.TrimPrefix(tbl.Location(), "s3://"+srv.Bucket+"/")
	put := func(bkt, key string, body []byte) {
		t.Helper()
		if _, err := srv.Client.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bkt), Key: aws.String(key), Body: bytes.NewReader(body)}); err != nil {
			t.Fatal(err)
		}
	}
	exists := func(bkt, key string) bool {
		_, err := srv.Client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(bkt), Key: aws.String(key)})
		return err == nil
	}
	// A real data file's bytes, so a stray can later be registered.
	tasks, err := tbl.Scan().PlanFiles(ctx)
	if err != nil {
		t.Fatal(err)
	}
	obj, err := srv.Client.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(srv.Bucket), Key: aws.String(strings.TrimPrefix(tasks[0].File.FilePath(), "s3://"+srv.Bucket+"/"))})
	if err != nil {
		t.Fatal(err)
	}
	parquet, _ := io.ReadAll(obj.Body)
	obj.Body.Close()

	strays := []string{loc + "/data/stray-1.parquet", loc + "/data/stray-2.parquet", loc + "/metadata/stray.avro"}
	for _, k := range strays {
		put(srv.Bucket, k, parquet)
	}
	sibling := loc + "_v2/data/old.parquet"
	put(srv.Bucket, sibling, parquet)
	put(other.Bucket, loc+"/data/stray-1.parquet", parquet)

	store, err := state.Open(ctx, "sqlite://"+t.TempDir()+"/state.db")
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	target := jobs.Target{Bucket: b, Table: bucket.TableID{Namespace: []string{"db"}, Name: "events"}}
	job := &Job{Store: store}
	now := time.Now()
	var knobs maintenance.Knobs
	run := func(after time.Duration) (jobs.Outcome, *Figures) {
		t.Helper()
		resolver := &jobs.Resolver{Store: store, Defaults: map[string]maintenance.BucketDefaults{b.ARN(): {Knobs: knobs}}}
		runner := &jobs.Runner{Store: store, Resolver: resolver, Jobs: jobs.Map(job.Definition())}
		out, err := runner.Run(ctx, target, maintenance.UnreferencedFileRemoval, "test", jobs.Options{Now: now.Add(after)})
		if err != nil {
			t.Fatal(err)
		}
		fig, _ := out.Figures.(*Figures)
		return out, fig
	}

	if out, fig := run(4 * day); out.Status != state.Successful || fig.Marked != len(strays) {
		t.Fatalf("+4d: %+v %+v", out, fig)
	}
	if out, fig := run(15 * day); out.Status != state.Successful || fig.Deleted != len(strays) {
		t.Fatalf("+15d: %+v %+v", out, fig)
	}
	for _, k := range strays {
		if exists(srv.Bucket, k) {
			t.Fatalf("stray %s survived", k)
		}
	}
	if !exists(srv.Bucket, sibling) || !exists(other.Bucket, loc+"/data/stray-1.parquet") {
		t.Fatal("an object outside the table was deleted")
	}
	tbl, err = b.LoadTable(ctx, target.Table)
	if err != nil {
		t.Fatal(err)
	}
	if missing, err := tablecheck.MissingFiles(ctx, tbl); err != nil || len(missing) > 0 {
		t.Fatalf("missing %v %v", missing, err)
	}
	if fp, err := tablecheck.Rows(ctx, tbl, 0); err != nil || !fp.Equal(before) {
		t.Fatalf("rows %v %v, want %v", fp, err, before)
	}

	// A data file registered through s3a:// while the table lives on s3://.
	s3aKey := loc + "/data/registered-via-s3a.parquet"
	put(srv.Bucket, s3aKey, parquet)
	tx := tbl.NewTransaction()
	if err := tx.AddFiles(ctx, []string{"s3a://" + srv.Bucket + "/" + s3aKey}, nil, false); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	out, _ := run(30 * day)
	if out.Status != state.Failed || !strings.Contains(out.FailureMessage, "s3a://"+srv.Bucket+"/"+s3aKey) {
		t.Fatalf("s3a reference: %+v", out)
	}
	knobs.SchemeEquivalence = [][]string{{"s3", "s3a"}}
	out, fig := run(30 * day)
	if out.Status != state.Successful || fig.Marked != 0 || !exists(srv.Bucket, s3aKey) {
		t.Fatalf("with s3=s3a: %+v %+v", out, fig)
	}

	// Storage that cannot be reached fails the run naming the endpoint.
	down := "http://" + servers.RefusedAddr
	downCfg := *cfg
	downCfg.Buckets = []configs.Bucket{cfg.Buckets[0]}
	downCfg.Buckets[0].Catalog = map[string]string{}
	for k, v := range cfg.Buckets[0].Catalog {
		downCfg.Buckets[0].Catalog[k] = v
	}
	downCfg.Buckets[0].Catalog["s3.endpoint"] = down
	downReg := (&downCfg).Registry()
	defer downReg.Close()
	db, _ := downReg.Bucket("lake")
	ctxDown, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	runner := &jobs.Runner{Store: store, Jobs: jobs.Map(job.Definition())}
	out, err = runner.Run(ctxDown, jobs.Target{Bucket: db, Table: target.Table}, maintenance.UnreferencedFileRemoval, "test", jobs.Options{Now: now.Add(30 * day)})
	if err != nil {
		t.Fatal(err)
	}
	// gocloud's S3 driver reports any failure on a key holding "301" as a
	// missing file (internal/objects): the load of a metadata file so
	// named fails as "file does not exist", not naming the endpoint.
	named := strings.Contains(out.FailureMessage, strings.TrimPrefix(down, "http://"))
	m := regexp.MustCompile(`/metadata/(\S+\.metadata\.json): file does not exist`).FindStringSubmatch(out.FailureMessage)
	misread := m != nil && strings.Contains(m[1], "301")
	if out.Status != state.Failed || !named && !misread {
		t.Fatalf("unreachable storage: %+v", out)
	}
}

// sqlS3Config configures a bucket named lake of a SQL catalog on
// PostgreSQL whose warehouse is on srv, as a user would.
func sqlS3Config(t testing.TB, srv servers.S3Server) *configs.Config {
	t.Helper()
	props := srv.Props()
	props["type"], props["uri"], props["warehouse"] = "sql", servers.Postgres(t), "s3://"+srv.Bucket+"/warehouse"
	var kv []string
	for k, v := range props {
		kv = append(kv, fmt.Sprintf("%q: %q", k, v))
	}
	cfg, err := configs.Parse("test.yaml", []byte(fmt.Sprintf("state: sqlite://state.db\nbuckets:\n  - arn: arn:aws:s3tables:us-east-1:1:bucket/lake\n    catalog: {%s}\n", strings.Join(kv, ", "))), nil)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}
