// Package compactor is icebergCompaction. A run goes through four stages,
// each returning its result to the next:
//
//   - scan (scan.go): the live data files of the current snapshot, the
//     deletes attached to each, and their commit times;
//   - plan (package planner): the groups, and the path that rewrites
//     each — the parquet-go column merge of package merge for delete-free
//     files of one schema, iceberg-go's reader and writer otherwise;
//   - rewrite (rewrite.go): the groups, Parallelism at a time, each output
//     read back before it may be committed;
//   - commit (package rebase, the engine of every rewrite): REPLACE
//     snapshots in batches, staged once and rebased on the current head at
//     every attempt.
//
// Then equality-delete conversion (planned by package planner;
// equality.go): the equality deletes of the data files the data rewrite
// left alone become file-scoped position deletes (v2) or deletion vectors
// (v3), committed by the same engine (rebase.EqualityConversion).
//
// Then delete-file compaction (planned by package planner;
// deletes_rewrite.go, posdeletes.go): the position deletes of the data files the data rewrite
// left alone are rewritten, one delete file or deletion vector per data
// file, and committed by the same committer.
//
// Before the data files, the manifest rewrite (manifests.go) merges small
// manifests, committed by the same engine.
//
// Correctness rules, each enforced here:
//   - Rewritten files carry the data sequence number of the snapshot the
//     rewrite started from, so equality deletes committed later still
//     apply to their rows.
//   - A position or equality delete file is removed only when every data
//     file the scan attached it to is replaced in the same commit. A delete
//     that might still apply stays.
//   - When a writer commits meanwhile, the commit is rebased on the new
//     head; a group whose files were removed meanwhile, or to whose files a
//     position delete or deletion vector committed since the start may
//     apply, is dropped; the rest commits.
//   - Outputs of groups that do not commit are deleted at once, unless a
//     commit's outcome is unknown: then they stay for unreferenced file
//     removal, which checks references before it deletes.
//   - A group that cannot be read (a corrupt or missing data file) fails
//     the whole run before anything is committed.
package compactor

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"

	"github.com/icekeeper/icekeeper/compactor/merge"
	"github.com/icekeeper/icekeeper/internal/commit"
	"github.com/icekeeper/icekeeper/internal/cost"
	"github.com/icekeeper/icekeeper/internal/objects"
	"github.com/icekeeper/icekeeper/internal/rebase"
	"github.com/icekeeper/icekeeper/internal/state"
	"github.com/icekeeper/icekeeper/jobs"
	"github.com/icekeeper/icekeeper/maintenance"
	"github.com/icekeeper/icekeeper/planner"
)

