package orphan

import (
	"bytes"
	"context"
	"io"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go/table"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/icekeeper/icekeeper/expire"
	"github.com/icekeeper/icekeeper/internal/bucket"
	"github.com/icekeeper/icekeeper/internal/demo"
	"github.com/icekeeper/icekeeper/internal/state"
	"github.com/icekeeper/icekeeper/internal/testkit"
	"github.com/icekeeper/icekeeper/internal/testkit/servers"
	"github.com/icekeeper/icekeeper/internal/testkit/tablecheck"
	"github.com/icekeeper/icekeeper/jobs"
	"github.com/icekeeper/icekeeper/maintenance"
)

// On S3 (with a SQL catalog on PostgreSQL), removal runs through the
// reference index beside a streaming writer that commits every 100 ms,
// before and after snapshot expiry drops the manifest lists and manifests
// the index holds. Differential: every file the final metadata reaches
// still exists and the table holds exactly the rows written, while the
// strays and the files of the expired snapshots are deleted.
func TestIndexBesideWriterOnS3(t *testing.T) {
	ctx := context.Background()
	srv := servers.S3(t)
	reg := sqlS3Config(t, srv).Registry()
	defer reg.Close()
	b, _ := reg.Bucket("lake")
	tbl := testkit.NewTable(t, b, "db", "events", demo.Schema())
	rng := rand.New(rand.NewPCG(11, 11))
	var err error
	for i := range 8 {
		if tbl, err = testkit.AppendRandom(ctx, tbl, 20, int64(1_000_000+20*i), rng); err != nil {
			t.Fatal(err)
		}
	}
	want, err := tablecheck.Rows(ctx, tbl, 0)
	if err != nil {
		t.Fatal(err)
	}
	key := func(uri string) string { return strings.TrimPrefix(uri, "s3://"+srv.Bucket+"/") }
	exists := func(uri string) bool {
		_, err := srv.Client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(srv.Bucket), Key: aws.String(key(uri))})
		return err == nil
	}
	tasks, err := tbl.Scan().PlanFiles(ctx)
	if err != nil {
		t.Fatal(err)
	}
	obj, err := srv.Client.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(srv.Bucket), Key: aws.String(key(tasks[0].File.FilePath()))})
	if err != nil {
		t.Fatal(err)
	}
	parquet, _ := io.ReadAll(obj.Body)
	obj.Body.Close()
	strays := []string{tbl.Location() + "/data/stray-1.parquet", tbl.Location() + "/metadata/stray.avro"}
	for _, s := range strays {
		if _, err := srv.Client.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(srv.Bucket), Key: aws.String(key(s)), Body: bytes.NewReader(parquet)}); err != nil {
			t.Fatal(err)
		}
	}
	oldLists := map[string]bool{}
	for _, s := range tbl.Metadata().Snapshots() {
		oldLists[s.ManifestList] = true
	}

	store, err := state.Open(ctx, "sqlite://"+filepath.Join(t.TempDir(), "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	id := bucket.TableID{Namespace: []string{"db"}, Name: "events"}
	target := jobs.Target{Bucket: b, Table: id}
	removal := &Job{Store: store}
	runner := &jobs.Runner{Store: store, Resolver: &jobs.Resolver{Store: store},
		Jobs: jobs.Map(removal.Definition(), (&expire.Job{}).Definition())}
	now := time.Now()
	run := func(typ maintenance.JobType, after time.Duration) jobs.Outcome {
		t.Helper()
		out, err := runner.Run(ctx, target, typ, "test", jobs.Options{Now: now.Add(after)})
		if err != nil {
			t.Fatal(err)
		}
		if out.Status != state.Successful {
			t.Fatalf("%s at +%v: %s %s", typ, after, out.Status, out.FailureMessage)
		}
		return out
	}
	// remove runs removal, and checks that it left no file marked that
	// the metadata reached before it began: the writer's commits since
	// then add files, while snapshot expiry does not run meanwhile.
	remove := func(after time.Duration) *Figures {
		t.Helper()
		before, err := b.LoadTable(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		reachable, err := tablecheck.ReachableFiles(ctx, before)
		if err != nil {
			t.Fatal(err)
		}
		fig := run(maintenance.UnreferencedFileRemoval, after).Figures.(*Figures)
		marks, err := store.Marks(ctx, target.Key())
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range marks {
			if slices.Contains(reachable, m.Path) {
				t.Fatalf("+%v: %s is marked, but the metadata reached it before the run", after, m.Path)
			}
		}
		return fig
	}

	w := &testkit.Writer{Load: func(ctx context.Context) (*table.Table, error) { return b.LoadTable(ctx, id) },
		Interval: 100 * time.Millisecond, Rows: 10, NextID: 5_000_000, Seed: 5}
	stop := w.Start(ctx)
	stopped := false
	defer func() {
		if !stopped {
			stop()
		}
	}()

	w.Await(2)
	first := remove(4 * day)
	w.Await(2)
	second := remove(4*day + time.Minute)
	if r := second.References; r.ManifestsFromIndex == 0 || r.ManifestsRead >= first.References.ManifestsRead {
		t.Fatalf("second run beside the writer: %+v, first %+v", r, first.References)
	}
	// The writer's commits meanwhile are read, never taken for garbage.
	w.Await(2)
	run(maintenance.SnapshotManagement, 30*day)
	w.Await(2)
	third := remove(31 * day)
	if third.References.IndexForgotten == 0 {
		t.Fatalf("after expiry no index row was forgotten: %+v", third.References)
	}
	w.Await(2)
	fourth := remove(45 * day)
	if fourth.Deleted == 0 {
		t.Fatalf("nothing deleted at +45d: %+v", fourth)
	}
	w.Await(2)
	remove(60 * day)
	stopped = true
	if err := stop(); err != nil {
		t.Fatalf("writer: %v", err)
	}

	tbl, err = b.LoadTable(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if missing, err := tablecheck.MissingFiles(ctx, tbl); err != nil || len(missing) > 0 {
		t.Fatalf("reachable files deleted: %v %v", missing, err)
	}
	want.Add(w.Written())
	if got, err := tablecheck.Rows(ctx, tbl, 0); err != nil || !got.Equal(want) {
		t.Fatalf("rows %v %v, want %v (writer: %+v)", got, err, want, w.Stats())
	}
	for _, s := range strays {
		if exists(s) {
			t.Fatalf("stray %s survived", s)
		}
	}
	current := map[string]bool{}
	for _, s := range tbl.Metadata().Snapshots() {
		current[s.ManifestList] = true
	}
	for l := range oldLists {
		if !current[l] && exists(l) {
			t.Fatalf("expired snapshot's manifest list %s survived", l)
		}
	}
	t.Logf("writer %+v; removal deleted %d at +45d", w.Stats(), fourth.Deleted)
}
