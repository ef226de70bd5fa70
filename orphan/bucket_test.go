package orphan

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/apache/iceberg-go/table"

	"github.com/icekeeper/icekeeper/internal/bucket"
	"github.com/icekeeper/icekeeper/internal/demo"
	"github.com/icekeeper/icekeeper/internal/state"
	"github.com/icekeeper/icekeeper/internal/testkit"
)

// fillBucket creates n tables db.t000… in b, each with two appends (two
// manifest lists, two manifests), and returns them.
func fillBucket(tb testing.TB, b *bucket.Bucket, n int) []*table.Table {
	tb.Helper()
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(9, 9))
	out := make([]*table.Table, n)
	for i := range out {
		tbl := testkit.NewTable(tb, b, "db", fmt.Sprintf("t%03d", i), demo.Schema())
		var err error
		if tbl, err = testkit.AppendCommits(ctx, tbl, 2, 5, int64(i)*100, rng); err != nil {
			tb.Fatal(err)
		}
		out[i] = tbl
	}
	return out
}

// The check of the bucket's other tables costs what changed: on a SQL
// catalog a second run opens no file of an unchanged table (one query
// gives every table's metadata file), a run of a fresh job (a one-shot
// `icekeeper run`) loads them and takes their references from the
// reference index, and a commit to one table costs that commit's files.
func TestBucketCheckFollowsTheChange(t *testing.T) {
	b := embeddedBucket(t)
	const n = 12
	tables := fillBucket(t, b, n)
	var dirs []string
	for _, tbl := range tables[1:] {
		dirs = append(dirs, strings.TrimPrefix(strings.TrimSuffix(tbl.Location(), "/"), "file://")+"/metadata")
	}
	opens := testkit.WatchOpens(t, dirs[0], dirs[1:]...)
	read := func(o testkit.OpenCounts) int { return o.ManifestLists + o.Manifests }
	r := newTrapRunner(t, b, "db", "t000")
	run := func(what string) (*Figures, testkit.OpenCounts) {
		t.Helper()
		out, fig := r.run(4 * day)
		if out.Status != state.Successful {
			t.Fatalf("%s: %+v", what, out)
		}
		return fig, opens.Take()
	}

	first, o1 := run("first run")
	if first.Bucket.Tables != n-1 || first.Bucket.ManifestsRead != read(o1) || read(o1) != 4*(n-1) || first.Bucket.Unchanged != 0 {
		t.Fatalf("first run: %+v, opened %+v; want every other table's 2 lists and 2 manifests read", first.Bucket, o1)
	}
	second, o2 := run("second run")
	if read(o2) != 0 || second.Bucket.Unchanged != n-1 || second.Bucket.Loaded != 0 || second.Bucket.ManifestsRead != 0 || o2.Metadata != 0 {
		t.Fatalf("second run: %+v, opened %+v; want no file of an unchanged table opened", second.Bucket, o2)
	}
	if !strings.Contains(second.Text(), fmt.Sprintf("other tables of the bucket: %d (%d unchanged, 0 loaded)", n-1, n-1)) {
		t.Fatalf("the run's text does not say it:\n%s", second.Text())
	}

	// A one-shot run: a job that remembers nothing.
	r.job = &Job{Store: r.store}
	third, o3 := run("a fresh job's run")
	if read(o3) != 0 || third.Bucket.ManifestsFromIndex != 4*(n-1) || third.Bucket.Loaded != n-1 || o3.Metadata != n-1 {
		t.Fatalf("a fresh job's run: %+v, opened %+v; want every list and manifest from the index", third.Bucket, o3)
	}

	// One table commits: its new list and manifest are read, nothing else.
	if _, err := testkit.AppendRandom(context.Background(), tables[5], 5, 9000, rand.New(rand.NewPCG(1, 1))); err != nil {
		t.Fatal(err)
	}
	opens.Take()
	fourth, o4 := run("after one commit")
	if read(o4) != 2 || fourth.Bucket.ManifestsRead != 2 || fourth.Bucket.Unchanged != n-2 || fourth.Bucket.Loaded != 1 {
		t.Fatalf("after one table's commit: %+v, opened %+v; want its new list and manifest only", fourth.Bucket, o4)
	}
}
