// Package expire is icebergSnapshotManagement: it loads a table, asks
// package planner which snapshots and refs expire (planner.Snapshots, where
// the retention rules live), commits that with conflict handling — deciding
// again on every attempt — and records the figures.
package expire

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"

	"github.com/icekeeper/icekeeper/internal/commit"
	"github.com/icekeeper/icekeeper/internal/health"
	"github.com/icekeeper/icekeeper/internal/textlist"
	"github.com/icekeeper/icekeeper/jobs"
	"github.com/icekeeper/icekeeper/maintenance"
	"github.com/icekeeper/icekeeper/planner"
)

// Job is icebergSnapshotManagement. Expiration changes metadata only, like
// S3 Tables: files that only expired snapshots referenced become
// unreferenced and are left to icebergUnreferencedFileRemoval.
type Job struct {
	// Retry is the commit retry policy where the table sets no
	// commit.retry.* property (default commit.DefaultPolicy()).
	Retry *commit.Policy

	// DeleteFiles deletes the given files of t that no metadata of the
	// table references any more, re-checking each against freshly loaded
	// metadata (unreferenced file removal provides it). It is used only
	// when the bucket opts in with expiration.deleteExpiredFiles.
	DeleteFiles func(ctx context.Context, t jobs.Target, s maintenance.Settings, paths []string) (int, error)

	// Logger receives the run's decisions and commits at debug level
	// (nil: none).
	Logger *slog.Logger

	// beforeCommit, when set (tests only), runs between decision and commit.
	beforeCommit func(attempt int)
}

// Settings are what steers a run: the snapshot settings, and the
// table's resolved settings that DeleteFiles hands unreferenced file
// removal. Only the first decide whether a run has anything to do, so
// only they are the unchanged rule's identity.
type Settings struct {
	planner.SnapshotSettings
	Removal maintenance.Settings `json:"-"`
}

// Definition is icebergSnapshotManagement's definition, with the job's
// knobs.
func (j *Job) Definition() *jobs.Definition[Settings, *Figures] {
	return &jobs.Definition[Settings, *Figures]{
		Name: maintenance.SnapshotManagement,
		Settings: func(s maintenance.Settings) (Settings, error) {
			return Settings{SnapshotSettings: planner.SnapshotSettingsOf(s), Removal: s}, nil
		},
		Figures: func(_ Settings, opts jobs.Options) *Figures { return &Figures{Now: opts.Now.UTC()} },
		Run:     j.run,
		// The decision is a function of the metadata, the settings and
		// the clock; the last full evaluation says until when the clock
		// leaves it alone (planner.SnapshotsValidUntil).
		Unchanged: &jobs.Rule[Settings]{},
		// What waits is every snapshot that has expired, since it did.
		Oldest: func(meta table.Metadata, s Settings, _ *planner.Base, now time.Time) (planner.Oldest, bool, error) {
			return planner.PendingExpiry(meta, s.SnapshotSettings, now)
		},
		Summary: summary,
	}
}

// Figures is what a run reports and records.
type Figures struct {
	// Common: a run the unchanged rule skipped reports nothing else.
	jobs.Common
	Now                 time.Time                `json:"now"`
	SnapshotsBefore     int                      `json:"snapshotsBefore"`
	SnapshotsExpired    int                      `json:"snapshotsExpired"`
	SnapshotsKept       int                      `json:"snapshotsKept"`
	RefsRemoved         int                      `json:"refsRemoved"`
	Decision            planner.SnapshotDecision `json:"decision"`
	MetadataBytesBefore int64                    `json:"metadataBytesBefore"`
	MetadataBytesAfter  int64                    `json:"metadataBytesAfter,omitempty"`
	SchemasRemoved      []int                    `json:"schemasRemoved,omitempty"`
	SpecsRemoved        []int                    `json:"specsRemoved,omitempty"`
	FilesDeleted        int                      `json:"filesDeleted,omitempty"`
	// MetadataFilesRemoved are old metadata.json files deleted after the
	// commit, as write.metadata.delete-after-commit.enabled asks.
	MetadataFilesRemoved int `json:"metadataFilesRemoved"`
	CommitAttempts       int `json:"commitAttempts"`
	Conflicts            int `json:"conflicts"` // attempts lost to a concurrent commit
}

// Text is the readable form `icekeeper run` prints, with the first few
// snapshots and refs.
func (f *Figures) Text() string { return f.TextItems(textlist.Short) }

