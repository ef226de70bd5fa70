package compactor

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/icekeeper/icekeeper/internal/state"
	"github.com/icekeeper/icekeeper/internal/testkit"
	"github.com/icekeeper/icekeeper/internal/testkit/tableenv"
)

// keyed is a twin of a CDC table: two tables built by the same steps
// from the same seed, one converted with the key index and one without.
type keyed struct {
	with, without *env
	a, b          *table.Table
	job           *Job // with the index
	// deleteOn upserts keys on the equality field set the case tests.
	deleteOn func(e *env, tbl *table.Table, keys []int64) *table.Table
}

// step applies the same change to both tables.
func (k *keyed) step(f func(e *env, tbl *table.Table) *table.Table) {
	k.a = f(k.with, k.a)
	if k.without != nil {
		k.b = f(k.without, k.b)
	}
}

// round upserts keys on both tables and runs compaction on each, the
// one with the index and the other without: each must keep the rows
// iceberg-go's reader saw before its run, now and at the snapshot
// before, and the two must read the same.
func (k *keyed) round(keys []int64) (*Figures, *Figures) {
	k.with.T.Helper()
	k.step(func(e *env, tbl *table.Table) *table.Table { return k.deleteOn(e, tbl, keys) })
	var figs [2]*Figures
	var fps [2]string
	type side struct {
		e   *env
		job *Job
	}
	sides := []side{{k.with, k.job}}
	if k.without != nil {
		sides = append(sides, side{k.without, &Job{}})
	}
	for i, side := range sides {
		before := side.e.Load()
		want := side.e.Rows(before, 0)
		out, fig := side.e.compact(side.job)
		if out.Status != state.Successful {
			side.e.T.Fatalf("compaction: %s: %s", out.Status, out.FailureMessage)
		}
		if fig.ConvertGroupsCommitted == 0 {
			side.e.T.Fatalf("nothing converted:\n%s", fig.Text())
		}
		side.e.checkSameRows(want, before.CurrentSnapshot().SnapshotID)
		if n := count(side.e.liveDeletes(), iceberg.EntryContentEqDeletes); n != 0 {
			side.e.T.Fatalf("%d equality deletes left:\n%s", n, fig.Text())
		}
		figs[i], fps[i] = fig, side.e.Rows(side.e.Load(), 0).String()
	}
	k.a = k.with.Load()
	if k.without == nil {
		return figs[0], nil
	}
	k.b = k.without.Load()
	if fps[0] != fps[1] {
		k.with.T.Fatalf("with the key index the table reads %s, without %s", fps[0], fps[1])
	}
	if figs[0].ConvertRowsMatched != figs[1].ConvertRowsMatched {
		k.with.T.Fatalf("with the key index %d rows matched, without %d:\n%s\n%s", figs[0].ConvertRowsMatched, figs[1].ConvertRowsMatched, figs[0].Text(), figs[1].Text())
	}
	return figs[0], figs[1]
}

// newKeyed builds the twin: well-sized data files of about 60,000 rows
// (1 MB, the compaction target) per partition, which the data rewrite
// leaves to conversion.
func newKeyed(t *testing.T, spec iceberg.PartitionSpec, format string, deleteOn func(e *env, tbl *table.Table, keys []int64) *table.Table) *keyed {
	k := &keyed{deleteOn: deleteOn}
	k.with, k.a = newEnv(t, tableenv.BaseSchema, spec, format)
	k.without, k.b = newEnv(t, tableenv.BaseSchema, spec, format)
	k.job = &Job{KeyIndex: k.with.Store}
	k.with.Defaults.Knobs.ConvertKeyIndex = true
	k.step(func(e *env, tbl *table.Table) *table.Table {
		parts := 1
		if !spec.IsUnpartitioned() {
			parts = 2 // bucket(2)
		}
		tbl, _ = cdcTable{appends: 2, bigRows: 60000 * parts}.fill(e, tbl)
		return tbl
	})
	return k
}

