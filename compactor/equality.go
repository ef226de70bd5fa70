package compactor

import (
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"time"

	"github.com/apache/iceberg-go"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
	"github.com/apache/iceberg-go/table/dv"
	"github.com/google/uuid"
	"github.com/parquet-go/parquet-go"

	"github.com/icekeeper/icekeeper/internal/parquetcols"
	"github.com/icekeeper/icekeeper/internal/rebase"
	"github.com/icekeeper/icekeeper/internal/rowdigest"
	"github.com/icekeeper/icekeeper/jobs"
	"github.com/icekeeper/icekeeper/maintenance"
	"github.com/icekeeper/icekeeper/planner"
)

// convertFigures are equality-delete conversion's. Every field is
// omitted when zero, so the stored figures of runs before conversion
// existed read back the same.
type convertFigures struct {
	// EqualityDeletesMinimum is how many equality delete files a partition
	// must have before they are converted (0: never).
	EqualityDeletesMinimum int                    `json:"equalityDeletesMinimum,omitempty"`
	ConvertPlan            []planner.ConvertGroup `json:"convertPlan,omitempty"`
	ConvertSkipped         []planner.Skip         `json:"convertSkipped,omitempty"`
	// EqualityDeletesConverted counts the equality delete files the
	// committed groups removed, ConvertDeletesWritten the position delete
	// files or deletion vectors they wrote, ConvertRowsMatched the rows
	// those equality deletes were found to delete.
	ConvertGroupsCommitted   int   `json:"convertGroupsCommitted,omitempty"`
	ConvertGroupsDropped     int   `json:"convertGroupsDropped,omitempty"`
	EqualityDeletesConverted int   `json:"equalityDeletesConverted,omitempty"`
	ConvertDeletesWritten    int   `json:"convertDeletesWritten,omitempty"`
	ConvertRowsMatched       int64 `json:"convertRowsMatched,omitempty"`
	// ConvertChunks counts the chunks of keys converted, each holding at
	// most Job.ConvertChunkKeys keys and reading the key columns of the
	// data files it applies to once.
	ConvertChunks int `json:"convertChunks,omitempty"`
	// ConvertBytesRead is the bytes of key column chunks read from data
	// files (and of the equality delete files), ConvertFilesSkipped the
	// data files not read because their bounds hold no deleted key.
	ConvertBytesRead    int64 `json:"convertBytesRead,omitempty"`
	ConvertFilesSkipped int   `json:"convertFilesSkipped,omitempty"`
	// With the key index (Job.KeyIndex): ConvertFilesIndexed counts the
	// data files read and indexed, ConvertFilesLookedUp the data files
	// matched through the index without being opened (once per chunk),
	// ConvertIndexHits the rows found through it, ConvertIndexBytesRead
	// the bytes of index rows read (hash, file and position at 8 bytes
	// each, and the entry), ConvertIndexForgotten the indexed files
	// forgotten (no longer live, or no longer agreeing with the table's
	// metadata), and ConvertIndexOff why the run stopped using the index
	// ("" when it did not).
	ConvertFilesIndexed   int      `json:"convertFilesIndexed,omitempty"`
	ConvertFilesLookedUp  int      `json:"convertFilesLookedUp,omitempty"`
	ConvertIndexHits      int64    `json:"convertIndexHits,omitempty"`
	ConvertIndexBytesRead int64    `json:"convertIndexBytesRead,omitempty"`
	ConvertIndexForgotten int      `json:"convertIndexForgotten,omitempty"`
	ConvertIndexOff       string   `json:"convertIndexOff,omitempty"`
	ConvertCommits        int      `json:"convertCommits,omitempty"`
	ConvertConflicts      int      `json:"convertConflicts,omitempty"`
	ConvertDropped        []string `json:"convertDropped,omitempty"`
	ConvertMs             int64    `json:"convertMs,omitempty"`
}