// TextItems is Text with at most limit items of each list (textlist.All:
// every one), the rest counted.
func (f *Figures) TextItems(limit int) string {
	var b strings.Builder
	line, skipped := f.Unchanged.Text(f.DryRun, "decided")
	b.WriteString(line)
	if skipped {
		return b.String()
	}
	a := f.Decision.Applied
	expire, removed, remove := "expire", "removed", "remove"
	if f.DryRun {
		expire, removed, remove = "would expire", "would be removed", "would remove"
	}
	fmt.Fprintf(&b, "  %d of %d snapshots %s, %d refs %s (keep %d [%s], max age %.0fh [%s], %s mode, now %s)",
		f.SnapshotsExpired, f.SnapshotsBefore, expire, f.RefsRemoved, removed, a.MinSnapshotsToKeep, a.MinSnapshotsToKeepSource,
		a.MaxSnapshotAgeHours, a.MaxSnapshotAgeSource, a.Mode, f.Now.Format(time.RFC3339))
	textlist.Lines(&b, limit, f.Decision.RemoveRefs, 0, func(r planner.RemovedRef) string {
		return fmt.Sprintf("%s %s %s: %s", remove, r.Type, r.Name, r.Reason)
	})
	textlist.Lines(&b, limit, f.Decision.Expire, 0, func(e planner.ExpiredSnapshot) string {
		return fmt.Sprintf("%s %d (%s): %s", expire, e.SnapshotID, e.Timestamp.Format(time.RFC3339), e.Reason)
	})
	for _, r := range []planner.KeepRule{planner.KeptRefHead, planner.KeptMinCount, planner.KeptBranchAge, planner.KeptUnrefAge} {
		if n := f.Decision.KeptByRule[r]; n > 0 {
			fmt.Fprintf(&b, "\n  keep %d by %s", n, r)
		}
	}
	if f.MetadataBytesAfter > 0 {
		fmt.Fprintf(&b, "\n  metadata %d → %d bytes, %d old metadata files removed, %d commit attempt(s), %d ms", f.MetadataBytesBefore, f.MetadataBytesAfter, f.MetadataFilesRemoved, f.CommitAttempts, f.DurationMs)
	} else {
		fmt.Fprintf(&b, "\n  metadata %d bytes, %d ms", f.MetadataBytesBefore, f.DurationMs)
	}
	return b.String()
}

// Empty reports whether the run stopped before it read the table: a
// failed run's figures are then only zeros, not worth printing.
func (f *Figures) Empty() bool {
	return f.Unchanged == nil && f.SnapshotsBefore == 0 && f.MetadataBytesBefore == 0
}

// Counters implements jobs.Counter.
func (f *Figures) Counters() map[string]float64 {
	if f.CommitAttempts == 0 {
		return nil // a dry run or nothing to do
	}
	return map[string]float64{"snapshots_expired": float64(f.SnapshotsExpired), "refs_removed": float64(f.RefsRemoved)}
}

