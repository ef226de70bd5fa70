// Equality-delete conversion's decision. An upsert stream (Flink, Kafka
// Connect) writes an equality delete and the new row versions at every
// checkpoint; each equality delete applies to every older data file of its
// partition, so rewriting the data files to apply them rewrites the whole
// partition for a trickle of changed keys. Conversion instead finds the
// positions of the deleted rows and writes them as position deletes (v2)
// or deletion vectors (v3), and removes the equality deletes: readers then
// apply positions instead of hashing keys, and the data files stay as they
// are until their deleted-row ratio passes DeleteRatio, when the data
// rewrite takes them (Iceberg's delete-ratio-threshold, which Iceberg
// defines as an option of rewrite_data_files — BinPackRewriteFilePlanner's
// DELETE_RATIO_THRESHOLD, default 0.3 — and not as a table property, so
// there is no table property to honour).
//
// The rules, as the Iceberg spec applies equality deletes: an equality
// delete applies to the data files of its partition (the same spec and
// partition values), or to every data file when its spec is unpartitioned,
// whose data sequence number is below its own. It may be removed only when
// every data file it applies to is converted in the same commit; otherwise
// it stays, and still applies where it did.

package planner

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
)

// DefaultConvertChunkKeys bounds the keys conversion holds in memory at
// once: the equality delete rows of one chunk. The executor holds a
// one-column integer key by value (a map entry, a few tens of bytes) and
// other keys encoded (about 60 bytes for a short one), so the default
// holds at most about 120 MB of keys. It bounds memory only, not the work of a run: a partition's
// due equality deletes are all converted in one run, in as many chunks as
// their keys need, each chunk matched against the data files it applies
// to (so each chunk reads their key columns again).
const DefaultConvertChunkKeys = 2_000_000

// EqualityDelete is one live equality delete file and the data sequence
// number of its manifest entry, which decides the data files it applies to.
type EqualityDelete struct {
	File iceberg.DataFile
	Seq  int64
}

// ConvertOptions steer conversion.
type ConvertOptions struct {
	// MinFiles is how many equality delete files a partition must have
	// before they are converted (0: conversion is off, and the data
	// rewrite applies equality deletes as before).
	MinFiles int
	// ChunkKeys bounds the keys held at once (default
	// DefaultConvertChunkKeys); it splits a group into chunks and never
	// leaves a due delete for a later run.
	ChunkKeys int64
}

// ConvertGroup is one partition whose equality deletes are converted.
type ConvertGroup struct {
	Partition string `json:"partition"`
	// EqualityDeletes are the equality delete files converted and removed,
	// Keys the rows they hold; DataFiles the data files they apply to, all
	// of which are read, and ReadBytes an estimate of the bytes of their
	// key columns (from the manifests' column sizes), read once per chunk
	// that applies to them.
	EqualityDeletes int   `json:"equalityDeletes"`
	Keys            int64 `json:"keys"`
	DataFiles       int   `json:"dataFiles"`
	ReadBytes       int64 `json:"readBytes"`
	// Kept are the partition's equality delete files left for later: those
	// that apply to a data file the data rewrite takes.
	Kept int `json:"kept,omitempty"`
	// Chunks is how many chunks of at most ConvertOptions.ChunkKeys keys
	// the group is converted in (0 when its deletes hold no row).
	Chunks int `json:"chunks,omitempty"`

	// Deletes are the equality delete files converted (the group removes
	// them); Tasks the data files they apply to, each with its data
	// sequence number in Seqs.
	Deletes []EqualityDelete     `json:"-"`
	Tasks   []table.FileScanTask `json:"-"`
	Seqs    []int64              `json:"-"`
	// Slices are the chunks, in order.
	Slices []ConvertChunk `json:"-"`
}

// ConvertChunk is the keys converted at once and the data files they are
// matched against. A chunk boundary may fall inside a delete file, whose
// rows are then read in slices; every key keeps its own delete's data
// sequence number.
type ConvertChunk struct {
	Keys []KeyRange
	// Tasks index the group's Tasks whose data sequence number is below
	// that of the chunk's newest delete: the only ones its keys may
	// delete rows of.
	Tasks []int
}

