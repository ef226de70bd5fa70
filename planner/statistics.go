// Statistics' planning: which columns a run keeps NDV for, and whether it
// computes the sketches from every live data file or brings the previous
// run's up to date from the change — the data files added since, read;
// rewrites, skipped; rows removed, counted toward the drift that makes
// the next full computation due. The executor (package statistics) reads
// what the plan names and commits the statistics file.
//
// The previous run's Puffin file is the running state: its blobs are the
// sketches of the snapshot it describes, and its blob properties carry
// what the drift needs (StatisticsState). Only a file icekeeper wrote is
// taken as state; another writer's is replaced at the next full
// computation.

package planner

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/icekeeper/icekeeper/maintenance"
)

// Blob properties of icekeeper's theta blobs, beside the spec's `ndv`.
const (
	// NDVProperty is the spec's: the estimate, rounded to an integer.
	NDVProperty = "ndv"
	// DriftProperty is the share of the table's rows that the sketch may
	// still count although they were removed (by row-level deletes, or by
	// deletes and overwrites since the last full computation): the ndv is
	// an upper bound, off by at most the distinct values of that share.
	DriftProperty = "icekeeper.ndv-upper-bound-drift"
	// RemovedSinceProperty is the rows removed since the sketch was last
	// computed from every data file: the count MaxDrift is held against.
	RemovedSinceProperty = "icekeeper.rows-removed-since-recompute"
	// HiddenAtProperty is the rows that delete files hid when the sketch
	// was last computed from every data file: the data files were read
	// whole, so the sketch counts them.
	HiddenAtProperty = "icekeeper.rows-deleted-at-recompute"
	// RecomputedProperty is the snapshot the sketch was last computed
	// from every data file at.
	RecomputedProperty = "icekeeper.recomputed-snapshot-id"
)

// StatisticsSettings are statistics', translated once per run.
type StatisticsSettings struct {
	Columns             []string `json:"columns,omitempty"`
	MaxColumns          int      `json:"maxColumns"`
	PartitionStatistics bool     `json:"partitionStatistics"`
	// MaxDrift is the share of the table's rows removed since the last
	// full computation past which a run computes afresh (0.10: 10%).
	MaxDrift float64 `json:"maxDrift"`
}

// StatisticsSettingsOf translates a table's resolved settings.
func StatisticsSettingsOf(s maintenance.Settings) (StatisticsSettings, error) {
	// A theta sketch keeps a hash of every value it was given, those of
	// rows removed since included, until the sketch is computed afresh;
	// erasure promises that no object holds a removed row after its
	// deadline, and does not yet reach into statistics files. Until it
	// does, the two are not enabled together.
	if s.For(maintenance.Statistics).Status == maintenance.Enabled && s.For(maintenance.Erasure).Status == maintenance.Enabled {
		return StatisticsSettings{}, fmt.Errorf("%w: %s cannot run on a table with %s enabled: its sketches keep hashes of the values of removed rows until they are computed afresh, which erasure's deadline does not yet cover",
			maintenance.ErrInvalid, maintenance.Statistics, maintenance.Erasure)
	}
	c := s.For(maintenance.Statistics).Statistics()
	out := StatisticsSettings{MaxColumns: maintenance.DefaultStatisticsColumns, PartitionStatistics: true,
		MaxDrift: maintenance.DefaultMaxDriftPercent / 100.0}
	if c == nil {
		return out, nil
	}
	out.Columns = slices.Clone(c.Columns)
	if c.MaxColumns != nil {
		out.MaxColumns = *c.MaxColumns
	}
	if c.PartitionStatistics != nil {
		out.PartitionStatistics = *c.PartitionStatistics
	}
	if c.MaxDriftPercent != nil {
		out.MaxDrift = float64(*c.MaxDriftPercent) / 100
	}
	return out, nil
}

// StatisticsColumn is a column a run keeps NDV for.
type StatisticsColumn struct {
	FieldID int                   `json:"fieldId"`
	Name    string                `json:"name"`
	Type    iceberg.PrimitiveType `json:"-"`
}

