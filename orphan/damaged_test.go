package orphan

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/icekeeper/icekeeper/internal/demo"
	"github.com/icekeeper/icekeeper/internal/state"
	"github.com/icekeeper/icekeeper/internal/testkit"
	"github.com/icekeeper/icekeeper/internal/testkit/tablecheck"
	"github.com/icekeeper/icekeeper/internal/verified"
)

// A manifest damaged so that it still reads (cut after a block, or after
// its header) fails the run, naming the manifest and both counts, before
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
	path, n, err := testkit.LargestManifest(ctx, tbl)
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
			orig, err := testkit.Damage(ctx, tbl, path, c.how)
			if err != nil {
				t.Fatal(err)
			}
			defer func() {
				if _, err := testkit.Damage(ctx, tbl, path, func([]byte) ([]byte, error) { return orig, nil }); err != nil {
					t.Fatal(err)
				}
			}()
			out, _ := r.run(4 * day)
			if out.Status != state.Failed || !strings.Contains(out.FailureMessage, path) {
				t.Fatalf("a damaged manifest did not fail the run naming it: %+v", out)
			}
			if c.count && !strings.Contains(out.FailureMessage, fmt.Sprintf("its manifest list counts %d", n)) {
				t.Fatalf("the failure does not give the counted %d entries: %s", n, out.FailureMessage)
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