// Job is icebergCompaction.
type Job struct {
	// Parallelism is how many groups are rewritten at once (default 2).
	// It is the memory knob: a group's peak is about one Parquet row group
	// being written (write.parquet.row-group-size-bytes, 128 MiB by
	// default) plus the Arrow batches in flight while reading, so peak
	// memory is roughly Parallelism × (row group size + 64 MiB). A merged
	// group needs less: its row group, compressed, and three input files.
	Parallelism int
	// BatchGroups and BatchBytes bound one commit: at most BatchGroups
	// groups (default 100) and, once past the first group, at most
	// BatchBytes of input (default 8 GiB). Once a commit has lost a race
	// to a writer, later commits hold at most BusyBatchGroups (default 8).
	// A batch is the unit of partial progress: a crash, a timeout or a
	// spent retry budget loses at most one batch of work.
	BatchGroups     int
	BatchBytes      int64
	BusyBatchGroups int
	// Retry is the commit retry policy where the table sets no
	// commit.retry.* property (default commit.DefaultPolicy()).
	Retry *commit.Policy
	// MinInputFiles is the planner's minimum of small files per partition.
	MinInputFiles int
	// ConvertChunkKeys bounds the equality delete keys conversion holds in
	// memory at once (default planner.DefaultConvertChunkKeys, about 120
	// MiB of long keys). It bounds memory, not work: a partition's due
	// equality deletes are converted in one run, in as many chunks as
	// their keys need, each chunk reading the key columns of the data
	// files it applies to again.
	ConvertChunkKeys int64
	// KeyIndex keeps, per table, the keys and row positions of the data
	// files conversion has read (see keyindex.go), so that a run reads
	// only the new equality deletes and the data files not yet indexed.
	// Nil: every run reads the key columns of every data file a deleted
	// key may be in.
	KeyIndex state.KeyIndex
	// Logger receives the run's planning, rewrites and commits at debug
	// level (nil: none).
	Logger *slog.Logger

	// SkipRowCheck turns off the row check of every rewritten group, as
	// the bucket's compaction.skipRowCheck does: its inputs' rows (deletes
	// applied) and its outputs' rows, read back, must have one row digest
	// (package rowdigest) before anything is committed, and the digests go
	// into the snapshot's summary. The check reads every input and output
	// a second time (BENCHMARKS.md gives its cost); without it the summary
	// carries no claim.
	SkipRowCheck bool
	// NoStorageCopies has the merge path read and write the healthy row
	// groups it copies, rather than have the storage copy them (S3 part
	// copies, copy_file_range on local disk): the path before storage
	// copies, for stores where a part copy costs more than the bytes, and
	// for measuring one beside the other.
	NoStorageCopies bool
	// tamper, when set (tests only), runs on a group's outputs before its
	// row check (fault injection).
	tamper func(ctx context.Context, tbl *table.Table, outputs []iceberg.DataFile) error

	// wholeFileBytes overrides the merge path's whole-file read size (tests
	// only: 1 sends every input through ranged reads).
	wholeFileBytes int64
	// wholeDeleteBytes overrides the size up to which conversion reads an
	// equality delete file whole (tests only: 1 sends every delete file
	// through ranged reads).
	wholeDeleteBytes int64
	// beforeCommit, when set (tests only), runs before each commit attempt;
	// afterCommit may replace a commit's result, and commitTable the
	// catalog's commit (fault injection).
	beforeCommit func(attempt int)
	// beforeManifestCommit runs before each manifest rewrite attempt.
	beforeManifestCommit func(attempt int)
	afterCommit          func(error) error
	commitTable          func(context.Context, table.Identifier, []table.Requirement, []table.Update) (table.Metadata, string, error)

	// scans are the snapshot scans of the fanned-out groups this replica
	// rewrites.
	scans scanCache
}

func (j *Job) log() *slog.Logger {
	if j.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return j.Logger
}

// Definition is icebergCompaction's definition, with the job's knobs.
func (j *Job) Definition() *jobs.Definition[Settings, *Figures] {
	return &jobs.Definition[Settings, *Figures]{
		Name:     maintenance.Compaction,
		Settings: settingsOf,
		Figures: func(s Settings, _ jobs.Options) *Figures {
			return &Figures{TargetFileSizeMB: s.TargetFileSizeMB}
		},
		Run:   j.run,
		Check: check,
		Unchanged: &jobs.Rule[Settings]{
			Knobs: j.MinInputFiles,
			Idle:  j.idle,
		},
		Pending: pending,
		// What waits for compaction is every file added since the run
		// that last took the table whole.
		Oldest: func(meta table.Metadata, _ Settings, base *planner.Base, _ time.Time) (planner.Oldest, bool, error) {
			o, ok := planner.PendingChanges(meta, base)
			return o, ok, nil
		},
		RunPart:   j.RunPart,
		Rewritten: func(f *Figures) int64 { return f.ChargedBytes },
		// S3 Tables bills compaction by the data files it rewrites.
		Processed: func(f *Figures) cost.Work {
			return cost.Work{Objects: int64(f.InputFiles), Bytes: f.InputBytes,
				Sorted: f.Strategy == planner.PathSort || f.Strategy == planner.PathZOrder || f.Strategy == planner.PathHilbert, Billed: true}
		},
		Summary: summary,
	}
}