// equalityDeletes lists the live equality delete files of tbl's current
// snapshot with their data sequence numbers, which the scan's tasks do
// not carry.
func equalityDeletes(ctx context.Context, tbl *table.Table) ([]planner.EqualityDelete, error) {
	var out []planner.EqualityDelete
	seen := map[string]bool{}
	for e, err := range rebase.LiveEntries(ctx, tbl, iceberg.ManifestContentDeletes) {
		if err != nil {
			return nil, err
		}
		df := e.DataFile()
		if df.ContentType() != iceberg.EntryContentEqDeletes || seen[df.FilePath()] {
			continue
		}
		seen[df.FilePath()] = true
		out = append(out, planner.EqualityDelete{File: df, Seq: e.SequenceNum()})
	}
	return out, nil
}

// convertStage plans equality-delete conversion on what the data rewrite
// left, and runs it unless this is a dry run. When the data rewrite
// committed, the plan is made again on the table as it is now; when the
// conversion commits, ds says so, so that delete-file compaction plans on
// a fresh scan too.
func (j *Job) convertStage(ctx context.Context, t jobs.Target, s Settings, opts jobs.Options, ds *dataStage, f *convertFigures) error {
	begin := time.Now()
	defer func() { f.ConvertMs = time.Since(begin).Milliseconds() }()
	f.EqualityDeletesMinimum = s.MinEqualityDeletes
	if s.MinEqualityDeletes <= 0 || ds.tbl.Metadata().Version() < 2 {
		return nil
	}
	tbl, sc, taken, eqs, listed := ds.tbl, ds.sc, ds.taken, ds.eqs, ds.eqsListed
	if ds.committed && !opts.DryRun {
		// A rewrite adds no equality deletes: when no file had any at the
		// start, the table has none to convert now but a concurrent
		// writer's, which the next run finds; loading and scanning it
		// again would cost a metadata read and the manifests.
		if !anyEqualityDeletes(ds.sc.tasks) {
			return nil
		}
		listed = false
		var err error
		if tbl, err = t.Bucket.Refresh(ctx, t.Table, ds.after); err != nil {
			return err
		}
		if sc, err = scan(ctx, tbl, false); err != nil {
			return err
		}
		taken = nil
	}
	if !listed {
		var err error
		if eqs, err = equalityDeletes(ctx, tbl); err != nil {
			return fmt.Errorf("list equality deletes of %s: %w", t.Table, err)
		}
	}
	tasks := sc.tasks
	if opts.DryRun && len(taken) > 0 {
		// The dry run shows the plan as the run would make it after the
		// data rewrite commits: its outputs carry the start's data
		// sequence number, to which no equality delete of before applies,
		// so the files it takes are out of every delete's reach.
		tasks = slices.DeleteFunc(slices.Clone(tasks), func(t table.FileScanTask) bool { return taken[t.File.FilePath()] })
		taken = nil
	}
	conv := convertOptions(s)
	conv.ChunkKeys = j.ConvertChunkKeys
	f.ConvertPlan, f.ConvertSkipped = planner.Conversion(tbl.Metadata(), tasks, eqs, taken, conv)
	if opts.DryRun || len(f.ConvertPlan) == 0 {
		return nil
	}
	err := j.convert(ctx, t, tbl, sc, s.KeyIndex, f)
	if f.ConvertCommits > 0 {
		ds.committed = true
	}
	return err
}

func convertOptions(s Settings) planner.ConvertOptions {
	return planner.ConvertOptions{MinFiles: s.MinEqualityDeletes}
}