// StatisticsColumns are the columns a run with s keeps NDV for: those s
// names, in the order named, or every top-level primitive column of sc in
// schema order up to MaxColumns. A named column that is missing, nested
// or not primitive is an error wrapping maintenance.ErrInvalid.
func StatisticsColumns(sc *iceberg.Schema, s StatisticsSettings) ([]StatisticsColumn, error) {
	var out []StatisticsColumn
	if len(s.Columns) > 0 {
		for _, name := range s.Columns {
			f, ok := sc.FindFieldByName(name)
			if !ok {
				return nil, fmt.Errorf("%w: %s: column %q is not in the table's schema", maintenance.ErrInvalid, maintenance.Statistics, name)
			}
			pt, ok := f.Type.(iceberg.PrimitiveType)
			if !ok || !slices.ContainsFunc(sc.Fields(), func(top iceberg.NestedField) bool { return top.ID == f.ID }) {
				return nil, fmt.Errorf("%w: %s: column %q is not a top-level primitive column", maintenance.ErrInvalid, maintenance.Statistics, name)
			}
			out = append(out, StatisticsColumn{FieldID: f.ID, Name: f.Name, Type: pt})
		}
		return out, nil
	}
	for _, f := range sc.Fields() {
		if pt, ok := f.Type.(iceberg.PrimitiveType); ok && len(out) < s.MaxColumns {
			out = append(out, StatisticsColumn{FieldID: f.ID, Name: f.Name, Type: pt})
		}
	}
	return out, nil
}

// StatisticsState is what the latest statistics file icekeeper wrote on
// the current snapshot's lineage says: the snapshot its sketches describe
// and the drift they carry.
type StatisticsState struct {
	SnapshotID int64  `json:"snapshotId"`
	Path       string `json:"path"`
	// Fields are the field IDs it holds a theta blob for.
	Fields []int `json:"fields"`
	// RemovedSince and HiddenAt are its blobs' drift properties.
	RemovedSince int64 `json:"removedSince"`
	HiddenAt     int64 `json:"hiddenAt"`
	// RecomputedAt is the snapshot of its last full computation.
	RecomputedAt int64 `json:"recomputedAt"`
}

// StatisticsStateOf finds the state in meta: the statistics file of the
// newest snapshot on the current snapshot's lineage whose theta blobs
// icekeeper wrote (they carry RemovedSinceProperty). Nil: none.
func StatisticsStateOf(meta table.Metadata) *StatisticsState {
	files := map[int64]table.StatisticsFile{}
	for f := range meta.Statistics() {
		files[f.SnapshotID] = f
	}
	for snap := meta.CurrentSnapshot(); snap != nil; snap = parentOf(meta, snap) {
		f, ok := files[snap.SnapshotID]
		if !ok {
			continue
		}
		if st, ok := stateOf(f); ok {
			return st
		}
	}
	return nil
}

func parentOf(meta table.Metadata, s *table.Snapshot) *table.Snapshot {
	if s.ParentSnapshotID == nil {
		return nil
	}
	return meta.SnapshotByID(*s.ParentSnapshotID)
}

// stateOf reads a statistics file's state from its theta blobs; false
// when it has none of icekeeper's.
func stateOf(f table.StatisticsFile) (*StatisticsState, bool) {
	st := &StatisticsState{SnapshotID: f.SnapshotID, Path: f.StatisticsPath}
	for _, b := range f.BlobMetadata {
		removed, ok := b.Properties[RemovedSinceProperty]
		if b.Type != table.BlobTypeApacheDatasketchesThetaV1 || len(b.Fields) != 1 || !ok {
			continue
		}
		r, err1 := strconv.ParseInt(removed, 10, 64)
		h, err2 := strconv.ParseInt(b.Properties[HiddenAtProperty], 10, 64)
		at, err3 := strconv.ParseInt(b.Properties[RecomputedProperty], 10, 64)
		if err1 != nil || err2 != nil || err3 != nil {
			return nil, false // not a blob this version wrote: compute afresh
		}
		st.RemovedSince, st.HiddenAt, st.RecomputedAt = max(st.RemovedSince, r), max(st.HiddenAt, h), at
		st.Fields = append(st.Fields, int(b.Fields[0]))
	}
	return st, len(st.Fields) > 0
}

// StatisticsStep is one snapshot between the state's and the current one,
// and what the run does with it.
type StatisticsStep struct {
	SnapshotID int64  `json:"snapshotId"`
	Operation  string `json:"operation"`
	// Read: the run reads the data files the snapshot added.
	Read bool `json:"read,omitempty"`
	// Removed are the rows it removed (deleted records and row-level
	// deletes it added), which the sketches keep counting.
	Removed int64  `json:"removed,omitempty"`
	Why     string `json:"why"`
}

