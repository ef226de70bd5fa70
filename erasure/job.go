// Package erasure is icebergErasure: a row version removed from a table's
// main branch is stored in no object under the table's locations
// deadlineDays after the commit that removed it, and each run records the
// proof. Its decisions — when each removed version is due, which files
// and snapshots hold it, which refs block — are package planner's; a run
// reads the delete manifests they need, rewrites data files with their
// deletes applied (internal/rebase, as compaction commits), expires the
// snapshots that still reach removed versions, deletes what those alone
// reached through unreferenced file removal's checks, and then looks for
// each deleted file to prove it is gone.
package erasure

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
	"github.com/sourcegraph/conc/pool"

	"github.com/icekeeper/icekeeper/expire"
	"github.com/icekeeper/icekeeper/internal/commit"
	"github.com/icekeeper/icekeeper/internal/cost"
	"github.com/icekeeper/icekeeper/internal/rebase"
	"github.com/icekeeper/icekeeper/internal/state"
	"github.com/icekeeper/icekeeper/internal/verified"
	"github.com/icekeeper/icekeeper/jobs"
	"github.com/icekeeper/icekeeper/maintenance"
	"github.com/icekeeper/icekeeper/planner"
)

// ErrBlocked is a run that did all it could, but a ref or another table
// keeps row versions past the lead of their deadline: the run fails with
// it, naming them.
var ErrBlocked = errors.New("erasure blocked")

// Job is icebergErasure.
type Job struct {
	// Parallelism is how many groups are rewritten at once (default 2).
	Parallelism int
	// Retry is the commit retry policy where the table sets none.
	Retry *commit.Policy
	// DeleteFiles deletes those of paths that no metadata of the table
	// references and no other table holds, re-checking each against
	// freshly loaded metadata (unreferenced file removal provides it),
	// and returns how many it deleted.
	DeleteFiles func(ctx context.Context, t jobs.Target, s maintenance.Settings, paths []string) (int, error)
	// Unreferenced says which of paths DeleteFiles would delete were tbl
	// the table's metadata, deleting nothing: a dry run asks it about the
	// table as the expiry it does not commit would leave it.
	Unreferenced func(ctx context.Context, t jobs.Target, s maintenance.Settings, tbl *table.Table, paths []string) ([]string, error)
	// Holders says which other table of the bucket's reference domain
	// holds each of paths now, with its bucket (unreferenced file
	// removal provides both).
	Holders func(ctx context.Context, t jobs.Target, s maintenance.Settings, paths []string) (map[string]jobs.Target, error)
	// Blocks remembers the files kept because another table holds them:
	// once the table's snapshots that reached them are expired, nothing
	// else leads a later run back to them. Nil remembers nothing.
	Blocks state.ErasureBlocks
	// Logger receives the run's plans, commits and deletions at debug
	// level (nil: none).
	Logger *slog.Logger

	// beforeCommit, when set (tests only), runs before each commit
	// attempt, of the rewrite and of the snapshot expiry.
	beforeCommit func(attempt int)
}

// Settings are erasure's, and the table's resolved settings that
// DeleteFiles hands unreferenced file removal. Only the first decide what
// a run does, so only they are the unchanged rule's identity.
type Settings struct {
	planner.ErasureSettings
	Removal maintenance.Settings `json:"-"`
}

// Definition is icebergErasure's definition, with the job's knobs. Its
// rewrites are outside the rewrite budgets: a deadline is not deferred.
func (j *Job) Definition() *jobs.Definition[Settings, *Figures] {
	return &jobs.Definition[Settings, *Figures]{
		Name: maintenance.Erasure,
		Settings: func(s maintenance.Settings) (Settings, error) {
			e, err := planner.ErasureSettingsOf(s)
			return Settings{ErasureSettings: e, Removal: s}, err
		},
		Figures: func(s Settings, opts jobs.Options) *Figures {
			return &Figures{Now: opts.Now.UTC(), DeadlineDays: int(s.Deadline / (24 * time.Hour))}
		},
		Run: j.run,
		Due: func(figures json.RawMessage) time.Time {
			var f struct {
				NextDue time.Time `json:"nextDue"`
			}
			_ = json.Unmarshal(figures, &f) // figures it cannot read: no deadline
			return f.NextDue
		},
		// What a run does is a function of the metadata (and the
		// manifests it names), the deadline and the clock; the last full
		// evaluation says when the clock next makes something due. A
		// table whose every snapshot is an append removed no row.
		Unchanged: &jobs.Rule[Settings]{Idle: func(meta table.Metadata, _ Settings) (string, bool) {
			return planner.ErasureIdle(meta)
		}},
		Summary: summary,
		// Erasure's rewrites are charged to the rewrite budgets and take
		// their concurrency slots, but its bytes are not capped: a
		// deadline outranks a cost budget. What it rewrote makes the
		// other rewrites wait.
		Rewritten: func(f *Figures) int64 { return f.BytesRewritten },
		// Processed, not billed: S3 Tables has no erasure to compare with.
		Processed: func(f *Figures) cost.Work {
			return cost.Work{Objects: int64(f.FilesRewritten), Bytes: f.BytesRewritten}
		},
	}
}