// Settings are what steers a compaction run.
type Settings struct {
	TargetFileSizeMB int
	Strategy         maintenance.Strategy
	// MinFileAge leaves files committed more recently to the writer.
	MinFileAge time.Duration
	// MinManifests is how many small data manifests the current snapshot
	// must have before they are rewritten (0: never).
	MinManifests int
	// MinDeleteFiles is how many distinct position delete files a
	// partition's data files (those no data group takes) must have before
	// their deletes are rewritten (0: never).
	MinDeleteFiles int
	// MinEqualityDeletes is how many equality delete files a partition
	// must have before they are converted into position deletes (0: never;
	// the data rewrite applies them).
	MinEqualityDeletes int
	// KeyIndex says conversion uses the key index (Job.KeyIndex).
	KeyIndex bool
	// SkipRowCheck says groups are committed without their row check.
	SkipRowCheck bool
}

// SettingsOf picks compaction's settings out of a table's.
func SettingsOf(s maintenance.Settings) Settings {
	c := s.For(maintenance.Compaction).Compaction()
	return Settings{TargetFileSizeMB: *c.TargetFileSizeMB, Strategy: c.Strategy,
		MinFileAge: time.Duration(s.Knobs.MinFileAgeMinutes) * time.Minute, MinManifests: s.Knobs.MinManifestsToRewrite,
		MinDeleteFiles: s.Knobs.MinDeleteFilesToRewrite, MinEqualityDeletes: s.Knobs.MinEqualityDeleteFilesToConvert, KeyIndex: s.Knobs.ConvertKeyIndex,
		SkipRowCheck: s.Knobs.SkipRowCheck}
}

func settingsOf(s maintenance.Settings) (Settings, error) { return SettingsOf(s), nil }

// check refuses a strategy the table cannot take (sort or z-order
// without a sort order this engine applies) when it is configured, not
// at the next scheduled run.
func check(tbl *table.Table, s Settings) error {
	if _, err := planner.Strategy(s.Strategy, tbl.Metadata()); err != nil {
		return fmt.Errorf("%w: %s: %w", maintenance.ErrInvalid, strings.Join(tbl.Identifier(), "."), err)
	}
	return nil
}

// run is the manifests, then the data files, whose planning then reads
// the fewer manifests, then the equality deletes and the position deletes
// of the data files left alone. The stages plan on the table as the run
// loaded it; only a stage's own commit makes the next plan on a newer
// one: the table the commit returned, or loaded again.
func (j *Job) run(ctx context.Context, r *jobs.Run[Settings], fig *Figures) error {
	s := r.Settings
	tbl, err := r.Load(ctx)
	if err != nil {
		return err
	}
	start := tbl
	begin := time.Now()
	m := &fig.manifestFigures
	after, err := j.rewriteManifests(ctx, r.Target, tbl, s, r.Options, m)
	if err != nil {
		return err
	}
	m.ManifestMs = time.Since(begin).Milliseconds()
	if after != nil {
		// The manifest rewrite committed: the data stage plans on the
		// table as that commit left it, as the catalog answered.
		tbl = after
	}
	ds, err := j.compactData(ctx, r.Target, tbl, s, r.Options, fig)
	fig.MetadataFilesRemoved += m.metadataRemoved
	if err == nil && ds.tbl != nil && !fig.deferStage(r.Options, "equality-delete conversion") {
		err = j.convertStage(ctx, r.Target, s, r.Options, &ds, &fig.convertFigures)
	}
	if err == nil && ds.tbl != nil && !fig.deferStage(r.Options, "delete-file compaction") {
		err = j.deleteStage(ctx, r.Target, s, r.Options, ds, &fig.deleteFigures)
	}
	fig.charge(r.Options)
	switch {
	case err != nil:
	case settled(fig, ds):
		r.Settled(start, planner.CompactionValidUntil(ds.sc.files, s.MinFileAge, r.Now))
	case rewroteAll(fig, ds):
		// The table the run's own commits left may need nothing more:
		// then the next check rests on this run and reads one metadata
		// file, not every manifest again.
		// A decision that cannot be made (the manifest list unread) only
		// leaves the next check to evaluate in full.
		if after, until, ok, err := j.settledAfter(ctx, r, ds); err == nil && ok {
			r.Settled(after, until)
		}
	}
	return err
}

