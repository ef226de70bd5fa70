// Package rebase is the commit engine of every rewrite: a snapshot is
// staged once — its manifests written — and rebased on the table's head
// at every attempt, where only a new manifest list is written, so that a
// lost race with a writer costs a metadata load and the manifests
// committed since, not a rewrite of the table's manifests. One commit
// loop (Env.commit) drives every snapshot through internal/commit's retry
// policy, recognises an attempt that landed though its answer was lost,
// and removes the files of attempts that did not land.
//
// What a snapshot holds is its Producer's, as iceberg-go's snapshot
// producers (table/snapshot_producers.go) decide theirs: a data rewrite
// (DataRewrite, REPLACE), a rewrite of delete files (DeleteRewrite,
// REPLACE), a conversion of equality deletes into position deletes
// (EqualityConversion, REPLACE), a removal of rows (RowRemoval, DELETE
// or OVERWRITE) and a rewrite of manifests (ManifestRewrite, REPLACE).
// All but the last replace groups of files (table.CompactionGroupResult) and commit in
// batches through a Committer; the last replaces manifests. The engine
// knows nothing of who calls it: what differs between callers — the
// summary's operation and properties, which delete files go, the words in
// errors — is the producer's.
//
// Correctness rules, each enforced here:
//   - New files carry the data sequence number of the snapshot the rewrite
//     started from, so equality deletes committed later still apply to
//     their rows.
//   - A position or equality delete file is removed only when every data
//     file the scan attached it to is replaced in the same commit.
//   - On every attempt a group whose inputs were removed meanwhile, or to
//     whose files a position delete or deletion vector committed since the
//     start may apply, is dropped; the rest commits.
//   - Files written for attempts that did not land are removed, unless a
//     commit's outcome is unknown: then they stay for unreferenced file
//     removal, which checks references before it deletes.
package rebase

import (
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/icekeeper/icekeeper/planner"
)

// Producer is one kind of rewrite snapshot: what its summary says and how
// errors name it. Its implementations are the operations: DataRewrite,
// DeleteRewrite, RowRemoval (GroupProducers) and ManifestRewrite.
type Producer interface {
	// Verb names the operation in errors: "commit <verb> of <table>".
	Verb() string
	// Properties are the summary properties every snapshot of the
	// operation carries, before what it adds and removes.
	Properties() iceberg.Properties
	// Operation is the summary operation of a snapshot that adds
	// addedData data files.
	Operation(addedData int64) table.Operation
}

// GroupProducer is a producer of snapshots that replace groups of files:
// each group's OldDataFiles and the delete files it removes go, its
// NewDataFiles come.
type GroupProducer interface {
	Producer
	// Settle sets the delete files each group of a batch removes
	// (SafePosDeletes, SafeDeletionVectors), given what the scan at the
	// start attached deletes to; the first group also removes the
	// dangling ones.
	Settle(batch []table.CompactionGroupResult, d Deletes) []table.CompactionGroupResult
	// ReplacesDeletes reports that the groups replace delete files rather
	// than data files: each group's SafePosDeletes and SafeDeletionVectors
	// are its inputs, its NewDataFiles delete files. Such a group is
	// dropped when a delete file it replaces is gone, or when a position
	// delete committed since the start may apply to a data file it writes
	// a deletion vector for: a data file has at most one. A v2 delete file
	// committed meanwhile simply stays beside the new ones.
	ReplacesDeletes() bool
}

// Guarded is a GroupProducer whose groups depend on data files they do not
// replace: a group is dropped when one of its Guards is no longer live at
// an attempt (another commit removed or replaced it).
type Guarded interface {
	GroupProducer
	// Guards are the paths of the data files group g depends on.
	Guards(g table.CompactionGroupResult) []string
}

// Caller names who commits, the part of a producer that differs between
// callers of one operation.
type Caller struct {
	// Job is the summary property planner.IcekeeperJobProperty of every
	// snapshot: how others tell icekeeper's commits from theirs.
	Job string
	// Name is what errors call the operation: "compaction".
	Name string
}

// Verb implements Producer.
func (c Caller) Verb() string { return c.Name }

// Properties implements Producer.
func (c Caller) Properties() iceberg.Properties {
	return iceberg.Properties{planner.IcekeeperJobProperty: c.Job}
}

// DataRewrite replaces groups of data files with new ones holding the same
// rows (compaction): REPLACE snapshots. A delete file goes with the data
// files once every file it may apply to is replaced.
type DataRewrite struct {
	Caller
	// Rows, when set, holds each group's row claim, which its snapshot's
	// summary carries.
	Rows *RowClaims
}

// Claims implements Claimer.
func (d DataRewrite) Claims(groups []table.CompactionGroupResult) iceberg.Properties {
	return d.Rows.properties(groups)
}

// Claimer is a producer whose snapshots carry a row claim for the groups
// they commit.
type Claimer interface {
	Claims(groups []table.CompactionGroupResult) iceberg.Properties
}

// Operation implements Producer: rows do not change.
func (DataRewrite) Operation(int64) table.Operation { return table.OpReplace }

