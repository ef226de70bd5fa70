package compactor

import (
	"fmt"
	"strings"

	"github.com/icekeeper/icekeeper/internal/rebase"
	"github.com/icekeeper/icekeeper/internal/textlist"
	"github.com/icekeeper/icekeeper/jobs"
	"github.com/icekeeper/icekeeper/planner"
)

// Figures is what a run reports and records.
type Figures struct {
	// Common: a run the unchanged rule skipped reports nothing else.
	jobs.Common
	Strategy           string                 `json:"strategy"`
	TargetFileSizeMB   int                    `json:"targetFileSizeMB"`
	Plan               planner.CompactionPlan `json:"plan"`
	InputFiles         int                    `json:"inputFiles"`
	InputBytes         int64                  `json:"inputBytes"`
	InputRecords       int64                  `json:"inputRecords"`
	OutputFiles        int                    `json:"outputFiles"`
	OutputBytes        int64                  `json:"outputBytes"`
	OutputRecords      int64                  `json:"outputRecords"`
	DeleteFilesRemoved int                    `json:"deleteFilesRemoved"`
	// MetadataFilesRemoved are old metadata.json files deleted after the
	// commits, as write.metadata.delete-after-commit.enabled asks.
	MetadataFilesRemoved int `json:"metadataFilesRemoved"`
	GroupsPlanned        int `json:"groupsPlanned"`
	GroupsMerged         int `json:"groupsMerged"` // rewritten by the merge path
	// RowGroupsCopied are the merge path's input row groups copied byte for
	// byte, RowGroupsReencoded those it decoded and encoded again.
	RowGroupsCopied int `json:"rowGroupsCopied,omitempty"`
	// RowGroupsCopiedByStorage of the copied row groups were copied by the
	// storage itself (S3 part copies, copy_file_range): their bytes did
	// not pass through icekeeper. Fewer than RowGroupsCopied where a row
	// group is under S3's 5 MiB part or the store refuses part copies.
	RowGroupsCopiedByStorage int `json:"rowGroupsCopiedByStorage,omitempty"`
	RowGroupsReencoded       int `json:"rowGroupsReencoded,omitempty"`
	// PagesKept are pages of the re-encoded row groups' inputs written to
	// the output as they were, compressed (PLAIN pages, and dictionaries
	// of distinct values), neither decompressed nor compressed again.
	PagesKept int `json:"pagesKept,omitempty"`
	// OutputsProvenAsSent are the merge path's outputs whose rows were
	// proved from the bytes icekeeper sent, each part of which the store
	// acknowledged with its own digest, instead of read back from it.
	OutputsProvenAsSent int `json:"outputsProvenAsSent,omitempty"`
	GroupsCommitted     int `json:"groupsCommitted"`
	GroupsFailed        int `json:"groupsFailed"`
	GroupsDropped       int `json:"groupsDropped"` // dropped for a true conflict
	// RewriteBudget is the run's cap on input bytes (jobs.Options.
	// RewriteBytes; nil: none). GroupsDeferredByBudget of the plan's
	// groups, BytesDeferredByBudget of input, did not fit in it and are
	// left for the next run, which is queued first; they are not in Plan.
	// DeferredBecause says why when nothing fit.
	RewriteBudget          *int64 `json:"rewriteBudget,omitempty"`
	GroupsDeferredByBudget int    `json:"groupsDeferredByBudget,omitempty"`
	BytesDeferredByBudget  int64  `json:"bytesDeferredByBudget,omitempty"`
	DeferredBecause        string `json:"deferredBecause,omitempty"`
	// StagesDeferredByBudget name the stages after the data rewrite
	// (equality-delete conversion, delete-file compaction) that the run
	// left for a later run because the data rewrite had spent its cap.
	StagesDeferredByBudget []string `json:"stagesDeferredByBudget,omitempty"`
	// ChargedBytes is what the run charges to the rewrite budgets'
	// ledger: the input bytes of the data groups it rewrote (committed or
	// then dropped for a conflict), of the manifests it merged, of what
	// equality-delete conversion read, and of the position deletes it
	// rewrote. A dry run charges nothing.
	ChargedBytes int64 `json:"chargedBytes,omitempty"`
	// GroupsFannedOut is how many groups were rewritten by the workers of
	// every replica rather than by this run (Fanout.MinParts).
	GroupsFannedOut int      `json:"groupsFannedOut,omitempty"`
	Dropped         []string `json:"dropped,omitempty"`
	// Commits is the snapshots committed; CommitAttempts the commits
	// tried, of which Conflicts lost to a concurrent commit; Rebases the
	// attempts rebuilt on a newer head than the attempt before.
	Commits        int      `json:"commits"`
	CommitAttempts int      `json:"commitAttempts"`
	Conflicts      int      `json:"conflicts"`
	Rebases        int      `json:"rebases"`
	Errors         []string `json:"errors,omitempty"`
	manifestFigures
	convertFigures
	deleteFigures
	RewriteMs int64 `json:"rewriteMs"`
	CommitMs  int64 `json:"commitMs"`
}