// rewroteAll reports whether the run did all it planned and nothing else
// changed the table meanwhile: its only commits are the data rewrite's,
// of every planned group, none of them lost to or rebased on another
// commit, and no manifest rewrite, conversion or delete rewrite is left.
// Then the table it left is the one it planned on with the groups
// replaced, which is what settledAfter decides on.
func rewroteAll(f *Figures, ds dataStage) bool {
	m, done := f.manifestFigures, ds.done
	return ds.committed && !done.Unknown && done.Stats.Conflicts == 0 && done.Rebases == 0 && len(done.Dropped) == 0 &&
		f.GroupsCommitted == f.GroupsPlanned && f.GroupsFailed == 0 && f.GroupsDeferredByBudget == 0 && len(f.StagesDeferredByBudget) == 0 &&
		!m.ManifestsDeferred && len(f.ConvertPlan) == 0 && f.ConvertCommits == 0 && len(f.DeletePlan) == 0
}

// settledAfter decides whether the table the data rewrite left, ds.after,
// is settled: the planner on the files it planned on with the committed
// groups replaced (planner.SettledAfterRewrite), and the manifest
// rewrite's count of small manifests on the new snapshot's manifest list,
// the one file it reads.
func (j *Job) settledAfter(ctx context.Context, r *jobs.Run[Settings], ds dataStage) (*table.Table, time.Time, bool, error) {
	s, after := r.Settings, ds.after
	meta := after.Metadata()
	removed := map[string]bool{}
	var added []planner.File
	for _, g := range ds.done.Groups {
		for _, df := range g.OldDataFiles {
			removed[df.FilePath()] = true
		}
		for _, df := range g.NewDataFiles {
			added = append(added, planner.File{Path: df.FilePath(), Partition: planner.PartitionKey(df), Label: planner.PartitionLabel(meta, df),
				Format: strings.ToLower(string(df.FileFormat())), SizeBytes: df.FileSizeBytes(), Records: df.Count(),
				OldSpec: int(df.SpecID()) != meta.DefaultPartitionSpec(), AddedAt: r.Now})
		}
	}
	ok, until, err := planner.SettledAfterRewrite(ds.sc.files, removed, added, planner.CompactionOptions{TargetBytes: int64(s.TargetFileSizeMB) << 20,
		MinInputFiles: j.MinInputFiles, MinFileAge: s.MinFileAge, Now: r.Now})
	if err != nil || !ok {
		return nil, time.Time{}, false, err
	}
	var m manifestFigures
	dry := r.Options
	dry.DryRun = true
	if _, err := j.rewriteManifests(ctx, r.Target, after, s, dry, &m); err != nil {
		return nil, time.Time{}, false, err
	}
	if m.ManifestsMinimum > 0 && m.ManifestsSmall >= m.ManifestsMinimum {
		return nil, time.Time{}, false, nil
	}
	return after, until, true, nil
}

// idle is planner.CompactionIdle with the job's minimum of small files
// and the settings' target and manifest minimum.
func (j *Job) idle(meta table.Metadata, s Settings) (string, bool) {
	return planner.CompactionIdle(meta, orDefault(j.MinInputFiles, planner.DefaultMinInput), s.MinManifests, int64(s.TargetFileSizeMB)<<20)
}

