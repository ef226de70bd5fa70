// Package records is icebergRecordExpiration: it removes the rows whose
// expiration column is older than the configured days. Its planning —
// the column, each file's fate by its bounds, the groups — is package
// planner's; its commits go through internal/rebase as RowRemoval
// snapshots.
package records

import (
	"context"
	"fmt"
	"iter"
	"log/slog"
	"strings"
	"sync/atomic"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
	"github.com/sourcegraph/conc/pool"

	"github.com/icekeeper/icekeeper/internal/commit"
	"github.com/icekeeper/icekeeper/internal/rebase"
	"github.com/icekeeper/icekeeper/internal/rowdigest"
	"github.com/icekeeper/icekeeper/internal/textlist"
	"github.com/icekeeper/icekeeper/jobs"
	"github.com/icekeeper/icekeeper/maintenance"
	"github.com/icekeeper/icekeeper/planner"
)

// ExpirationColumnProperty is the table property that names the column
// record expiration goes by (planner.ExpirationColumnProperty).
const ExpirationColumnProperty = planner.ExpirationColumnProperty

// Job is the record expiration job: it removes the rows whose
// expiration column (table property icekeeper.record-expiration.column)
// is older than the configured days. A data file whose column bounds
// prove every row expired is dropped whole; a file that may hold expired
// rows is read, with its deletes applied, and rewritten without them. It
// commits like compaction — in batches, rebased on the head at every
// attempt, dropping a group a concurrent delete may apply to — with
// DELETE or OVERWRITE snapshots, since rows do change.
type Job struct {
	// Parallelism is how many groups are read at once (default 2).
	Parallelism int
	// Retry is the commit retry policy where the table sets none.
	Retry *commit.Policy
	// Logger receives the run's plan and commits at debug level (nil:
	// none).
	Logger *slog.Logger

	// beforeCommit, when set (tests only), runs before each commit attempt.
	beforeCommit func(attempt int)
}

func (j *Job) log() *slog.Logger {
	if j.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return j.Logger
}

// Settings are record expiration's: after how many days rows expire.
type Settings struct {
	Days int
}

// Definition is icebergRecordExpiration's definition, with the job's
// knobs.
func (j *Job) Definition() *jobs.Definition[Settings, *ExpirationFigures] {
	return &jobs.Definition[Settings, *ExpirationFigures]{
		Name:     maintenance.RecordExpiration,
		Settings: settingsOf,
		Figures: func(s Settings, opts jobs.Options) *ExpirationFigures {
			return &ExpirationFigures{Days: s.Days, Cutoff: cutoff(s, opts.Now)}
		},
		Run:   j.run,
		Check: check,
		// Which files expire is a function of the metadata, the days and
		// the clock; the last full evaluation says until when the clock
		// leaves it alone (ExpiryColumn.KeptUntil). The column is a table
		// property, part of the metadata.
		Unchanged: &jobs.Rule[Settings]{},
		Summary:   summary,
	}
}

// cutoff is the instant before which rows expire in a run at now.
func cutoff(s Settings, now time.Time) time.Time {
	// Calendar days in UTC, not a Duration: days*24h overflows past
	// about 106,751 days and would put the cutoff in the future.
	return now.UTC().AddDate(0, 0, -s.Days)
}

// ExpirationFigures are what a record expiration run did. The first three
// are S3 Tables' job metrics (GetTableRecordExpirationJobStatus): data
// files removed from the table, dropped whole or rewritten; visible rows
// removed; bytes of the data files removed.
type ExpirationFigures struct {
	DeletedDataFiles int64 `json:"deletedDataFiles"`
	DeletedRecords   int64 `json:"deletedRecords"`
	RemovedFilesSize int64 `json:"removedFilesSize"`

	// Common: a run the unchanged rule skipped reports nothing else.
	jobs.Common
	Column string    `json:"column,omitempty"`
	Days   int       `json:"days"`
	Cutoff time.Time `json:"cutoff"`
	// FilesScanned are the live data files; FilesKept those whose bounds
	// prove no row expired.
	FilesScanned int `json:"filesScanned"`
	FilesKept    int `json:"filesKept"`
	// FilesDropped went whole, FilesRewritten were rewritten into
	// FilesWritten files of BytesWritten; FilesUnchanged were read and found
	// to hold no expired visible row. A dry run counts what the real run
	// would do, and writes nothing.
	FilesDropped   int   `json:"filesDropped"`
	FilesRewritten int   `json:"filesRewritten"`
	FilesUnchanged int   `json:"filesUnchanged"`
	FilesWritten   int   `json:"filesWritten"`
	BytesWritten   int64 `json:"bytesWritten"`
	// Dropped are groups left for the next run: "partition: why".
	Dropped        []string `json:"dropped,omitempty"`
	Commits        int      `json:"commits"`
	CommitAttempts int      `json:"commitAttempts"`
	Conflicts      int      `json:"conflicts"`
	Rebases        int      `json:"rebases"`
}