func (j *Job) run(ctx context.Context, r *jobs.Run[Settings], fig *Figures) error {
	t, s, now := r.Target, r.Settings, r.Now
	tbl, err := r.Load(ctx)
	if err != nil {
		return err
	}
	var remembered []state.ErasureBlock
	if j.Blocks != nil {
		if remembered, err = j.Blocks.ErasureBlocks(ctx, t.Key()); err != nil {
			return fmt.Errorf("erasure of %s: %w", t.Table, err)
		}
	}
	if tbl.CurrentSnapshot() == nil && len(remembered) == 0 {
		r.Settled(tbl, time.Time{})
		return nil
	}
	policy, err := commit.TablePolicy(tbl.Properties(), j.Retry)
	if err != nil {
		return fmt.Errorf("erasure of %s: %w", t.Table, err)
	}
	fsys, err := tbl.FS(ctx)
	if err != nil {
		return fmt.Errorf("open file system of %s: %w", tbl.Location(), err)
	}
	dt := &deleteTimes{fs: fsys, manifests: map[string]manifestDeletes{}, data: map[string][]string{}}

	start := tbl
	var taken []string // data and delete files the run takes out of the table
	tbl, taken, err = j.rewrite(ctx, r, tbl, fsys, dt, policy, fig)
	if err != nil {
		return err
	}
	before, plan, err := j.expire(ctx, r, tbl, dt, policy, fig)
	if err != nil {
		return err
	}
	fig.Expired, fig.Blocked = plan.Expire, plan.Blocked
	fig.Pending = slices.Concat(fig.Pending, plan.Pending)
	slices.SortFunc(fig.Pending, func(a, b planner.Pending) int { return a.Due.Compare(b.Due) })
	for _, e := range plan.Expire {
		fig.overdue(e.Removed, e.Due, now)
	}

	if r.DryRun && len(plan.Expire) > 0 {
		// What the real run deletes follows its expiry: judge the files
		// of the snapshots it would expire against the table as that
		// expiry would leave it.
		if fig.ObjectsDeleted, err = j.wouldDelete(ctx, r, before, plan.ExpireIDs(), fsys); err != nil {
			return fmt.Errorf("erasure of %s: %w", t.Table, err)
		}
	}
	if !r.DryRun && len(plan.Expire) > 0 {
		manifests, expiredFiles, err := expire.FilesOf(fsys, before.Metadata(), plan.ExpireIDs(), r.Progress)
		if err != nil {
			return fmt.Errorf("erasure of %s: snapshots expired; listing their files failed (unreferenced file removal will collect them): %w", t.Table, err)
		}
		if j.DeleteFiles == nil {
			return errors.New("erasure has no file deleter wired")
		}
		start := time.Now()
		fig.ObjectsDeleted, err = j.DeleteFiles(ctx, t, s.Removal, slices.Concat(manifests, expiredFiles))
		j.log().Debug("files of expired snapshots deleted", "table", t.Table.String(), "deleted", fig.ObjectsDeleted,
			"of", len(manifests)+len(expiredFiles), "error", err, "duration", time.Since(start))
		if err != nil {
			return fmt.Errorf("erasure of %s: snapshots expired; deleting their files failed: %w", t.Table, err)
		}
		fig.GoneAt = time.Now().UTC()
		gone, kept, err := absent(ctx, fsys, before.Location(), slices.Concat(taken, expiredFiles))
		if err != nil {
			return fmt.Errorf("erasure of %s: %w", t.Table, err)
		}
		// An expired snapshot's file that is still stored is one a kept
		// snapshot or another table references; one the run took out of
		// the table must be gone.
		took := make(map[string]bool, len(taken))
		for _, p := range taken {
			took[p] = true
		}
		fig.Gone = gone
		fig.Kept = slices.DeleteFunc(kept, func(p string) bool { return !took[p] })
	} else if len(taken) > 0 {
		// Rewritten, but their old snapshot is not due: the files stay
		// until it is, which the pending list says.
		fig.Kept = taken
	}

	var found []planner.ErasureBlock
	heldBy := map[string]jobs.Target{}
	unheld := fig.Kept
	if !r.DryRun && len(fig.Kept) > 0 && len(plan.Expire) > 0 {
		// Every snapshot of this table that reached them is expired, or
		// a ref keeps it (Blocked): what else keeps them is outside the
		// table, another table's references.
		if found, unheld, err = j.heldFiles(ctx, r, fig.Kept, fig.Rewritten, heldBy); err != nil {
			return fmt.Errorf("erasure of %s: %w", t.Table, err)
		}
	}
	tableBlocks, err := j.recheck(ctx, r, fsys, tbl, remembered, found, heldBy, fig)
	if err != nil {
		return fmt.Errorf("erasure of %s: %w", t.Table, err)
	}
	fig.Blocked = append(fig.Blocked, tableBlocks...)

	var dueAt []time.Time
	for _, p := range fig.Pending {
		dueAt = append(dueAt, p.Due)
	}
	for _, bl := range fig.Blocked {
		dueAt = append(dueAt, bl.Due)
	}
	if len(dueAt) > 0 {
		fig.NextDue = slices.MinFunc(dueAt, time.Time.Compare)
	}

	var holders []string
	for _, bl := range plan.Blocked {
		holders = append(holders, fmt.Sprintf("%s %q holds snapshot %d (rows due %s); remove it to let erasure finish", bl.Type, bl.Ref, bl.SnapshotID, stamp(bl.Due)))
	}
	holders = append(holders, tableHolders(tableBlocks)...)
	if len(unheld) > 0 && len(plan.Expire) > 0 && len(plan.Blocked) == 0 {
		// Neither a ref nor, as far as the tables of the bucket say now,
		// another table: still, a file that held removed rows is stored.
		holders = append(holders, fmt.Sprintf("%d files that held removed rows are still stored, though no ref or other table of the bucket's reference domain holds them (%s)", len(unheld), unheld[0]))
	}
	if len(holders) > 0 {
		return fmt.Errorf("%w: %s", ErrBlocked, strings.Join(holders, "; "))
	}
	if tbl == start && len(plan.Expire) == 0 && len(remembered) == 0 {
		// Nothing was due: a later run on this metadata decides the
		// same until the clock makes the first pending version due.
		r.Settled(tbl, s.NextErasure(fig.Pending))
	}
	return nil
}

