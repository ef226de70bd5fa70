package compactor

// The key index lets equality-delete conversion cost what changed, not
// what the table holds. Without it a run reads the key columns of every
// data file a deleted key may be in; with random keys (UUIDs, integers
// spread over the range) that is every file of the partition, at every
// run. With it, a run reads each data file's key columns once, stores
// every row's key and position (state.KeyIndex), and later finds the
// rows of a deleted key by looking the key up: the new equality deletes
// and the data files not yet indexed are all it reads.
//
// An entry is trusted only when all of these hold, else it is ignored
// and its file read as without the index:
//   - its index was written for the table's current UUID and the delete's
//     equality field set;
//   - its file is live in the run's scan with the size and record count
//     the index recorded (data files are immutable; a mismatch means
//     another file under the path), and was completely indexed;
//   - it decodes: the key, then a CRC-32C of the hash, file, position and
//     key, so that a damaged or moved row is caught; its position is
//     inside the file.
//
// An entry that does not decode, or a store that fails, stops the index
// for the rest of the run: the chunk and every later one read the data
// files as without it, and a warning says why. Conversion's result is
// the same either way; the index only decides what is read.
//
// Files no longer live (rewritten, removed) are forgotten when a run
// meets them: their entries are ignored at once, and deleted in one sweep
// when they outnumber the live ones (state.KeyIndex.ForgetKeyFiles).

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"log/slog"
	"slices"
	"strconv"
	"strings"

	"github.com/apache/iceberg-go"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"

	"github.com/icekeeper/icekeeper/internal/parquetcols"
	"github.com/icekeeper/icekeeper/internal/state"
	"github.com/icekeeper/icekeeper/planner"
)

// lookupShare is how much cheaper reading a row's key is than looking a
// key up: a chunk whose keys number more than 1/lookupShare of the rows
// of the indexed files it applies to reads those files instead. Measured
// on SQLite and local disk (BENCHMARKS.md), a lookup cost about 12 µs a
// key and a read about 0.15 µs a row, 80 times less; 64 leans to the
// lookups, since a read over S3 also costs requests.
const lookupShare = 64

// worthLooking reports whether looking up keys beats reading the key
// columns of the indexed files of rows rows.
func worthLooking(keys, rows int64) bool { return keys*lookupShare <= rows }

// keyFlush is how many entries indexing a file holds and then writes, in
// hash order, as one segment of the index (state.KeyIndex): about 20 MB.
const keyFlush = 1 << 18

// maxKeySegments bounds an index's segments: a lookup seeks every
// segment for each key. The segments a chunk writes are merged into one
// after it, so a run adds one segment; past the bound, every segment but
// the biggest (most often the first run's) is merged (state.KeyIndex).
const maxKeySegments = 8

// errDamagedEntry is wrapped by every reason an index entry is not
// believed.
var errDamagedEntry = errors.New("damaged key index entry")

// keyHash is the 64-bit FNV-1a hash of an encoded key: stable across
// processes and releases, as a stored index needs.
func keyHash(key []byte) int64 {
	h := uint64(14695981039346656037)
	for _, b := range key {
		h ^= uint64(b)
		h *= 1099511628211
	}
	return int64(h)
}

// encodeEntry is the stored entry of key at row pos of file: the key,
// then the CRC-32C of the hash, file, position and key.
func encodeEntry(buf []byte, hash, file, pos int64, key []byte) []byte {
	buf = append(buf[:0], key...)
	return binary.BigEndian.AppendUint32(buf, entryCRC(hash, file, pos, key))
}

func entryCRC(hash, file, pos int64, key []byte) uint32 {
	var head [24]byte
	binary.BigEndian.PutUint64(head[0:], uint64(hash))
	binary.BigEndian.PutUint64(head[8:], uint64(file))
	binary.BigEndian.PutUint64(head[16:], uint64(pos))
	tab := crc32.MakeTable(crc32.Castagnoli) // made once by package crc32
	return crc32.Update(crc32.Update(0, tab, head[:]), tab, key)
}

// decodeEntry returns e's key, checked against its checksum and hash.
func decodeEntry(e state.KeyEntry) ([]byte, error) {
	n := len(e.Entry) - 4
	if n < 1 {
		return nil, fmt.Errorf("%w: %d bytes", errDamagedEntry, len(e.Entry))
	}
	key := e.Entry[:n]
	if binary.BigEndian.Uint32(e.Entry[n:]) != entryCRC(e.Hash, e.File, e.Pos, key) || keyHash(key) != e.Hash {
		return nil, fmt.Errorf("%w: checksum mismatch (file %d, position %d)", errDamagedEntry, e.File, e.Pos)
	}
	return key, nil
}