// newYoung is one table of two files of rows rows without a twin, whose
// files are all left to the writer (a minimum file age): conversion alone
// runs, and each run's data files are the previous one's and its new
// versions.
func newYoung(t *testing.T, rows int) *keyed {
	k := &keyed{deleteOn: func(e *env, tbl *table.Table, keys []int64) *table.Table { return e.upsert(tbl, keys) }}
	k.with, k.a = newEnv(t, tableenv.BaseSchema, *iceberg.UnpartitionedSpec, "2")
	k.with.Defaults.Knobs.MinFileAgeMinutes = 60
	k.with.Defaults.Knobs.ConvertKeyIndex = true
	k.job = &Job{KeyIndex: k.with.Store}
	k.a, _ = cdcTable{appends: 2, bigRows: rows}.fill(k.with, k.a)
	return k
}

// spread returns n keys from first, step apart: integers spread over the
// table's range, so every data file's bounds may hold one.
func spread(first, step int64, n int) []int64 {
	// The tables hold keys 1 to 120,000 (newKeyed) or 20,000 (newYoung).
	out := make([]int64, n)
	for i := range out {
		out[i] = first + int64(i)*step
	}
	return out
}

// Conversion with the key index writes what conversion without it
// writes, over rounds of upserts with compaction's rewrites between them
// (the small files of new versions compacted, a big indexed file
// rewritten into a copy: its entries forgotten, the copy indexed), on
// integer and string keys, unpartitioned and partitioned, v2 and v3,
// across a schema change that adds a column and a change of the equality
// field set (an index of its own). From the second round on, the data
// files indexed before are matched by lookups and not read.
func TestKeyIndexDifferential(t *testing.T) {
	testkit.SkipUnderRace(t)
	onID := func(e *env, tbl *table.Table, keys []int64) *table.Table { return e.upsert(tbl, keys) }
	onName := func(e *env, tbl *table.Table, keys []int64) *table.Table {
		cols := []string{"name"}
		spec := tbl.Spec()
		for _, f := range spec.Fields() {
			if name, ok := tbl.Schema().FindColumnName(f.SourceID()); ok && !slices.Contains(cols, name) {
				cols = append(cols, name)
			}
		}
		return e.upsertOn(e.EqDeleteOn(tbl, []string{"name"}, cols, keys...), keys)
	}
	byBucket := iceberg.NewPartitionSpec(tableenv.PF(1, 1000, "id_bucket", iceberg.BucketTransform{NumBuckets: 2}))
	for _, tc := range []struct {
		name     string
		format   string
		spec     iceberg.PartitionSpec
		deleteOn func(e *env, tbl *table.Table, keys []int64) *table.Table
	}{
		{"v2 integer keys", "2", *iceberg.UnpartitionedSpec, onID},
		{"v3 integer keys by bucket", "3", byBucket, onID},
		{"v2 string keys by bucket", "2", byBucket, onName},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if testing.Short() && tc.name != "v2 string keys by bucket" {
				t.Skip("one case in -short: each builds two tables of 120,000 rows and runs five rounds on each")
			}
			k := newKeyed(t, tc.spec, tc.format, tc.deleteOn)
			first, _ := k.round(spread(7, 577, 100))
			if first.ConvertFilesIndexed == 0 || first.ConvertFilesLookedUp != 0 {
				t.Fatalf("the first round indexed %d files and looked %d up; want every file indexed, none looked up:\n%s",
					first.ConvertFilesIndexed, first.ConvertFilesLookedUp, first.Text())
			}
			// A key upserted again (its row is now in a file of new
			// versions) and new ones.
			second, without := k.round(append(spread(7, 577, 10), spread(11, 613, 90)...))
			if second.ConvertFilesLookedUp == 0 || second.ConvertIndexHits == 0 || second.ConvertBytesRead >= without.ConvertBytesRead {
				t.Fatalf("the second round looked %d files up, found %d rows, read %d bytes (%d without the index):\n%s",
					second.ConvertFilesLookedUp, second.ConvertIndexHits, second.ConvertBytesRead, without.ConvertBytesRead, second.Text())
			}
			// The biggest data file rewritten into a copy (its indexed
			// entries are forgotten, the copy indexed), and a column added:
			// later files have it, older ones do not.
			k.step(func(e *env, tbl *table.Table) *table.Table {
				files := e.dataFiles()
				slices.SortFunc(files, func(a, b iceberg.DataFile) int { return int(b.FileSizeBytes() - a.FileSizeBytes()) })
				tbl = rewriteCopy(e, files[0].FilePath())
				tx := tbl.NewTransaction()
				if err := tx.UpdateSchema(true, false).AddColumn([]string{"extra"}, iceberg.PrimitiveTypes.String, "", false, nil).Commit(); err != nil {
					t.Fatal(err)
				}
				tbl, err := tx.Commit(e.Ctx)
				if err != nil {
					t.Fatal(err)
				}
				return tbl
			})
			third, _ := k.round(spread(13, 701, 100))
			if third.ConvertIndexForgotten == 0 || third.ConvertFilesIndexed == 0 {
				t.Errorf("the rewritten file was not forgotten, or its copy not indexed:\n%s", third.Text())
			}
			// Another equality field set: an index of its own.
			deleteOn := k.deleteOn
			k.deleteOn = func(e *env, tbl *table.Table, keys []int64) *table.Table {
				return e.upsertOn(e.EqDeleteOn(tbl, []string{"id", "name"}, []string{"id", "name"}, keys...), keys)
			}
			fourth, _ := k.round(spread(19, 809, 100))
			if fourth.ConvertFilesLookedUp != 0 || fourth.ConvertFilesIndexed == 0 {
				t.Errorf("a new field set looked %d files up and indexed %d; want every file indexed again:\n%s",
					fourth.ConvertFilesLookedUp, fourth.ConvertFilesIndexed, fourth.Text())
			}
			k.deleteOn = deleteOn
			fifth, _ := k.round(spread(17, 419, 100))
			t.Log(first.Text(), second.Text(), third.Text(), fourth.Text(), fifth.Text())
			if fifth.ConvertFilesLookedUp == 0 {
				t.Errorf("the fifth round looked no file up:\n%s", fifth.Text())
			}
		})
	}
}