// rewrite rewrites the data files of tbl's current snapshot whose deletes
// are due, with their deletes applied, and returns the table after its
// commits and the files they took out of it.
func (j *Job) rewrite(ctx context.Context, r *jobs.Run[Settings], tbl *table.Table, fsys icebergio.IO, dt *deleteTimes, policy commit.Policy, fig *Figures) (*table.Table, []string, error) {
	t, s, now := r.Target, r.Settings, r.Now
	snap := tbl.CurrentSnapshot()
	if snap == nil {
		return tbl, nil, nil // emptied: only remembered blocks are left to check
	}
	if n, ok := verified.SummaryTotal(snap, "total-delete-files"); ok && n == 0 {
		return tbl, nil, nil
	}
	added, _, err := dt.of(tbl.Metadata(), snap)
	if err != nil {
		return nil, nil, err
	}
	sc, err := rebase.Scan(ctx, tbl)
	if err != nil {
		return nil, nil, err
	}
	named, err := namedByPositionDeletes(fsys, &sc)
	if err != nil {
		return nil, nil, err
	}
	var files []planner.ErasureFile
	origin := map[string]deleteAdd{} // data file → its oldest delete
	for _, task := range sc.Tasks {
		var oldest *deleteAdd
		applying := slices.DeleteFunc(slices.Clone(task.DeleteFiles), func(d iceberg.DataFile) bool {
			names, read := named[d.FilePath()]
			return read && !names[task.File.FilePath()]
		})
		for _, d := range slices.Concat(applying, task.EqualityDeleteFiles, task.DeletionVectorFiles) {
			a, ok := added[d.FilePath()]
			if !ok {
				a = deleteAdd{} // not in the manifests read: treat as old
			}
			if oldest == nil || a.at.Before(oldest.at) {
				oldest = &a
			}
		}
		if oldest == nil {
			continue
		}
		origin[task.File.FilePath()] = *oldest
		files = append(files, planner.ErasureFile{Task: task, Removed: oldest.at,
			Partition: planner.PartitionKey(task.File), Label: planner.PartitionLabel(tbl.Metadata(), task.File)})
	}
	groups, pending := planner.PlanErasureRewrite(s.ErasureSettings, files, planner.ExpiryTargetBytes(tbl.Properties()), now)
	fig.Pending = pending
	j.log().Debug("erasure rewrite planned", "table", t.Table.String(), "filesWithDeletes", len(files), "groups", len(groups), "pending", len(pending))
	if len(groups) == 0 {
		return tbl, nil, nil
	}
	if r.DryRun {
		for _, g := range groups {
			fig.FilesRewritten += len(g.Tasks)
			fig.BytesRewritten += g.Bytes
			fig.Rewritten = append(fig.Rewritten, rewriteOf(g, origin, s.ErasureSettings, table.CompactionGroupResult{}, time.Time{}))
		}
		return tbl, nil, nil
	}

	rec := &rebase.RecordingFS{}
	var cat catalog.Catalog
	if rec.WriteFileIO, cat, err = rebase.OpenWriting(ctx, t.Bucket, tbl); err != nil {
		return nil, nil, err
	}
	claims := &rebase.RowClaims{}
	results, err := j.read(ctx, rec.Table(tbl, cat), groups, planner.ExpiryTargetBytes(tbl.Properties()), r.Progress, claims)
	if err != nil {
		rec.RemoveExcept(nil)
		return nil, nil, fmt.Errorf("erasure of %s: %w", t.Table, err)
	}
	env := rebase.Env{Bucket: t.Bucket, Table: t.Table, Catalog: cat, FS: rec.WriteFileIO, Policy: policy, BeforeCommit: j.beforeCommit, Logger: j.Logger}
	op := rebase.DataRewrite{Caller: rebase.Caller{Job: string(maintenance.Erasure), Name: "erasure"}, Rows: claims}
	c, err := rebase.NewCommitter(env, op, tbl, sc)
	if err != nil {
		return nil, nil, err
	}
	err = c.Run(ctx, results)
	done := c.Committed()
	at := time.Now().UTC()
	fig.Commits, fig.CommitAttempts, fig.Conflicts = done.Commits, done.Stats.Attempts, done.Stats.Conflicts
	fig.Dropped, fig.DeletesRemoved = done.Dropped, done.DeletesRemoved
	byFirst := map[string]planner.ErasureGroup{}
	for _, g := range groups {
		byFirst[g.Tasks[0].File.FilePath()] = g
	}
	var taken []string
	for _, res := range done.Groups {
		g := byFirst[res.OldDataFiles[0].FilePath()]
		rw := rewriteOf(g, origin, s.ErasureSettings, res, at)
		fig.Rewritten = append(fig.Rewritten, rw)
		fig.FilesRewritten += len(res.OldDataFiles)
		fig.BytesRewritten += g.Bytes
		for _, df := range res.NewDataFiles {
			fig.FilesWritten++
			fig.BytesWritten += df.FileSizeBytes()
		}
		fig.overdue(rw.Removed, rw.Due, r.Now)
		taken = slices.Concat(taken, rw.DataFiles, rw.DeleteFiles)
	}
	c.RemoveUncommitted(rec)
	if err != nil {
		return nil, nil, err
	}
	return c.Head(), taken, nil
}