// convert converts the equality deletes of f.ConvertPlan's groups,
// planned on sc, the scan of tbl, one group at a time and each group one
// chunk of keys at a time, and commits them as REPLACE snapshots with compaction's
// committer: staged once, rebased on the head, a group dropped when a
// data file it converted or a delete file it replaces was removed
// meanwhile, or, on v3, a deletion vector committed meanwhile may apply
// to a data file it writes a vector for.
func (j *Job) convert(ctx context.Context, t jobs.Target, tbl *table.Table, sc scanned, indexed bool, f *convertFigures) error {
	policy, err := j.policy(tbl)
	if err != nil {
		return fmt.Errorf("equality-delete conversion of %s: %w", t.Table, err)
	}
	wfs, cat, err := rebase.OpenWriting(ctx, t.Bucket, tbl)
	if err != nil {
		return err
	}
	op := rebase.EqualityConversion{Caller: rebase.Caller{Job: string(maintenance.Compaction), Name: "equality-delete conversion"},
		Converted: map[string][]string{}, Rows: &rebase.RowClaims{Deletes: true}}
	for _, g := range f.ConvertPlan {
		for _, task := range g.Tasks {
			op.Converted[g.Partition] = append(op.Converted[g.Partition], task.File.FilePath())
		}
	}
	c, err := j.newCommitter(op, t, tbl, cat, wfs, sc, policy)
	if err != nil {
		return err
	}
	rec := &rebase.RecordingFS{WriteFileIO: wfs}
	meta := tbl.Metadata()
	run := uuid.New()
	results := make([]table.CompactionGroupResult, 0, len(f.ConvertPlan))
	matched := map[string]int64{}
	var keys *keyIndex
	if j.KeyIndex != nil && indexed {
		keys = newKeyIndex(j.KeyIndex, t.Key(), tbl, sc.tasks, j.log(), f)
	}
	for i, g := range f.ConvertPlan {
		w := newDeleteWriter(rec, c.Locations(), meta, fmt.Sprintf("%s-%05d", run, i))
		r, st, err := convertGroup(ctx, wfs, w, meta, g, sc.deletes.Covers, cmp.Or(j.wholeDeleteBytes, wholeDeleteBytes), keys)
		f.ConvertBytesRead += st.bytesRead
		f.ConvertFilesSkipped += st.skipped
		f.ConvertChunks += st.chunks
		f.ConvertFilesIndexed += st.indexed
		f.ConvertFilesLookedUp += st.fromIndex
		f.ConvertIndexHits += st.hits
		f.ConvertIndexBytesRead += st.indexBytes
		if err != nil {
			c.RemoveUncommitted(rec)
			return fmt.Errorf("convert equality deletes of %s: %w", g.Partition, err)
		}
		matched[g.Partition] = st.matched
		op.Rows.Put(r, st.claim)
		results = append(results, r)
	}
	err = c.Run(ctx, results)
	done := c.Committed()
	f.ConvertCommits, f.ConvertConflicts = done.Commits, done.Stats.Conflicts
	f.ConvertGroupsDropped, f.ConvertDropped = len(done.Dropped), done.Dropped
	for _, g := range done.Groups {
		f.ConvertGroupsCommitted++
		f.ConvertRowsMatched += matched[g.PartitionKey]
		f.ConvertDeletesWritten += len(g.NewDataFiles)
		for _, d := range g.SafePosDeletes {
			if d.ContentType() == iceberg.EntryContentEqDeletes {
				f.EqualityDeletesConverted++
			}
		}
	}
	c.RemoveUncommitted(rec)
	return err
}

// convertStats is what converting one group cost and found.
type convertStats struct {
	// claim: the position-delete rows handed to the writer and those its
	// files hold, read back (they agree).
	claim     rowdigest.Claim
	chunks    int
	bytesRead int64
	skipped   int   // data files whose bounds hold no key
	matched   int64 // rows the equality deletes delete
	// With the key index: data files read and indexed, data files
	// matched through it (per chunk), rows found through it, and bytes
	// of index rows read.
	indexed    int
	fromIndex  int
	hits       int64
	indexBytes int64
}

