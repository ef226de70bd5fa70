package orphan

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"path"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/apache/iceberg-go"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
	"github.com/sourcegraph/conc/pool"

	"github.com/icekeeper/icekeeper/internal/verified"
)

// ErrReferencedMissing is returned when a file the table's snapshots need
// (a manifest list, a manifest, a data or delete file, the current metadata
// file) lies under the table's prefixes but is not in the listing. Either
// the table is already broken or storage names its objects differently
// from the metadata; in both cases judging the rest unreferenced is unsafe.
var ErrReferencedMissing = errors.New("a file the table's metadata references is missing from the listing")

// refSet is the set of files a table's metadata references under its
// prefixes, as 64-bit hashes of their keys, every form of each (see
// loc.forms). A hash collision can only make an unreferenced object look
// referenced (it is kept), never the reverse, so the set is safe without
// storing the paths themselves: about 25 bytes per reference.
type refSet struct {
	seed   maphash.Seed
	hashes []uint64 // every form of every reference, sorted, unique
	listed []bool   // hashes[i] was seen in the listing
	refs   []ref    // one per reference, by its first form, sorted, unique
	// alt holds the other forms of the few references that have them.
	alt map[uint64][]uint64
}

// ref is one referenced file.
type ref struct {
	hash uint64
	// required: the table's snapshots need the file, so it must exist.
	// Metadata log entries, the version hint and statistics files may
	// be gone without harm.
	required bool
}

// refBatch collects the references of one metadata file before they are
// merged into the set under a lock.
type refBatch struct {
	hashes []uint64
	refs   []ref
	alt    map[uint64][]uint64
}

// add classifies ref and records the forms of it under sc's prefixes.
func (b *refBatch) add(seed maphash.Seed, p string, required bool, sc scope) error {
	in, n, _, err := sc.classify(p)
	if err != nil || n == 0 {
		return err
	}
	first := in[0].hash(seed)
	b.refs = append(b.refs, ref{hash: first, required: required})
	b.hashes = append(b.hashes, first)
	for _, l := range in[1:n] {
		h := l.hash(seed)
		b.hashes = append(b.hashes, h)
		if b.alt == nil {
			b.alt = map[uint64][]uint64{}
		}
		b.alt[first] = append(b.alt[first], h)
	}
	return nil
}

func (r *refSet) merge(b *refBatch) {
	r.hashes = append(r.hashes, b.hashes...)
	r.refs = append(r.refs, b.refs...)
	for k, v := range b.alt {
		if r.alt == nil {
			r.alt = map[uint64][]uint64{}
		}
		r.alt[k] = append(r.alt[k], v...)
	}
}

// seal sorts and deduplicates the set; a file referenced as required
// anywhere is required.
func (r *refSet) seal() {
	slices.Sort(r.hashes)
	r.hashes = slices.Compact(r.hashes)
	r.listed = make([]bool, len(r.hashes))
	slices.SortFunc(r.refs, func(a, b ref) int {
		if c := cmp.Compare(a.hash, b.hash); c != 0 {
			return c
		}
		if a.required == b.required {
			return 0
		}
		if a.required {
			return -1
		}
		return 1
	})
	r.refs = slices.CompactFunc(r.refs, func(a, b ref) bool { return a.hash == b.hash })
}

func (r *refSet) index(l loc) (int, bool) {
	return slices.BinarySearch(r.hashes, l.hash(r.seed))
}

// contains reports whether l is referenced.
func (r *refSet) contains(l loc) bool {
	_, ok := r.index(l)
	return ok
}

// see reports whether the listed object l is referenced, and remembers
// that it was listed.
func (r *refSet) see(l loc) bool {
	i, ok := r.index(l)
	if ok {
		r.listed[i] = true
	}
	return ok
}

func (r *refSet) wasListed(h uint64) bool {
	i, ok := slices.BinarySearch(r.hashes, h)
	return ok && r.listed[i]
}