// StatisticsPlan is what a statistics run does.
type StatisticsPlan struct {
	// SnapshotID and SequenceNumber are the current snapshot's, which the
	// run describes (0: the table has none; nothing to do).
	SnapshotID     int64 `json:"snapshotId"`
	SequenceNumber int64 `json:"sequenceNumber"`
	// Columns are the columns the run sketches (StatisticsColumns).
	Columns []StatisticsColumn `json:"columns"`
	// UpToDate: the state already describes the current snapshot with
	// every column; the run writes no column statistics.
	UpToDate bool `json:"upToDate,omitempty"`
	// Full: the run computes the sketches from every live data file, for
	// Reason. Otherwise it reads the data files Steps marks Read and
	// merges them into the state's sketches.
	Full   bool             `json:"full"`
	Reason string           `json:"reason"`
	Steps  []StatisticsStep `json:"steps,omitempty"`
	// Base is the state the run starts from (nil: none on the lineage).
	Base *StatisticsState `json:"base,omitempty"`
	// CommitsBehind counts the snapshots between the state's and the
	// current one (the current included); Behind is when the oldest of
	// them was committed (zero: none, or no state).
	CommitsBehind int       `json:"commitsBehind"`
	Behind        time.Time `json:"behind,omitzero"`
	// RemovedSince, HiddenAt and RecomputedAt are the drift figures the
	// run's blobs carry (StatisticsState's), and Drift the share of the
	// current rows the sketches may count although they were removed.
	RemovedSince int64   `json:"removedSince"`
	HiddenAt     int64   `json:"hiddenAt"`
	RecomputedAt int64   `json:"recomputedAt"`
	Drift        float64 `json:"drift"`
	// Remove are the snapshots whose statistics files the commit takes out
	// of the metadata: the current snapshot's ancestors' and those of
	// snapshots no longer in the metadata. Their files are left to
	// unreferenced file removal.
	Remove []int64 `json:"remove,omitempty"`
}

// Summary keys the plan reads.
const (
	summaryTotalRecords   = "total-records"
	summaryDeletedRecords = "deleted-records"
	summaryAddedPosDel    = "added-position-deletes"
	summaryAddedEqDel     = "added-equality-deletes"
	summaryTotalPosDel    = "total-position-deletes"
	summaryTotalEqDel     = "total-equality-deletes"
)