// convertGroup converts g's equality deletes one chunk at a time (the
// planner's g.Slices): it reads the chunk's keys, then the key columns of
// each data file the chunk applies to, one file at a time, and collects
// the positions of the rows a key of a delete with a higher data sequence
// number than the file's deletes. Memory holds one chunk's keys and the
// positions found so far. It then writes them: on v2 one file-scoped
// position delete file per data file, beside its other position deletes;
// on v3 one deletion vector per data file, merged with the vector and
// position deletes it had (covers says which data files each position
// delete file applies to). A delete file of up to whole bytes is read in
// one request.
//
// With keys (nil: none), a data file already in the key index is not
// read: the chunk's keys are looked up instead, unless they are so many
// that reading is cheaper (worthLooking). A data file not in it is read
// whole once, matched, and indexed. Should the index fail, the chunk and
// the rest read every data file, as without it.
func convertGroup(ctx context.Context, fs icebergio.IO, w *deleteWriter, meta table.Metadata, g planner.ConvertGroup, covers map[string][]string, whole int64, keys *keyIndex) (table.CompactionGroupResult, convertStats, error) {
	res := table.CompactionGroupResult{PartitionKey: g.Partition}
	var st convertStats
	found := make([][]int64, len(g.Tasks))
	views := keys.groupViews(ctx, g)
	for _, c := range g.Slices {
		sets, err := readKeys(fs, g.Deletes, c.Keys, whole, &st)
		if err != nil {
			return res, st, err
		}
		var look []int // tasks matched through the index
		for _, i := range c.Tasks {
			if err := ctx.Err(); err != nil {
				return res, st, err
			}
			df := g.Tasks[i].File
			var positions []int64
			switch {
			case views != nil && keys.usable() && indexed(views, df):
				look = append(look, i)
				continue
			case views != nil && keys.usable():
				positions, err = keys.indexFile(ctx, fs, df, g.Seqs[i], sets, views, &st)
			default:
				positions, err = matchFile(fs, df, g.Seqs[i], sets, &st)
			}
			if err != nil {
				return res, st, err
			}
			found[i] = append(found[i], positions...)
		}
		// Segments written for this chunk are merged before the next
		// chunk's lookups.
		keys.merge(ctx)
		if len(look) > 0 {
			var nkeys, rows int64
			for _, s := range sets {
				nkeys += int64(s.size())
			}
			for _, i := range look {
				rows += g.Tasks[i].File.Count()
			}
			read := !worthLooking(nkeys, rows)
			if !read {
				if err := keys.lookup(ctx, g, look, sets, found, &st); err != nil {
					if ctx.Err() != nil {
						return res, st, ctx.Err()
					}
					keys.stop(err)
					read = true
				}
			}
			if read {
				for _, i := range look {
					positions, err := matchFile(fs, g.Tasks[i].File, g.Seqs[i], sets, &st)
					if err != nil {
						return res, st, err
					}
					found[i] = append(found[i], positions...)
				}
			}
		}
		st.chunks++
	}
	vectors := map[string]bool{}
	read := map[string]map[string][]int64{}
	for i, task := range g.Tasks {
		positions := found[i]
		if len(positions) == 0 {
			continue
		}
		if len(g.Slices) > 1 {
			// A key in two chunks (upserted at two checkpoints) matches
			// the same row twice.
			positions = sortedUnique(positions)
		}
		found[i] = nil
		st.matched += int64(len(positions))
		if w.puffin {
			// A data file has at most one deletion vector: it holds every
			// position deleted so far.
			old, err := existingPositions(fs, task, read)
			if err != nil {
				return res, st, err
			}
			positions = sortedUnique(append(positions, old...))
			vectors[task.File.FilePath()] = true
		}
		addPositions(&st.claim.Read, task.File.FilePath(), positions)
		if err := w.add(task.File, positions); err != nil {
			return res, st, err
		}
	}
	files, err := w.finish(ctx)
	if err != nil {
		return res, st, err
	}
	if st.claim.Written, err = writtenPositions(fs, g.Tasks, files); err != nil {
		return res, st, err
	}
	if st.claim.Read != st.claim.Written {
		return res, st, fmt.Errorf("%w: positions found %s, written %s", rowdigest.ErrRowsDiffer, st.claim.Read, st.claim.Written)
	}
	res.NewDataFiles = files
	for _, d := range g.Deletes {
		res.SafePosDeletes = append(res.SafePosDeletes, d.File)
	}
	for _, d := range planner.Converted(g, covers, vectors) {
		if d.FileFormat() == iceberg.PuffinFile {
			res.SafeDeletionVectors = append(res.SafeDeletionVectors, d)
		} else {
			res.SafePosDeletes = append(res.SafePosDeletes, d)
		}
	}
	return res, st, nil
}

