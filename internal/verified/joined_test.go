package verified_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"reflect"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"

	"github.com/icekeeper/icekeeper/internal/testkit"
	"github.com/icekeeper/icekeeper/internal/verified"
)

// countingIO counts the files opened through it.
type countingIO struct {
	icebergio.IO
	opens atomic.Int64
}

func (c *countingIO) Open(name string) (icebergio.File, error) {
	c.opens.Add(1)
	return c.IO.Open(name)
}

// streamingTable is a table of many small manifests of every entry
// status: appends of their own, a delete that rewrites one file of a
// manifest (DELETED beside EXISTING entries), and appends after it.
func streamingTable(t *testing.T, partitioned bool, version string) *table.Table {
	t.Helper()
	ctx := context.Background()
	b := localBucket(t)
	sc := iceberg.NewSchema(0,
		iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
		iceberg.NestedField{ID: 2, Name: "ts", Type: iceberg.PrimitiveTypes.TimestampTz},
		iceberg.NestedField{ID: 3, Name: "kind", Type: iceberg.PrimitiveTypes.String},
	)
	opts := []catalog.CreateTableOpt{catalog.WithProperties(iceberg.Properties{"format-version": version})}
	if partitioned {
		spec := iceberg.NewPartitionSpec(
			iceberg.PartitionField{SourceIDs: []int{2}, FieldID: 1000, Name: "ts_day", Transform: iceberg.DayTransform{}},
			iceberg.PartitionField{SourceIDs: []int{3}, FieldID: 1001, Name: "kind", Transform: iceberg.IdentityTransform{}})
		opts = append(opts, catalog.WithPartitionSpec(&spec))
	}
	tbl := testkit.NewTable(t, b, "db", "streaming", sc, opts...)
	var err error
	rng := rand.New(rand.NewPCG(3, 4))
	if tbl, err = testkit.AppendCommits(ctx, tbl, 12, 30, 0, rng); err != nil {
		t.Fatal(err)
	}
	tx := tbl.NewTransaction()
	if err := tx.Delete(ctx, iceberg.EqualTo(iceberg.Reference("id"), int64(40)), nil); err != nil {
		t.Fatal(err)
	}
	if tbl, err = tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if tbl, err = testkit.AppendCommits(ctx, tbl, 6, 30, 1000, rng); err != nil {
		t.Fatal(err)
	}
	return tbl
}

// readAhead collects ReadAhead's manifests and entries, and its error,
// and the lengths of the runs of manifests it decoded as one stream.
func readAhead(fs icebergio.IO, list []iceberg.ManifestFile, discardDeleted bool) ([]verified.Read, []int, error) {
	var out []verified.Read
	var runs []int
	for r, err := range verified.ReadAheadJoined(context.Background(), fs, list, discardDeleted, func(n int) { runs = append(runs, n) }) {
		if err != nil {
			return out, runs, err
		}
		out = append(out, r)
	}
	return out, runs, nil
}

