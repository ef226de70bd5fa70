package verified_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/icekeeper/icekeeper/configs"
	"github.com/icekeeper/icekeeper/internal/bucket"
	"github.com/icekeeper/icekeeper/internal/demo"
	"github.com/icekeeper/icekeeper/internal/testkit"
	"github.com/icekeeper/icekeeper/internal/verified"
)

// localBucket is the embedded default's bucket in a directory of the
// test's own.
func localBucket(t *testing.T) *bucket.Bucket {
	t.Helper()
	reg := configs.Embedded(t.TempDir()).Registry()
	t.Cleanup(reg.Close)
	b, err := reg.Bucket("local")
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// bulkTable is a table whose current snapshot's one manifest holds 300
// entries in several Avro blocks.
func bulkTable(t *testing.T) *table.Table {
	t.Helper()
	ctx := context.Background()
	b := localBucket(t)
	tbl := testkit.NewTable(t, b, "db", "bulk", demo.Schema())
	var err error
	if tbl, err = testkit.AppendRandom(ctx, tbl, 10, 0, rand.New(rand.NewPCG(1, 2))); err != nil {
		t.Fatal(err)
	}
	if tbl, err = testkit.AddCopies(ctx, tbl, 300); err != nil {
		t.Fatal(err)
	}
	return tbl
}

func manifestOf(t *testing.T, tbl *table.Table, path string) iceberg.ManifestFile {
	t.Helper()
	fs, _ := tbl.FS(context.Background())
	list, err := verified.Manifests(fs, tbl.CurrentSnapshot())
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range list {
		if m.FilePath() == path {
			return m
		}
	}
	t.Fatalf("no manifest %s", path)
	return nil
}

// Each way a manifest can read cleanly with other than its entries is
// caught, naming the file and both counts; a whole manifest reads in full.
func TestManifestCounts(t *testing.T) {
	ctx := context.Background()
	tbl := bulkTable(t)
	fs, _ := tbl.FS(ctx)
	path, n, err := testkit.LargestManifest(ctx, tbl)
	if err != nil {
		t.Fatal(err)
	}
	m := manifestOf(t, tbl, path)
	entries, err := verified.FetchEntries(fs, m, true)
	if err != nil || len(entries) != n || n != 300 {
		t.Fatalf("a whole manifest: %d entries of %d (want 300), %v", len(entries), n, err)
	}

	for _, c := range []struct {
		name string
		how  func([]byte) ([]byte, error)
		// clean: iceberg-go itself reads the damaged file without an
		// error, which is what makes the damage dangerous.
		clean bool
	}{
		{"cut after the first block", func(b []byte) ([]byte, error) { return testkit.CutAfterBlocks(b, 1) }, true},
		{"cut after the header", func(b []byte) ([]byte, error) { return testkit.CutAfterBlocks(b, 0) }, true},
		// twmb/avro notices the bytes left in the block.
		{"a block count lowered", func(b []byte) ([]byte, error) { return testkit.LowerBlockCount(b, 1) }, false},
		{"cut mid-block", func(b []byte) ([]byte, error) { return testkit.CutMidBlock(b, 1) }, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			testkit.DamageFor(t, ctx, tbl, path, c.how)
			read := 0
			var plain error
			for _, err := range m.Entries(fs, false) {
				if err != nil {
					plain = err
					break
				}
				read++
			}
			if c.clean && (plain != nil || read >= n) {
				t.Fatalf("the damage is not the silent kind: iceberg-go read %d of %d entries, %v", read, n, plain)
			}
			_, err = verified.FetchEntries(fs, m, true)
			if err == nil {
				t.Fatalf("a damaged manifest (%d of %d entries readable) was read without an error", read, n)
			}
			if c.clean {
				// The length tells before a count could: the file is
				// refused at open, with both sizes.
				var le *verified.LengthError
				if !errors.As(err, &le) || !errors.Is(err, verified.ErrDamaged) || le.Recorded != m.Length() || le.Stored >= m.Length() ||
					!strings.Contains(err.Error(), path) {
					t.Fatalf("want a length error naming %s with %d bytes recorded, got %v", path, m.Length(), err)
				}
			}
			t.Log(err)
		})
	}
}

// A manifest list that lost a manifest, or a summary that counts other
// than the list, is caught.
func TestManifestListAgainstSummary(t *testing.T) {
	ctx := context.Background()
	tbl := bulkTable(t)
	fs, _ := tbl.FS(ctx)
	snap := *tbl.CurrentSnapshot()
	if _, err := verified.Manifests(fs, &snap); err != nil {
		t.Fatalf("a whole list: %v", err)
	}
	// The list names two manifests, the first append's and the copies',
	// in one block; cut after its header, it reads none.
	if _, err := testkit.Damage(ctx, tbl, snap.ManifestList, func(b []byte) ([]byte, error) { return testkit.CutAfterBlocks(b, 0) }); err != nil {
		t.Fatal(err)
	}
	if list, err := snap.Manifests(fs); err != nil || len(list) != 0 {
		t.Fatalf("the damage is not the silent kind: %d manifests, %v", len(list), err)
	}
	_, err := verified.Manifests(fs, &snap)
	var ce *verified.CountError
	if !errors.As(err, &ce) || ce.Counted != 301 || ce.Read == 301 || !strings.Contains(err.Error(), snap.ManifestList) {
		t.Fatalf("a list that lost a manifest: %v", err)
	}
	if err := verified.LiveDataFiles(fs, &snap, 300); err == nil {
		t.Fatal("a scan short of the summary's total passed")
	}
	if err := verified.LiveDataFiles(fs, &snap, 301); err != nil {
		t.Fatalf("a scan with the summary's total: %v", err)
	}

	// Without totals in the summary, nothing can be checked against them.
	props := map[string]string{}
	for k, v := range snap.Summary.Properties {
		if !strings.HasPrefix(k, "total-") {
			props[k] = v
		}
	}
	snap.Summary = &table.Summary{Operation: snap.Summary.Operation, Properties: props}
	if _, err := verified.Manifests(fs, &snap); err != nil {
		t.Fatalf("a list whose summary has no totals: %v", err)
	}
}

// A manifest replaced by another readable one (a restore from the wrong
// backup, a copy over the wrong name) yields more entries than its list
// counts: a surplus is as damaged as a shortfall.
func TestManifestReplaced(t *testing.T) {
	ctx := context.Background()
	tbl := bulkTable(t)
	fs, _ := tbl.FS(ctx)
	list, err := verified.Manifests(fs, tbl.CurrentSnapshot())
	if err != nil || len(list) != 2 {
		t.Fatalf("%d manifests, %v", len(list), err)
	}
	small, big := list[0], list[1]
	if small.AddedDataFiles() > big.AddedDataFiles() {
		small, big = big, small
	}
	var body []byte
	if _, err := testkit.Damage(ctx, tbl, big.FilePath(), func(b []byte) ([]byte, error) { body = b; return b, nil }); err != nil {
		t.Fatal(err)
	}
	if _, err := testkit.Damage(ctx, tbl, small.FilePath(), func([]byte) ([]byte, error) { return body, nil }); err != nil {
		t.Fatal(err)
	}
	_, err = verified.FetchEntries(fs, small, true)
	var le *verified.LengthError
	if !errors.As(err, &le) || le.Stored != big.Length() || le.Recorded != small.Length() {
		t.Fatalf("a manifest replaced by a larger one: %v", err)
	}
}
