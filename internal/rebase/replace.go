package rebase

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/apache/iceberg-go"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"

	"github.com/icekeeper/icekeeper/internal/verified"
	"github.com/icekeeper/icekeeper/planner"
)

// replace is one batch's snapshot, of a GroupProducer's groups. Its
// manifests are written once and reused; on every attempt the manifest list is rebuilt on the table's
// current head (rebased). A lost race with a writer therefore costs a
// metadata load, the manifests committed since the previous attempt and one
// manifest list — not a rewrite of the table's manifests, which is what
// lets compaction win beside a writer committing every 100 ms.
//
// Rebasing is also where conflicts are found. A group is dropped when one
// of its inputs is no longer live (another commit removed it), or when a
// position delete or deletion vector committed after the run's start may
// apply to one of its inputs (its rows were copied before the delete).
// Appends never conflict, nor do equality deletes: the new files keep the
// start's data sequence number, so later equality deletes still apply.
type replace struct {
	staged
	startID  int64 // the snapshot the run planned on
	startSeq int64 // data sequence number of the new files
	// op is the operation: its summary, and which delete files go.
	op GroupProducer

	groups  []table.CompactionGroupResult
	dropped map[int]string // group index → why
	deletes Deletes
	// gone are delete files another commit removed since the start: no
	// longer ours to remove.
	gone map[string]bool

	// candidates holds the key of every file this batch might remove, with
	// the index of the group whose input it is (-1 for a delete file).
	candidates map[string]int
	// guards maps each data file a group depends on without replacing it
	// (Guarded) to those groups; held maps every manifest read to the
	// guarded files it holds live.
	guards map[string][]int
	held   map[string][]string
	// byPartition maps a partition key to the inputs in it, for matching
	// new position deletes against groups.
	byPartition map[string][]input
	// since holds the snapshots committed after the start on the lineage
	// of the last head seen.
	since map[int64]bool
	// seen maps every manifest read to the candidate keys it holds live;
	// entries holds the entries of those that hold some, until they are
	// rewritten (then they are read again only if a rewrite must change).
	seen    map[string][]string
	entries map[string][]iceberg.ManifestEntry
	// rewrites holds, per partition spec and content, our one manifest
	// that replaces every manifest holding files we remove: their live
	// entries, those we remove marked deleted. One manifest for all keeps
	// the table's manifest count down where a streaming writer left one
	// manifest per commit.
	rewrites map[rewriteKey]rewrite
	// added are the manifests of the new files of the groups in addedFor.
	added    []iceberg.ManifestFile
	addedFor string
	attempts map[string]*attempt // by manifest list path
	head     int64               // the head the last attempt was built on
	rebases  int
	// last is the last attempt, built on the metadata lastOn: the commit
	// loop's first attempt follows the staging, on the same table when
	// nobody committed meanwhile, and takes it as it is.
	last   *attempt
	lastOn table.Metadata
}

type input struct {
	group int
	path  string
}

type rewriteKey struct {
	spec    int32
	content iceberg.ManifestContent
}

type rewrite struct {
	file iceberg.ManifestFile
	sig  string // the manifests it replaces and the keys it marks deleted
}