// existingPositions reads the positions the deletion vector and position
// delete files attached to t delete in its data file; read caches the
// position delete files read, by path.
func existingPositions(fs icebergio.IO, t table.FileScanTask, read map[string]map[string][]int64) ([]int64, error) {
	path := t.File.FilePath()
	var positions []int64
	for _, d := range planner.PositionDeletes(t) {
		if d.FileFormat() == iceberg.PuffinFile {
			bm, err := dv.ReadDV(fs, d)
			if err != nil {
				return nil, fmt.Errorf("read deletion vector of %s in %s: %w", path, d.FilePath(), err)
			}
			for p := range bm.Positions() {
				positions = append(positions, int64(p))
			}
			continue
		}
		m, ok := read[d.FilePath()]
		if !ok {
			var err error
			if m, err = rebase.ReadPositionDeletes(fs, d); err != nil {
				return nil, err
			}
			read[d.FilePath()] = m
		}
		positions = append(positions, m[path]...)
	}
	return slices.DeleteFunc(positions, func(p int64) bool { return p < 0 || p >= t.File.Count() }), nil
}

// keySet is the keys of the equality deletes of one set of equality
// fields, each with the highest data sequence number of a delete holding
// it: a row with the key is deleted in a data file whose sequence number
// is lower.
type keySet struct {
	ids []int // sorted
	// integral: the set is one integer column and no key is null (the
	// common upsert key). Its keys are then in iseq by value, a third of
	// the memory of encoded keys and no allocation per row, and ints holds
	// them sorted once read: a data file whose bounds hold none of them is
	// not read. Otherwise the keys are in seq, encoded (appendKey).
	integral bool
	iseq     map[int64]int64
	ints     []int64
	seq      map[string]int64
}

func newKeySet(ids []int) *keySet {
	return &keySet{ids: ids, integral: len(ids) == 1, iseq: map[int64]int64{}, seq: map[string]int64{}}
}

// encode moves an integral set's keys to seq: a key was null or not an
// integer.
func (s *keySet) encode() {
	for v, seq := range s.iseq {
		s.seq[string(appendInt(nil, v))] = seq
	}
	s.integral, s.iseq, s.ints = false, nil, nil
}

// size is how many distinct keys s holds.
func (s *keySet) size() int { return len(s.iseq) + len(s.seq) }

// readKeys reads the key ranges of one chunk of deletes, by set of
// equality fields; a delete file of up to whole bytes is read in one
// request.
func readKeys(fs icebergio.IO, deletes []planner.EqualityDelete, ranges []planner.KeyRange, whole int64, st *convertStats) ([]*keySet, error) {
	var sets []*keySet
	for _, r := range ranges {
		d := deletes[r.Delete]
		ids := slices.Sorted(slices.Values(d.File.EqualityFieldIDs()))
		i := slices.IndexFunc(sets, func(s *keySet) bool { return slices.Equal(s.ids, ids) })
		if i < 0 {
			sets = append(sets, newKeySet(ids))
			i = len(sets) - 1
		}
		if err := sets[i].read(fs, d, r.From, r.Rows, whole, st); err != nil {
			return nil, err
		}
	}
	for _, s := range sets {
		if s.integral {
			s.ints = slices.Sorted(maps.Keys(s.iseq))
		}
	}
	return sets, nil
}

// wholeDeleteBytes is the size up to which an equality delete file is by
// default read in one request: a checkpoint's delete file is small, and one GET
// beats a footer read and a ranged read per column. A larger one is read
// by ranges, only the row groups of the rows wanted, so that a chunk of a
// big delete file does not hold the whole file.
const wholeDeleteBytes = 8 << 20

