package orphan

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"

	"github.com/icekeeper/icekeeper/internal/bucket"
	"github.com/icekeeper/icekeeper/internal/demo"
	"github.com/icekeeper/icekeeper/internal/state"
	"github.com/icekeeper/icekeeper/internal/testkit"
	"github.com/icekeeper/icekeeper/internal/testkit/servers"
	"github.com/icekeeper/icekeeper/internal/testkit/tablecheck"
	"github.com/icekeeper/icekeeper/internal/verified"
)

// A manifest damaged so that it still reads (cut after a block, or after
// its header) fails the run, naming the manifest and both lengths, before
// anything is marked; damage that does not read (cut mid-block, a block
// count that lies) fails it too. The manifest restored, the next run
// marks only the genuine stray.
func TestDamagedManifestFailsRemoval(t *testing.T) {
	ctx := context.Background()
	b := embeddedBucket(t)
	tbl := testkit.NewTable(t, b, "db", "t", demo.Schema())
	var err error
	if tbl, err = testkit.AppendRandom(ctx, tbl, 20, 0, rand.New(rand.NewPCG(1, 2))); err != nil {
		t.Fatal(err)
	}
	if tbl, err = testkit.AddCopies(ctx, tbl, 300); err != nil {
		t.Fatal(err)
	}
	rows, err := tablecheck.Rows(ctx, tbl, 0)
	if err != nil {
		t.Fatal(err)
	}
	path, _, err := testkit.LargestManifest(ctx, tbl)
	if err != nil {
		t.Fatal(err)
	}
	m, err := testkit.ManifestOf(ctx, tbl, path)
	if err != nil {
		t.Fatal(err)
	}
	diskStore{}.put(t, strings.TrimSuffix(tbl.Location(), "/")+"/data/stray.parquet", []byte("stray"))
	r := newTrapRunner(t, b, "db", "t")

	for _, c := range []struct {
		name  string
		how   func([]byte) ([]byte, error)
		count bool // the damage reads cleanly: only the counts tell
	}{
		{"cut after a block", func(b []byte) ([]byte, error) { return testkit.CutAfterBlocks(b, 1) }, true},
		{"cut after the header", func(b []byte) ([]byte, error) { return testkit.CutAfterBlocks(b, 0) }, true},
		{"cut mid-block", func(b []byte) ([]byte, error) { return b[:len(b)-40], nil }, false},
		{"a block count that lies", func(b []byte) ([]byte, error) { return testkit.LowerBlockCount(b, 3) }, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			testkit.DamageFor(t, ctx, tbl, path, c.how)
			out, _ := r.run(4 * day)
			if out.Status != state.Failed || !strings.Contains(out.FailureMessage, path) {
				t.Fatalf("a damaged manifest did not fail the run naming it: %+v", out)
			}
			if c.count && !strings.Contains(out.FailureMessage, fmt.Sprintf("its manifest list records %d (manifest_length)", m.Length())) {
				t.Fatalf("the failure does not give the recorded length %d: %s", m.Length(), out.FailureMessage)
			}
			if m := r.marks(); len(m) != 0 {
				t.Fatalf("a run over a damaged manifest marked %d objects", len(m))
			}
			t.Log(out.FailureMessage)
		})
	}
	out, fig := r.run(4 * day)
	if out.Status != state.Successful || fig.Marked != 1 || !strings.HasSuffix(fig.MarkedPaths[0], "/stray.parquet") {
		t.Fatalf("the manifest restored: %+v, marked %v", out, fig.MarkedPaths)
	}
	sound(t, b, r.target.Table, rows)
}

// The re-check before deleting reads every manifest in full and trusts
// none it cannot verify: a manifest damaged after the run that marked,
// whose references that run took from the index, stops the deletion.
func TestDamagedManifestStopsDeletion(t *testing.T) {
	ctx := context.Background()
	b := embeddedBucket(t)
	tbl := testkit.NewTable(t, b, "db", "t", demo.Schema())
	var err error
	if tbl, err = testkit.AppendRandom(ctx, tbl, 20, 0, rand.New(rand.NewPCG(1, 2))); err != nil {
		t.Fatal(err)
	}
	if tbl, err = testkit.AddCopies(ctx, tbl, 300); err != nil {
		t.Fatal(err)
	}
	stray := strings.TrimSuffix(tbl.Location(), "/") + "/data/stray.parquet"
	diskStore{}.put(t, stray, []byte("stray"))
	r := newTrapRunner(t, b, "db", "t")
	if out, fig := r.run(4 * day); out.Status != state.Successful || fig.Marked != 1 {
		t.Fatalf("+4d: %+v", out)
	}
	path, _, err := testkit.LargestManifest(ctx, tbl)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := testkit.Damage(ctx, tbl, path, func(b []byte) ([]byte, error) { return testkit.CutAfterBlocks(b, 1) }); err != nil {
		t.Fatal(err)
	}
	out, fig := r.run(15 * day)
	if out.Status != state.Failed || !strings.Contains(out.FailureMessage, path) || fig.Deleted != 0 || !exists(stray) {
		t.Fatalf("+15d over a damaged manifest: %+v, deleted %d", out, fig.Deleted)
	}
	if _, err := r.job.DeleteUnreferenced(ctx, r.target, r.settings(), []string{stray}); !errors.Is(err, verified.ErrDamaged) || !exists(stray) {
		t.Fatalf("snapshot management's deletion over a damaged manifest: %v", err)
	}
}