func (j *Job) log() *slog.Logger {
	if j.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return j.Logger
}

// rewriteOf is the proof of group g, committed as res at at.
func rewriteOf(g planner.ErasureGroup, origin map[string]deleteAdd, s planner.ErasureSettings, res table.CompactionGroupResult, at time.Time) Rewrite {
	rw := Rewrite{Partition: g.Label, Removed: g.Removed, Due: s.Due(g.Removed), At: at}
	oldest := time.Time{}
	for i, task := range g.Tasks {
		rw.DataFiles = append(rw.DataFiles, task.File.FilePath())
		if o := origin[task.File.FilePath()]; i == 0 || o.at.Before(oldest) {
			oldest, rw.DeleteCommit = o.at, o.snapshot
		}
	}
	for _, d := range slices.Concat(res.SafePosDeletes, res.SafeDeletionVectors) {
		rw.DeleteFiles = append(rw.DeleteFiles, d.FilePath())
	}
	for _, df := range res.NewDataFiles {
		rw.Into = append(rw.Into, df.FilePath())
	}
	return rw
}

// read rewrites each group with its deletes applied, Parallelism at a
// time; results come in plan order.
func (j *Job) read(ctx context.Context, tbl *table.Table, groups []planner.ErasureGroup, target int64, progress func(done, total int), claims *rebase.RowClaims) ([]table.CompactionGroupResult, error) {
	out := make([]table.CompactionGroupResult, len(groups))
	par := j.Parallelism
	if par <= 0 {
		par = 2
	}
	var done atomic.Int64
	p := pool.New().WithContext(ctx).WithMaxGoroutines(par).WithCancelOnError()
	for i, g := range groups {
		p.Go(func(ctx context.Context) error {
			res := table.CompactionGroupResult{PartitionKey: g.Partition, BytesBefore: g.Bytes,
				SafePosDeletes: table.CollectSafePositionDeletes(g.Tasks), SafeDeletionVectors: table.CollectSafeDeletionVectors(g.Tasks)}
			for _, task := range g.Tasks {
				res.OldDataFiles = append(res.OldDataFiles, task.File)
			}
			files, claim, err := rebase.Rewrite(ctx, tbl, g.Tasks, target, nil)
			if err != nil {
				return fmt.Errorf("group %s: %w", g.Label, err)
			}
			res.NewDataFiles = files
			claims.Put(res, claim)
			out[i] = res
			if progress != nil {
				progress(int(done.Add(1)), len(groups))
			}
			return nil
		})
	}
	return out, p.Wait()
}