// fieldsName names an equality field set: its sorted IDs.
func fieldsName(ids []int) string {
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = strconv.Itoa(id)
	}
	return strings.Join(s, ",")
}

// keyIndex is one run's use of a table's key indexes.
type keyIndex struct {
	store state.KeyIndex
	table state.TableKey
	uuid  string
	log   *slog.Logger
	// live are the data files of the run's scan, by path.
	live  map[string]iceberg.DataFile
	views map[string]*keyView // by fieldsName
	// off says why the index is no longer used this run ("" while it is).
	off     string
	dropped bool // other UUIDs' indexes dropped
	figures *convertFigures
}

// keyView is one index (one equality field set) as the run trusts it.
type keyView struct {
	name  state.KeyIndexName
	files map[string]state.KeyFile // complete, live, size and count agreeing
	segs  []int64                  // the segments written since the last merge
}

func newKeyIndex(store state.KeyIndex, key state.TableKey, tbl *table.Table, tasks []table.FileScanTask, log *slog.Logger, f *convertFigures) *keyIndex {
	live := make(map[string]iceberg.DataFile, len(tasks))
	for _, t := range tasks {
		live[t.File.FilePath()] = t.File
	}
	return &keyIndex{store: store, table: key, uuid: tbl.Metadata().TableUUID().String(), log: log, live: live,
		views: map[string]*keyView{}, figures: f}
}

// usable reports whether the index is still used this run.
func (x *keyIndex) usable() bool { return x != nil && x.off == "" }

// stop stops using the index for the rest of the run, saying why.
func (x *keyIndex) stop(why error) {
	if x.off != "" {
		return
	}
	x.off = why.Error()
	x.figures.ConvertIndexOff = x.off
	x.log.Warn("equality-delete conversion reads data files without the key index for the rest of the run", "table", x.table.String(), "why", x.off)
}

// view opens the index of equality field set ids: the files it holds
// that are complete, live and agree with the table's metadata. The rest
// are forgotten. Nil when the index is not usable.
func (x *keyIndex) view(ctx context.Context, ids []int) *keyView {
	if !x.usable() {
		return nil
	}
	name := fieldsName(ids)
	if v, ok := x.views[name]; ok {
		return v
	}
	if !x.dropped {
		// A table recreated under the same name: the old table's
		// indexes describe other files.
		if _, err := x.store.DropKeyIndexes(ctx, x.table, x.uuid); err != nil {
			x.stop(err)
			return nil
		}
		x.dropped = true
	}
	v := &keyView{name: state.KeyIndexName{TableUUID: x.uuid, Fields: name}, files: map[string]state.KeyFile{}}
	files, err := x.store.KeyFiles(ctx, x.table, v.name)
	if err != nil {
		x.stop(err)
		return nil
	}
	var gone []int64
	for _, f := range files {
		df, ok := x.live[f.Path]
		_, twice := v.files[f.Path]
		if !ok || !f.Complete || twice || df.FileSizeBytes() != f.Size || df.Count() != f.Records {
			gone = append(gone, f.ID)
			continue
		}
		v.files[f.Path] = f
	}
	if len(gone) > 0 {
		n, err := x.store.ForgetKeyFiles(ctx, x.table, v.name, gone)
		if err != nil {
			x.stop(err)
			return nil
		}
		x.figures.ConvertIndexForgotten += n
	}
	x.views[name] = v
	return v
}

// indexed reports whether df is indexed in every view.
func indexed(views []*keyView, df iceberg.DataFile) bool {
	for _, v := range views {
		if _, ok := v.files[df.FilePath()]; !ok {
			return false
		}
	}
	return len(views) > 0
}

// fileIndexer writes one data file's entries into the views it is not
// indexed in yet.
type fileIndexer struct {
	x       *keyIndex
	ctx     context.Context
	views   []*keyView // nil where the file is indexed already
	files   []state.KeyFile
	pending [][]state.KeyEntry // by view
	buf     []byte
}

func (x *keyIndex) indexer(ctx context.Context, views []*keyView, df iceberg.DataFile) *fileIndexer {
	w := &fileIndexer{x: x, ctx: ctx, views: make([]*keyView, len(views)), files: make([]state.KeyFile, len(views)),
		pending: make([][]state.KeyEntry, len(views))}
	for i, v := range views {
		if _, ok := v.files[df.FilePath()]; ok {
			continue
		}
		f, err := x.store.AddKeyFile(ctx, x.table, v.name, state.KeyFile{Path: df.FilePath(), Size: df.FileSizeBytes(), Records: df.Count()})
		if err != nil {
			x.stop(err)
			return nil
		}
		w.views[i], w.files[i] = v, f
	}
	return w
}