// settled reports whether a run evaluated the table in full and left
// nothing to do: no manifest rewrite due or deferred, no group, equality
// delete conversion or delete rewrite planned, no group deferred by the
// rewrite budget, no commit. Only then may a later run on the same
// snapshot rest on it; a run that planned work and did not finish it
// (groups dropped, a rewrite deferred) leaves the next run to look again.
func settled(f *Figures, ds dataStage) bool {
	m := f.manifestFigures
	manifestsDone := m.ManifestsRewritten == 0 && !m.ManifestsDeferred && (m.ManifestsMinimum == 0 || m.ManifestsSmall < m.ManifestsMinimum)
	return manifestsDone && f.GroupsPlanned == 0 && f.GroupsDeferredByBudget == 0 && len(f.StagesDeferredByBudget) == 0 && len(f.ConvertPlan) == 0 && f.ConvertCommits == 0 &&
		len(f.DeletePlan) == 0 && !ds.committed && f.CommitAttempts == 0
}

// dataStage is what the data rewrite leaves to delete-file compaction:
// the table and scan it planned on, the data files its groups take, and
// whether it committed (then the deletes are planned on a fresh scan).
type dataStage struct {
	tbl       *table.Table
	sc        scanned
	taken     map[string]bool
	committed bool
	// done is what the rewrite's commits did, after the table they left.
	done  rebase.Committed
	after *table.Table
	// eqs are tbl's live equality deletes, when eqsListed.
	eqs       []planner.EqualityDelete
	eqsListed bool
}

// anyEqualityDeletes reports whether an equality delete applies to any of
// the tasks' files.
func anyEqualityDeletes(tasks []table.FileScanTask) bool {
	return slices.ContainsFunc(tasks, func(t table.FileScanTask) bool { return len(t.EqualityDeleteFiles) > 0 })
}

// deleteStage plans delete-file compaction on what the data rewrite left,
// and runs it unless this is a dry run. When the data rewrite committed,
// the plan is made again on the table as it is now.
func (j *Job) deleteStage(ctx context.Context, t jobs.Target, s Settings, opts jobs.Options, ds dataStage, f *deleteFigures) error {
	begin := time.Now()
	defer func() { f.DeleteMs = time.Since(begin).Milliseconds() }()
	f.DeleteFilesMinimum = s.MinDeleteFiles
	f.DeletePlan, f.DeleteSkipped = planner.Deletes(ds.tbl.Metadata(), ds.sc.tasks, ds.sc.deletes.Covers, ds.taken, s.MinDeleteFiles)
	if opts.DryRun || len(f.DeletePlan) == 0 {
		return nil
	}
	tbl, sc := ds.tbl, ds.sc
	if ds.committed {
		var err error
		if tbl, err = t.Bucket.Refresh(ctx, t.Table, ds.after); err != nil {
			return err
		}
		if sc, err = scan(ctx, tbl, false); err != nil {
			return err
		}
		if f.DeletePlan, f.DeleteSkipped = planner.Deletes(tbl.Metadata(), sc.tasks, sc.deletes.Covers, nil, s.MinDeleteFiles); len(f.DeletePlan) == 0 {
			return nil
		}
	}
	return j.compactDeletes(ctx, t, tbl, sc, f)
}

