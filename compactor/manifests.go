package compactor

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
	sqlcat "github.com/apache/iceberg-go/catalog/sql"
	"github.com/apache/iceberg-go/table"

	"github.com/icekeeper/icekeeper/internal/commit"
	"github.com/icekeeper/icekeeper/jobs"
)

// rewriteManifests merges the current snapshot's small data manifests into
// manifests near commit.manifest.target-size-bytes, their entries sorted by
// partition, once there are at least s.MinManifests of them: a streaming
// writer leaves a manifest per commit, and every planning pass reads them
// all. "Small" is under half the target. It rewrites metadata only, in a
// REPLACE snapshot.
//
// Like the data files' commit it is staged once and rebased: the merged
// manifests are written once, and an attempt that lost to a concurrent
// commit only writes a new manifest list on the new head, the head's other
// manifests kept. Appends leave the small manifests in place. A commit that
// replaced one of them (a delete, another rewrite, a writer merging its
// manifests) makes the merged ones stale: the rewrite is staged again on
// that head, at most twice, then left for the next run. So is a rewrite
// whose commit retries run out; neither fails the run.
func (j *Job) rewriteManifests(ctx context.Context, t jobs.Target, s Settings, opts jobs.Options, fig *manifestFigures) error {
	if s.MinManifests <= 0 {
		return nil
	}
	fig.ManifestsMinimum = s.MinManifests
	tbl, err := t.Bucket.LoadTable(ctx, t.Table)
	if err != nil || tbl.CurrentSnapshot() == nil {
		return err
	}
	policy, err := j.policy(tbl)
	if err != nil {
		return fmt.Errorf("manifest rewrite of %s: %w", t.Table, err)
	}
	wfs, cat, err := openWriting(ctx, t, tbl)
	if err != nil {
		return err
	}
	locs, err := tbl.LocationProvider()
	if err != nil {
		return err
	}
	m := &manifestRewrite{staged: newStaged(wfs, locs), lists: map[string]bool{},
		target: int64(tbl.Properties().GetInt(table.ManifestTargetSizeBytesKey, table.ManifestTargetSizeBytesDefault))}
	if err := m.find(tbl.Metadata()); err != nil {
		return err
	}
	fig.ManifestsSmall = len(m.small)
	if len(m.small) < s.MinManifests || opts.DryRun {
		return nil
	}
	if err := m.merge(tbl.Metadata()); err != nil {
		m.discard(nil)
		return err
	}

	var landed string
	unknown := false
	st, err := commit.Do(ctx, policy, func(ctx context.Context, n int) error {
		fresh := tbl
		if n > 1 {
			var err error
			if fresh, err = t.Bucket.LoadTable(ctx, t.Table); err != nil {
				return err
			}
		}
		if l, err := m.landed(fresh.Metadata()); l != "" || err != nil {
			landed = l // an earlier attempt landed though it was reported lost
			return err
		}
		list, reqs, updates, err := m.rebase(fresh.Metadata())
		if errors.Is(err, errManifestsReplaced) && m.restages < maxRestages {
			m.restages++
			if err = m.find(fresh.Metadata()); err == nil && len(m.small) < s.MinManifests {
				return nil // another commit did it
			}
			if err == nil {
				err = m.merge(fresh.Metadata())
			}
			if err == nil {
				list, reqs, updates, err = m.rebase(fresh.Metadata())
			}
		}
		if err != nil {
			return err
		}
		if j.beforeManifestCommit != nil {
			j.beforeManifestCommit(n)
		}
		newMeta, _, err := cat.CommitTable(ctx, tbl.Identifier(), reqs, updates)
		if err == nil {
			landed = list
			fig.metadataRemoved, _ = commit.PruneMetadata(wfs, fresh.Metadata(), newMeta)
			return nil
		}
		if commit.IsConflict(err) {
			return err
		}
		// A timeout, a 5xx, a cut connection: look before deciding, as the
		// data commit does.
		again, lerr := t.Bucket.LoadTable(context.WithoutCancel(ctx), t.Table)
		if lerr == nil {
			if landed, _ = m.landed(again.Metadata()); landed != "" {
				return nil
			}
		}
		// As for the data commit: only the SQL catalog's answer is final.
		if _, sql := cat.(*sqlcat.Catalog); lerr != nil || !sql {
			unknown = true
			return fmt.Errorf("commit manifest rewrite of %s (whether it landed is unknown, so its files are kept): %w", t.Table, err)
		}
		return fmt.Errorf("commit manifest rewrite of %s: %w", t.Table, err)
	})
	fig.ManifestConflicts, fig.ManifestRebases = st.Conflicts, m.rebases
	switch {
	case landed != "":
		fig.ManifestsRewritten, fig.ManifestsWritten = len(m.small), len(m.merged)
		m.discard(m.kept(landed))
	case !unknown:
		m.discard(nil)
	}
	if errors.Is(err, commit.ErrStaleMetadata) || errors.Is(err, errManifestsReplaced) {
		fig.ManifestsDeferred = true
		return nil
	}
	return err
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
	target   int64
	head     int64                  // the head small was read on
	small    []iceberg.ManifestFile // the manifests it replaces
	merged   []iceberg.ManifestFile // the manifests that replace them
	lists    map[string]bool        // the manifest lists of its attempts
	restages int
	rebases  int
}