// expire expires the snapshots of tbl that reach removed row versions
// within the lead of their deadline, deciding again on every attempt, and
// returns the table it committed on (whose metadata names the expired
// snapshots' files) and the plan.
func (j *Job) expire(ctx context.Context, r *jobs.Run[Settings], tbl *table.Table, dt *deleteTimes, policy commit.Policy, fig *Figures) (*table.Table, planner.ErasureSnapshotPlan, error) {
	t, s := r.Target, r.Settings
	var plan planner.ErasureSnapshotPlan
	cat, err := t.Bucket.Catalog(ctx)
	if err != nil {
		return nil, plan, err
	}
	st, err := commit.Do(ctx, policy, func(ctx context.Context, attempt int) error {
		if attempt > 1 {
			if tbl, err = t.Bucket.LoadTable(ctx, t.Table); err != nil {
				return err
			}
		}
		meta := tbl.Metadata()
		oldest := map[int64]time.Time{}
		for _, snap := range meta.Snapshots() {
			if n, ok := verified.SummaryTotal(&snap, "total-delete-files"); ok && n == 0 {
				continue
			}
			_, at, err := dt.of(meta, &snap)
			if err != nil {
				return err
			}
			if at != nil {
				oldest[snap.SnapshotID] = *at
			}
		}
		var holdErr error
		holds := func(id int64) bool {
			h, err := dt.holds(meta, id)
			holdErr = cmp.Or(holdErr, err)
			return h || err != nil
		}
		removals := planner.SnapshotRemovals(meta, oldest, holds)
		if holdErr != nil {
			return holdErr
		}
		plan = planner.PlanErasureSnapshots(s.ErasureSettings, meta, removals, r.Now)
		j.log().Debug("erasure snapshots decided", "table", t.Table.String(), "attempt", attempt, "expire", len(plan.Expire),
			"blocked", len(plan.Blocked), "pending", len(plan.Pending))
		if r.DryRun || len(plan.Expire) == 0 {
			return nil
		}
		if j.beforeCommit != nil {
			j.beforeCommit(attempt)
		}
		fig.CommitAttempts++
		var d planner.SnapshotDecision
		for _, e := range plan.Expire {
			d.Expire = append(d.Expire, planner.ExpiredSnapshot{SnapshotID: e.SnapshotID, Timestamp: e.Timestamp, Reason: "erasure deadline"})
		}
		reqs, updates := expire.CommitOf(meta, d)
		start := time.Now()
		_, _, err = cat.CommitTable(ctx, tbl.Identifier(), reqs, updates)
		j.log().Debug("commit attempted", "table", t.Table.String(), "operation", "erasure snapshot expiry", "attempt", attempt,
			"conflict", commit.IsConflict(err), "error", err, "duration", time.Since(start))
		if err != nil && !commit.IsConflict(err) {
			return fmt.Errorf("commit snapshot expiry of %s: %w", tbl.Identifier(), err)
		}
		if err == nil {
			fig.Commits++
		}
		return err
	})
	fig.Conflicts += st.Conflicts
	return tbl, plan, err
}