// PlanStatistics decides a statistics run on meta with s.
func PlanStatistics(meta table.Metadata, s StatisticsSettings) (StatisticsPlan, error) {
	cur := meta.CurrentSnapshot()
	if cur == nil {
		return StatisticsPlan{Reason: "the table has no snapshot"}, nil
	}
	cols, err := StatisticsColumns(meta.CurrentSchema(), s)
	if err != nil {
		return StatisticsPlan{}, err
	}
	p := StatisticsPlan{SnapshotID: cur.SnapshotID, SequenceNumber: cur.SequenceNumber, Columns: cols}
	p.Remove = StaleStatistics(meta, cur.SnapshotID)
	st := StatisticsStateOf(meta)
	p.Base = st
	total, totalOK := summaryCount(cur, summaryTotalRecords)
	hidden, _ := summaryCount(cur, summaryTotalPosDel)
	eq, _ := summaryCount(cur, summaryTotalEqDel)
	hidden += eq
	full := func(reason string) (StatisticsPlan, error) {
		p.Full, p.Reason, p.Steps = true, reason, nil
		p.RemovedSince, p.HiddenAt, p.RecomputedAt = 0, hidden, cur.SnapshotID
		p.Drift = drift(hidden, total)
		return p, nil
	}
	if st == nil {
		p.CommitsBehind = lineageLength(meta, cur)
		return full("no statistics file of icekeeper's on the current lineage")
	}
	for _, c := range cols {
		if !slices.Contains(st.Fields, c.FieldID) {
			return full(fmt.Sprintf("the statistics of snapshot %d have no sketch of column %s", st.SnapshotID, c.Name))
		}
	}
	// The steps, newest first as the lineage is walked, then reversed.
	var steps []StatisticsStep
	snap := cur
	for snap.SnapshotID != st.SnapshotID {
		steps = append(steps, stepOf(snap))
		parent := parentOf(meta, snap)
		if parent == nil {
			// StatisticsStateOf found st on this lineage, so a missing
			// parent here is a gap the walk cannot cross.
			return full(fmt.Sprintf("the lineage from snapshot %d back to %d is broken at %d", cur.SnapshotID, st.SnapshotID, snap.SnapshotID))
		}
		snap = parent
	}
	slices.Reverse(steps)
	p.Steps, p.Base = steps, st
	p.CommitsBehind = len(steps)
	if len(steps) > 0 {
		if s := meta.SnapshotByID(steps[0].SnapshotID); s != nil {
			p.Behind = time.UnixMilli(s.TimestampMs).UTC()
		}
	} else {
		p.UpToDate = true
	}
	p.RemovedSince, p.HiddenAt, p.RecomputedAt = st.RemovedSince, st.HiddenAt, st.RecomputedAt
	for _, step := range steps {
		if step.Operation == "" {
			return full(fmt.Sprintf("snapshot %d has no operation in its summary: what it changed is unknown", step.SnapshotID))
		}
		p.RemovedSince += step.Removed
	}
	if !totalOK && p.RemovedSince > 0 {
		return full(fmt.Sprintf("rows were removed since snapshot %d and the current summary has no total-records to weigh them against", st.SnapshotID))
	}
	if d := drift(p.RemovedSince, total); d > s.MaxDrift {
		return full(fmt.Sprintf("%d rows removed since the last full computation are %.1f%% of the table's %d, more than %.0f%%",
			p.RemovedSince, 100*d, total, 100*s.MaxDrift))
	}
	p.Drift = drift(p.HiddenAt+p.RemovedSince, total)
	switch {
	case p.UpToDate:
		p.Reason = fmt.Sprintf("the statistics of snapshot %d describe the current snapshot", st.SnapshotID)
	default:
		read := 0
		for _, s := range steps {
			if s.Read {
				read++
			}
		}
		p.Reason = fmt.Sprintf("%d commits since snapshot %d: the data files of %d are read and merged", len(steps), st.SnapshotID, read)
	}
	return p, nil
}

// stepOf is what a run does with snapshot s between the state's and the
// current one.
func stepOf(s *table.Snapshot) StatisticsStep {
	st := StatisticsStep{SnapshotID: s.SnapshotID}
	if s.Summary == nil {
		st.Why = "no summary"
		return st
	}
	st.Operation = string(s.Summary.Operation)
	deleted, _ := summaryCount(s, summaryDeletedRecords)
	pos, _ := summaryCount(s, summaryAddedPosDel)
	eq, _ := summaryCount(s, summaryAddedEqDel)
	switch s.Summary.Operation {
	case table.OpAppend:
		st.Read, st.Why = true, "append: its data files are read"
	case table.OpReplace:
		// A rewrite keeps the rows (compaction, manifest rewrites); rows
		// it drops were hidden by deletes already counted when added.
		st.Why = "replace: the rows are unchanged, nothing is read"
	case table.OpOverwrite:
		st.Read, st.Removed = true, deleted+pos+eq
		st.Why = "overwrite: its data files are read; the rows it removed count toward the drift"
	case table.OpDelete:
		st.Removed = deleted + pos + eq
		st.Why = "delete: nothing is read; the rows it removed count toward the drift"
	default:
		st.Operation = ""
		st.Why = fmt.Sprintf("unknown operation %q", s.Summary.Operation)
	}
	return st
}

// StaleStatistics are the snapshots other than id whose statistics files
// describe an ancestor of id or a snapshot no longer in meta: those a
// commit of statistics for id takes out of the metadata. Statistics of
// other branches' snapshots stay.
func StaleStatistics(meta table.Metadata, id int64) []int64 {
	var described []int64
	for f := range meta.Statistics() {
		described = append(described, f.SnapshotID)
	}
	return stale(meta, id, described)
}

// StalePartitionStatistics is StaleStatistics for partition statistics
// files.
func StalePartitionStatistics(meta table.Metadata, id int64) []int64 {
	var described []int64
	for f := range meta.PartitionStatistics() {
		described = append(described, f.SnapshotID)
	}
	return stale(meta, id, described)
}

// HasPartitionStatistics says whether meta lists a partition statistics
// file for snapshot id.
func HasPartitionStatistics(meta table.Metadata, id int64) bool {
	for f := range meta.PartitionStatistics() {
		if f.SnapshotID == id {
			return true
		}
	}
	return false
}