// Text is the readable form `icekeeper run` prints, with the first few
// groups left for the next run.
func (f *ExpirationFigures) Text() string { return f.TextItems(textlist.Short) }

// TextItems is Text with at most limit items of each list (textlist.All:
// every one), the rest counted.
func (f *ExpirationFigures) TextItems(limit int) string {
	var b strings.Builder
	line, skipped := f.Unchanged.Text(f.DryRun, "read")
	b.WriteString(line)
	if skipped {
		return b.String()
	}
	if f.Column == "" {
		return "  nothing to expire"
	}
	fmt.Fprintf(&b, "  rows with %s before %s (%d days): %d of %d data files kept by their bounds",
		f.Column, f.Cutoff.UTC().Format(time.RFC3339), f.Days, f.FilesKept, f.FilesScanned)
	if f.DryRun {
		// Nothing was written, so there is no output to tell.
		fmt.Fprintf(&b, "\n  %d records would be removed: %d data files (%d bytes) — %d would be dropped whole, %d rewritten without their expired rows; %d read would be left as they are",
			f.DeletedRecords, f.DeletedDataFiles, f.RemovedFilesSize, f.FilesDropped, f.FilesRewritten, f.FilesUnchanged)
	} else {
		fmt.Fprintf(&b, "\n  %d records removed: %d data files (%d bytes) — %d dropped whole, %d rewritten into %d files (%d bytes); %d read and left as they were",
			f.DeletedRecords, f.DeletedDataFiles, f.RemovedFilesSize, f.FilesDropped, f.FilesRewritten, f.FilesWritten, f.BytesWritten, f.FilesUnchanged)
	}
	if f.CommitAttempts > 0 {
		fmt.Fprintf(&b, "\n  %d commits in %d attempts (%d lost to concurrent commits, %d rebased), %d ms in all",
			f.Commits, f.CommitAttempts, f.Conflicts, f.Rebases, f.DurationMs)
	}
	textlist.Lines(&b, limit, f.Dropped, 0, func(d string) string { return "left for the next run " + d })
	return b.String()
}

// Empty reports whether the run stopped before it read the table: a
// failed run's figures are then only zeros, not worth printing.
func (f *ExpirationFigures) Empty() bool { return f.Unchanged == nil && f.Column == "" }

// Counters implements jobs.Counter.
func (f *ExpirationFigures) Counters() map[string]float64 {
	return map[string]float64{"records_expired": float64(f.DeletedRecords), "files_expired": float64(f.DeletedDataFiles)}
}

// settingsOf is the resolved setting, or an error naming what is
// missing.
func settingsOf(s maintenance.Settings) (Settings, error) {
	c := s.For(maintenance.RecordExpiration).RecordExpiration()
	if c == nil || c.Days == nil {
		return Settings{}, fmt.Errorf("%w: %s is enabled without settings.days: say after how many days rows expire", maintenance.ErrInvalid, maintenance.RecordExpiration)
	}
	return Settings{Days: *c.Days}, nil
}

// check refuses, when it is configured, to enable record expiration on a
// table it cannot run on, with why.
func check(tbl *table.Table, _ Settings) error {
	if _, err := planner.ExpiryColumnOf(tbl.Metadata(), time.Now()); err != nil {
		return fmt.Errorf("%w: %s: %w", maintenance.ErrInvalid, strings.Join(tbl.Identifier(), "."), err)
	}
	return nil
}

// expiryRead is one group after reading: its result to commit (nil when
// nothing in it expired) and the visible rows it removes.
type expiryRead struct {
	result  *table.CompactionGroupResult
	expired int64
	// rewrite: some visible rows of the group stay, so its files are
	// rewritten rather than dropped whole (for a dry run, which writes
	// nothing to tell it by).
	rewrite bool
	// claim is what a rewritten group proved of its rows (rebase.Rewrite).
	claim *rowdigest.Claim
	err   error
}