// read adds the keys of rows [from, from+rows) of equality delete d, read
// whole if it is of at most wholeBytes.
func (s *keySet) read(fs icebergio.IO, d planner.EqualityDelete, from, rows, wholeBytes int64, st *convertStats) error {
	path := d.File.FilePath()
	f, err := fs.Open(path)
	if err != nil {
		return fmt.Errorf("open equality delete file %s: %w", path, err)
	}
	defer f.Close()
	var pf *parquet.File
	whole := d.File.FileSizeBytes() <= wholeBytes
	if whole {
		data, err := io.ReadAll(f)
		if err != nil {
			return fmt.Errorf("read equality delete file %s: %w", path, err)
		}
		st.bytesRead += int64(len(data))
		pf, err = parquet.OpenFile(bytes.NewReader(data), int64(len(data)))
		if err != nil {
			return fmt.Errorf("read equality delete file %s: %w", path, err)
		}
	} else {
		fi, err := f.Stat()
		if err != nil {
			return fmt.Errorf("open equality delete file %s: %w", path, err)
		}
		pf, err = parquet.OpenFile(f, fi.Size(), parquet.SkipBloomFilters(true), parquet.SkipPageIndex(true), parquet.ReadBufferSize(1<<20))
		if err != nil {
			return fmt.Errorf("read equality delete file %s: %w", path, err)
		}
	}
	if pf.NumRows() != d.File.Count() {
		return fmt.Errorf("equality delete file %s holds %d rows, its manifest entry %d", path, pf.NumRows(), d.File.Count())
	}
	cols := parquetcols.TopLevel(pf.Schema())
	var buf [][]byte
	var first int64 // the row group's first row
	for r, rg := range pf.RowGroups() {
		n := rg.NumRows()
		lo, hi := max(from, first), min(from+rows, first+n)
		if lo >= hi {
			first += n
			continue
		}
		var ccs []parquet.ColumnChunk
		for _, id := range s.ids {
			col, ok := cols[id]
			if !ok {
				return fmt.Errorf("equality delete file %s has no column of equality field %d", path, id)
			}
			if !whole {
				st.bytesRead += pf.Metadata().RowGroups[r].Columns[col].MetaData.TotalCompressedSize
			}
			ccs = append(ccs, rg.ColumnChunks()[col])
		}
		if s.integral {
			ok, err := s.readInts(ccs[0], n, lo-first, hi-lo, d.Seq)
			if err != nil {
				return fmt.Errorf("read equality delete file %s: %w", path, err)
			}
			if ok {
				first += n
				continue
			}
			s.encode()
		}
		buf = resetKeys(buf, int(hi-lo))
		for _, cc := range ccs {
			if err := columnKeys(cc, n, lo-first, buf); err != nil {
				return fmt.Errorf("read equality delete file %s: %w", path, err)
			}
		}
		for _, k := range buf {
			if s.seq[string(k)] < d.Seq {
				s.seq[string(k)] = d.Seq
			}
		}
		first += n
	}
	return nil
}

// readInts adds to an integral set the keys of rows [skip, skip+count)
// of a column chunk of rows rows, with data sequence number seq, unless
// one of them is null or not an integer: then it adds none and reports
// false, for the set to be encoded.
func (s *keySet) readInts(cc parquet.ColumnChunk, rows, skip, count, seq int64) (bool, error) {
	vals := make([]int64, 0, count)
	integral := true
	err := columnValues(cc, rows, skip, count, func(_ int64, v parquet.Value) error {
		if x, ok := intValue(v); ok {
			vals = append(vals, x)
		} else {
			integral = false
		}
		return nil
	})
	if err != nil || !integral {
		return false, err
	}
	for _, x := range vals {
		if s.iseq[x] < seq {
			s.iseq[x] = seq
		}
	}
	return true, nil
}

// intValue is v as an integer key: a non-null int32 or int64.
func intValue(v parquet.Value) (int64, bool) {
	switch {
	case v.IsNull():
	case v.Kind() == parquet.Int64:
		return v.Int64(), true
	case v.Kind() == parquet.Int32:
		return int64(v.Int32()), true
	}
	return 0, false
}