func stale(meta table.Metadata, id int64, described []int64) []int64 {
	ancestors := map[int64]bool{}
	if cur := meta.SnapshotByID(id); cur != nil {
		for s := parentOf(meta, cur); s != nil; s = parentOf(meta, s) {
			ancestors[s.SnapshotID] = true
		}
	}
	var out []int64
	for _, d := range described {
		if d != id && (ancestors[d] || meta.SnapshotByID(d) == nil) {
			out = append(out, d)
		}
	}
	slices.Sort(out)
	return out
}

func lineageLength(meta table.Metadata, cur *table.Snapshot) int {
	n := 0
	for s := cur; s != nil; s = parentOf(meta, s) {
		n++
	}
	return n
}

// summaryCount is a count in s's summary; false when it has none.
func summaryCount(s *table.Snapshot, key string) (int64, bool) {
	if s == nil || s.Summary == nil {
		return 0, false
	}
	v, ok := s.Summary.Properties[key]
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseInt(v, 10, 64)
	return n, err == nil
}

// drift is removed as a share of the table's current rows.
func drift(removed, total int64) float64 {
	if removed <= 0 {
		return 0
	}
	if total <= 0 {
		return math.Inf(1)
	}
	return float64(removed) / float64(total)
}

// StatisticsOldest is the oldest commit the table's statistics do not
// describe, for the freshness target: the first snapshot after the
// state's on the current lineage, or, without state, the lineage's first.
// False: nothing waits.
func StatisticsOldest(meta table.Metadata) (Oldest, bool) {
	cur := meta.CurrentSnapshot()
	if cur == nil {
		return Oldest{}, false
	}
	st := StatisticsStateOf(meta)
	if st != nil && st.SnapshotID == cur.SnapshotID {
		return Oldest{}, false
	}
	var oldest *table.Snapshot
	n := 0
	for s := cur; s != nil && (st == nil || s.SnapshotID != st.SnapshotID); s = parentOf(meta, s) {
		oldest = s
		n++
	}
	return Oldest{Since: time.UnixMilli(oldest.TimestampMs).UTC(), SnapshotID: oldest.SnapshotID,
		What: fmt.Sprintf("%d commits the table statistics do not describe, from snapshot %d", n, oldest.SnapshotID)}, true
}

// StatisticsCoverage is how far the statistics icekeeper keeps are behind
// the current snapshot: what the dashboard, the table route and /metrics
// show.
type StatisticsCoverage struct {
	// SnapshotID is the snapshot the latest statistics describe.
	SnapshotID int64 `json:"snapshotId"`
	// CommitsBehind counts the snapshots committed on the current lineage
	// since then (0: current).
	CommitsBehind int `json:"commitsBehind"`
	// Columns counts the columns sketched.
	Columns int `json:"columns"`
}

// StatisticsCoverageOf is meta's coverage; nil when icekeeper keeps no
// statistics on the current lineage.
func StatisticsCoverageOf(meta table.Metadata) *StatisticsCoverage {
	st := StatisticsStateOf(meta)
	if st == nil {
		return nil
	}
	c := &StatisticsCoverage{SnapshotID: st.SnapshotID, Columns: len(st.Fields)}
	for s := meta.CurrentSnapshot(); s != nil && s.SnapshotID != st.SnapshotID; s = parentOf(meta, s) {
		c.CommitsBehind++
	}
	return c
}

// PartitionStatisticsBase is where a run may bring partition statistics
// up to date from the change: the newest partition statistics file on the
// current snapshot's lineage (path, describing snapshot base) and the
// snapshots committed since, oldest first. False: none on the lineage, or
// it describes the current snapshot (nothing to bring up to date).
func PartitionStatisticsBase(meta table.Metadata) (base int64, path string, steps []int64, ok bool) {
	files := map[int64]string{}
	for f := range meta.PartitionStatistics() {
		files[f.SnapshotID] = f.StatisticsPath
	}
	for s := meta.CurrentSnapshot(); s != nil; s = parentOf(meta, s) {
		if p, found := files[s.SnapshotID]; found {
			slices.Reverse(steps)
			return s.SnapshotID, p, steps, len(steps) > 0
		}
		steps = append(steps, s.SnapshotID)
	}
	return 0, "", nil, false
}