// run expires the rows older than the run's cutoff.
func (j *Job) run(ctx context.Context, r *jobs.Run[Settings], fig *ExpirationFigures) error {
	t, opts := r.Target, r.Options
	tbl, err := r.Load(ctx)
	if err != nil {
		return err
	}
	col, err := planner.ExpiryColumnOf(tbl.Metadata(), fig.Cutoff)
	if err != nil {
		return fmt.Errorf("record expiration of %s: %w", t.Table, err)
	}
	fig.Column = col.Name
	if tbl.CurrentSnapshot() == nil {
		return nil
	}
	policy, err := commit.TablePolicy(tbl.Properties(), j.Retry)
	if err != nil {
		return fmt.Errorf("record expiration of %s: %w", t.Table, err)
	}
	sc, err := rebase.Scan(ctx, tbl)
	if err != nil {
		return err
	}
	fig.FilesScanned = len(sc.Tasks)
	// Its own file size, not compaction's: see planner.ExpiryTargetBytes.
	target := planner.ExpiryTargetBytes(tbl.Properties())
	files := make([]planner.ExpiryFile, len(sc.Tasks))
	for i, task := range sc.Tasks {
		files[i] = planner.ExpiryFile{Task: task, Partition: planner.PartitionKey(task.File), Label: planner.PartitionLabel(tbl.Metadata(), task.File)}
	}
	groups, kept := planner.PlanExpiry(col, files, target)
	fig.FilesKept = kept
	j.log().Debug("record expiration planned", "table", t.Table.String(), "column", col.Name, "cutoff", fig.Cutoff,
		"files", len(files), "keptByBounds", kept, "groups", len(groups))
	if len(groups) == 0 {
		r.Settled(tbl, col.KeptUntil(files, r.Settings.Days, opts.Now))
		return nil
	}

	// A dry run only counts, so it needs no writable storage; rec then
	// records nothing.
	rtbl, rec := tbl, &rebase.RecordingFS{}
	var cat catalog.Catalog
	if !opts.DryRun {
		if rec.WriteFileIO, cat, err = rebase.OpenWriting(ctx, t.Bucket, tbl); err != nil {
			return err
		}
		rtbl = rec.Table(tbl, cat)
	}
	var results []table.CompactionGroupResult
	claims := &rebase.RowClaims{}
	expiredBy := map[string]int64{} // first input file → visible rows removed
	for i, rd := range j.read(ctx, rtbl, col, groups, target, opts) {
		switch {
		case rd.err != nil:
			rec.RemoveExcept(nil)
			return fmt.Errorf("record expiration of %s: group %s: %w", t.Table, groups[i].Partition, rd.err)
		case rd.result == nil:
			fig.FilesUnchanged += len(groups[i].Tasks)
		case opts.DryRun:
			fig.add(*rd.result, rd.expired, rd.rewrite)
		default:
			results = append(results, *rd.result)
			expiredBy[rd.result.OldDataFiles[0].FilePath()] = rd.expired
			if rd.claim != nil {
				claims.Put(*rd.result, *rd.claim)
			}
		}
	}
	if len(results) == 0 {
		rec.RemoveExcept(nil)
		return nil
	}

	env := rebase.Env{Bucket: t.Bucket, Table: t.Table, Catalog: cat, FS: rec.WriteFileIO, Policy: policy, BeforeCommit: j.beforeCommit, Logger: j.Logger}
	op := rebase.RowRemoval{Caller: rebase.Caller{Job: string(maintenance.RecordExpiration), Name: "record expiration"}, Rows: claims}
	c, err := rebase.NewCommitter(env, op, tbl, sc)
	if err != nil {
		return err
	}
	err = c.Run(ctx, results)
	done := c.Committed()
	fig.Commits, fig.CommitAttempts, fig.Conflicts, fig.Rebases = done.Commits, done.Stats.Attempts, done.Stats.Conflicts, done.Rebases
	fig.Dropped = done.Dropped
	for _, g := range done.Groups {
		fig.add(g, expiredBy[g.OldDataFiles[0].FilePath()], len(g.NewDataFiles) > 0)
	}
	c.RemoveUncommitted(rec)
	return err
}