// unlisted returns how many references no listed object matched, and the
// hashes (first form) of the required ones among them.
func (r *refSet) unlisted() (int, []uint64) {
	n := 0
	var required []uint64
	for _, f := range r.refs {
		if r.wasListed(f.hash) || slices.ContainsFunc(r.alt[f.hash], r.wasListed) {
			continue
		}
		n++
		if f.required {
			required = append(required, f.hash)
		}
	}
	return n, required
}

// refStats describes what collecting references read.
type refStats struct {
	Snapshots     int `json:"snapshots"`
	ManifestLists int `json:"manifestLists"`
	Manifests     int `json:"manifests"`
	// Paths is how many distinct paths under the table's prefixes the
	// metadata references.
	Paths int `json:"paths"`
	// NotInStorage is how many of them the listing did not find; only
	// those that may be gone without harm (metadata log entries, the
	// version hint, statistics files) can be.
	NotInStorage int `json:"notInStorage"`
	// ManifestsFromIndex and ManifestsRead count the manifest lists and
	// manifests whose references came from the reference index, and
	// those read from storage (a list read again for a manifest the
	// index lacked counts once more).
	ManifestsFromIndex int `json:"manifestsFromIndex,omitempty"`
	ManifestsRead      int `json:"manifestsRead,omitempty"`
	// IndexRejected counts index rows not trusted (undecodable, or of
	// another table UUID), whose files were read instead; IndexUnsaved
	// rows that could not be written; IndexForgotten rows removed because
	// no snapshot reaches their file any more.
	IndexRejected  int `json:"indexRejected,omitempty"`
	IndexUnsaved   int `json:"indexUnsaved,omitempty"`
	IndexForgotten int `json:"indexForgotten,omitempty"`
}

// refSink receives the references of one part of the metadata (the table
// metadata itself, or one manifest); flush is called once at its end.
// Sinks of different parts run concurrently.
type refSink interface {
	add(p string, required bool) error
	flush()
}

