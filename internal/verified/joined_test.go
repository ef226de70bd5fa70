package verified_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"

	"github.com/icekeeper/icekeeper/internal/bucket"
	"github.com/icekeeper/icekeeper/internal/testkit"
	"github.com/icekeeper/icekeeper/internal/testkit/servers"
	"github.com/icekeeper/icekeeper/internal/testkit/tableenv"
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
func streamingTable(t *testing.T, b *bucket.Bucket, partitioned bool, version string) *table.Table {
	t.Helper()
	ctx := context.Background()
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

// storageBucket is the embedded default's bucket on local disk, or its
// catalog with the warehouse on the test S3 server.
func storageBucket(t *testing.T, storage string) *bucket.Bucket {
	t.Helper()
	if storage == "local" {
		return localBucket(t)
	}
	reg := tableenv.SQLOnS3(t.TempDir(), servers.S3(t)).Registry()
	t.Cleanup(reg.Close)
	b, err := reg.Bucket("local")
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// readAhead collects ReadAhead's manifests and entries, and its error,
// and the lengths of the runs of manifests it decoded as one stream.
func readAhead(fs icebergio.IO, list []iceberg.ManifestFile, discardDeleted bool) ([]verified.Read, []int, error) {
	return readAheadAt(fs, list, discardDeleted, 0)
}

// readAheadAt is readAhead joining inflated blocks up to joinAt bytes.
func readAheadAt(fs icebergio.IO, list []iceberg.ManifestFile, discardDeleted bool, joinAt int) ([]verified.Read, []int, error) {
	var out []verified.Read
	var runs []int
	for r, err := range verified.ReadAheadJoined(context.Background(), fs, list, discardDeleted, func(n int) { runs = append(runs, n) }, joinAt) {
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
		name, storage string
		partitioned   bool
		version       string
	}{
		{"v2 by day and kind", "local", true, "2"},
		{"v2 unpartitioned", "local", false, "2"},
		{"v1 by day and kind", "local", true, "1"},
		{"v2 by day and kind on S3", "s3", true, "2"},
	} {
		t.Run(c.name, func(t *testing.T) {
			tbl := streamingTable(t, storageBucket(t, c.storage), c.partitioned, c.version)
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
			// Deflated blocks are inflated and joined into blocks of up
			// to 4 MiB (all of these in one), of about 2 KB, and of one
			// manifest's block each; or left deflated, each block behind
			// the other, as for a run of larger manifests.
			for _, j := range []struct {
				discard bool
				joinAt  int
			}{{false, 0}, {true, 0}, {false, 2000}, {true, 1}, {false, -1}, {true, -1}} {
				discard := j.discard
				counting := &countingIO{IO: fs}
				got, runs, err := readAheadAt(counting, list, discard, j.joinAt)
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
// read alone, with the manifests before it yielded whole, on local disk
// and on S3: one whose list entry counts an entry more than it holds; one
// cut at a block boundary, under a list with its counts and under an old
// writer's list without them; and one whose last block counts a record
// less, which keeps its length and frames cleanly, so that only the
// joined stream's decoding can notice it.
func TestReadAheadDamagedInAJoinedRun(t *testing.T) {
	ctx := context.Background()
	for _, storage := range []string{"local", "s3"} {
		for _, c := range []struct {
			name       string
			nullCounts bool
			damage     func(t *testing.T, tbl *table.Table, list []iceberg.ManifestFile, bad int) []iceberg.ManifestFile
			is         func(err error, path string) bool
		}{
			{"counts", false, func(t *testing.T, _ *table.Table, list []iceberg.ManifestFile, bad int) []iceberg.ManifestFile {
				l := slices.Clone(list)
				l[bad] = lyingCounts{l[bad]}
				return l
			}, isCountError},
			{"cut at a block boundary", false, cutAt0, isLengthError},
			{"cut at a block boundary, no list counts", true, cutAt0, isLengthError},
			{"a block count lowered", false, func(t *testing.T, tbl *table.Table, list []iceberg.ManifestFile, bad int) []iceberg.ManifestFile {
				testkit.DamageFor(t, ctx, tbl, list[bad].FilePath(), func(b []byte) ([]byte, error) { return testkit.LowerBlockCount(b, 1) })
				return list
			}, func(err error, path string) bool {
				// Not refused by its length: its bytes frame and decode.
				return err != nil && strings.Contains(err.Error(), path) && !isLengthError(err, path)
			}},
		} {
			t.Run(storage+"/"+c.name, func(t *testing.T) {
				version := "2"
				if c.nullCounts {
					version = "1"
				}
				tbl := streamingTable(t, storageBucket(t, storage), true, version)
				if c.nullCounts {
					if err := testkit.SetListCounts(ctx, tbl, testkit.NullCounts); err != nil {
						t.Fatal(err)
					}
				}
				fs, err := tbl.FS(ctx)
				if err != nil {
					t.Fatal(err)
				}
				list, err := verified.Manifests(fs, tbl.CurrentSnapshot())
				if err != nil {
					t.Fatal(err)
				}
				if c.nullCounts && list[0].AddedDataFiles() >= 0 {
					t.Fatal("the list still has its counts")
				}
				// The sixth manifest or a later one of two entries or more
				// (where the list counts them), so that its block can count
				// one less and still hold records.
				bad := 5
				for bad < len(list)-1 && list[bad].AddedDataFiles() >= 0 && list[bad].AddedDataFiles() < 2 {
					bad++
				}
				l := c.damage(t, tbl, list, bad)
				var alone error
				for _, err := range verified.Entries(fs, l[bad], true) {
					alone = err
				}
				got, runs, err := readAhead(fs, l, true)
				if !c.is(err, list[bad].FilePath()) || alone == nil || err.Error() != alone.Error() {
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
}

func cutAt0(t *testing.T, tbl *table.Table, list []iceberg.ManifestFile, bad int) []iceberg.ManifestFile {
	testkit.DamageFor(t, context.Background(), tbl, list[bad].FilePath(), func(b []byte) ([]byte, error) { return testkit.CutAfterBlocks(b, 0) })
	return list
}

func isCountError(err error, path string) bool {
	var ce *verified.CountError
	return errors.As(err, &ce) && ce.File == path
}

func isLengthError(err error, path string) bool {
	var le *verified.LengthError
	return errors.As(err, &le) && le.File == path
}