// run is load, decide, commit. When a writer commits meanwhile, the next
// attempt loads the table again and decides on the new state: a decision
// is cheap next to the load, and deciding again is the only way to honour
// refs that moved.
func (j *Job) run(ctx context.Context, r *jobs.Run[Settings], fig *Figures) error {
	t, s, opts := r.Target, r.Settings.SnapshotSettings, r.Options
	cat, err := t.Bucket.Catalog(ctx)
	if err != nil {
		return err
	}
	tbl, err := r.Load(ctx)
	if err != nil {
		return err
	}
	policy, err := commit.TablePolicy(tbl.Properties(), j.Retry)
	if err != nil {
		return fmt.Errorf("snapshot management of %s: %w", t.Table, err)
	}
	var committed table.Metadata
	var newLoc string
	var fs icebergio.IO
	var d planner.SnapshotDecision
	var expired expiredFiles
	st, err := commit.Do(ctx, policy, func(ctx context.Context, attempt int) error {
		if attempt > 1 {
			if tbl, err = t.Bucket.LoadTable(ctx, t.Table); err != nil {
				return err
			}
		}
		if fs, err = tbl.FS(ctx); err != nil {
			return fmt.Errorf("open file system of %s: %w", tbl.Location(), err)
		}
		if fig.MetadataBytesBefore, err = health.MetadataBytes(fs, tbl.MetadataLocation()); err != nil {
			return err
		}
		meta := tbl.Metadata()
		if d, err = planner.Snapshots(meta, s, opts.Now); err != nil {
			return err
		}
		fig.Decision = d
		j.log().Debug("snapshots decided", "table", t.Table.String(), "attempt", attempt, "snapshots", len(meta.Snapshots()),
			"expire", len(d.Expire), "refsRemoved", len(d.RemoveRefs), "metadata", tbl.MetadataLocation())
		if s.PruneUnusedSchemasAndSpecs && !d.Empty() {
			if fig.SchemasRemoved, fig.SpecsRemoved, err = unused(fs, meta, d, opts.Progress); err != nil {
				return err
			}
		}
		fig.SnapshotsBefore = len(meta.Snapshots())
		fig.SnapshotsExpired, fig.RefsRemoved = len(d.Expire), len(d.RemoveRefs)
		fig.SnapshotsKept = fig.SnapshotsBefore - fig.SnapshotsExpired
		if opts.DryRun || d.Empty() {
			return nil
		}
		if s.DeleteExpiredFiles {
			if expired, err = j.listExpired(t, fs, meta, d, opts.Progress); err != nil {
				return fmt.Errorf("snapshot management of %s, nothing committed: %w", t.Table, err)
			}
		}
		if j.beforeCommit != nil {
			j.beforeCommit(attempt)
		}
		fig.CommitAttempts = attempt
		reqs, updates := CommitOf(meta, d)
		if len(fig.SchemasRemoved) > 0 {
			updates = append(updates, table.NewRemoveSchemasUpdate(fig.SchemasRemoved))
		}
		if len(fig.SpecsRemoved) > 0 {
			updates = append(updates, table.NewRemoveSpecUpdate(fig.SpecsRemoved))
		}
		// The bar counts the snapshots expired, all in this one commit.
		if opts.Progress != nil {
			opts.Progress(0, len(d.Expire))
		}
		start := time.Now()
		committed, newLoc, err = cat.CommitTable(ctx, tbl.Identifier(), reqs, updates)
		j.log().Debug("commit attempted", "table", t.Table.String(), "operation", "snapshot expiration", "attempt", attempt,
			"conflict", commit.IsConflict(err), "error", err, "duration", time.Since(start))
		if err == nil && opts.Progress != nil {
			opts.Progress(len(d.Expire), len(d.Expire))
		}
		if err != nil && !commit.IsConflict(err) {
			return fmt.Errorf("commit snapshot expiration of %s: %w", tbl.Identifier(), err)
		}
		return err
	})
	fig.Conflicts = st.Conflicts
	if err == nil && committed == nil && d.Empty() {
		// Nothing expires: a later run on this metadata decides the same
		// until a snapshot or ref ages past a max age.
		r.Settled(tbl, planner.SnapshotsValidUntil(tbl.Metadata(), s, opts.Now))
	}
	if err != nil || committed == nil {
		return err
	}
	// tbl is the base the commit landed on. A metadata file that stays is
	// left to unreferenced file removal.
	fig.MetadataFilesRemoved, _ = commit.PruneMetadata(fs, tbl.Metadata(), committed, func() (map[string]string, error) {
		return t.Bucket.CurrentMetadata(ctx)
	})
	if fig.MetadataBytesAfter, err = health.MetadataBytes(fs, newLoc); err != nil {
		return err
	}
	if s.DeleteExpiredFiles {
		if err := j.deleteExpired(ctx, t, r.Settings.Removal, expired, fig); err != nil {
			return fmt.Errorf("expired snapshots committed; deleting their files failed (unreferenced file removal will collect them): %w", err)
		}
	}
	return nil
}

func (j *Job) log() *slog.Logger {
	if j.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return j.Logger
}

// CommitOf turns a decision into catalog updates, guarded by requirements
// that every ref still points where it pointed when we decided, so a
// concurrent commit to any ref makes the commit fail instead of expiring
// what the new state may need.
func CommitOf(meta table.Metadata, d planner.SnapshotDecision) ([]table.Requirement, []table.Update) {
	reqs := []table.Requirement{table.AssertTableUUID(meta.TableUUID())}
	for name, ref := range meta.Refs() {
		id := ref.SnapshotID
		reqs = append(reqs, table.AssertRefSnapshotID(name, &id))
	}
	var updates []table.Update
	for _, r := range d.RemoveRefs {
		updates = append(updates, table.NewRemoveSnapshotRefUpdate(r.Name))
	}
	if ids := d.ExpireIDs(); len(ids) > 0 {
		// postCommit false: metadata only; files are for unreferenced
		// file removal, which re-checks every reference before deleting.
		updates = append(updates, table.NewRemoveSnapshotsUpdate(ids, false))
	}
	return reqs, updates
}