// walkRefs visits every file the table's metadata references: the current
// metadata file and those in its log, the version hint, and for every
// snapshot still in the metadata its manifest list, manifests, and live
// data, delete and deletion-vector files, plus statistics and
// partition-statistics files. The metadata's own part is always taken from
// the metadata as loaded; what a manifest list or manifest references is
// taken from idx where it holds a trusted row, and read otherwise (a nil
// idx reads everything). An unreadable manifest list or manifest is an
// error: with part of the metadata unknown, nothing may be judged
// unreferenced. Manifests are read concurrently, at most parallelism at a
// time, each streamed entry by entry into a sink of its own.
func walkRefs(ctx context.Context, tbl *table.Table, fs icebergio.IO, parallelism int, idx *runIndex, newSink func() refSink) (refStats, error) {
	meta := tbl.Metadata()
	var st refStats
	direct := newSink()
	if err := direct.add(tbl.MetadataLocation(), true); err != nil {
		return st, err
	}
	var optional []string
	for e := range meta.PreviousFiles() {
		optional = append(optional, e.MetadataFile)
	}
	// The version hint sits next to the metadata files of Hadoop-style
	// tables; it is referenced by convention, not by any metadata field.
	if l, err := refLoc(tbl.MetadataLocation()); err == nil {
		l.path = path.Join(path.Dir(l.path), "version-hint.text")
		optional = append(optional, l.String())
	}
	for s := range meta.Statistics() {
		optional = append(optional, s.StatisticsPath)
	}
	for s := range meta.PartitionStatistics() {
		optional = append(optional, s.StatisticsPath)
	}
	for _, p := range optional {
		if err := direct.add(p, false); err != nil {
			return st, err
		}
	}

	var snaps []table.Snapshot
	for _, snap := range meta.Snapshots() {
		st.Snapshots++
		if snap.ManifestList == "" {
			continue
		}
		st.ManifestLists++
		if err := direct.add(snap.ManifestList, true); err != nil {
			return st, err
		}
		snaps = append(snaps, snap)
	}
	var fromIndex, read atomic.Int64
	lists := &manifestLists{fs: fs, read: &read, owner: map[string]*table.Snapshot{}, files: map[string]iceberg.ManifestFile{}}
	// Manifests are shared between snapshots: visit each once.
	seen := map[string]bool{}
	var manifests []string
	for chunk := range slices.Chunk(snaps, indexChunk) {
		paths := make([]string, len(chunk))
		for i, snap := range chunk {
			paths[i] = snap.ManifestList
		}
		rows := idx.lookup(ctx, paths)
		for i := range chunk {
			snap := &chunk[i]
			named, ok := idx.refs(rows, snap.ManifestList)
			if ok {
				fromIndex.Add(1)
			} else {
				var err error
				if named, err = lists.readList(snap); err != nil {
					return st, err
				}
				idx.add(ctx, snap.ManifestList, named)
			}
			for _, m := range named {
				if !seen[m] {
					seen[m] = true
					manifests = append(manifests, m)
					lists.owner[m] = snap
				}
			}
		}
	}
	st.Manifests = len(manifests)
	direct.flush()

	if parallelism <= 0 {
		parallelism = 8
	}
	p := pool.New().WithContext(ctx).WithCancelOnError().WithFirstError().WithMaxGoroutines(parallelism)
	for chunk := range slices.Chunk(manifests, indexChunk) {
		if ctx.Err() != nil {
			break
		}
		rows := idx.lookup(ctx, chunk)
		for _, m := range chunk {
			refs, indexed := idx.refs(rows, m)
			p.Go(func(ctx context.Context) error {
				sink := newSink()
				if err := sink.add(m, true); err != nil {
					return err
				}
				if indexed {
					fromIndex.Add(1)
					for _, r := range refs {
						if err := sink.add(r, true); err != nil {
							return err
						}
					}
					sink.flush()
					return nil
				}
				mf, err := lists.manifest(m)
				if err != nil {
					return err
				}
				var live []string
				// DELETED entries record a removal; the file stays alive only
				// through the snapshots whose manifests still list it live.
				for e, err := range verified.Entries(fs, mf, true) {
					if err != nil {
						return err
					}
					if err := ctx.Err(); err != nil {
						return err
					}
					if err := sink.add(e.DataFile().FilePath(), true); err != nil {
						return err
					}
					if idx.saving() {
						live = append(live, e.DataFile().FilePath())
					}
				}
				read.Add(1)
				idx.add(ctx, m, live)
				sink.flush()
				return nil
			})
		}
	}
	err := p.Wait()
	st.ManifestsFromIndex, st.ManifestsRead = int(fromIndex.Load()), int(read.Load())
	if err == nil && ctx.Err() != nil {
		err = ctx.Err()
	}
	if err != nil {
		return st, err
	}
	idx.flush(ctx)
	keep := make([]string, 0, len(snaps)+len(manifests))
	for _, snap := range snaps {
		keep = append(keep, snap.ManifestList)
	}
	idx.forget(ctx, append(keep, manifests...))
	return st, nil
}

// manifestLists reads manifest lists and keeps the manifests they name, so
// that a manifest the index lacks can be read even when its list's
// references came from the index.
type manifestLists struct {
	fs   icebergio.IO
	read *atomic.Int64
	// owner is a snapshot whose list names the manifest; set before the
	// manifests are visited, read-only after.
	owner map[string]*table.Snapshot
	mu    sync.Mutex
	files map[string]iceberg.ManifestFile
	// reread is held while a list is read again for a manifest, so that
	// the manifests of one list do not read it once each.
	reread sync.Mutex
}

// readList reads snap's manifest list and returns the manifests it names.
func (l *manifestLists) readList(snap *table.Snapshot) ([]string, error) {
	list, err := verified.Manifests(l.fs, snap)
	if err != nil {
		return nil, err
	}
	l.read.Add(1)
	named := make([]string, len(list))
	l.mu.Lock()
	defer l.mu.Unlock()
	for i, m := range list {
		named[i] = m.FilePath()
		l.files[m.FilePath()] = m
	}
	return named, nil
}