// add stores the key of row pos in view i, unless the index stopped.
func (w *fileIndexer) add(i int, pos int64, key []byte) {
	if w == nil || w.views[i] == nil || !w.x.usable() {
		return
	}
	h := keyHash(key)
	w.buf = encodeEntry(w.buf, h, w.files[i].ID, pos, key)
	w.pending[i] = append(w.pending[i], state.KeyEntry{Hash: h, File: w.files[i].ID, Pos: pos, Entry: slices.Clone(w.buf)})
	if len(w.pending[i]) >= keyFlush {
		w.flush(i)
	}
}

// flush writes the pending entries of view i.
func (w *fileIndexer) flush(i int) {
	pending := w.pending[i]
	if len(pending) == 0 || !w.x.usable() {
		return
	}
	// Sorted by hash, the rows land in few B-tree pages per batch.
	slices.SortFunc(pending, func(a, b state.KeyEntry) int {
		if a.Hash != b.Hash {
			if a.Hash < b.Hash {
				return -1
			}
			return 1
		}
		return int(a.Pos - b.Pos)
	})
	if seg, err := w.x.store.PutKeys(w.ctx, w.x.table, w.views[i].name, pending); err != nil {
		w.x.stop(err)
	} else {
		w.views[i].segs = append(w.views[i].segs, seg)
	}
	w.pending[i] = pending[:0]
}

// done flushes view i's entries and marks its file complete: from now on
// the run, and later runs, look its keys up instead of reading it.
func (w *fileIndexer) done(i int) {
	if w == nil || w.views[i] == nil {
		return
	}
	w.flush(i)
	if !w.x.usable() {
		return
	}
	if err := w.x.store.CompleteKeyFile(w.ctx, w.x.table, w.views[i].name, w.files[i].ID); err != nil {
		w.x.stop(err)
		return
	}
	f := w.files[i]
	f.Complete = true
	w.views[i].files[f.Path] = f
}

// indexFile is matchFile for a data file not yet indexed: it reads the
// key columns of every equality field set of the group (sets' and
// views'), whatever the file's bounds, indexes the file's keys in each
// view it is not in, and returns the positions of the rows a key of sets
// deletes (those of a delete with a higher data sequence number than
// seq), ascending.
func (x *keyIndex) indexFile(ctx context.Context, fs icebergio.IO, df iceberg.DataFile, seq int64, sets []*keySet, views []*keyView, st *convertStats) ([]int64, error) {
	f, pf, err := openDataFile(fs, df)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	path := df.FilePath()
	w := x.indexer(ctx, views, df)
	cols := parquetcols.TopLevel(pf.Schema())
	var positions []int64
	var first int64
	var buf [][]byte
	for r, rg := range pf.RowGroups() {
		n := rg.NumRows()
		for i, v := range views {
			ids := v.ids()
			if buf, err = rowGroupKeys(pf, r, cols, ids, buf, st); err != nil {
				return nil, fmt.Errorf("read data file %s: %w", path, err)
			}
			for k, key := range buf {
				pos := first + int64(k)
				w.add(i, pos, key)
				for _, s := range sets {
					if slices.Equal(s.ids, ids) && s.deletes(key, seq) {
						positions = append(positions, pos)
					}
				}
			}
		}
		first += n
	}
	for i := range views {
		w.done(i)
	}
	if w != nil && x.usable() {
		st.indexed++
	}
	if len(sets) > 1 {
		positions = sortedUnique(positions)
	}
	return positions, nil
}

// ids are the equality field IDs of v, from its name.
func (v *keyView) ids() []int {
	var out []int
	for _, s := range strings.Split(v.name.Fields, ",") {
		id, _ := strconv.Atoi(s)
		out = append(out, id)
	}
	return out
}

// deletes reports whether a row with encoded key key, in a data file of
// data sequence number seq, is deleted by s: as matchFile decides, a
// null or a value of another type matching no integer key.
func (s *keySet) deletes(key []byte, seq int64) bool {
	if s.integral {
		if len(key) != 9 || key[0] != keyInt {
			return false
		}
		return s.iseq[int64(binary.BigEndian.Uint64(key[1:]))] > seq
	}
	return s.seq[string(key)] > seq
}

