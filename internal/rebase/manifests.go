package rebase

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"

	"github.com/icekeeper/icekeeper/internal/commit"
	"github.com/icekeeper/icekeeper/internal/verified"
	"github.com/icekeeper/icekeeper/planner"
)

// ManifestOutcome is what a manifest rewrite did.
type ManifestOutcome struct {
	// Small is how many small data manifests the head had; Rewritten of
	// them were merged into Written.
	Small, Rewritten, Written int
	// Bytes is the size of the manifests merged, whether or not their
	// commit landed: what the rewrite read, for the rewrite budgets.
	Bytes int64
	// Conflicts are attempts lost to concurrent commits, Rebases the
	// attempts built on a newer head than the rewrite read; Deferred is
	// set when the rewrite was left for the next run (its retries spent,
	// or the manifests replaced under it).
	Conflicts, Rebases int
	Deferred           bool
	// MetadataRemoved counts the old metadata files deleted after the
	// commit.
	MetadataRemoved int
	// After is the table as the rewrite's commit left it, when it
	// committed: what the catalog answered, so that a caller planning on
	// it need not load it again.
	After *table.Table
}

// RewriteManifests merges the current snapshot of tbl's small data
// manifests into manifests near op.TargetBytes, their entries sorted by
// partition, once there are at least op.MinManifests of them: a streaming
// writer leaves a manifest per commit, and every planning pass reads them
// all. "Small" is under half the target. A dry run only counts them. It
// rewrites metadata only, in a REPLACE snapshot.
//
// Like the groups' snapshots it is staged once and rebased by the commit
// loop: the merged manifests are written once, and an attempt that lost
// to a concurrent commit only writes a new manifest list on the new head,
// the head's other manifests kept. Appends leave the small manifests in
// place. A commit that replaced one of them (a delete, another rewrite, a
// writer merging its manifests) makes the merged ones stale: the rewrite
// is staged again on that head, at most twice, then left for the next
// run. So is a rewrite whose commit retries run out; neither is an error.
func (e *Env) RewriteManifests(ctx context.Context, tbl *table.Table, op ManifestRewrite, dryRun bool) (ManifestOutcome, error) {
	var out ManifestOutcome
	locs, err := tbl.LocationProvider()
	if err != nil {
		return out, err
	}
	m := &manifestRewrite{staged: newStaged(e.FS, locs), op: op, attempts: map[string]*attempt{}, uuid: tbl.Metadata().TableUUID()}
	if err := m.find(tbl.Metadata()); err != nil {
		return out, err
	}
	out.Small = len(m.small)
	if len(m.small) < op.MinManifests || dryRun {
		return out, nil
	}
	if err := m.merge(ctx, tbl.Metadata()); err != nil {
		m.discard(nil)
		return out, err
	}
	for _, mf := range m.small {
		out.Bytes += mf.Length()
	}
	l, err := e.commit(ctx, op, m, tbl, true)
	out.Conflicts, out.Rebases, out.MetadataRemoved = l.stats.Conflicts, m.rebases, l.metadataRemoved
	if l.attempt != nil {
		out.Rewritten, out.Written, out.After = len(m.small), len(m.merged), l.after
	}
	if errors.Is(err, commit.ErrStaleMetadata) || errors.Is(err, errManifestsReplaced) {
		out.Deferred = true
		return out, nil
	}
	return out, err
}

// maxRestages bounds how often a manifest rewrite is staged again because
// a concurrent commit replaced manifests it merges.
const maxRestages = 2

// errManifestsReplaced is a rebase that finds a manifest it merges gone
// from the head.
var errManifestsReplaced = errors.New("a manifest being merged was replaced by another commit")

// manifestRewrite is one manifest rewrite: the small manifests it
// replaces, the merged manifests that replace them, and its attempts.
type manifestRewrite struct {
	staged
	op       ManifestRewrite
	uuid     uuid.UUID              // the table's, as the rewrite found it
	head     int64                  // the head small was read on
	small    []iceberg.ManifestFile // the manifests it replaces
	merged   []iceberg.ManifestFile // the manifests that replace them
	attempts map[string]*attempt    // by manifest list path
	restages int
	rebases  int
}

func (m *manifestRewrite) snapshotID() int64 { return m.id }

func (m *manifestRewrite) attemptOf(path string) *attempt { return m.attempts[path] }

func (m *manifestRewrite) cleanup(keep *attempt) {
	var own []string
	if keep != nil {
		own = keep.own
	}
	m.discard(own)
}

// rebase builds the attempt on meta's head. When a manifest it merges is
// gone from the head, the rewrite is staged again on it, at most
// maxRestages times; with fewer small manifests than the minimum there
// (another commit merged them), or on another table of the name, nothing
// is left to commit.
func (m *manifestRewrite) rebase(ctx context.Context, meta table.Metadata) (*attempt, error) {
	if meta.TableUUID() != m.uuid {
		// The table was dropped and another created under its name:
		// nothing merged from the old one's manifests belongs on it.
		return nil, nil
	}
	a, err := m.attempt(meta)
	if errors.Is(err, errManifestsReplaced) && m.restages < maxRestages {
		m.restages++
		if err = m.find(meta); err == nil && len(m.small) < m.op.MinManifests {
			return nil, nil // another commit did it
		}
		if err == nil {
			err = m.merge(ctx, meta)
		}
		if err == nil {
			a, err = m.attempt(meta)
		}
	}
	return a, err
}