func newReplace(fs icebergio.WriteFileIO, locs table.LocationProvider, start *table.Snapshot, batch []table.CompactionGroupResult, deletes Deletes, op GroupProducer) *replace {
	r := &replace{
		staged:  newStaged(fs, locs),
		startID: start.SnapshotID, startSeq: start.SequenceNumber,
		op:     op,
		groups: batch, dropped: map[int]string{}, deletes: deletes, gone: map[string]bool{},
		candidates: map[string]int{}, byPartition: map[string][]input{}, guards: map[string][]int{}, held: map[string][]string{},
		seen: map[string][]string{}, entries: map[string][]iceberg.ManifestEntry{},
		rewrites: map[rewriteKey]rewrite{}, attempts: map[string]*attempt{},
	}
	for i, g := range batch {
		for _, df := range g.OldDataFiles {
			r.candidates[df.FilePath()] = i
			pk := planner.PartitionKey(df)
			r.byPartition[pk] = append(r.byPartition[pk], input{group: i, path: df.FilePath()})
		}
	}
	if gp, ok := op.(Guarded); ok {
		for i, g := range batch {
			for _, p := range gp.Guards(g) {
				r.guards[p] = append(r.guards[p], i)
			}
		}
	}
	if op.ReplacesDeletes() {
		for i, g := range batch {
			for _, d := range slices.Concat(g.SafePosDeletes, g.SafeDeletionVectors) {
				r.candidates[planner.RemovalKey(d)] = i
			}
			for _, d := range g.NewDataFiles {
				if ref := d.ReferencedDataFile(); ref != nil && d.FileFormat() == iceberg.PuffinFile {
					pk := planner.PartitionKey(d)
					r.byPartition[pk] = append(r.byPartition[pk], input{group: i, path: *ref})
				}
			}
		}
	}
	for _, g := range op.Settle(batch, deletes) {
		for _, d := range slices.Concat(g.SafePosDeletes, g.SafeDeletionVectors) {
			if _, ok := r.candidates[planner.RemovalKey(d)]; !ok {
				r.candidates[planner.RemovalKey(d)] = -1
			}
		}
	}
	return r
}

// live returns the groups not dropped, with the delete files they remove.
func (r *replace) live() ([]table.CompactionGroupResult, []int) {
	var keep []table.CompactionGroupResult
	var idx []int
	for i, g := range r.groups {
		if _, ok := r.dropped[i]; !ok {
			keep = append(keep, g)
			idx = append(idx, i)
		}
	}
	keep = r.op.Settle(keep, r.deletes)
	for i := range keep {
		keep[i].SafePosDeletes = slices.DeleteFunc(keep[i].SafePosDeletes, func(d iceberg.DataFile) bool { return r.gone[planner.RemovalKey(d)] })
		keep[i].SafeDeletionVectors = slices.DeleteFunc(slices.Clone(keep[i].SafeDeletionVectors), func(d iceberg.DataFile) bool { return r.gone[planner.RemovalKey(d)] })
	}
	return keep, idx
}

func (r *replace) snapshotID() int64 { return r.id }

func (r *replace) attemptOf(path string) *attempt { return r.attempts[path] }