// manifest returns the manifest at path, reading the list that names it
// when that list was not read (its references came from the index, but
// the manifest's did not: a row rejected or lost). Rare, so such reads
// take turns.
func (l *manifestLists) manifest(path string) (iceberg.ManifestFile, error) {
	known := func() (iceberg.ManifestFile, bool) {
		l.mu.Lock()
		defer l.mu.Unlock()
		m, ok := l.files[path]
		return m, ok
	}
	if m, ok := known(); ok {
		return m, nil
	}
	l.reread.Lock()
	defer l.reread.Unlock()
	if m, ok := known(); ok {
		return m, nil
	}
	snap := l.owner[path]
	if snap == nil {
		return nil, fmt.Errorf("no manifest list names manifest %s", path)
	}
	if _, err := l.readList(snap); err != nil {
		return nil, err
	}
	m, ok := known()
	if !ok {
		// The index said the list names it, the list does not: the
		// index is wrong, and so is what was taken from it.
		return nil, fmt.Errorf("manifest list %s does not name manifest %s, which its reference index row did", snap.ManifestList, path)
	}
	return m, nil
}

// batchSink collects one part's references and merges them into the set
// once, so the lock is not taken per reference.
type batchSink struct {
	refBatch
	rs *refSet
	mu *sync.Mutex
	sc scope
}

func (s *batchSink) add(p string, required bool) error {
	return s.refBatch.add(s.rs.seed, p, required, s.sc)
}

func (s *batchSink) flush() {
	s.mu.Lock()
	s.rs.merge(&s.refBatch)
	s.mu.Unlock()
	s.refBatch = refBatch{}
}

// collectRefs gathers the reference set of the table's files under sc's
// prefixes, taking what idx holds from it (nil: reading everything).
func collectRefs(ctx context.Context, tbl *table.Table, fs icebergio.IO, sc scope, parallelism int, idx *runIndex) (*refSet, refStats, error) {
	rs := &refSet{seed: maphash.MakeSeed()}
	var mu sync.Mutex
	st, err := walkRefs(ctx, tbl, fs, parallelism, idx, func() refSink {
		return &batchSink{rs: rs, mu: &mu, sc: sc}
	})
	ix := idx.result()
	st.IndexRejected, st.IndexUnsaved, st.IndexForgotten = ix.Rejected, ix.Unsaved, ix.Forgotten
	if err != nil {
		return nil, st, err
	}
	rs.seal()
	st.Paths = len(rs.refs)
	return rs, st, nil
}

// nameSink finds the paths of references by the hash of their first form.
type nameSink struct {
	rs    *refSet
	sc    scope
	mu    *sync.Mutex
	names map[uint64]string
}

func (s *nameSink) add(p string, _ bool) error {
	in, n, _, err := s.sc.classify(p)
	if err != nil || n == 0 {
		return err
	}
	h := in[0].hash(s.rs.seed)
	s.mu.Lock()
	if name, want := s.names[h]; want && name == "" {
		s.names[h] = p
	}
	s.mu.Unlock()
	return nil
}

func (*nameSink) flush() {}

// missingError names up to five of the required references the listing
// lacked, reading the metadata once more to find their paths: the set
// holds hashes only, and this is the failure path.
func missingError(ctx context.Context, tbl *table.Table, fs icebergio.IO, sc scope, parallelism int, rs *refSet, missing []uint64) error {
	names := map[uint64]string{}
	for _, h := range missing[:min(len(missing), 5)] {
		names[h] = ""
	}
	var mu sync.Mutex
	_, err := walkRefs(ctx, tbl, fs, parallelism, nil, func() refSink {
		return &nameSink{rs: rs, sc: sc, mu: &mu, names: names}
	})
	var found []string
	for _, n := range names {
		if n != "" {
			found = append(found, n)
		}
	}
	slices.Sort(found)
	if err != nil || len(found) == 0 {
		return fmt.Errorf("%w: %d such files; nothing was marked or deleted", ErrReferencedMissing, len(missing))
	}
	return fmt.Errorf("%w: %s (%d such files in all); nothing was marked or deleted", ErrReferencedMissing, strings.Join(found, ", "), len(missing))
}