// KeyRange is rows [From, From+Rows) of the group's equality delete file
// Deletes[Delete].
type KeyRange struct {
	Delete     int
	From, Rows int64
}

// KeyTypeConverted reports whether conversion reads keys of type t: the
// types whose Parquet values compare as Iceberg values do, whichever
// writer wrote them. Floating-point and decimal keys are left to the data
// rewrite (a decimal's physical type depends on the writer).
func KeyTypeConverted(t iceberg.Type) bool {
	switch t.(type) {
	case iceberg.BooleanType, iceberg.Int32Type, iceberg.Int64Type, iceberg.DateType, iceberg.TimeType,
		iceberg.TimestampType, iceberg.TimestampTzType, iceberg.StringType, iceberg.BinaryType, iceberg.UUIDType, iceberg.FixedType:
		return true
	}
	return false
}

// Converting reports, for each of tasks, whether conversion takes its
// equality deletes (then a well-sized file is not rewritten for them):
// Converts says so of the task, and Conversion does not skip its
// partition for a file it cannot read. deletes are the live equality
// delete files.
func Converting(meta table.Metadata, tasks []table.FileScanTask, deletes []EqualityDelete, opts ConvertOptions) []bool {
	out := make([]bool, len(tasks))
	if opts.MinFiles <= 0 {
		return out
	}
	sc := newScopes(meta, tasks, deletes)
	for i, t := range tasks {
		if len(t.EqualityDeleteFiles) == 0 {
			continue
		}
		_, ok := Converts(meta, t, opts)
		out[i] = ok && sc.problem(meta, tasks, sc.of(t.File)) == ""
	}
	return out
}

// Converts reports whether conversion takes t's equality deletes, as far
// as t alone tells, or why not.
func Converts(meta table.Metadata, t table.FileScanTask, opts ConvertOptions) (string, bool) {
	if opts.MinFiles <= 0 {
		return "equality-delete conversion is off", false
	}
	if t.File.FileFormat() != iceberg.ParquetFile {
		return fmt.Sprintf("%s is %s; only Parquet data files are read", t.File.FilePath(), t.File.FileFormat()), false
	}
	for _, d := range t.EqualityDeleteFiles {
		if why := unconvertible(meta, d); why != "" {
			return why, false
		}
	}
	return "", true
}

// unconvertible says why equality delete d cannot be converted, or "".
func unconvertible(meta table.Metadata, d iceberg.DataFile) string {
	if d.FileFormat() != iceberg.ParquetFile {
		return fmt.Sprintf("equality delete file %s is %s; only Parquet is read", d.FilePath(), d.FileFormat())
	}
	if len(d.EqualityFieldIDs()) == 0 {
		return fmt.Sprintf("equality delete file %s names no equality field", d.FilePath())
	}
	if meta.PartitionSpecByID(int(d.SpecID())) == nil {
		return fmt.Sprintf("equality delete file %s has partition spec %d, which the table does not have", d.FilePath(), d.SpecID())
	}
	// Conversion matches a delete against the data files of one scope
	// (scopes): a partition on a partitioned table, every file on an
	// unpartitioned one. A delete whose spec differs in kind from the
	// table's would apply to more or fewer files than its scope holds.
	if global(meta, d) && !meta.PartitionSpec().IsUnpartitioned() {
		return fmt.Sprintf("equality delete file %s is global on a partitioned table; it is left to the data rewrite", d.FilePath())
	}
	if !global(meta, d) && meta.PartitionSpec().IsUnpartitioned() {
		return fmt.Sprintf("equality delete file %s is of a partitioned spec on a table now unpartitioned; it is left to the data rewrite", d.FilePath())
	}
	for _, id := range d.EqualityFieldIDs() {
		f, ok := fieldByID(meta, id)
		if !ok {
			return fmt.Sprintf("equality delete file %s names field %d, which no schema has as a top-level column", d.FilePath(), id)
		}
		if !KeyTypeConverted(f.Type) {
			return fmt.Sprintf("equality delete file %s has key column %s of type %s, which conversion does not read", d.FilePath(), f.Name, f.Type)
		}
	}
	return ""
}