// rebase builds the commit of the live groups on meta's current head.
// It returns nil when every group was dropped.
func (r *replace) rebase(ctx context.Context, meta table.Metadata) (*attempt, error) {
	if r.last != nil && meta == r.lastOn {
		return r.last, nil
	}
	head := meta.CurrentSnapshot()
	if head != nil && head.SnapshotID != r.head && r.head != 0 {
		r.rebases++
	}
	if head == nil || !r.walkSince(meta, head) {
		for i := range r.groups {
			if _, ok := r.dropped[i]; !ok {
				r.dropped[i] = "the table was rolled back or replaced since compaction planned"
			}
		}
		return nil, nil
	}
	r.head = head.SnapshotID
	manifests, err := r.headManifests(head)
	if err != nil {
		return nil, err
	}
	// Read what has not been read yet: on the first attempt every
	// manifest, later only those committed since.
	if err := r.readNew(ctx, manifests); err != nil {
		return nil, err
	}
	// A group whose guarded files are not all live any more is dropped:
	// what it wrote was computed from files that another commit replaced.
	live := map[string]bool{}
	for _, m := range manifests {
		for _, k := range r.held[m.FilePath()] {
			live[k] = true
		}
	}
	for k, groups := range r.guards {
		if live[k] {
			continue
		}
		for _, g := range groups {
			if _, ok := r.dropped[g]; !ok {
				r.dropped[g] = "a data file it depends on was removed by another commit"
			}
		}
	}
	// Drops and vanished delete files change what must be removed, so
	// settle them first.
	for {
		want, _ := r.wanted()
		found := map[string]bool{}
		for _, m := range manifests {
			for _, k := range r.seen[m.FilePath()] {
				if want[k] {
					found[k] = true
				}
			}
		}
		changed := false
		for k := range want {
			if found[k] {
				continue
			}
			changed = true
			if g := r.candidates[k]; g >= 0 {
				r.dropped[g] = "an input file was removed by another commit"
			} else {
				r.gone[k] = true
			}
		}
		if !changed {
			break
		}
	}
	groups, idx := r.live()
	if len(groups) == 0 {
		return nil, nil
	}
	want, wantDeletes := r.wanted()

	var list []iceberg.ManifestFile
	var own []string
	if err := r.writeAdded(meta, groups, idx); err != nil {
		return nil, err
	}
	list = append(list, r.added...)
	for _, m := range r.added {
		own = append(own, m.FilePath())
	}
	affected := map[rewriteKey][]iceberg.ManifestFile{}
	var order []rewriteKey
	for _, m := range manifests {
		if !slices.ContainsFunc(r.seen[m.FilePath()], func(k string) bool { return want[k] }) {
			list = append(list, m)
			continue
		}
		rk := rewriteKey{m.PartitionSpecID(), m.ManifestContent()}
		if _, ok := affected[rk]; !ok {
			order = append(order, rk)
		}
		affected[rk] = append(affected[rk], m)
	}
	for _, rk := range order {
		sig := r.signature(affected[rk], want)
		rw, ok := r.rewrites[rk]
		if !ok || rw.sig != sig {
			f, err := r.rewriteManifests(meta, rk, affected[rk], want)
			if err != nil {
				return nil, err
			}
			rw = rewrite{file: f, sig: sig}
			r.rewrites[rk] = rw
		}
		list = append(list, rw.file)
		own = append(own, rw.file.FilePath())
	}
	clear(r.entries)

	seq := int64(0)
	if meta.Version() >= 2 {
		seq = meta.LastSequenceNumber() + 1
	}
	firstRowID := int64(0)
	if meta.Version() >= 3 {
		firstRowID = meta.NextRowID()
	}
	name := fmt.Sprintf("snap-%d-%d-%s.avro", r.id, len(r.attempts), r.commitID)
	path := r.locs.NewMetadataLocation(name)
	addedRows, err := r.writeList(path, meta.Version(), seq, firstRowID, head.SnapshotID, list)
	if err != nil {
		return nil, err
	}

	sum, err := r.summary(head, groups, wantDeletes)
	if err != nil {
		return nil, err
	}
	parent := head.SnapshotID
	schemaID := meta.CurrentSchema().ID
	snap := &table.Snapshot{
		SnapshotID: r.id, ParentSnapshotID: &parent, SequenceNumber: seq,
		TimestampMs: time.Now().UnixMilli(), ManifestList: path, Summary: sum, SchemaID: &schemaID,
	}
	if meta.Version() >= 3 {
		snap.FirstRowID, snap.AddedRows = &firstRowID, &addedRows
	}
	reqs, updates := onMain(meta, snap)
	a := &attempt{reqs: reqs, updates: updates, groups: groups, own: append(own, path)}
	r.attempts[path] = a
	r.last, r.lastOn = a, meta
	return a, nil
}

func liveKey(idx []int) string {
	s := make([]string, len(idx))
	for i, v := range idx {
		s[i] = strconv.Itoa(v)
	}
	return strings.Join(s, ",")
}

