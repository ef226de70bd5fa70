package orphan

import (
	"context"
	"fmt"
	"hash/maphash"
	"path"
	"slices"
	"sync"

	"github.com/apache/iceberg-go"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
	"github.com/sourcegraph/conc/pool"
)

// refSet is the set of files a table's metadata references, as 64-bit
// hashes of their canonical keys in a sorted slice: 8 bytes per reference,
// so millions of references fit in tens of MiB. A hash collision can only
// make an unreferenced object look referenced (it is kept), never the
// reverse, so the set is safe without storing the paths themselves.
type refSet struct {
	seed   maphash.Seed
	hashes []uint64
}

func (r *refSet) contains(key string) bool {
	_, ok := slices.BinarySearch(r.hashes, maphash.String(r.seed, key))
	return ok
}

// refStats describes what collecting references read.
type refStats struct {
	Snapshots     int `json:"snapshots"`
	ManifestLists int `json:"manifestLists"`
	Manifests     int `json:"manifests"`
	// Paths is how many distinct paths under the table's prefixes the
	// metadata references. Some need not exist: the version hint of a
	// table that has none, metadata files of the log already removed.
	Paths int `json:"paths"`
}

// collectRefs gathers every file the table's metadata references: the
// current metadata file and those in its log, the version hint, and for
// every snapshot still in the metadata its manifest list, manifests, and
// live data, delete and deletion-vector files, plus statistics and
// partition-statistics files. An unreadable manifest list or manifest is
// an error: with part of the metadata unknown, nothing may be judged
// unreferenced. Manifests are read concurrently, at most parallelism at a
// time, each streamed entry by entry.
func collectRefs(ctx context.Context, tbl *table.Table, fs icebergio.IO, pfx []loc, eq Equivalence, parallelism int) (*refSet, refStats, error) {
	meta := tbl.Metadata()
	rs := &refSet{seed: maphash.MakeSeed()}
	var st refStats
	var mu sync.Mutex
	// hashOf classifies a referenced path and appends its hash to out;
	// each manifest collects into its own slice and merges once, so the
	// lock is not taken per reference.
	hashOf := func(out []uint64, p string) ([]uint64, error) {
		key, inside, err := classify(p, pfx, eq)
		if err != nil || !inside {
			return out, err
		}
		return append(out, maphash.String(rs.seed, key)), nil
	}
	merge := func(hs []uint64) {
		mu.Lock()
		rs.hashes = append(rs.hashes, hs...)
		mu.Unlock()
	}

	direct := []string{tbl.MetadataLocation()}
	for e := range meta.PreviousFiles() {
		direct = append(direct, e.MetadataFile)
	}
	// The version hint sits next to the metadata files of Hadoop-style
	// tables; it is referenced by convention, not by any metadata field.
	if l, err := parseLoc(tbl.MetadataLocation()); err == nil {
		l.path = path.Join(path.Dir(l.path), "version-hint.text")
		direct = append(direct, l.String())
	}
	for s := range meta.Statistics() {
		direct = append(direct, s.StatisticsPath)
	}
	for s := range meta.PartitionStatistics() {
		direct = append(direct, s.StatisticsPath)
	}
	var hs []uint64
	var err error
	for _, p := range direct {
		if hs, err = hashOf(hs, p); err != nil {
			return nil, st, err
		}
	}

	// Manifests are shared between snapshots: read each once.
	seen := map[string]bool{}
	var manifests []iceberg.ManifestFile
	for _, snap := range meta.Snapshots() {
		st.Snapshots++
		if snap.ManifestList == "" {
			continue
		}
		st.ManifestLists++
		if hs, err = hashOf(hs, snap.ManifestList); err != nil {
			return nil, st, err
		}
		list, err := snap.Manifests(fs)
		if err != nil {
			return nil, st, fmt.Errorf("read manifest list %s of snapshot %d: %w", snap.ManifestList, snap.SnapshotID, err)
		}
		for _, m := range list {
			if !seen[m.FilePath()] {
				seen[m.FilePath()] = true
				manifests = append(manifests, m)
			}
		}
	}
	st.Manifests = len(manifests)
	merge(hs)

	if parallelism <= 0 {
		parallelism = 8
	}
	p := pool.New().WithContext(ctx).WithCancelOnError().WithFirstError().WithMaxGoroutines(parallelism)
	for _, m := range manifests {
		p.Go(func(ctx context.Context) error {
			hs, err := hashOf(nil, m.FilePath())
			if err != nil {
				return err
			}
			// DELETED entries record a removal; the file stays alive only
			// through the snapshots whose manifests still list it live.
			for e, err := range m.Entries(fs, true) {
				if err != nil {
					return fmt.Errorf("read manifest %s: %w", m.FilePath(), err)
				}
				if err := ctx.Err(); err != nil {
					return err
				}
				if hs, err = hashOf(hs, e.DataFile().FilePath()); err != nil {
					return err
				}
			}
			merge(hs)
			return nil
		})
	}
	if err := p.Wait(); err != nil {
		return nil, st, err
	}
	slices.Sort(rs.hashes)
	rs.hashes = slices.Compact(rs.hashes)
	st.Paths = len(rs.hashes)
	return rs, st, nil
}