// Small manifests of one header are decoded as one stream, each opened
// once, and each yields what it yields read alone: every entry status,
// the snapshot IDs and sequence numbers its entries inherit from its own
// manifest-list entry, its partition values (a day and a string), on
// format version 1 and 2.
func TestReadAheadJoinedAsAlone(t *testing.T) {
	for _, c := range []struct {
		name        string
		partitioned bool
		version     string
	}{
		{"v2 by day and kind", true, "2"},
		{"v2 unpartitioned", false, "2"},
		{"v1 by day and kind", true, "1"},
	} {
		t.Run(c.name, func(t *testing.T) {
			tbl := streamingTable(t, c.partitioned, c.version)
			fs, err := tbl.FS(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			list, err := verified.Manifests(fs, tbl.CurrentSnapshot())
			if err != nil {
				t.Fatal(err)
			}
			if len(list) < 15 {
				t.Fatalf("%d manifests; the test wants a streaming table's many", len(list))
			}
			for _, discard := range []bool{false, true} {
				counting := &countingIO{IO: fs}
				got, runs, err := readAhead(counting, list, discard)
				if err != nil || len(got) != len(list) {
					t.Fatalf("discardDeleted %v: %d of %d manifests, %v", discard, len(got), len(list), err)
				}
				// One header throughout: one run, unless the manifests
				// the delete rewrote (written by another writer path)
				// differ in it.
				if len(runs) == 0 || len(runs) > 3 || slices.Max(runs) < len(list)-3 {
					t.Fatalf("discardDeleted %v: %d manifests decoded in joined runs of %v", discard, len(list), runs)
				}
				if n := counting.opens.Load(); n != int64(len(list)) {
					t.Fatalf("discardDeleted %v: %d manifests opened %d times: some were read again, not joined", discard, len(list), n)
				}
				statuses, snapshots, seqs := map[iceberg.ManifestEntryStatus]bool{}, map[int64]bool{}, map[int64]bool{}
				for i, r := range got {
					alone, err := verified.FetchEntries(fs, list[i], discard)
					if err != nil {
						t.Fatal(err)
					}
					if r.FilePath() != list[i].FilePath() {
						t.Fatalf("manifest %d is %s, want %s", i, r.FilePath(), list[i].FilePath())
					}
					if !sameEntries(r.Entries, alone) {
						t.Fatalf("discardDeleted %v: manifest %d (%s) read joined differs from read alone:\n%v\n%v", discard, i, r.FilePath(), r.Entries, alone)
					}
					for _, e := range r.Entries {
						statuses[e.Status()] = true
						snapshots[e.SnapshotID()] = true
						seqs[e.SequenceNum()] = true
					}
				}
				// An unpartitioned append is one file, so the delete
				// leaves no EXISTING entry beside it.
				want := 3
				if !c.partitioned {
					want--
				}
				if discard {
					want--
				}
				if len(statuses) != want || len(snapshots) < 15 || (c.version == "2" && len(seqs) < 15) {
					t.Fatalf("discardDeleted %v: the table has %d entry statuses (want %d), %d snapshots and %d sequence numbers among its entries: it does not test inheritance",
						discard, len(statuses), want, len(snapshots), len(seqs))
				}
			}
		})
	}
}

// sameEntries compares two manifests' entries, none and an empty slice
// alike.
func sameEntries(a, b []iceberg.ManifestEntry) bool {
	return len(a) == 0 && len(b) == 0 || reflect.DeepEqual(a, b)
}

// lyingCounts is a manifest-list entry that counts one ADDED entry more
// than its manifest holds.
type lyingCounts struct{ iceberg.ManifestFile }

func (l lyingCounts) AddedDataFiles() int32 { return l.ManifestFile.AddedDataFiles() + 1 }

// A damaged manifest inside a run that would be joined fails as it does
// read alone, with the manifests before it yielded whole: one whose list
// entry counts other than it holds, and one cut at a block boundary.
func TestReadAheadDamagedInAJoinedRun(t *testing.T) {
	ctx := context.Background()
	tbl := streamingTable(t, true, "2")
	fs, err := tbl.FS(ctx)
	if err != nil {
		t.Fatal(err)
	}
	list, err := verified.Manifests(fs, tbl.CurrentSnapshot())
	if err != nil {
		t.Fatal(err)
	}
	const bad = 5
	for _, c := range []struct {
		name   string
		damage func(t *testing.T) []iceberg.ManifestFile
		is     func(error) bool
	}{
		{"counts", func(t *testing.T) []iceberg.ManifestFile {
			l := append([]iceberg.ManifestFile(nil), list...)
			l[bad] = lyingCounts{l[bad]}
			return l
		}, func(err error) bool {
			var ce *verified.CountError
			return errors.As(err, &ce) && ce.File == list[bad].FilePath()
		}},
		{"cut at a block boundary", func(t *testing.T) []iceberg.ManifestFile {
			testkit.DamageFor(t, ctx, tbl, list[bad].FilePath(), func(b []byte) ([]byte, error) { return testkit.CutAfterBlocks(b, 0) })
			return list
		}, func(err error) bool {
			var le *verified.LengthError
			return errors.As(err, &le) && le.File == list[bad].FilePath()
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			l := c.damage(t)
			_, alone := verified.FetchEntries(fs, l[bad], true)
			got, runs, err := readAhead(fs, l, true)
			if !c.is(err) || alone == nil || err.Error() != alone.Error() {
				t.Fatalf("joined: %v\nalone: %v", err, alone)
			}
			// The damaged manifest's run is read again one by one.
			joined := 0
			for _, n := range runs {
				joined += n
			}
			if len(got) != bad || joined > bad {
				t.Fatalf("%d manifests yielded before the damaged one, want %d; joined runs decoded: %v", len(got), bad, runs)
			}
			for i, r := range got {
				want, err := verified.FetchEntries(fs, l[i], true)
				if err != nil || !sameEntries(r.Entries, want) {
					t.Fatalf("manifest %d before the damaged one: %v", i, err)
				}
			}
		})
	}
}