// An old writer's table (format version 1, a manifest list without
// counts, with or without summary totals) whose 300-entry manifest is cut
// at an Avro block boundary reads cleanly in iceberg-go, with fewer
// entries: before manifests were checked by length, removal marked and
// then deleted the live files the cut hid. Neither a first run nor the
// deleting run after a mark trusts it; both fail naming the manifest and
// its lengths, and every file stays. On local disk and on S3.
func TestOldWriterDamagedManifest(t *testing.T) {
	t.Run("local disk", func(t *testing.T) { oldWriterRemoval(t, embeddedBucket(t), diskStore{}) })
	t.Run("S3", func(t *testing.T) {
		srv := servers.S3(t)
		reg := sqlS3Config(t, srv).Registry()
		t.Cleanup(reg.Close)
		b, _ := reg.Bucket("lake")
		oldWriterRemoval(t, b, s3Store{srv})
	})
}

func oldWriterRemoval(t *testing.T, b *bucket.Bucket, store objectStore) {
	ctx := context.Background()
	for _, totals := range []bool{true, false} {
		t.Run(fmt.Sprintf("totals=%v", totals), func(t *testing.T) {
			name := fmt.Sprintf("old_%v_%d", totals, time.Now().UnixNano())
			tbl := testkit.NewTable(t, b, "db", name, demo.Schema(), catalog.WithProperties(iceberg.Properties{"format-version": "1"}))
			var err error
			if tbl, err = testkit.AppendRandom(ctx, tbl, 20, 0, rand.New(rand.NewPCG(1, 2))); err != nil {
				t.Fatal(err)
			}
			if tbl, err = testkit.AddCopies(ctx, tbl, 300); err != nil {
				t.Fatal(err)
			}
			if err := testkit.OldWriterTable(ctx, tbl, totals); err != nil {
				t.Fatal(err)
			}
			id := bucket.TableID{Namespace: []string{"db"}, Name: name}
			if tbl, err = b.LoadTable(ctx, id); err != nil {
				t.Fatal(err)
			}
			rows, err := tablecheck.Rows(ctx, tbl, 0)
			if err != nil {
				t.Fatal(err)
			}
			path, n, err := testkit.LargestManifest(ctx, tbl)
			if err != nil {
				t.Fatal(err)
			}
			m, err := testkit.ManifestOf(ctx, tbl, path)
			if err != nil {
				t.Fatal(err)
			}
			if m.AddedDataFiles() >= 0 || n != 300 {
				t.Fatalf("not an old writer's list: %d added counted, %d entries", m.AddedDataFiles(), n)
			}
			stray := strings.TrimSuffix(tbl.Location(), "/") + "/data/stray.parquet"
			store.put(t, stray, []byte("stray"))
			marker := newTrapRunner(t, b, "db", name)
			if out, fig := marker.run(4 * day); out.Status != state.Successful || fig.Marked != 1 {
				t.Fatalf("+4d on the whole table: %+v", out)
			}

			orig, err := testkit.Damage(ctx, tbl, path, func(b []byte) ([]byte, error) { return testkit.CutAfterBlocks(b, 1) })
			if err != nil {
				t.Fatal(err)
			}
			recorded := fmt.Sprintf("its manifest list records %d (manifest_length)", m.Length())
			fresh := newTrapRunner(t, b, "db", name)
			if out, _ := fresh.run(4 * day); out.Status != state.Failed || !strings.Contains(out.FailureMessage, path) ||
				!strings.Contains(out.FailureMessage, recorded) || len(fresh.marks()) != 0 {
				t.Fatalf("a first run over the cut manifest: %+v, %d marks", out, len(fresh.marks()))
			}
			out, fig := marker.run(15 * day)
			if out.Status != state.Failed || !strings.Contains(out.FailureMessage, recorded) || fig.Deleted != 0 || !store.exists(t, stray) {
				t.Fatalf("+15d over the cut manifest: %+v, deleted %d", out, fig.Deleted)
			}
			t.Log(out.FailureMessage)
			if _, err := testkit.Damage(ctx, tbl, path, func([]byte) ([]byte, error) { return orig, nil }); err != nil {
				t.Fatal(err)
			}
			sound(t, b, id, rows)
		})
	}
}
