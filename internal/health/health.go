// Package health summarises how much a table needs maintenance: file
// counts and sizes of the current snapshot, small files against the
// compaction target, how well the files are clustered on the sort order,
// snapshot count and age, and metadata size.
package health

import (
	"context"
	"fmt"
	"maps"
	"sync"
	"time"

	"github.com/apache/iceberg-go"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"

	"github.com/icekeeper/icekeeper/internal/verified"
	"github.com/icekeeper/icekeeper/maintenance"
	"github.com/icekeeper/icekeeper/planner"
)

// SmallFileRatio is the fraction of the target size under which a data file
// counts as small; the compaction planner uses the same threshold.
const SmallFileRatio = 0.75

// Health is one table's health report.
type Health struct {
	Files
	TargetFileSizeMB int     `json:"targetFileSizeMB"`
	Snapshots        int     `json:"snapshots"`
	OldestSnapshot   string  `json:"oldestSnapshot,omitempty"` // RFC 3339
	OldestAgeHours   float64 `json:"oldestSnapshotAgeHours"`
	MetadataBytes    int64   `json:"metadataBytes"`
	Score            Score   `json:"score"`
	// Statistics is how far the table statistics icekeeper keeps are
	// behind the current snapshot (nil: it keeps none on the current
	// lineage). From the metadata alone.
	Statistics *planner.StatisticsCoverage `json:"statistics,omitempty"`
}

// Files is what a table's health takes from the manifests of its current
// snapshot.
type Files struct {
	DataFiles       int   `json:"dataFiles"`
	DeleteFiles     int   `json:"deleteFiles"`
	EqualityDeletes int   `json:"equalityDeleteFiles"`
	PositionDeletes int   `json:"positionDeleteFiles"` // deletion vectors included
	TotalBytes      int64 `json:"totalBytes"`
	DataRecords     int64 `json:"dataRecords"` // rows in data files, before deletes
	SmallFiles      int   `json:"smallFiles"`
	// MergeableSmallFiles are the small data files in partitions holding
	// at least the compaction planner's minimum of them: what compaction
	// merges at its next run. A partition whose data is smaller than the
	// target ends compacted as one small file, and one with a few small
	// files is left alone by the planner (as by Iceberg's min-input-files);
	// a table of such partitions is as healthy as compaction makes it.
	MergeableSmallFiles int `json:"mergeableSmallFiles"`
	// Clustering is how deep the data files' key ranges overlap on the
	// sort order (planner.Clustering), with its own score; nil when the
	// table has no sort order its bounds can measure. It is apart from
	// Score: a table can be well sized and badly clustered.
	Clustering *planner.Clustering `json:"clustering,omitempty"`
}

// Score rates, from 0 to 100, how little a table needs compaction, with
// the parts it is made of so that a low score says why. The weights are
// Apache Amoro's: small files 40, equality deletes 40, position deletes
// 20. Each part is its weight times the share of data files not mergeable
// small files (for deletes: one minus delete files per data file, at
// least 0), so that a compacted table scores full marks even where its
// partitions are too small to fill a file.
type Score struct {
	Total           float64 `json:"total"`
	SmallFiles      float64 `json:"smallFiles"`
	EqualityDeletes float64 `json:"equalityDeletes"`
	PositionDeletes float64 `json:"positionDeletes"`
}

func scoreOf(h Health) Score {
	part := func(weight float64, bad, of int) float64 {
		if of == 0 {
			return weight
		}
		return weight * max(0, 1-float64(bad)/float64(of))
	}
	s := Score{SmallFiles: part(40, h.MergeableSmallFiles, h.DataFiles), EqualityDeletes: part(40, h.EqualityDeletes, h.DataFiles),
		PositionDeletes: part(20, h.PositionDeletes, h.DataFiles)}
	s.Total = s.SmallFiles + s.EqualityDeletes + s.PositionDeletes
	return s
}

// Of computes tbl's health; a data file is small when under SmallFileRatio
// of targetMB, and mergeable when its partition holds at least minInput
// small files. Clustering is measured on the columns the compaction
// strategy orders by (the sort order's first, all of them for z-order and
// hilbert).
func Of(ctx context.Context, tbl *table.Table, targetMB, minInput int, strategy maintenance.Strategy, now time.Time) (Health, error) {
	return (*Cache)(nil).Of(ctx, "", tbl, targetMB, minInput, strategy, now)
}

// Cache keeps, per table, what Of read from the table's files: the size of
// its metadata file and the figures of its current snapshot's manifests.
// Both are immutable, so the health of a table that has not changed since
// the last call costs its metadata alone: no manifest list, no manifest.
// The zero Cache is ready to use; a nil one keeps nothing.
type Cache struct {
	mu      sync.Mutex
	entries map[string]cached
}

type cached struct {
	metadata      string // location
	metadataBytes int64
	snapshot      int64
	targetMB      int
	minInput      int
	strategy      maintenance.Strategy
	files         Files
}

// Retain forgets the tables whose keys keep does not hold.
func (c *Cache) Retain(keep func(key string) bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	maps.DeleteFunc(c.entries, func(k string, _ cached) bool { return !keep(k) })
}