// compactData plans on tbl, as the run loaded it, and rewrites.
func (j *Job) compactData(ctx context.Context, t jobs.Target, tbl *table.Table, s Settings, opts jobs.Options, fig *Figures) (dataStage, error) {
	var ds dataStage
	policy, err := j.policy(tbl)
	if err != nil {
		return ds, fmt.Errorf("compaction of %s: %w", t.Table, err)
	}
	empty := tbl.CurrentSnapshot() == nil
	planStart := time.Now()
	var sc scanned
	var eqs []planner.EqualityDelete
	if !empty {
		if sc, err = scan(ctx, tbl, s.MinFileAge > 0); err != nil {
			return ds, err
		}
		// Conversion needs the table's equality deletes, listed only when
		// it is on and some file has any.
		if convertOptions(s).MinFiles > 0 && anyEqualityDeletes(sc.tasks) {
			if eqs, err = equalityDeletes(ctx, tbl); err != nil {
				return ds, fmt.Errorf("list equality deletes of %s: %w", t.Table, err)
			}
		}
	}
	target := int64(s.TargetFileSizeMB) << 20
	p, err := planner.PlanData(tbl.Metadata(), sc.tasks, sc.files, eqs, planner.DataOptions{
		CompactionOptions: planner.CompactionOptions{TargetBytes: target, MinInputFiles: j.MinInputFiles, MinFileAge: s.MinFileAge,
			Now: opts.Now, Mergeable: mergeable},
		Strategy: s.Strategy, Convert: convertOptions(s), Budget: opts.RewriteBytes})
	if err != nil {
		return ds, err
	}
	fig.Strategy, fig.Plan, fig.GroupsPlanned = p.Strategy, p.CompactionPlan, len(p.Groups)
	j.log().Debug("compaction planned", "table", t.Table.String(), "strategy", p.Strategy, "files", len(sc.tasks), "groups", len(p.Groups),
		"inputFiles", p.InputFiles(), "inputBytes", p.InputBytes(), "skipped", len(p.Skipped), "deferred", len(p.Deferred),
		"duration", time.Since(planStart))
	if fig.RewriteBudget = opts.RewriteBytes; fig.RewriteBudget != nil {
		fig.GroupsDeferredByBudget, fig.BytesDeferredByBudget, fig.DeferredBecause = len(p.Deferred), planner.GroupBytes(p.Deferred), p.DeferredBecause
	}
	if empty {
		return ds, nil
	}
	for i, ok := range p.Converting {
		sc.files[i].Converts = ok
	}
	ds = dataStage{tbl: tbl, sc: sc, taken: map[string]bool{}, eqs: eqs, eqsListed: eqs != nil}
	// Groups the budget defers still take their files: their rewrite is
	// only put off, and the delete stages leave them to it as they would
	// without a budget.
	for _, g := range slices.Concat(p.Groups, p.Deferred) {
		for _, id := range g.FileIDs {
			ds.taken[sc.tasks[id].File.FilePath()] = true
		}
	}
	if opts.DryRun || len(p.Groups) == 0 {
		return ds, nil
	}

	wfs, cat, err := rebase.OpenWriting(ctx, t.Bucket, tbl)
	if err != nil {
		return ds, err
	}
	op := rebase.DataRewrite{Caller: rebase.Caller{Job: string(maintenance.Compaction), Name: "compaction"}}
	if !j.SkipRowCheck && !s.SkipRowCheck {
		op.Rows = &rebase.RowClaims{}
	}
	c, err := j.newCommitter(op, t, tbl, cat, wfs, sc, policy)
	if err != nil {
		return ds, err
	}
	// Every file the rewrite creates is recorded, so that whatever does
	// not end up committed — outputs of dropped groups, partial outputs of
	// a group that failed midway — is removed now.
	rec := &rebase.RecordingFS{WriteFileIO: wfs}
	if fan := opts.Fanout; fan != nil && fan.MinParts() > 0 && len(fig.Plan.Groups) >= fan.MinParts() {
		err = j.fanOut(ctx, fan, sc, fig, c, rec, target, opts.Progress)
	} else {
		err = j.rewriteHere(ctx, tbl, cat, sc, fig, c, rec, target, opts.Progress, op.Rows)
	}
	done := c.Committed()
	fig.addCommits(done)
	c.RemoveUncommitted(rec)
	ds.committed = done.Commits > 0 || done.Unknown
	ds.done, ds.after = done, c.Head()
	return ds, err
}

// pending is the bytes a run deferred by its rewrite budget, and as the
// estimate of the next run those, or the input bytes of the run's plan.
func pending(figures json.RawMessage) (deferred, estimate int64) {
	var f Figures
	if json.Unmarshal(figures, &f) != nil {
		return 0, 0
	}
	if f.BytesDeferredByBudget > 0 {
		return f.BytesDeferredByBudget, f.BytesDeferredByBudget
	}
	return 0, f.Plan.InputBytes()
}