// find picks the head's data manifests under half the target size.
func (m *manifestRewrite) find(meta table.Metadata) error {
	head := meta.CurrentSnapshot()
	all, err := head.Manifests(m.fs)
	if err != nil {
		return fmt.Errorf("read manifest list %s: %w", head.ManifestList, err)
	}
	m.head, m.small = head.SnapshotID, nil
	for _, mf := range all {
		if mf.ManifestContent() == iceberg.ManifestContentData && mf.Length() < m.target/2 {
			m.small = append(m.small, mf)
		}
	}
	return nil
}

// merge reads the small manifests' live entries and writes them, sorted by
// partition within each partition spec, into manifests near the target
// size, estimated from the bytes per entry of the manifests merged. The
// entries stay EXISTING with their snapshot and sequence numbers.
func (m *manifestRewrite) merge(meta table.Metadata) error {
	bySpec := map[int32][]iceberg.ManifestEntry{}
	var bytes int64
	entries := 0
	for _, mf := range m.small {
		es, err := mf.FetchEntries(m.fs, true)
		if err != nil {
			return fmt.Errorf("read manifest %s: %w", mf.FilePath(), err)
		}
		bySpec[mf.PartitionSpecID()] = append(bySpec[mf.PartitionSpecID()], es...)
		bytes += mf.Length()
		entries += len(es)
	}
	perManifest := int(max(m.target/max(bytes/int64(max(entries, 1)), 1), 1))
	m.merged = nil
	for _, id := range slices.Sorted(maps.Keys(bySpec)) {
		spec := meta.PartitionSpecByID(int(id))
		if spec == nil {
			return fmt.Errorf("a manifest names partition spec %d, which the table does not have", id)
		}
		es := bySpec[id]
		slices.SortStableFunc(es, func(a, b iceberg.ManifestEntry) int {
			return cmp.Compare(partitionKey(a.DataFile()), partitionKey(b.DataFile()))
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

// rebase writes the manifest list of an attempt on meta's head: the merged
// manifests and the head's others. It returns the list's path and the
// commit, or errManifestsReplaced.
func (m *manifestRewrite) rebase(meta table.Metadata) (string, []table.Requirement, []table.Update, error) {
	head := meta.CurrentSnapshot()
	if head == nil {
		return "", nil, nil, errManifestsReplaced
	}
	if head.SnapshotID != m.head {
		m.rebases++
	}
	all, err := head.Manifests(m.fs)
	if err != nil {
		return "", nil, nil, fmt.Errorf("read manifest list %s: %w", head.ManifestList, err)
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
		return "", nil, nil, errManifestsReplaced
	}
	seq, firstRowID := int64(0), int64(0)
	if meta.Version() >= 2 {
		seq = meta.LastSequenceNumber() + 1
	}
	if meta.Version() >= 3 {
		firstRowID = meta.NextRowID()
	}
	path := m.locs.NewMetadataLocation(fmt.Sprintf("snap-%d-%d-%s.avro", m.id, len(m.lists), m.commitID))
	addedRows, err := m.writeList(path, meta.Version(), seq, firstRowID, head.SnapshotID, list)
	if err != nil {
		return "", nil, nil, err
	}
	m.lists[path] = true
	props := iceberg.Properties{"icekeeper.job": "icebergCompaction",
		"manifests-created": strconv.Itoa(len(m.merged)), "manifests-replaced": strconv.Itoa(len(m.small)),
		"manifests-kept": strconv.Itoa(len(list) - len(m.merged))}
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
		ManifestList: path, Summary: &table.Summary{Operation: table.OpReplace, Properties: props}, SchemaID: &schemaID}
	if meta.Version() >= 3 {
		snap.FirstRowID, snap.AddedRows = &firstRowID, &addedRows
	}
	reqs, updates := onMain(meta, snap)
	return path, reqs, updates, nil
}

// landed returns the manifest list of the attempt meta holds, or "". A
// snapshot of the rewrite's ID with a list it did not write is an error.
func (m *manifestRewrite) landed(meta table.Metadata) (string, error) {
	s := meta.SnapshotByID(m.id)
	if s == nil {
		return "", nil
	}
	if !m.lists[s.ManifestList] {
		return "", fmt.Errorf("snapshot %d is in the table with a manifest list this rewrite did not write (%s)", m.id, s.ManifestList)
	}
	return s.ManifestList, nil
}

// kept is what the landed attempt references of the files written.
func (m *manifestRewrite) kept(list string) []string {
	keep := []string{list}
	for _, mf := range m.merged {
		keep = append(keep, mf.FilePath())
	}
	return keep
}