// global reports an equality delete of an unpartitioned spec: it applies
// to every partition. One of a spec the table does not have is refused
// before (unconvertible).
func global(meta table.Metadata, d iceberg.DataFile) bool {
	spec := meta.PartitionSpecByID(int(d.SpecID()))
	return spec != nil && spec.IsUnpartitioned()
}

// fieldByID finds a top-level field by ID in any of the table's schemas,
// newest first: a key column may have been dropped since the delete was
// written. Keys in nested structs are not read.
func fieldByID(meta table.Metadata, id int) (iceberg.NestedField, bool) {
	schemas := meta.Schemas()
	for i := len(schemas) - 1; i >= 0; i-- {
		for _, f := range schemas[i].Fields() {
			if f.ID == id {
				return f, true
			}
		}
	}
	return iceberg.NestedField{}, false
}

// DataSeq is the data sequence number of t's file (0 when unknown: v1).
func DataSeq(t table.FileScanTask) int64 {
	if t.DataSequenceNumber != nil {
		return *t.DataSequenceNumber
	}
	return 0
}

// Conversion is equality-delete conversion's decision: per partition
// whose equality delete files number at least opts.MinFiles, the equality
// deletes to convert and the data files they apply to. tasks are the live
// data files, deletes the live equality delete files; the data files in
// taken (by path) are left to the data rewrite, which applies their
// deletes, so an equality delete that applies to one of them stays. A
// group's deletes are all converted in one run, in chunks of at most
// opts.ChunkKeys keys (chunks). It reads metadata only.
func Conversion(meta table.Metadata, tasks []table.FileScanTask, deletes []EqualityDelete, taken map[string]bool, opts ConvertOptions) ([]ConvertGroup, []Skip) {
	if opts.MinFiles <= 0 || meta.Version() < 2 || len(deletes) == 0 {
		return nil, nil
	}
	if opts.ChunkKeys <= 0 {
		opts.ChunkKeys = DefaultConvertChunkKeys
	}
	sc := newScopes(meta, tasks, deletes)
	byScope, dataOf := sc.deletes, sc.data

	var groups []ConvertGroup
	var skipped []Skip
	for _, k := range sc.keys {
		ds := byScope[k]
		label := PartitionLabel(meta, ds[0].File)
		if k == "" {
			label = "(unpartitioned)"
		}
		if len(ds) < opts.MinFiles {
			continue
		}
		if why := sc.problem(meta, tasks, k); why != "" {
			skipped = append(skipped, Skip{Partition: label, Files: len(ds), Reason: why})
			continue
		}
		// Oldest first: a chunk then holds deletes of few sequence numbers,
		// and is matched against the fewest data files.
		slices.SortStableFunc(ds, func(a, b EqualityDelete) int {
			return cmp.Or(cmp.Compare(a.Seq, b.Seq), cmp.Compare(a.File.FilePath(), b.File.FilePath()))
		})
		g := ConvertGroup{Partition: label}
		var maxSeq int64 = -1
		for _, d := range ds {
			removable := true
			for _, i := range dataOf[k] {
				if DataSeq(tasks[i]) < d.Seq && taken[tasks[i].File.FilePath()] {
					removable = false
					break
				}
			}
			if !removable {
				g.Kept++
				continue
			}
			g.Deletes = append(g.Deletes, d)
			g.Keys += d.File.Count()
			maxSeq = max(maxSeq, d.Seq)
		}
		if len(g.Deletes) == 0 {
			skipped = append(skipped, Skip{Partition: label, Files: len(ds),
				Reason: "every equality delete applies to a data file the data rewrite takes, or to none converted"})
			continue
		}
		// Every data file a converted delete applies to is read: the
		// removal of the delete is sound only if each is converted.
		for _, i := range dataOf[k] {
			t := tasks[i]
			seq := DataSeq(t)
			if seq >= maxSeq || taken[t.File.FilePath()] {
				continue
			}
			g.Tasks = append(g.Tasks, t)
			g.Seqs = append(g.Seqs, seq)
		}
		g.DataFiles = len(g.Tasks)
		g.Slices = chunks(g, opts.ChunkKeys)
		g.Chunks = len(g.Slices)
		for _, c := range g.Slices {
			keyIDs := map[int]bool{}
			for _, r := range c.Keys {
				for _, id := range g.Deletes[r.Delete].File.EqualityFieldIDs() {
					keyIDs[id] = true
				}
			}
			for _, i := range c.Tasks {
				for id := range keyIDs {
					g.ReadBytes += g.Tasks[i].File.ColumnSizes()[id]
				}
			}
		}
		g.EqualityDeletes = len(g.Deletes)
		groups = append(groups, g)
	}
	return groups, skipped
}