// matchFile returns the positions, ascending, of the rows of data file df
// (data sequence number seq) whose key is deleted by a delete with a
// higher sequence number. It reads only the key columns, one row group at
// a time, and no file whose bounds hold no key.
func matchFile(fs icebergio.IO, df iceberg.DataFile, seq int64, sets []*keySet, st *convertStats) ([]int64, error) {
	var live []*keySet
	for _, s := range sets {
		if s.mayMatch(df) {
			live = append(live, s)
		}
	}
	if len(live) == 0 {
		st.skipped++
		return nil, nil
	}
	f, pf, err := openDataFile(fs, df)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	path := df.FilePath()
	cols := parquetcols.TopLevel(pf.Schema())
	var positions []int64
	var first int64 // position of the row group's first row
	var buf [][]byte
	for r, rg := range pf.RowGroups() {
		n := rg.NumRows()
		for _, s := range live {
			if s.integral {
				col, ok := cols[s.ids[0]]
				if !ok {
					continue // a column added since: null, which no key is
				}
				st.bytesRead += pf.Metadata().RowGroups[r].Columns[col].MetaData.TotalCompressedSize
				err := columnValues(rg.ColumnChunks()[col], n, 0, n, func(i int64, v parquet.Value) error {
					// A null or a value of another type matches no key.
					if x, ok := intValue(v); ok && s.iseq[x] > seq {
						positions = append(positions, first+i)
					}
					return nil
				})
				if err != nil {
					return nil, fmt.Errorf("read data file %s: %w", path, err)
				}
				continue
			}
			if buf, err = rowGroupKeys(pf, r, cols, s.ids, buf, st); err != nil {
				return nil, fmt.Errorf("read data file %s: %w", path, err)
			}
			for i, k := range buf {
				if s.seq[string(k)] > seq {
					positions = append(positions, first+int64(i))
				}
			}
		}
		first += n
	}
	if len(live) > 1 {
		positions = sortedUnique(positions)
	}
	return positions, nil
}

// rowGroupKeys reads the keys of row group r of pf on the columns ids
// (cols maps field IDs to leaf columns) into buf, one key per row, and
// counts the column chunks' bytes into st.
func rowGroupKeys(pf *parquet.File, r int, cols map[int]int, ids []int, buf [][]byte, st *convertStats) ([][]byte, error) {
	rg := pf.RowGroups()[r]
	n := rg.NumRows()
	buf = resetKeys(buf, int(n))
	for _, id := range ids {
		col, ok := cols[id]
		if !ok {
			// A column added after the file was written: null in every
			// row, as readers project it.
			for i := range buf {
				buf[i] = append(buf[i], keyNull)
			}
			continue
		}
		st.bytesRead += pf.Metadata().RowGroups[r].Columns[col].MetaData.TotalCompressedSize
		if err := columnKeys(rg.ColumnChunks()[col], n, 0, buf); err != nil {
			return buf, err
		}
	}
	return buf, nil
}