// manifestFigures are the manifest rewrite's.
type manifestFigures struct {
	// ManifestsSmall is how many small data manifests the current snapshot
	// had, against the minimum that triggers a rewrite; ManifestsRewritten
	// of them were merged into ManifestsWritten.
	ManifestsSmall     int `json:"manifestsSmall"`
	ManifestsMinimum   int `json:"manifestsMinimum"`
	ManifestsRewritten int `json:"manifestsRewritten"`
	ManifestsWritten   int `json:"manifestsWritten"`
	// ManifestBytes is the size of the manifests merged, for the ledger.
	ManifestBytes int64 `json:"manifestBytes,omitempty"`
	// ManifestConflicts are rewrite attempts lost to concurrent commits,
	// ManifestRebases the attempts built on a newer head than the rewrite
	// read; ManifestsDeferred is set when the rewrite was left for the next
	// run (its retries spent, or the manifests replaced under it).
	ManifestConflicts int   `json:"manifestConflicts"`
	ManifestRebases   int   `json:"manifestRebases"`
	ManifestsDeferred bool  `json:"manifestsDeferred,omitempty"`
	ManifestMs        int64 `json:"manifestMs"`
	// metadataRemoved is added to the run's MetadataFilesRemoved.
	metadataRemoved int
}

// Text is the readable form `icekeeper run` prints, with the first few
// items of each list.
func (f *Figures) Text() string { return f.TextItems(textlist.Short) }