// lookup finds, through the index, the rows of the data files tasks
// (indexes into g.Tasks, each indexed in the view of every set) that a
// key of sets deletes, and appends their positions to found. Nothing is
// appended unless every lookup succeeds: on an error the caller reads the
// files instead.
func (x *keyIndex) lookup(ctx context.Context, g planner.ConvertGroup, tasks []int, sets []*keySet, found [][]int64, st *convertStats) error {
	got := map[int][]int64{}
	var hits int64
	for _, s := range sets {
		v := x.view(ctx, s.ids)
		if v == nil {
			return errors.New(x.off)
		}
		byID := map[int64]int{}
		for _, i := range tasks {
			byID[v.files[g.Tasks[i].File.FilePath()].ID] = i
		}
		q := keyQuery{x: x, v: v, g: g, byID: byID, got: got, hits: &hits, st: st}
		if s.integral {
			for _, k := range s.ints {
				if err := q.ask(ctx, appendInt(nil, k), s.iseq[k]); err != nil {
					return err
				}
			}
		} else {
			for k, seq := range s.seq {
				if err := q.ask(ctx, []byte(k), seq); err != nil {
					return err
				}
			}
		}
		if err := q.flush(ctx); err != nil {
			return err
		}
	}
	for i, p := range got {
		// Ascending, as matchFile returns them; a row two sets delete
		// once.
		found[i] = append(found[i], sortedUnique(p)...)
	}
	st.hits += hits
	st.fromIndex += len(tasks)
	return nil
}

// lookupKeys is how many keys a lookup holds at once, encoded with their
// hashes: the chunk's keys are looked up in slices of it, so that the
// lookup adds little to the chunk's memory.
const lookupKeys = 4096

// keyQuery looks up one set's keys, lookupKeys at a time, and collects the
// positions their deletes delete in got, by task.
type keyQuery struct {
	x      *keyIndex
	v      *keyView
	g      planner.ConvertGroup
	byID   map[int64]int // file ID → task
	got    map[int][]int64
	hits   *int64
	st     *convertStats
	byHash map[int64][]wantKey
	hashes []int64
	n      int
}

// wantKey is a key looked up and the data sequence number of its newest
// delete.
type wantKey struct {
	key []byte
	seq int64
}

// ask adds key to the keys looked up, and looks them up once there are
// lookupKeys.
func (q *keyQuery) ask(ctx context.Context, key []byte, seq int64) error {
	if q.byHash == nil {
		q.byHash = make(map[int64][]wantKey, lookupKeys)
	}
	h := keyHash(key)
	if _, ok := q.byHash[h]; !ok {
		q.hashes = append(q.hashes, h)
	}
	q.byHash[h] = append(q.byHash[h], wantKey{key, seq})
	if q.n++; q.n >= lookupKeys {
		return q.flush(ctx)
	}
	return nil
}

// flush looks up the keys asked since the last flush.
func (q *keyQuery) flush(ctx context.Context) error {
	if len(q.hashes) == 0 {
		return nil
	}
	err := q.x.store.LookupKeys(ctx, q.x.table, q.v.name, q.hashes, func(e state.KeyEntry) error {
		q.st.indexBytes += 24 + int64(len(e.Entry))
		i, ok := q.byID[e.File]
		if !ok {
			return nil // a file of no task here: another partition, or forgotten
		}
		key, err := decodeEntry(e)
		if err != nil {
			return err
		}
		df := q.g.Tasks[i].File
		if e.Pos < 0 || e.Pos >= df.Count() {
			return fmt.Errorf("%w: position %d of %s, which holds %d rows", errDamagedEntry, e.Pos, df.FilePath(), df.Count())
		}
		for _, w := range q.byHash[e.Hash] {
			if w.seq > q.g.Seqs[i] && string(w.key) == string(key) {
				q.got[i] = append(q.got[i], e.Pos)
				*q.hits++
				break
			}
		}
		return nil
	})
	clear(q.byHash)
	q.hashes, q.n = q.hashes[:0], 0
	return err
}

// groupViews opens the index of each equality field set of g's deletes;
// nil when x is nil or stopped.
func (x *keyIndex) groupViews(ctx context.Context, g planner.ConvertGroup) []*keyView {
	var out []*keyView
	var seen []string
	for _, d := range g.Deletes {
		ids := slices.Sorted(slices.Values(d.File.EqualityFieldIDs()))
		if name := fieldsName(ids); !slices.Contains(seen, name) {
			seen = append(seen, name)
			v := x.view(ctx, ids)
			if v == nil {
				return nil
			}
			out = append(out, v)
		}
	}
	return out
}

// merge merges the segments of each index this run wrote to, past
// maxKeySegments. A failed merge costs later lookups more seeks, nothing
// else: it is logged.
func (x *keyIndex) merge(ctx context.Context) {
	if !x.usable() {
		return
	}
	for _, v := range x.views {
		if len(v.segs) == 0 {
			continue
		}
		segs := v.segs
		v.segs = nil
		if _, err := x.store.MergeKeySegments(ctx, x.table, v.name, segs, maxKeySegments); err != nil {
			x.log.Warn("key index segments not merged", "table", x.table.String(), "err", err)
		}
	}
}