// hostile is a key index whose answers a test changes.
type hostile struct {
	state.KeyIndex
	files  func([]state.KeyFile) []state.KeyFile
	lookup func(state.KeyEntry) state.KeyEntry
	err    error // returned by LookupKeys and PutKeys
}

func (h *hostile) KeyFiles(ctx context.Context, t state.TableKey, ix state.KeyIndexName) ([]state.KeyFile, error) {
	files, err := h.KeyIndex.KeyFiles(ctx, t, ix)
	if h.files != nil {
		files = h.files(files)
	}
	return files, err
}

func (h *hostile) LookupKeys(ctx context.Context, t state.TableKey, ix state.KeyIndexName, hashes []int64, fn func(state.KeyEntry) error) error {
	if h.err != nil {
		return h.err
	}
	return h.KeyIndex.LookupKeys(ctx, t, ix, hashes, func(e state.KeyEntry) error {
		if h.lookup != nil {
			e = h.lookup(e)
		}
		return fn(e)
	})
}

func (h *hostile) PutKeys(ctx context.Context, t state.TableKey, ix state.KeyIndexName, entries []state.KeyEntry) (int64, error) {
	if h.err != nil {
		return 0, h.err
	}
	return h.KeyIndex.PutKeys(ctx, t, ix, entries)
}