// newCommitter is the committer of op's groups in a compaction run, with
// the job's batch bounds and hooks.
func (j *Job) newCommitter(op rebase.GroupProducer, t jobs.Target, tbl *table.Table, cat catalog.Catalog, wfs icebergio.WriteFileIO, sc scanned, policy commit.Policy) (*rebase.Committer, error) {
	if sc.avro != nil {
		// The commit reads the manifests holding the files it replaces:
		// the stage's scan has just read them.
		wfs = objects.ReadThrough(wfs, sc.avro)
	}
	env := rebase.Env{Bucket: t.Bucket, Table: t.Table, Catalog: cat, FS: wfs, Policy: policy,
		BeforeCommit: j.beforeCommit, AfterCommit: j.afterCommit, CommitTable: j.commitTable, Logger: j.Logger}
	c, err := rebase.NewCommitter(env, op, tbl, rebase.Base{Start: sc.start, Tasks: sc.tasks, Deletes: sc.deletes})
	if err != nil {
		return nil, err
	}
	c.BatchGroups, c.BusyGroups = orDefault(j.BatchGroups, c.BatchGroups), orDefault(j.BusyBatchGroups, c.BusyGroups)
	if j.BatchBytes > 0 {
		c.BatchBytes = j.BatchBytes
	}
	return c, nil
}

// rewriteHere rewrites every group in this process, then commits them.
func (j *Job) rewriteHere(ctx context.Context, tbl *table.Table, cat catalog.Catalog, sc scanned, fig *Figures, c *rebase.Committer, rec *rebase.RecordingFS, target int64, progress func(int, int), claims *rebase.RowClaims) error {
	rtbl := rec.Table(tbl, cat)
	rewriteStart := time.Now()
	rws := j.rewrite(ctx, rtbl, sc.tasks, fig.Plan.Groups, target, progress, claims != nil)
	fig.RewriteMs = time.Since(rewriteStart).Milliseconds()
	fig.addRewrites(rws)
	j.log().Debug("compaction groups rewritten", "table", strings.Join(tbl.Identifier(), "."), "groups", len(rws), "failed", fig.GroupsFailed,
		"merged", fig.GroupsMerged, "duration", time.Since(rewriteStart))
	if fig.GroupsFailed > 0 {
		// A file that cannot be read is a broken table, not a busy one:
		// commit nothing and leave it for a human.
		return fmt.Errorf("%d of %d groups could not be rewritten, nothing committed; first: %s", fig.GroupsFailed, fig.GroupsPlanned, fig.Errors[0])
	}
	results := make([]table.CompactionGroupResult, len(rws))
	for i, rw := range rws {
		results[i] = rw.result
		if rw.claim != nil {
			claims.Put(rw.result, *rw.claim)
		}
	}
	commitStart := time.Now()
	err := c.Run(ctx, results)
	fig.CommitMs = time.Since(commitStart).Milliseconds()
	return err
}

// policy is the table's commit retry policy over the job's defaults.
func (j *Job) policy(tbl *table.Table) (commit.Policy, error) { return retryPolicy(tbl, j.Retry) }

// retryPolicy is the table's commit retry policy over def, or over the
// default policy where def is nil.
func retryPolicy(tbl *table.Table, def *commit.Policy) (commit.Policy, error) {
	return commit.TablePolicy(tbl.Properties(), def)
}

func orDefault(v, def int) int {
	if v <= 0 {
		return def
	}
	return v
}

// mergeable hands the planner the merge path's check (package merge), with
// the reason it gives when a group cannot take it.
func mergeable(meta table.Metadata, tasks []table.FileScanTask, target int64) (why string, ok bool) {
	if err := merge.Check(meta, tasks, target); err != nil {
		return strings.TrimPrefix(err.Error(), merge.ErrNotMergeable.Error()+": "), false
	}
	return "", true
}