// find picks the head's data manifests under half the target size.
func (m *manifestRewrite) find(meta table.Metadata) error {
	head := meta.CurrentSnapshot()
	all, err := m.headManifests(head)
	if err != nil {
		return err
	}
	m.head, m.small = head.SnapshotID, nil
	for _, mf := range all {
		if mf.ManifestContent() == iceberg.ManifestContentData && mf.Length() < m.op.TargetBytes/2 {
			m.small = append(m.small, mf)
		}
	}
	return nil
}

// merge reads the small manifests' live entries and writes them, sorted by
// partition within each partition spec, into manifests near the target
// size, estimated from the bytes per entry of the manifests merged. The
// entries stay EXISTING with their snapshot and sequence numbers. The
// small manifests are read several at once (verified.ReadAhead): a streaming
// table has hundreds, and on object storage each is a round trip.
func (m *manifestRewrite) merge(ctx context.Context, meta table.Metadata) error {
	bySpec := map[int32][]iceberg.ManifestEntry{}
	var bytes int64
	entries := 0
	for mf, err := range verified.ReadAhead(ctx, m.fs, m.small, true) {
		if err != nil {
			return err
		}
		bySpec[mf.PartitionSpecID()] = append(bySpec[mf.PartitionSpecID()], mf.Entries...)
		bytes += mf.Length()
		entries += len(mf.Entries)
	}
	perManifest := int(max(m.op.TargetBytes/max(bytes/int64(max(entries, 1)), 1), 1))
	m.merged = nil
	for _, id := range slices.Sorted(maps.Keys(bySpec)) {
		spec := meta.PartitionSpecByID(int(id))
		if spec == nil {
			return fmt.Errorf("a manifest names partition spec %d, which the table does not have", id)
		}
		es := bySpec[id]
		slices.SortStableFunc(es, func(a, b iceberg.ManifestEntry) int {
			return cmp.Compare(planner.PartitionKey(a.DataFile()), planner.PartitionKey(b.DataFile()))
		})
		for len(es) > 0 {
			n := min(len(es), perManifest)
			f, err := m.writeManifest(meta, *spec, iceberg.ManifestContentData, func(w *iceberg.ManifestWriter) error {
				for _, e := range es[:n] {
					if err := w.Existing(e); err != nil {
						return err
					}
				}
				return nil
			})
			if err != nil {
				return err
			}
			m.merged = append(m.merged, f)
			es = es[n:]
		}
	}
	return nil
}

// attempt writes the manifest list of an attempt on meta's head: the
// merged manifests and the head's others, or returns errManifestsReplaced.
func (m *manifestRewrite) attempt(meta table.Metadata) (*attempt, error) {
	head := meta.CurrentSnapshot()
	if head == nil {
		return nil, errManifestsReplaced
	}
	if head.SnapshotID != m.head {
		m.rebases++
	}
	all, err := m.headManifests(head)
	if err != nil {
		return nil, err
	}
	replaced := map[string]bool{}
	for _, mf := range m.small {
		replaced[mf.FilePath()] = true
	}
	list := slices.Clone(m.merged)
	for _, mf := range all {
		if replaced[mf.FilePath()] {
			delete(replaced, mf.FilePath())
			continue
		}
		list = append(list, mf)
	}
	if len(replaced) > 0 {
		return nil, errManifestsReplaced
	}
	seq, firstRowID := int64(0), int64(0)
	if meta.Version() >= 2 {
		seq = meta.LastSequenceNumber() + 1
	}
	if meta.Version() >= 3 {
		firstRowID = meta.NextRowID()
	}
	path := m.locs.NewMetadataLocation(fmt.Sprintf("snap-%d-%d-%s.avro", m.id, len(m.attempts), m.commitID))
	addedRows, err := m.writeList(path, meta.Version(), seq, firstRowID, head.SnapshotID, list)
	if err != nil {
		return nil, err
	}
	props := m.op.Properties()
	props["manifests-created"] = strconv.Itoa(len(m.merged))
	props["manifests-replaced"] = strconv.Itoa(len(m.small))
	props["manifests-kept"] = strconv.Itoa(len(list) - len(m.merged))
	if head.Summary != nil {
		// Nothing is added or removed: the totals are the head's.
		for k, v := range head.Summary.Properties {
			if strings.HasPrefix(k, "total-") {
				props[k] = v
			}
		}
	}
	parent, schemaID := head.SnapshotID, meta.CurrentSchema().ID
	snap := &table.Snapshot{SnapshotID: m.id, ParentSnapshotID: &parent, SequenceNumber: seq, TimestampMs: time.Now().UnixMilli(),
		ManifestList: path, Summary: &table.Summary{Operation: m.op.Operation(0), Properties: props}, SchemaID: &schemaID}
	if meta.Version() >= 3 {
		snap.FirstRowID, snap.AddedRows = &firstRowID, &addedRows
	}
	reqs, updates := onMain(meta, snap)
	a := &attempt{reqs: reqs, updates: updates, own: []string{path}}
	for _, mf := range m.merged {
		a.own = append(a.own, mf.FilePath())
	}
	m.attempts[path] = a
	return a, nil
}