func (c *Cache) get(key string) (cached, bool) {
	if c == nil {
		return cached{}, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[key]
	return e, ok
}

func (c *Cache) put(key string, e cached) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.entries == nil {
		c.entries = map[string]cached{}
	}
	c.entries[key] = e
}

// Of is the package's Of for the table named key, reading what the cache
// does not hold for tbl's current metadata and snapshot.
func (c *Cache) Of(ctx context.Context, key string, tbl *table.Table, targetMB, minInput int, strategy maintenance.Strategy, now time.Time) (Health, error) {
	h, e, ok := c.cached(key, tbl, targetMB, minInput, strategy, now)
	if ok {
		return h, nil
	}
	fs, err := tbl.FS(ctx)
	if err != nil {
		return h, fmt.Errorf("open file system of %s: %w", tbl.Location(), err)
	}
	if h.MetadataBytes, err = MetadataBytes(fs, tbl.MetadataLocation()); err != nil {
		return h, err
	}
	if cur := tbl.CurrentSnapshot(); cur != nil {
		if h.Files, err = filesOf(ctx, fs, tbl.Metadata(), cur, targetMB, minInput, strategy); err != nil {
			return h, err
		}
	}
	e.metadataBytes, e.files = h.MetadataBytes, h.Files
	c.put(key, e)
	h.Score = scoreOf(h)
	return h, nil
}

// Cached is the health of tbl, as Of gives it, when the cache already
// holds its current metadata file under these settings: it reads
// nothing, so a caller that loaded the table for another reason (a
// need-ordered fire's poll) gets its health for free. ok is false when
// Of would have to read.
func (c *Cache) Cached(key string, tbl *table.Table, targetMB, minInput int, strategy maintenance.Strategy, now time.Time) (h Health, ok bool) {
	h, _, ok = c.cached(key, tbl, targetMB, minInput, strategy, now)
	return h, ok
}

// cached is the part of Of that needs no read: the metadata's figures,
// and the cached files' when the entry matches; e is the entry Of stores
// after reading.
func (c *Cache) cached(key string, tbl *table.Table, targetMB, minInput int, strategy maintenance.Strategy, now time.Time) (h Health, e cached, ok bool) {
	h = Health{TargetFileSizeMB: targetMB}
	meta := tbl.Metadata()
	h.Statistics = planner.StatisticsCoverageOf(meta)
	snaps := meta.Snapshots()
	h.Snapshots = len(snaps)
	for i, s := range snaps {
		if i == 0 || s.TimestampMs < snaps[0].TimestampMs {
			t := time.UnixMilli(s.TimestampMs).UTC()
			h.OldestSnapshot = t.Format(time.RFC3339)
			h.OldestAgeHours = float64(now.Sub(t).Round(time.Minute)) / float64(time.Hour)
		}
	}
	e = cached{metadata: tbl.MetadataLocation(), snapshot: -1, targetMB: targetMB, minInput: minInput, strategy: strategy}
	if cur := tbl.CurrentSnapshot(); cur != nil {
		e.snapshot = cur.SnapshotID
	}
	if old, ok := c.get(key); ok && old.metadata == e.metadata && old.snapshot == e.snapshot && old.targetMB == targetMB && old.minInput == minInput &&
		old.strategy == strategy {
		h.MetadataBytes, h.Files = old.metadataBytes, old.files
		h.Score = scoreOf(h)
		return h, e, true
	}
	return h, e, false
}

// filesOf reads the figures of snapshot cur's manifests.
func filesOf(ctx context.Context, fs icebergio.IO, meta table.Metadata, cur *table.Snapshot, targetMB, minInput int, strategy maintenance.Strategy) (Files, error) {
	var h Files
	meter, measured := planner.NewClusterMeter(meta, string(strategy))
	small := int64(float64(targetMB) * SmallFileRatio * (1 << 20))
	manifests, err := verified.Manifests(fs, cur)
	if err != nil {
		return h, err
	}
	smallIn := map[string]int{} // small data files per partition
	for m, err := range verified.ReadAhead(ctx, fs, manifests, true) {
		if err != nil {
			return h, err
		}
		for _, e := range m.Entries {
			df := e.DataFile()
			h.TotalBytes += df.FileSizeBytes()
			if df.ContentType() == iceberg.EntryContentData {
				if measured {
					meter.Add(df, planner.PartitionLabel(meta, df))
				}
				h.DataFiles++
				h.DataRecords += df.Count()
				if df.FileSizeBytes() < small {
					h.SmallFiles++
					smallIn[fmt.Sprint(df.SpecID(), df.Partition())]++
				}
			} else {
				h.DeleteFiles++
				if df.ContentType() == iceberg.EntryContentEqDeletes {
					h.EqualityDeletes++
				} else {
					h.PositionDeletes++
				}
			}
		}
	}
	for _, n := range smallIn {
		if n >= max(minInput, 2) {
			h.MergeableSmallFiles += n
		}
	}
	if measured {
		c := meter.Result()
		h.Clustering = &c
	}
	return h, nil
}

// MetadataBytes returns the size of the metadata file at loc.
func MetadataBytes(fs icebergio.IO, loc string) (int64, error) {
	f, err := fs.Open(loc)
	if err != nil {
		return 0, fmt.Errorf("open metadata %s: %w", loc, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return 0, fmt.Errorf("stat metadata %s: %w", loc, err)
	}
	return st.Size(), nil
}