// wanted is the set of keys the live groups remove, and the delete files
// among them.
func (r *replace) wanted() (map[string]bool, []iceberg.DataFile) {
	groups, _ := r.live()
	want := map[string]bool{}
	var deletes []iceberg.DataFile
	for _, g := range groups {
		for _, df := range g.OldDataFiles {
			want[df.FilePath()] = true
		}
		for _, d := range append(slices.Clone(g.SafePosDeletes), g.SafeDeletionVectors...) {
			if k := planner.RemovalKey(d); !want[k] {
				want[k] = true
				deletes = append(deletes, d)
			}
		}
	}
	return want, deletes
}

// walkSince records the snapshots between the start and head; it reports
// false when head does not descend from the start (a rollback, a replaced
// table), and nothing planned on the start may commit.
func (r *replace) walkSince(meta table.Metadata, head *table.Snapshot) bool {
	since := map[int64]bool{}
	for s := head; s != nil; {
		if s.SnapshotID == r.startID {
			r.since = since
			return true
		}
		since[s.SnapshotID] = true
		if s.ParentSnapshotID == nil {
			break
		}
		s = meta.SnapshotByID(*s.ParentSnapshotID)
	}
	return false
}

// readNew reads the manifests not read before and records what each
// holds, in order.
func (r *replace) readNew(ctx context.Context, manifests []iceberg.ManifestFile) error {
	var unseen []iceberg.ManifestFile
	for _, m := range manifests {
		if _, ok := r.seen[m.FilePath()]; !ok {
			r.seen[m.FilePath()] = nil // listed twice, read once
			unseen = append(unseen, m)
		}
	}
	for m, err := range verified.ReadAhead(ctx, r.fs, unseen, true) {
		if err != nil {
			for _, m := range unseen {
				if r.seen[m.FilePath()] == nil {
					delete(r.seen, m.FilePath())
				}
			}
			return err
		}
		r.record(m.ManifestFile, m.Entries)
	}
	return nil
}

// record notes the candidate keys manifest m holds live, and drops the
// groups that a position delete or deletion vector committed after the
// start may apply to. Such a delete may already sit in a manifest that a
// writer merged: it is recognised by the snapshot that added it, whatever
// its entry's status now.
func (r *replace) record(m iceberg.ManifestFile, entries []iceberg.ManifestEntry) {
	keys := []string{}
	var held []string
	for _, e := range entries {
		df := e.DataFile()
		k := planner.RemovalKey(df)
		if _, ok := r.candidates[k]; ok {
			keys = append(keys, k)
		}
		if _, ok := r.guards[k]; ok && df.ContentType() == iceberg.EntryContentData {
			held = append(held, k)
		}
		if m.ManifestContent() == iceberg.ManifestContentDeletes && df.ContentType() == iceberg.EntryContentPosDeletes && r.since[e.SnapshotID()] {
			r.dropFor(df)
		}
	}
	r.seen[m.FilePath()] = keys
	r.held[m.FilePath()] = held
	if len(keys) > 0 {
		r.entries[m.FilePath()] = entries
	}
}

// dropFor drops the groups a new position delete file (or deletion vector)
// may apply to: same partition, and its referenced data file, or else the
// range of data file paths its bounds give, names one of their inputs.
func (r *replace) dropFor(d iceberg.DataFile) {
	for _, in := range r.byPartition[planner.PartitionKey(d)] {
		if _, ok := r.dropped[in.group]; ok {
			continue
		}
		if mayApply(d, in.path) {
			r.dropped[in.group] = "a position delete committed meanwhile may apply to an input file"
		}
	}
}

// FilePathFieldID is the field ID of a position delete file's file_path
// column, whose bounds say which data files it may name.
const FilePathFieldID = 2147483546

func mayApply(d iceberg.DataFile, path string) bool {
	if ref := d.ReferencedDataFile(); ref != nil {
		return *ref == path
	}
	lo, hasLo := d.LowerBoundValues()[FilePathFieldID]
	hi, hasHi := d.UpperBoundValues()[FilePathFieldID]
	if !hasLo || !hasHi {
		return true
	}
	p := []byte(path)
	// Bounds may be truncated prefixes: a path is out of range only when it
	// sorts before the lower bound or after every string the upper bound's
	// prefix allows.
	if bytes.Compare(p, lo) < 0 {
		return false
	}
	if bytes.Compare(p, hi) > 0 && !bytes.HasPrefix(p, hi) {
		return false
	}
	return true
}