// An index row that is not the truth is not believed. Each case builds
// the index in a first round, then plants or damages rows so that, were
// they believed, the next round would delete a row no delete names or
// miss one it does; the rows stay exact (checked against iceberg-go's
// reader, and against the twin converted without the index). Forged
// rows: a file of the wrong size, or of another table's UUID, each with
// a checksummed entry naming the next round's key at a wrong position.
// Damaged rows: one stored that does not decode; as the store returns
// them, an entry whose bytes are flipped, one moved to another position,
// one cut short; a store that fails lookups and writes. A forged row is ignored and the rest of the
// index used; a damaged one stops the index for the run.
func TestKeyIndexHostile(t *testing.T) {
	testkit.SkipUnderRace(t)
	next := spread(11, 193, 50)
	ctx := context.Background()
	// forge plants, in index ix, a complete file row for path (size and
	// records as given) whose one entry says next[0] is at row 1.
	forge := func(t *testing.T, s state.KeyIndex, key state.TableKey, ix state.KeyIndexName, path string, size, records int64) {
		// The forged row replaces the true one: only its own flaw can
		// keep it from being believed.
		files, err := s.KeyFiles(ctx, key, ix)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			if f.Path == path {
				if _, err := s.ForgetKeyFiles(ctx, key, ix, []int64{f.ID}); err != nil {
					t.Fatal(err)
				}
			}
		}
		f, err := s.AddKeyFile(ctx, key, ix, state.KeyFile{Path: path, Size: size, Records: records})
		if err != nil {
			t.Fatal(err)
		}
		k := appendInt(nil, next[0])
		h := keyHash(k)
		if _, err := s.PutKeys(ctx, key, ix, []state.KeyEntry{{Hash: h, File: f.ID, Pos: 1, Entry: encodeEntry(nil, h, f.ID, 1, k)}}); err != nil {
			t.Fatal(err)
		}
		if err := s.CompleteKeyFile(ctx, key, ix, f.ID); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name string
		// plant changes the index after the first round; off says the
		// second round must stop using it.
		plant func(t *testing.T, k *keyed, h *hostile)
		off   bool
	}{
		{"file of the wrong size", func(t *testing.T, k *keyed, h *hostile) {
			df := k.with.dataFiles()[0]
			forge(t, k.with.Store, k.with.Target().Key(), state.KeyIndexName{TableUUID: k.a.Metadata().TableUUID().String(), Fields: "1"},
				df.FilePath(), df.FileSizeBytes()+1, df.Count())
		}, false},
		{"another table's UUID", func(t *testing.T, k *keyed, h *hostile) {
			df := k.with.dataFiles()[0]
			forge(t, k.with.Store, k.with.Target().Key(), state.KeyIndexName{TableUUID: "00000000-0000-0000-0000-000000000001", Fields: "1"},
				df.FilePath(), df.FileSizeBytes(), df.Count())
		}, false},
		{"a file no longer agreeing", func(t *testing.T, k *keyed, h *hostile) {
			h.files = func(files []state.KeyFile) []state.KeyFile {
				if len(files) > 0 {
					files[0].Records++
				}
				return files
			}
		}, false},
		{"undecodable row stored", func(t *testing.T, k *keyed, h *hostile) {
			key, ix := k.with.Target().Key(), state.KeyIndexName{TableUUID: k.a.Metadata().TableUUID().String(), Fields: "1"}
			files, err := k.with.Store.KeyFiles(ctx, key, ix)
			if err != nil || len(files) == 0 {
				t.Fatalf("no indexed files: %v", err)
			}
			if _, err := k.with.Store.PutKeys(ctx, key, ix, []state.KeyEntry{
				{Hash: keyHash(appendInt(nil, next[0])), File: files[0].ID, Pos: 0, Entry: []byte{keyInt, 0xde, 0xad}}}); err != nil {
				t.Fatal(err)
			}
		}, true},
		{"flipped bytes", func(t *testing.T, k *keyed, h *hostile) {
			h.lookup = func(e state.KeyEntry) state.KeyEntry {
				e.Entry = slices.Clone(e.Entry)
				e.Entry[0] ^= 0x40
				return e
			}
		}, true},
		{"entry moved to another position", func(t *testing.T, k *keyed, h *hostile) {
			h.lookup = func(e state.KeyEntry) state.KeyEntry { e.Pos++; return e }
		}, true},
		{"truncated entry", func(t *testing.T, k *keyed, h *hostile) {
			h.lookup = func(e state.KeyEntry) state.KeyEntry { e.Entry = e.Entry[:2]; return e }
		}, true},
		{"store failing", func(t *testing.T, k *keyed, h *hostile) { h.err = errors.New("disk I/O error") }, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k := newYoung(t, 10000)
			h := &hostile{KeyIndex: k.with.Store}
			k.job = &Job{KeyIndex: h}
			k.round(spread(7, 197, 50))
			tc.plant(t, k, h)
			second, _ := k.round(next)
			t.Log(second.Text())
			if off := second.ConvertIndexOff != ""; off != tc.off {
				t.Fatalf("index stopped: %q; want stopped %v:\n%s", second.ConvertIndexOff, tc.off, second.Text())
			}
			if !tc.off && second.ConvertFilesLookedUp == 0 {
				t.Fatalf("the index was not used beside the planted row:\n%s", second.Text())
			}
			if tc.name == "another table's UUID" {
				files, err := k.with.Store.KeyFiles(ctx, k.with.Target().Key(), state.KeyIndexName{TableUUID: "00000000-0000-0000-0000-000000000001", Fields: "1"})
				if err != nil || len(files) != 0 {
					t.Errorf("another UUID's index not dropped: %v %v", files, err)
				}
			}
			if strings.Contains(tc.name, "wrong size") && second.ConvertIndexForgotten == 0 {
				t.Errorf("the file of the wrong size was not forgotten:\n%s", second.Text())
			}
		})
	}
}

