package planner

import (
	"fmt"
	"slices"
	"strconv"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
)

// DeleteGroup is one partition whose position deletes are rewritten: the
// position delete files and deletion vectors of its data files, merged
// into one delete file per data file on v2 (file-scoped) or one deletion
// vector per data file, all in one Puffin file, on v3. Positions that
// apply to no live data file are dropped on the way.
type DeleteGroup struct {
	Partition string `json:"partition"`
	// DataFiles are the data files whose deletes are rewritten;
	// DeleteFiles the distinct files their position deletes are in now,
	// and ExpectedOutputFiles the files they will be in.
	DataFiles           int `json:"dataFiles"`
	DeleteFiles         int `json:"deleteFiles"`
	ExpectedOutputFiles int `json:"expectedOutputFiles"`

	// Tasks are the data files' scan tasks, with the deletes the rewrite
	// reads; Remove the delete files and vectors the rewrite replaces.
	Tasks  []table.FileScanTask `json:"-"`
	Remove []iceberg.DataFile   `json:"-"`
}

// Deletes is delete-file compaction's decision: the partitions whose
// position deletes are due for a rewrite. It takes the data files of
// tasks not in taken (those a data rewrite takes, by path), by partition,
// where their position deletes are in at least minFiles distinct files
// (0: never) and the rewrite gains: on v2 a data file has more than one
// delete file to apply, on v3 the vectors are in more than one Puffin
// file. covers maps a position delete file's path to the data files the
// scan attached it to; a delete file is replaced only when all of them are
// in the group. It reads metadata only. A partition whose deletes cannot
// be read (not Parquet or Puffin) is skipped with the reason.
func Deletes(meta table.Metadata, tasks []table.FileScanTask, covers map[string][]string, taken map[string]bool, minFiles int) ([]DeleteGroup, []Skip) {
	if minFiles <= 0 || meta.Version() < 2 {
		return nil, nil
	}
	byPart := map[string][]table.FileScanTask{}
	var parts []string
	for _, t := range tasks {
		if taken[t.File.FilePath()] || len(PositionDeletes(t)) == 0 {
			continue
		}
		pk := PartitionKey(t.File)
		if _, ok := byPart[pk]; !ok {
			parts = append(parts, pk)
		}
		byPart[pk] = append(byPart[pk], t)
	}
	slices.Sort(parts)
	var groups []DeleteGroup
	var skipped []Skip
	for _, pk := range parts {
		ts := byPart[pk]
		label := PartitionLabel(meta, ts[0].File)
		targets := map[string]bool{}
		for _, t := range ts {
			targets[t.File.FilePath()] = true
		}
		files := map[string]bool{}
		removed := map[string]bool{}
		var remove []iceberg.DataFile
		var unreadable string
		applied := 0 // delete files applied to data files, summed
		for _, t := range ts {
			for _, d := range PositionDeletes(t) {
				applied++
				files[d.FilePath()] = true
				if f := d.FileFormat(); f != iceberg.ParquetFile && f != iceberg.PuffinFile {
					unreadable = fmt.Sprintf("position delete file %s is %s; only Parquet and Puffin are read", d.FilePath(), f)
				}
				k := RemovalKey(d)
				if removed[k] || !replacedWith(d, covers, targets) {
					continue
				}
				removed[k] = true
				remove = append(remove, d)
			}
		}
		if unreadable != "" {
			skipped = append(skipped, Skip{Partition: label, Files: len(ts), Reason: unreadable})
			continue
		}
		// On v2 the rewrite leaves one delete file per data file: it gains
		// where a data file has more than one to apply. On v3 it leaves
		// one Puffin file.
		out, before := len(ts), applied
		if meta.Version() >= 3 {
			out, before = 1, len(files)
		}
		if len(files) < minFiles || out >= before {
			continue
		}
		groups = append(groups, DeleteGroup{Partition: label, DataFiles: len(ts), DeleteFiles: len(files), ExpectedOutputFiles: out,
			Tasks: ts, Remove: remove})
	}
	return groups, skipped
}

// PositionDeletes are the position delete files and deletion vectors the
// scan attached to t's data file.
func PositionDeletes(t table.FileScanTask) []iceberg.DataFile {
	var out []iceberg.DataFile
	for _, d := range t.DeleteFiles {
		if d.ContentType() == iceberg.EntryContentPosDeletes {
			out = append(out, d)
		}
	}
	return append(out, t.DeletionVectorFiles...)
}

// replacedWith reports whether the rewrite of targets' deletes replaces d:
// a deletion vector when its data file is a target, a position delete
// file when every data file the scan attached it to is. One attached to a
// file outside the group still applies there and stays; its positions for
// the targets are carried over all the same.
func replacedWith(d iceberg.DataFile, covers map[string][]string, targets map[string]bool) bool {
	if d.FileFormat() == iceberg.PuffinFile {
		ref := d.ReferencedDataFile()
		return ref != nil && targets[*ref]
	}
	cs := covers[d.FilePath()]
	for _, p := range cs {
		if !targets[p] {
			return false
		}
	}
	return len(cs) > 0
}

// RemovalKey names a file to remove in a manifest. Deletion vectors share
// one Puffin file, so a vector is its file and offset.
func RemovalKey(df iceberg.DataFile) string {
	if df.FileFormat() == iceberg.PuffinFile && df.ContentOffset() != nil {
		return df.FilePath() + "@" + strconv.FormatInt(*df.ContentOffset(), 10)
	}
	return df.FilePath()
}