// add counts one group's removal: its files rewritten without their
// expired rows, or dropped whole.
func (f *ExpirationFigures) add(g table.CompactionGroupResult, expired int64, rewritten bool) {
	f.DeletedRecords += expired
	f.DeletedDataFiles += int64(len(g.OldDataFiles))
	for _, df := range g.OldDataFiles {
		f.RemovedFilesSize += df.FileSizeBytes()
	}
	if !rewritten {
		f.FilesDropped += len(g.OldDataFiles)
		return
	}
	f.FilesRewritten += len(g.OldDataFiles)
	for _, df := range g.NewDataFiles {
		f.FilesWritten++
		f.BytesWritten += df.FileSizeBytes()
	}
}

// read counts each group's expired visible rows and, unless the run is a
// dry run, rewrites the groups to filter without them, Parallelism at a
// time; results come in plan order.
func (j *Job) read(ctx context.Context, tbl *table.Table, col planner.ExpiryColumn, groups []planner.ExpiryGroup, target int64, opts jobs.Options) []expiryRead {
	out := make([]expiryRead, len(groups))
	var done atomic.Int64
	par := j.Parallelism
	if par <= 0 {
		par = 2
	}
	p := pool.New().WithContext(ctx).WithMaxGoroutines(par)
	for i, g := range groups {
		p.Go(func(ctx context.Context) error {
			out[i] = expireGroup(ctx, tbl, col, g, target, opts.DryRun)
			if opts.Progress != nil {
				opts.Progress(int(done.Add(1)), len(groups))
			}
			return nil
		})
	}
	_ = p.Wait()
	return out
}

func expireGroup(ctx context.Context, tbl *table.Table, col planner.ExpiryColumn, g planner.ExpiryGroup, target int64, dryRun bool) expiryRead {
	var rd expiryRead
	res := table.CompactionGroupResult{PartitionKey: g.Partition, SafePosDeletes: table.CollectSafePositionDeletes(g.Tasks),
		SafeDeletionVectors: table.CollectSafeDeletionVectors(g.Tasks), BytesBefore: g.Bytes}
	for _, t := range g.Tasks {
		res.OldDataFiles = append(res.OldDataFiles, t.File)
	}
	switch {
	case g.Drop:
		rd.expired, rd.err = countExpired(ctx, tbl, col, g)
	case dryRun:
		// What stays decides, as in the real run, whether the files are
		// rewritten or, when every visible row expired, dropped whole.
		var kept int64
		rd.expired, kept, rd.err = previewGroup(ctx, tbl, col, g.Tasks)
		rd.rewrite = kept > 0
	default:
		// Counted while rewriting, so the files are read once. A group in
		// which nothing expired is not committed; its outputs go with
		// the run's others that are not. When every visible row expired,
		// nothing is written and the files go as if dropped.
		var claim rowdigest.Claim
		res.NewDataFiles, rd.expired, claim, rd.err = filterGroup(ctx, tbl, col, g.Tasks, target)
		rd.claim = &claim
	}
	if rd.err == nil && rd.expired > 0 {
		rd.result = &res
	}
	return rd
}

// countExpired counts the visible expired rows of g's files, for groups
// whose bounds prove they are dropped whole. A dropped
// file without deletes holds exactly its record count; the rest are read,
// with their deletes applied — only the column where no equality delete
// needs other columns.
func countExpired(ctx context.Context, tbl *table.Table, col planner.ExpiryColumn, g planner.ExpiryGroup) (int64, error) {
	if g.Drop && !hasDeletes(g.Tasks) {
		var n int64
		for _, t := range g.Tasks {
			n += t.File.Count()
		}
		return n, nil
	}
	opts := []table.ScanOption{table.WithRowFilter(col.Expired())}
	if !hasEqualityDeletes(g.Tasks) {
		opts = append(opts, table.WithSelectedFields(col.Name))
	}
	_, records, err := tbl.Scan(opts...).ReadTasks(ctx, g.Tasks)
	if err != nil {
		return 0, fmt.Errorf("count expired rows: %w", err)
	}
	var n int64
	for r, err := range records {
		if err != nil {
			return 0, fmt.Errorf("count expired rows: %w", err)
		}
		n += r.NumRows()
		r.Release()
	}
	return n, nil
}

// previewGroup counts, for a dry run, the visible rows of tasks' files that
// would expire and those that would stay, chosen as filterGroup chooses
// them (from the column's values, deletes applied, nulls staying).
func previewGroup(ctx context.Context, tbl *table.Table, col planner.ExpiryColumn, tasks []table.FileScanTask) (expired, kept int64, err error) {
	var opts []table.ScanOption
	if !hasEqualityDeletes(tasks) {
		opts = append(opts, table.WithSelectedFields(col.Name))
	}
	_, records, err := tbl.Scan(opts...).ReadTasks(ctx, tasks)
	if err != nil {
		return 0, 0, fmt.Errorf("count expired rows: %w", err)
	}
	var removed atomic.Int64
	for rec, err := range keepRows(ctx, col, records, &removed) {
		if err != nil {
			return 0, 0, fmt.Errorf("count expired rows: %w", err)
		}
		kept += rec.NumRows()
		rec.Release()
	}
	return removed.Load(), kept, nil
}

