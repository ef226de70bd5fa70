package verified_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/icekeeper/icekeeper/internal/bucket"
	"github.com/icekeeper/icekeeper/internal/demo"
	"github.com/icekeeper/icekeeper/internal/rebase"
	"github.com/icekeeper/icekeeper/internal/testkit"
	"github.com/icekeeper/icekeeper/internal/verified"
)

// oldWriterTable is a format-version-1 table whose current manifest list
// leaves its counts null, as old writers did, over a 300-entry manifest of
// several Avro blocks; without totals, its snapshot summaries carry no
// total-* either.
func oldWriterTable(t *testing.T, totals bool) (*table.Table, func() *table.Table) {
	t.Helper()
	ctx := context.Background()
	b := localBucket(t)
	tbl := testkit.NewTable(t, b, "db", "old", demo.Schema(), catalog.WithProperties(iceberg.Properties{"format-version": "1"}))
	var err error
	if tbl, err = testkit.AppendRandom(ctx, tbl, 10, 0, rand.New(rand.NewPCG(1, 2))); err != nil {
		t.Fatal(err)
	}
	if tbl, err = testkit.AddCopies(ctx, tbl, 300); err != nil {
		t.Fatal(err)
	}
	if err := testkit.SetListCounts(ctx, tbl, testkit.NullCounts); err != nil {
		t.Fatal(err)
	}
	if !totals {
		if err := testkit.StripSummaryTotals(ctx, tbl); err != nil {
			t.Fatal(err)
		}
	}
	load := func() *table.Table {
		tbl, err := b.LoadTable(ctx, bucket.TableID{Namespace: []string{"db"}, Name: "old"})
		if err != nil {
			t.Fatal(err)
		}
		return tbl
	}
	return load(), load
}

// An old writer's list (null counts) over a manifest cut at a block
// boundary reads cleanly in iceberg-go, and nothing counted would tell;
// each verified reader refuses it by its length, naming the manifest and
// both sizes, with and without summary totals. A manifest cut mid-block,
// and one cut whose list counts were rewritten to agree, fail as well.
func TestOldWriterList(t *testing.T) {
	ctx := context.Background()
	for _, totals := range []bool{true, false} {
		t.Run(fmt.Sprintf("totals=%v", totals), func(t *testing.T) {
			tbl, load := oldWriterTable(t, totals)
			fs, _ := tbl.FS(ctx)
			snap := tbl.CurrentSnapshot()
			if _, ok := verified.SummaryTotal(snap, "total-data-files"); ok != totals {
				t.Fatalf("summary totals: %v, want %v", snap.Summary.Properties, totals)
			}
			list, err := verified.Manifests(fs, snap)
			if err != nil {
				t.Fatalf("a whole old writer's list: %v", err)
			}
			if _, known := verified.LiveFiles(list, iceberg.ManifestContentData); known {
				t.Fatal("the list still has counts")
			}
			if tasks, err := rebase.PlanVerified(ctx, tbl, snap); err != nil || len(tasks) != 301 {
				t.Fatalf("a whole old writer's table planned %d files, %v", len(tasks), err)
			}
			path, _, err := testkit.LargestManifest(ctx, tbl)
			if err != nil {
				t.Fatal(err)
			}
			var m iceberg.ManifestFile
			for _, mf := range list {
				if mf.FilePath() == path {
					m = mf
				}
			}

			for _, c := range []struct {
				name string
				how  func([]byte) ([]byte, error)
				// consistent: the list's counts are rewritten to what the
				// damaged manifest holds.
				consistent bool
			}{
				{"cut after a block", func(b []byte) ([]byte, error) { return testkit.CutAfterBlocks(b, 1) }, false},
				{"cut after a block, counts made to agree", func(b []byte) ([]byte, error) { return testkit.CutAfterBlocks(b, 1) }, true},
				{"cut mid-block", func(b []byte) ([]byte, error) { return testkit.CutMidBlock(b, 1) }, false},
			} {
				t.Run(c.name, func(t *testing.T) {
					t.Cleanup(func() {
						if err := testkit.SetListCounts(ctx, tbl, testkit.NullCounts); err != nil {
							t.Error(err)
						}
					})
					testkit.DamageFor(t, ctx, tbl, path, c.how)
					read := 0
					for _, err := range m.Entries(fs, false) {
						if err != nil {
							break
						}
						read++
					}
					if c.consistent {
						if err := testkit.SetListCounts(ctx, tbl, func(mf iceberg.ManifestFile) testkit.ListCounts {
							if mf.FilePath() == path {
								return testkit.ListCounts{Added: int32(read)}
							}
							return testkit.NullCounts(mf)
						}); err != nil {
							t.Fatal(err)
						}
					}
					tbl := load()
					snap := tbl.CurrentSnapshot()
					list, _ := snap.Manifests(fs)
					for _, mf := range list {
						if mf.FilePath() == path {
							m = mf
						}
					}
					check := func(what string, err error) {
						t.Helper()
						var ce *verified.CountError
						if c.consistent && totals && what != "reading the manifest" {
							// Counts made to agree with the cut manifest no
							// longer add up to the summary's total: the list
							// is refused first, by name.
							if !errors.As(err, &ce) || ce.File != snap.ManifestList || ce.Counted != 301 || ce.Read != int64(read)+1 {
								t.Fatalf("%s: want a count error naming the list %s, got %v", what, snap.ManifestList, err)
							}
							return
						}
						var le *verified.LengthError
						if !errors.As(err, &le) || le.File != path || le.Recorded != m.Length() || le.Stored == m.Length() ||
							!strings.Contains(err.Error(), fmt.Sprintf("its manifest list records %d", m.Length())) {
							t.Fatalf("%s over a manifest that reads %d of 300 entries: want a length error naming %s, got %v", what, read, path, err)
						}
					}
					_, err = verified.FetchEntries(fs, m, true)
					check("reading the manifest", err)
					_, err = rebase.PlanVerified(ctx, tbl, snap)
					check("planning a scan", err)
					check("reading the snapshot", verified.Snapshot(fs, snap))
					if totals && !c.consistent {
						// The list is checked against the totals by reading
						// the manifests its counts leave out.
						_, err = verified.Manifests(fs, snap)
						check("reading the list", err)
					}
				})
			}
		})
	}
}

// Counts that disagree with a whole manifest of the recorded length (a
// list rewritten wrongly) are still caught by the counts.
func TestListCountsThatLie(t *testing.T) {
	ctx := context.Background()
	tbl, load := oldWriterTable(t, false)
	fs, _ := tbl.FS(ctx)
	path, n, err := testkit.LargestManifest(ctx, tbl)
	if err != nil {
		t.Fatal(err)
	}
	if err := testkit.SetListCounts(ctx, tbl, func(m iceberg.ManifestFile) testkit.ListCounts {
		if m.FilePath() == path {
			return testkit.ListCounts{Added: 400}
		}
		return testkit.NullCounts(m)
	}); err != nil {
		t.Fatal(err)
	}
	err = verified.Snapshot(fs, load().CurrentSnapshot())
	var ce *verified.CountError
	if !errors.As(err, &ce) || ce.File != path || ce.Counted != 400 || ce.Read != int64(n) {
		t.Fatalf("a list counting 400 entries of a manifest of %d: %v", n, err)
	}
}