// TextItems is Text with at most limit items of each list (textlist.All:
// every one), the rest counted.
func (f *Figures) TextItems(limit int) string {
	var b strings.Builder
	line, skipped := f.Unchanged.Text(f.DryRun, "planned")
	b.WriteString(line)
	if skipped {
		return b.String()
	}
	planned := "planned"
	if f.DryRun {
		planned = "would be rewritten"
	}
	fmt.Fprintf(&b, "  %s toward %d MB: %d groups %s, %d files (%d bytes) in, %d files expected out",
		f.Strategy, f.TargetFileSizeMB, f.GroupsPlanned, planned, f.Plan.InputFiles(), f.Plan.InputBytes(), f.Plan.ExpectedOutputFiles())
	textlist.Lines(&b, limit, f.Plan.Groups, 0, func(g planner.Group) string {
		path := g.Path
		if g.PathReason != "" {
			path += ": " + g.PathReason
		}
		if c := g.Copies; c != nil && c.ToCopy > 0 {
			path += fmt.Sprintf(", ~%d of %d row groups copied as they are", c.ToCopy, c.RowGroups)
		}
		return fmt.Sprintf("group %s: %d files, %d bytes, %d rows -> ~%d files (%s) by %s", g.Partition, g.InputFiles, g.InputBytes, g.InputRecords, g.ExpectedOutputFiles, g.Reason, path)
	})
	textlist.Lines(&b, limit, f.Plan.Skipped, 0, func(s planner.Skip) string {
		return fmt.Sprintf("skip %s: %s", s.Partition, s.Reason)
	})
	if f.GroupsDeferredByBudget > 0 {
		why := ""
		if f.DeferredBecause != "" {
			why = ": " + f.DeferredBecause
		}
		fmt.Fprintf(&b, "\n  %d groups (%d bytes) deferred to the next run by the rewrite budget of %d bytes%s",
			f.GroupsDeferredByBudget, f.BytesDeferredByBudget, *f.RewriteBudget, why)
	}
	if len(f.StagesDeferredByBudget) > 0 {
		fmt.Fprintf(&b, "\n  %s deferred to the next run: the rewrite budget of %d bytes is spent", strings.Join(f.StagesDeferredByBudget, " and "), *f.RewriteBudget)
	}
	if f.ChargedBytes > 0 {
		fmt.Fprintf(&b, "\n  %d bytes charged to the rewrite budgets", f.ChargedBytes)
	}
	if f.GroupsFannedOut > 0 {
		fmt.Fprintf(&b, "\n  %d groups fanned out to the workers of every replica", f.GroupsFannedOut)
	}
	if f.CommitAttempts > 0 {
		fmt.Fprintf(&b, "\n  committed %d groups (%d failed, %d dropped for conflicts, %d rewritten by merging columns): %d files -> %d files, %d -> %d bytes, %d delete files removed",
			f.GroupsCommitted, f.GroupsFailed, f.GroupsDropped, f.GroupsMerged, f.InputFiles, f.OutputFiles, f.InputBytes, f.OutputBytes, f.DeleteFilesRemoved)
		fmt.Fprintf(&b, "\n  %d commits in %d attempts (%d lost to concurrent commits, %d rebased), %d old metadata files removed, rewrite %d ms, commit %d ms, %d ms in all",
			f.Commits, f.CommitAttempts, f.Conflicts, f.Rebases, f.MetadataFilesRemoved, f.RewriteMs, f.CommitMs, f.DurationMs)
		if f.RowGroupsCopied+f.RowGroupsReencoded > 0 {
			fmt.Fprintf(&b, "\n  merged row groups: %d copied byte for byte (%d of them by the storage), %d re-encoded (%d of their pages kept as they were)", f.RowGroupsCopied, f.RowGroupsCopiedByStorage, f.RowGroupsReencoded, f.PagesKept)
			if f.OutputsProvenAsSent > 0 {
				fmt.Fprintf(&b, "; %d outputs proven from the bytes sent, acknowledged by the store", f.OutputsProvenAsSent)
			}
		}
	}
	switch m := f.manifestFigures; {
	case m.ManifestsMinimum == 0:
	case m.ManifestsRewritten > 0:
		fmt.Fprintf(&b, "\n  manifests: %d small ones rewritten into %d, sorted by partition, %d ms (%d attempts lost to concurrent commits, %d rebased)",
			m.ManifestsRewritten, m.ManifestsWritten, m.ManifestMs, m.ManifestConflicts, m.ManifestRebases)
	case m.ManifestsDeferred:
		fmt.Fprintf(&b, "\n  manifests: %d small ones; the rewrite lost %d attempts to concurrent commits and is left for the next run", m.ManifestsSmall, m.ManifestConflicts)
	case m.ManifestsSmall < m.ManifestsMinimum:
		fmt.Fprintf(&b, "\n  manifests: %d small ones, under the minimum of %d to rewrite them", m.ManifestsSmall, m.ManifestsMinimum)
	case f.DryRun:
		fmt.Fprintf(&b, "\n  manifests: %d small ones would be rewritten, sorted by partition", m.ManifestsSmall)
	}
	would := ""
	if f.DryRun {
		would = " would be"
	}
	cv := f.convertFigures
	textlist.Lines(&b, limit, cv.ConvertPlan, 0, func(g planner.ConvertGroup) string {
		kept, chunks := "", ""
		if g.Kept > 0 {
			kept = fmt.Sprintf(" (%d left for later)", g.Kept)
		}
		if g.Chunks > 1 {
			chunks = fmt.Sprintf(" in %d chunks of keys", g.Chunks)
		}
		return fmt.Sprintf("convert %s: %d equality delete files (%d keys)%s%s converted into positions in %d data files%s, ~%d bytes of key columns to read",
			g.Partition, g.EqualityDeletes, g.Keys, kept, would, g.DataFiles, chunks, g.ReadBytes)
	})
	textlist.Lines(&b, limit, cv.ConvertSkipped, 0, func(s planner.Skip) string {
		return fmt.Sprintf("skip convert %s: %s", s.Partition, s.Reason)
	})
	if cv.ConvertCommits > 0 || cv.ConvertGroupsDropped > 0 {
		fmt.Fprintf(&b, "\n  equality deletes: %d partitions converted (%d dropped for conflicts) in %d chunks of keys, %d equality delete files -> %d position delete files or vectors, %d rows matched, %d bytes read (%d data files skipped by their bounds), %d commits (%d attempts lost to concurrent commits), %d ms",
			cv.ConvertGroupsCommitted, cv.ConvertGroupsDropped, cv.ConvertChunks, cv.EqualityDeletesConverted, cv.ConvertDeletesWritten, cv.ConvertRowsMatched, cv.ConvertBytesRead, cv.ConvertFilesSkipped, cv.ConvertCommits, cv.ConvertConflicts, cv.ConvertMs)
	}
	if cv.ConvertFilesIndexed > 0 || cv.ConvertFilesLookedUp > 0 || cv.ConvertIndexForgotten > 0 {
		fmt.Fprintf(&b, "\n  key index: %d data files read and indexed, %d matched by lookup without being read, %d rows found, %d bytes of index read, %d indexed files forgotten",
			cv.ConvertFilesIndexed, cv.ConvertFilesLookedUp, cv.ConvertIndexHits, cv.ConvertIndexBytesRead, cv.ConvertIndexForgotten)
	}
	if cv.ConvertIndexOff != "" {
		fmt.Fprintf(&b, "\n  key index not used for the rest of the run: %s", cv.ConvertIndexOff)
	}
	d := f.deleteFigures
	textlist.Lines(&b, limit, d.DeletePlan, 0, func(g planner.DeleteGroup) string {
		return fmt.Sprintf("deletes %s: the position deletes of %d data files, in %d files,%s rewritten into %d", g.Partition, g.DataFiles, g.DeleteFiles, would, g.ExpectedOutputFiles)
	})
	textlist.Lines(&b, limit, d.DeleteSkipped, 0, func(s planner.Skip) string {
		return fmt.Sprintf("skip deletes %s: %s", s.Partition, s.Reason)
	})
	if d.DeleteCommits > 0 || d.DeleteGroupsDropped > 0 {
		fmt.Fprintf(&b, "\n  deletes: %d partitions rewritten (%d dropped for conflicts), %d delete files and vectors -> %d, %d positions -> %d, %d commits (%d attempts lost to concurrent commits), %d ms",
			d.DeleteGroupsCommitted, d.DeleteGroupsDropped, d.DeletesRemoved, d.DeletesWritten, d.PositionsIn, d.PositionsOut, d.DeleteCommits, d.DeleteConflicts, d.DeleteMs)
	}
	prefixed := func(prefix string) func(string) string { return func(s string) string { return prefix + s } }
	textlist.Lines(&b, limit, f.Dropped, 0, prefixed("dropped "))
	textlist.Lines(&b, limit, d.DeleteDropped, 0, prefixed("dropped deletes "))
	textlist.Lines(&b, limit, cv.ConvertDropped, 0, prefixed("dropped conversion "))
	textlist.Lines(&b, limit, f.Errors, 0, prefixed("error "))
	return b.String()
}