// openDataFile opens data file df for its key columns (no bloom filters,
// no page indexes), and checks that it holds the rows its manifest entry
// says. The caller closes f.
func openDataFile(fs icebergio.IO, df iceberg.DataFile) (icebergio.File, *parquet.File, error) {
	path := df.FilePath()
	f, err := fs.Open(path)
	if err != nil {
		return nil, nil, fmt.Errorf("open data file %s: %w", path, err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, fmt.Errorf("open data file %s: %w", path, err)
	}
	pf, err := parquet.OpenFile(f, fi.Size(), parquet.SkipBloomFilters(true), parquet.SkipPageIndex(true), parquet.ReadBufferSize(1<<20))
	if err != nil {
		f.Close()
		return nil, nil, fmt.Errorf("read data file %s: %w", path, err)
	}
	if pf.NumRows() != df.Count() {
		f.Close()
		return nil, nil, fmt.Errorf("data file %s holds %d rows, its manifest entry %d", path, pf.NumRows(), df.Count())
	}
	return f, pf, nil
}

// mayMatch reports whether data file df may hold a key of s: false only
// when s is one integer column, no key is null, and df's bounds on it
// hold no key.
func (s *keySet) mayMatch(df iceberg.DataFile) bool {
	if !s.integral || len(s.ints) == 0 {
		return s.size() > 0
	}
	id := s.ids[0]
	lo, okLo := boundInt(df.LowerBoundValues()[id])
	hi, okHi := boundInt(df.UpperBoundValues()[id])
	if !okLo || !okHi {
		return true
	}
	i, _ := slices.BinarySearch(s.ints, lo)
	return i < len(s.ints) && s.ints[i] <= hi
}

// boundInt decodes an Iceberg bound of an int, long, date, time or
// timestamp column: 4 or 8 bytes, little-endian.
func boundInt(b []byte) (int64, bool) {
	switch len(b) {
	case 4:
		return int64(int32(binary.LittleEndian.Uint32(b))), true
	case 8:
		return int64(binary.LittleEndian.Uint64(b)), true
	}
	return 0, false
}

// resetKeys returns n empty keys, reusing buf.
func resetKeys(buf [][]byte, n int) [][]byte {
	if cap(buf) < n {
		buf = make([][]byte, n)
	}
	buf = buf[:n]
	for i := range buf {
		buf[i] = buf[i][:0]
	}
	return buf
}

// Tags of encoded key values. Integers of either width encode alike, so
// that a column promoted from int to long matches across files.
const (
	keyNull byte = iota
	keyBool
	keyInt
	keyBytes
)

// columnKeys appends the values of rows [skip, skip+len(keys)) of a flat
// column chunk of rows rows to their keys in keys.
func columnKeys(cc parquet.ColumnChunk, rows, skip int64, keys [][]byte) error {
	return columnValues(cc, rows, skip, int64(len(keys)), func(i int64, v parquet.Value) error {
		var err error
		keys[i], err = appendKey(keys[i], v)
		return err
	})
}

// columnValues calls fn with each value of rows [skip, skip+count) of a
// flat column chunk of rows rows, and its index from skip. Pages wholly
// before skip are not decoded, and reading stops after the last row
// wanted; a chunk read to its end must hold one value per row.
func columnValues(cc parquet.ColumnChunk, rows, skip, count int64, fn func(int64, parquet.Value) error) error {
	end := skip + count
	pages := cc.Pages()
	defer pages.Close()
	values := make([]parquet.Value, 1024)
	var i int64 // the row of the next value
	for i < end || end == rows {
		p, err := pages.ReadPage()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		if n := p.NumRows(); i+n <= skip && p.NumValues() == n {
			i += n
			parquet.Release(p)
			continue
		}
		vr := p.Values()
		for {
			n, err := vr.ReadValues(values)
			for _, v := range values[:n] {
				if i >= rows {
					parquet.Release(p)
					return fmt.Errorf("column chunk holds more values than its row group's %d rows", rows)
				}
				if i >= skip && i < end {
					if ferr := fn(i-skip, v); ferr != nil {
						parquet.Release(p)
						return ferr
					}
				}
				i++
			}
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				parquet.Release(p)
				return err
			}
		}
		parquet.Release(p)
	}
	if i < end || (end == rows && i != rows) {
		return fmt.Errorf("column chunk holds %d values for %d rows", i, rows)
	}
	return nil
}

// appendKey appends the encoding of v to key.
func appendKey(key []byte, v parquet.Value) ([]byte, error) {
	if v.IsNull() {
		return append(key, keyNull), nil
	}
	switch v.Kind() {
	case parquet.Boolean:
		b := byte(0)
		if v.Boolean() {
			b = 1
		}
		return append(key, keyBool, b), nil
	case parquet.Int32:
		return appendInt(key, int64(v.Int32())), nil
	case parquet.Int64:
		return appendInt(key, v.Int64()), nil
	case parquet.ByteArray, parquet.FixedLenByteArray:
		b := v.ByteArray()
		return append(binary.AppendUvarint(append(key, keyBytes), uint64(len(b))), b...), nil
	}
	return key, fmt.Errorf("key column of Parquet type %v is not read", v.Kind())
}

// appendInt appends the encoding of integer v, of either width.
func appendInt(key []byte, v int64) []byte {
	return binary.BigEndian.AppendUint64(append(key, keyInt), uint64(v))
}