// signature names a rewrite: the manifests it replaces and the keys it
// marks deleted.
func (r *replace) signature(ms []iceberg.ManifestFile, want map[string]bool) string {
	var b strings.Builder
	for _, m := range ms {
		b.WriteString(m.FilePath())
		b.WriteByte('\n')
		for _, k := range r.seen[m.FilePath()] {
			if want[k] {
				b.WriteString("- ")
				b.WriteString(k)
				b.WriteByte('\n')
			}
		}
	}
	return b.String()
}

// rewriteManifests writes one manifest holding the live entries of ms, the
// entries whose keys are in want marked deleted by this snapshot.
func (r *replace) rewriteManifests(meta table.Metadata, rk rewriteKey, ms []iceberg.ManifestFile, want map[string]bool) (iceberg.ManifestFile, error) {
	spec := meta.PartitionSpecByID(int(rk.spec))
	if spec == nil {
		return nil, fmt.Errorf("manifest %s names partition spec %d, which the table does not have", ms[0].FilePath(), rk.spec)
	}
	return r.writeManifest(meta, *spec, rk.content, func(w *iceberg.ManifestWriter) error {
		for _, m := range ms {
			entries, ok := r.entries[m.FilePath()]
			if !ok {
				var err error
				if entries, err = verified.FetchEntries(r.fs, m, true); err != nil {
					return err
				}
			}
			for _, e := range entries {
				var err error
				if want[planner.RemovalKey(e.DataFile())] {
					err = w.Delete(e)
				} else {
					err = w.Existing(e)
				}
				if err != nil {
					return err
				}
			}
		}
		return nil
	})
}