// Settle implements GroupProducer: the delete files whose every attached
// data file the batch replaces.
func (DataRewrite) Settle(batch []table.CompactionGroupResult, d Deletes) []table.CompactionGroupResult {
	return safeDeletes(batch, d)
}

// ReplacesDeletes implements GroupProducer.
func (DataRewrite) ReplacesDeletes() bool { return false }

// DeleteRewrite replaces delete files with new ones deleting the same rows
// (delete-file compaction): REPLACE snapshots.
type DeleteRewrite struct {
	Caller
	// Rows, when set, holds each group's claim of the position-delete
	// rows it read and wrote (RowClaims.Deletes).
	Rows *RowClaims
}

// Claims implements Claimer.
func (d DeleteRewrite) Claims(groups []table.CompactionGroupResult) iceberg.Properties {
	return d.Rows.properties(groups)
}

// Operation implements Producer: rows do not change.
func (DeleteRewrite) Operation(int64) table.Operation { return table.OpReplace }

// Settle implements GroupProducer: the delete files each group planned to
// replace, checked against the same scan.
func (DeleteRewrite) Settle(batch []table.CompactionGroupResult, d Deletes) []table.CompactionGroupResult {
	return plannedDeletes(batch, d)
}

// ReplacesDeletes implements GroupProducer.
func (DeleteRewrite) ReplacesDeletes() bool { return true }

// EqualityConversion replaces equality delete files with position delete
// files or deletion vectors deleting the same rows (equality-delete
// conversion): REPLACE snapshots. Each group's SafePosDeletes are the
// equality deletes it converts (and, on v3, the position deletes its new
// vectors absorb), its NewDataFiles the position deletes written. The
// removal of an equality delete is sound only while every data file it
// applies to is one the group converted, so a group is dropped when one
// of them is removed meanwhile (Guards); an equality delete committed
// meanwhile is not the group's and stays.
type EqualityConversion struct {
	Caller
	// Converted maps a group's PartitionKey to the paths of the data files
	// it converted.
	Converted map[string][]string
	// Rows, when set, holds each group's claim of the position-delete
	// rows it wrote (RowClaims.Deletes).
	Rows *RowClaims
}

// Claims implements Claimer.
func (e EqualityConversion) Claims(groups []table.CompactionGroupResult) iceberg.Properties {
	return e.Rows.properties(groups)
}

// Operation implements Producer: rows do not change.
func (EqualityConversion) Operation(int64) table.Operation { return table.OpReplace }

// Settle implements GroupProducer: the delete files each group planned to
// replace.
func (EqualityConversion) Settle(batch []table.CompactionGroupResult, d Deletes) []table.CompactionGroupResult {
	return plannedDeletes(batch, d)
}

// ReplacesDeletes implements GroupProducer.
func (EqualityConversion) ReplacesDeletes() bool { return true }

// Guards implements Guarded: the data files g converted.
func (c EqualityConversion) Guards(g table.CompactionGroupResult) []string {
	return c.Converted[g.PartitionKey]
}

// RowRemoval removes rows: each group's data files are dropped whole or
// replaced by files without the removed rows (rows that aged out). Its
// snapshots are DELETE, or OVERWRITE where files are written.
type RowRemoval struct {
	Caller
	// Rows, when set, holds each group's row claim (with the rows it
	// removed), which its snapshot's summary carries.
	Rows *RowClaims
}

// Claims implements Claimer.
func (r RowRemoval) Claims(groups []table.CompactionGroupResult) iceberg.Properties {
	return r.Rows.properties(groups)
}

// Operation implements Producer.
func (RowRemoval) Operation(addedData int64) table.Operation {
	if addedData > 0 {
		return table.OpOverwrite
	}
	return table.OpDelete
}

// Settle implements GroupProducer: as for a data rewrite, the delete files
// whose every attached data file goes.
func (RowRemoval) Settle(batch []table.CompactionGroupResult, d Deletes) []table.CompactionGroupResult {
	return safeDeletes(batch, d)
}

// ReplacesDeletes implements GroupProducer.
func (RowRemoval) ReplacesDeletes() bool { return false }

// ManifestRewrite merges a snapshot's small data manifests into manifests
// near TargetBytes (see Env.RewriteManifests): a REPLACE snapshot that
// changes metadata only.
type ManifestRewrite struct {
	Caller
	// TargetBytes is the size merged manifests are written toward; a data
	// manifest under half of it is small.
	TargetBytes int64
	// MinManifests is how many small manifests make a rewrite worth it:
	// staged again on a head with fewer, the rewrite is left undone.
	MinManifests int
}

// Operation implements Producer: nothing is added or removed.
func (ManifestRewrite) Operation(int64) table.Operation { return table.OpReplace }

var (
	_ GroupProducer = DataRewrite{}
	_ GroupProducer = DeleteRewrite{}
	_ GroupProducer = RowRemoval{}
	_ Guarded       = EqualityConversion{}
	_ Producer      = ManifestRewrite{}
)