// Empty reports whether the run stopped before it read the table: a
// failed run's figures are then only zeros, not worth printing.
func (f *Figures) Empty() bool { return f.Unchanged == nil && f.Strategy == "" }

// Counters implements jobs.Counter.
func (f *Figures) Counters() map[string]float64 {
	return map[string]float64{"bytes_compacted": float64(f.InputBytes), "files_compacted": float64(f.InputFiles), "files_written": float64(f.OutputFiles),
		"deletes_rewritten": float64(f.DeletesRemoved), "equality_deletes_converted": float64(f.EqualityDeletesConverted),
		"convert_deletes_written": float64(f.ConvertDeletesWritten), "convert_rows_matched": float64(f.ConvertRowsMatched),
		"convert_bytes_read": float64(f.ConvertBytesRead), "convert_chunks": float64(f.ConvertChunks)}
}

// addRewrites counts the rewrite stage.
func (f *Figures) addRewrites(rws []rewritten) {
	for _, rw := range rws {
		switch {
		case rw.err != nil:
			f.GroupsFailed++
			f.Errors = append(f.Errors, rw.err.Error())
		case rw.path == planner.PathMerge:
			f.GroupsMerged++
			f.RowGroupsCopied += rw.rowGroups.Copied
			f.RowGroupsCopiedByStorage += rw.rowGroups.ByStorage
			f.RowGroupsReencoded += rw.rowGroups.Reencoded
			f.PagesKept += rw.rowGroups.KeptPages
			f.OutputsProvenAsSent += rw.provenAsSent
		}
	}
}

// spent is what the run has taken of its rewrite cap so far: its data
// groups and its manifest rewrite.
func (f *Figures) spent() int64 { return f.Plan.InputBytes() + f.ManifestBytes }

// deferStage reports whether the stage is left for a later run: the run
// has a rewrite cap and the data rewrite and manifest rewrite spent it.
// A stage that runs is not capped further: like a plan's first group,
// it may overdraw what is left, and the ledger charges it.
func (f *Figures) deferStage(opts jobs.Options, stage string) bool {
	if opts.RewriteBytes == nil || f.spent() < *opts.RewriteBytes {
		return false
	}
	f.StagesDeferredByBudget = append(f.StagesDeferredByBudget, stage)
	return true
}

// charge sets ChargedBytes from what the stages did.
func (f *Figures) charge(opts jobs.Options) {
	if opts.DryRun {
		return
	}
	f.ChargedBytes = f.spent() + f.ConvertBytesRead + f.DeleteBytes
}

// addCommits counts the commit stage.
func (f *Figures) addCommits(c rebase.Committed) {
	f.Commits, f.CommitAttempts, f.Conflicts, f.Rebases = c.Commits, c.Stats.Attempts, c.Stats.Conflicts, c.Rebases
	f.GroupsDropped, f.Dropped = len(c.Dropped), c.Dropped
	f.DeleteFilesRemoved, f.MetadataFilesRemoved = c.DeletesRemoved, c.MetadataRemoved
	for _, r := range c.Groups {
		f.GroupsCommitted++
		f.InputFiles += len(r.OldDataFiles)
		for _, df := range r.OldDataFiles {
			f.InputBytes += df.FileSizeBytes()
			f.InputRecords += df.Count()
		}
		f.OutputFiles += len(r.NewDataFiles)
		for _, df := range r.NewDataFiles {
			f.OutputBytes += df.FileSizeBytes()
			f.OutputRecords += df.Count()
		}
	}
}