// writeAdded writes the manifests of the live groups' new files, unless
// those already written are for the same groups.
func (r *replace) writeAdded(meta table.Metadata, groups []table.CompactionGroupResult, idx []int) error {
	key := liveKey(idx)
	if r.added != nil && r.addedFor == key {
		return nil
	}
	bySpec := map[rewriteKey][]iceberg.DataFile{}
	var specs []rewriteKey
	for _, g := range groups {
		for _, df := range g.NewDataFiles {
			k := rewriteKey{df.SpecID(), iceberg.ManifestContentData}
			if df.ContentType() != iceberg.EntryContentData {
				k.content = iceberg.ManifestContentDeletes
			}
			if _, ok := bySpec[k]; !ok {
				specs = append(specs, k)
			}
			bySpec[k] = append(bySpec[k], df)
		}
	}
	slices.SortFunc(specs, func(a, b rewriteKey) int {
		return cmp.Or(cmp.Compare(a.spec, b.spec), cmp.Compare(a.content, b.content))
	})
	added := []iceberg.ManifestFile{}
	for _, k := range specs {
		spec := meta.PartitionSpecByID(int(k.spec))
		if spec == nil {
			return fmt.Errorf("a new file has partition spec %d, which the table does not have", k.spec)
		}
		f, err := r.writeManifest(meta, *spec, k.content, func(w *iceberg.ManifestWriter) error {
			for _, df := range bySpec[k] {
				seq := r.startSeq
				if err := w.Add(iceberg.NewManifestEntry(iceberg.EntryStatusADDED, &r.id, &seq, nil, df)); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
		added = append(added, f)
	}
	r.added, r.addedFor = added, key
	return nil
}

// summary is the snapshot summary of a replace: what it adds and removes,
// and the table's totals carried over from head.
func (r *replace) summary(head *table.Snapshot, groups []table.CompactionGroupResult, deletes []iceberg.DataFile) (*table.Summary, error) {
	var m struct {
		addFiles, addRecs, addSize, delFiles, delRecs, delSize, rmDel, rmPos, rmPosFiles, rmDVs, rmEq, rmEqFiles int64
		addDel, addPos, addPosFiles, addDVs                                                                      int64
	}
	for _, g := range groups {
		for _, df := range g.NewDataFiles {
			switch {
			case df.ContentType() == iceberg.EntryContentData:
				m.addFiles++
				m.addRecs += df.Count()
			case df.FileFormat() == iceberg.PuffinFile:
				m.addDel++
				m.addDVs++
				m.addPos += df.Count()
			default:
				m.addDel++
				m.addPosFiles++
				m.addPos += df.Count()
			}
			m.addSize += contentSize(df)
		}
		for _, df := range g.OldDataFiles {
			m.delFiles++
			m.delRecs += df.Count()
			m.delSize += df.FileSizeBytes()
		}
	}
	for _, d := range deletes {
		m.rmDel++
		m.delSize += contentSize(d)
		switch d.ContentType() {
		case iceberg.EntryContentPosDeletes:
			if d.FileFormat() == iceberg.PuffinFile {
				m.rmDVs++
			} else {
				m.rmPosFiles++
			}
			m.rmPos += d.Count()
		case iceberg.EntryContentEqDeletes:
			m.rmEqFiles++
			m.rmEq += d.Count()
		}
	}
	p := r.op.Properties()
	if c, ok := r.op.(Claimer); ok {
		maps.Copy(p, c.Claims(groups))
	}
	set := func(k string, v int64) {
		if v > 0 {
			p[k] = strconv.FormatInt(v, 10)
		}
	}
	set("added-data-files", m.addFiles)
	set("added-records", m.addRecs)
	set("added-files-size", m.addSize)
	set("deleted-data-files", m.delFiles)
	set("deleted-records", m.delRecs)
	set("removed-files-size", m.delSize)
	set("added-delete-files", m.addDel)
	set("added-position-delete-files", m.addPosFiles)
	set("added-dvs", m.addDVs)
	set("added-position-deletes", m.addPos)
	set("removed-delete-files", m.rmDel)
	set("removed-position-delete-files", m.rmPosFiles)
	set("removed-dvs", m.rmDVs)
	set("removed-position-deletes", m.rmPos)
	set("removed-equality-delete-files", m.rmEqFiles)
	set("removed-equality-deletes", m.rmEq)
	// Totals follow from the parent's; a parent without them leaves them out
	// rather than guessing.
	if head.Summary != nil {
		prev := head.Summary.Properties
		total := func(k string, delta int64) {
			if s, ok := prev[k]; ok {
				if v, err := strconv.ParseInt(s, 10, 64); err == nil && v+delta >= 0 {
					p[k] = strconv.FormatInt(v+delta, 10)
				}
			}
		}
		total("total-data-files", m.addFiles-m.delFiles)
		total("total-records", m.addRecs-m.delRecs)
		total("total-files-size", m.addSize-m.delSize)
		total("total-delete-files", m.addDel-m.rmDel)
		total("total-position-deletes", m.addPos-m.rmPos)
		total("total-equality-deletes", -m.rmEq)
	}
	return &table.Summary{Operation: r.op.Operation(m.addFiles), Properties: p}, nil
}

// contentSize is the bytes of a file's content: a deletion vector's blob,
// not the Puffin file it shares with others.
func contentSize(df iceberg.DataFile) int64 {
	if df.FileFormat() == iceberg.PuffinFile && df.ContentSizeInBytes() != nil {
		return *df.ContentSizeInBytes()
	}
	return df.FileSizeBytes()
}

// cleanup removes the files written that keep does not reference (all of
// them when keep is nil). A failure only leaves them to unreferenced file
// removal.
func (r *replace) cleanup(keep *attempt) {
	var own []string
	if keep != nil {
		own = keep.own
	}
	r.discard(own)
}