// An entry decodes only as written: its key, file, position and hash
// are bound by its checksum.
func TestKeyIndexEntry(t *testing.T) {
	key := appendInt(nil, 42)
	h := keyHash(key)
	e := state.KeyEntry{Hash: h, File: 3, Pos: 9, Entry: encodeEntry(nil, h, 3, 9, key)}
	got, err := decodeEntry(e)
	if err != nil || string(got) != string(key) {
		t.Fatalf("decode: %x %v", got, err)
	}
	for name, bad := range map[string]state.KeyEntry{
		"file":   {Hash: h, File: 4, Pos: 9, Entry: e.Entry},
		"pos":    {Hash: h, File: 3, Pos: 8, Entry: e.Entry},
		"hash":   {Hash: h + 1, File: 3, Pos: 9, Entry: e.Entry},
		"short":  {Hash: h, File: 3, Pos: 9, Entry: e.Entry[:4]},
		"empty":  {Hash: h, File: 3, Pos: 9},
		"bit":    {Hash: h, File: 3, Pos: 9, Entry: append([]byte{e.Entry[0] ^ 1}, e.Entry[1:]...)},
		"forged": {Hash: keyHash(appendInt(nil, 43)), File: 3, Pos: 9, Entry: encodeEntry(nil, keyHash(appendInt(nil, 43)), 3, 9, key)},
	} {
		if _, err := decodeEntry(bad); !errors.Is(err, errDamagedEntry) {
			t.Errorf("%s: %v, want errDamagedEntry", name, err)
		}
	}
}

// Chunks and many keys: with a bound of 70 keys, the first chunk reads
// and indexes the data files and the later chunks of the same run look
// them up; a round of 4,500 keys is looked up in slices of lookupKeys;
// a round of 10,000 keys, past 1/lookupShare of the rows, reads the
// indexed files instead. The rows stay those iceberg-go's reader saw
// before each run.
func TestKeyIndexChunked(t *testing.T) {
	testkit.SkipUnderRace(t)
	k := newYoung(t, 150000)
	k.job.ConvertChunkKeys = 70
	first, _ := k.round(spread(7, 83, 230))
	if first.ConvertChunks != 4 || first.ConvertFilesIndexed != 2 || first.ConvertFilesLookedUp != 6 || first.ConvertIndexHits == 0 {
		t.Fatalf("want 4 chunks, 2 files indexed in the first and looked up in the 3 others:\n%s", first.Text())
	}
	k.job.ConvertChunkKeys = 0
	second, _ := k.round(spread(3, 4, 4500))
	if second.ConvertIndexHits <= lookupKeys || second.ConvertIndexOff != "" {
		t.Fatalf("want more than %d rows found through the index:\n%s", lookupKeys, second.Text())
	}
	third, _ := k.round(spread(5, 29, 10000))
	if third.ConvertFilesLookedUp != 0 || third.ConvertFilesIndexed != 1 || third.ConvertIndexOff != "" {
		t.Fatalf("want the indexed files read, not looked up, and only the new versions indexed:\n%s", third.Text())
	}
}

// The key index is the bucket's choice (compaction.convertKeyIndex, off by
// default): without it, a job given a store reads the key columns every
// run and writes nothing to the index.
func TestKeyIndexOff(t *testing.T) {
	k := newYoung(t, 10000)
	k.with.Defaults.Knobs.ConvertKeyIndex = false
	first, _ := k.round(spread(7, 197, 50))
	second, _ := k.round(spread(11, 193, 50))
	for _, f := range []*Figures{first, second} {
		if f.ConvertFilesIndexed != 0 || f.ConvertFilesLookedUp != 0 || f.ConvertIndexHits != 0 || f.ConvertBytesRead == 0 {
			t.Fatalf("with the index off: %d files indexed, %d looked up, %d hits, %d bytes read\n%s",
				f.ConvertFilesIndexed, f.ConvertFilesLookedUp, f.ConvertIndexHits, f.ConvertBytesRead, f.Text())
		}
	}
}