// chunks splits g's equality delete rows, oldest delete first, into
// chunks of at most limit keys, and gives each the data files it applies
// to.
func chunks(g ConvertGroup, limit int64) []ConvertChunk {
	var out []ConvertChunk
	var cur ConvertChunk
	var n, seq int64
	flush := func() {
		for i, s := range g.Seqs {
			if s < seq {
				cur.Tasks = append(cur.Tasks, i)
			}
		}
		out = append(out, cur)
		cur, n, seq = ConvertChunk{}, 0, 0
	}
	for i, d := range g.Deletes {
		rows := d.File.Count()
		for from := int64(0); from < rows; {
			take := min(rows-from, limit-n)
			cur.Keys = append(cur.Keys, KeyRange{Delete: i, From: from, Rows: take})
			seq = max(seq, d.Seq)
			from += take
			if n += take; n == limit {
				flush()
			}
		}
	}
	if len(cur.Keys) > 0 {
		flush()
	}
	return out
}

// scopes are the live equality deletes and data files by the scope an
// equality delete applies in: its partition, or "" for a global delete on
// an unpartitioned table (a global delete on a partitioned table is not
// converted; see unconvertible).
type scopes struct {
	unpartitioned bool
	keys          []string // sorted, those with deletes
	deletes       map[string][]EqualityDelete
	data          map[string][]int // task indexes
}

func newScopes(meta table.Metadata, tasks []table.FileScanTask, deletes []EqualityDelete) scopes {
	s := scopes{unpartitioned: meta.PartitionSpec().IsUnpartitioned(), deletes: map[string][]EqualityDelete{}, data: map[string][]int{}}
	for _, d := range deletes {
		k := s.of(d.File)
		if _, ok := s.deletes[k]; !ok {
			s.keys = append(s.keys, k)
		}
		s.deletes[k] = append(s.deletes[k], d)
	}
	slices.Sort(s.keys)
	for i, t := range tasks {
		k := s.of(t.File)
		s.data[k] = append(s.data[k], i)
	}
	return s
}

// of is the scope of a data or delete file: on an unpartitioned table
// every file is in the one scope "", whatever spec it was written with.
func (s scopes) of(df iceberg.DataFile) string {
	if s.unpartitioned {
		return ""
	}
	return PartitionKey(df)
}

// problem says why scope k's equality deletes cannot be converted, or "".
func (s scopes) problem(meta table.Metadata, tasks []table.FileScanTask, k string) string {
	for _, d := range s.deletes[k] {
		if why := unconvertible(meta, d.File); why != "" {
			return why
		}
	}
	for _, i := range s.data[k] {
		if f := tasks[i].File; f.FileFormat() != iceberg.ParquetFile {
			return fmt.Sprintf("data file %s is %s; only Parquet data files are read", f.FilePath(), f.FileFormat())
		}
	}
	return ""
}

// Converted lists the delete files a conversion group replaces besides
// its equality deletes, on v3 where each data file in vectors (the paths
// given a new deletion vector) gets one vector holding all of its
// positions: the vectors those data files had, and the v2 position delete
// files whose every attached data file (covers) gets a new vector. A v2
// file that still applies elsewhere stays, as the spec allows until all of
// its deletes are in vectors.
func Converted(g ConvertGroup, covers map[string][]string, vectors map[string]bool) []iceberg.DataFile {
	var out []iceberg.DataFile
	seen := map[string]bool{}
	for _, t := range g.Tasks {
		if !vectors[t.File.FilePath()] {
			continue
		}
		for _, d := range PositionDeletes(t) {
			k := RemovalKey(d)
			if seen[k] || !replacedWith(d, covers, vectors) {
				continue
			}
			seen[k] = true
			out = append(out, d)
		}
	}
	return out
}