// filterGroup rewrites tasks' files without their expired rows (deletes
// applied). The rows that stay are chosen here, from the column's values,
// rather than by a scan filter: a null stays by construction, and row
// lineage is kept (rebase.Rewrite).
func filterGroup(ctx context.Context, tbl *table.Table, col planner.ExpiryColumn, tasks []table.FileScanTask, target int64) (files []iceberg.DataFile, expired int64, claim rowdigest.Claim, err error) {
	var removed atomic.Int64
	files, claim, err = rebase.Rewrite(ctx, tbl, tasks, target, func(records iter.Seq2[arrow.RecordBatch, error]) iter.Seq2[arrow.RecordBatch, error] {
		return keepRows(ctx, col, records, &removed)
	})
	if err != nil {
		return files, 0, claim, err
	}
	if claim.Removed.Count != removed.Load() {
		return files, 0, claim, fmt.Errorf("%w: %d rows expired, the digests say %d", rowdigest.ErrRowsDiffer, removed.Load(), claim.Removed.Count)
	}
	return files, removed.Load(), claim, nil
}

// keepRows passes on the rows of each batch that do not expire, and
// counts those that do into removed.
func keepRows(ctx context.Context, c planner.ExpiryColumn, records iter.Seq2[arrow.RecordBatch, error], removed *atomic.Int64) iter.Seq2[arrow.RecordBatch, error] {
	return func(yield func(arrow.RecordBatch, error) bool) {
		for rec, err := range records {
			if err != nil {
				yield(nil, err)
				return
			}
			kept, err := filterBatch(ctx, c, rec)
			if err == nil {
				removed.Add(rec.NumRows() - kept.NumRows())
			}
			rec.Release()
			if !yield(kept, err) || err != nil {
				return
			}
		}
	}
}

func filterBatch(ctx context.Context, c planner.ExpiryColumn, rec arrow.RecordBatch) (arrow.RecordBatch, error) {
	idx := rec.Schema().FieldIndices(c.Name)
	if len(idx) != 1 {
		return nil, fmt.Errorf("the rows read have no column %q", c.Name)
	}
	mask, err := keepMask(c, rec.Column(idx[0]))
	if err != nil {
		return nil, err
	}
	defer mask.Release()
	return compute.FilterRecordBatch(ctx, rec, mask, compute.DefaultFilterOptions())
}

// keepMask is true for the values at or after the cutoff, and for nulls.
func keepMask(c planner.ExpiryColumn, a arrow.Array) (arrow.Array, error) {
	var value func(i int) int64
	switch v := a.(type) {
	case *array.Date32:
		value = func(i int) int64 { return int64(v.Value(i)) }
	case *array.Timestamp:
		want := arrow.Microsecond
		switch c.Type.(type) {
		case iceberg.TimestampNsType, iceberg.TimestampTzNsType:
			want = arrow.Nanosecond
		}
		if unit := v.DataType().(*arrow.TimestampType).Unit; unit != want {
			return nil, fmt.Errorf("column %q was read in %s, not %s", c.Name, unit, want)
		}
		value = func(i int) int64 { return int64(v.Value(i)) }
	default:
		return nil, fmt.Errorf("column %q was read as %s", c.Name, a.DataType())
	}
	b := array.NewBooleanBuilder(memory.DefaultAllocator)
	defer b.Release()
	b.Reserve(a.Len())
	for i := 0; i < a.Len(); i++ {
		b.UnsafeAppend(a.IsNull(i) || value(i) >= c.Cut)
	}
	return b.NewArray(), nil
}

func hasDeletes(tasks []table.FileScanTask) bool {
	for _, t := range tasks {
		if len(t.DeleteFiles)+len(t.EqualityDeleteFiles)+len(t.DeletionVectorFiles) > 0 {
			return true
		}
	}
	return false
}

func hasEqualityDeletes(tasks []table.FileScanTask) bool {
	for _, t := range tasks {
		if len(t.EqualityDeleteFiles) > 0 {
			return true
		}
	}
	return false
}
