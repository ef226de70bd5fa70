// Package compactor is icebergCompaction: it plans with package planner,
// rewrites the planned groups concurrently — delete-free groups of one
// schema by merging their Parquet columns with parquet-go (merge.go), the
// rest through iceberg-go's reader and writer, deletes applied while
// reading — and commits them as REPLACE snapshots.
//
// Correctness rules, each enforced here:
//   - Rewritten files carry the data sequence number of the snapshot the
//     rewrite started from, so equality deletes committed later still
//     apply to their rows.
//   - A position or equality delete file is removed only when every data
//     file the scan attached it to is replaced in the same commit. A delete
//     that might still apply stays.
//   - On a commit conflict the table is reloaded; a group whose files were
//     removed meanwhile, or whose partition received new position deletes
//     or deletion vectors since the start, is dropped; the rest retries.
//   - Groups commit in batches, so one hot partition cannot waste the
//     whole run; outputs of groups that do not commit are deleted at once.
//   - A group that cannot be read (a corrupt or missing data file) fails
//     the whole run before anything is committed.
package compactor

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apache/iceberg-go"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
	"github.com/sourcegraph/conc/pool"

	"github.com/icekeeper/icekeeper/internal/maintenance"
	"github.com/icekeeper/icekeeper/jobs"
	"github.com/icekeeper/icekeeper/planner"
)

// MsgStaleMetadata is S3 Tables' message for a commit that lost to
// concurrent writers every time it was tried.
const MsgStaleMetadata = "Commit failed due to stale metadata. Maintenance will be retried at the next available opportunity."

// ErrStrategy is returned when the configured strategy cannot run.
var ErrStrategy = errors.New("compaction strategy cannot be applied")

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
	// BatchBytes of input (default 8 GiB). A batch is the unit of partial
	// progress: a conflict or crash loses at most one batch of work, while
	// every commit rewrites the table's manifests, so small runs commit once.
	BatchGroups int
	BatchBytes  int64
	// MaxAttempts bounds the commits of one batch (default 4); Backoff is
	// the first wait between them, doubled each time (default 200ms).
	MaxAttempts int
	Backoff     time.Duration
	// MinInputFiles is the planner's minimum of small files per partition.
	MinInputFiles int

	// wholeFileBytes overrides the merge path's whole-file read size (tests
	// only: 1 sends every input through ranged reads).
	wholeFileBytes int64
	// beforeCommit, when set (tests only), runs before each commit attempt;
	// afterCommit may replace a commit's result (fault injection).
	beforeCommit func(attempt int)
	afterCommit  func(error) error
}

// Type implements jobs.Job.
func (j *Job) Type() maintenance.JobType { return maintenance.Compaction }

// Figures is what a run reports and records.
type Figures struct {
	Strategy           string       `json:"strategy"`
	TargetFileSizeMB   int          `json:"targetFileSizeMB"`
	Plan               planner.Plan `json:"plan"`
	InputFiles         int          `json:"inputFiles"`
	InputBytes         int64        `json:"inputBytes"`
	InputRecords       int64        `json:"inputRecords"`
	OutputFiles        int          `json:"outputFiles"`
	OutputBytes        int64        `json:"outputBytes"`
	OutputRecords      int64        `json:"outputRecords"`
	DeleteFilesRemoved int          `json:"deleteFilesRemoved"`
	GroupsPlanned      int          `json:"groupsPlanned"`
	GroupsMerged       int          `json:"groupsMerged"` // rewritten by the merge path
	GroupsCommitted    int          `json:"groupsCommitted"`
	GroupsFailed       int          `json:"groupsFailed"`
	GroupsDropped      int          `json:"groupsDropped"` // dropped for a true conflict
	CommitAttempts     int          `json:"commitAttempts"`
	Errors             []string     `json:"errors,omitempty"`
	DurationMs         int64        `json:"durationMs"`
}

// Text is the readable form `icekeeper run` prints.
func (f *Figures) Text() string {
	var b strings.Builder
	fmt.Fprintf(&b, "  %s toward %d MB: %d groups planned, %d files (%d bytes) in, %d files expected out",
		f.Strategy, f.TargetFileSizeMB, f.GroupsPlanned, f.Plan.InputFiles(), f.Plan.InputBytes(), f.Plan.ExpectedOutputFiles())
	for _, g := range f.Plan.Groups {
		fmt.Fprintf(&b, "\n  group %s: %d files, %d bytes, %d rows -> ~%d files (%s)", g.Partition, g.InputFiles, g.InputBytes, g.InputRecords, g.ExpectedOutputFiles, g.Reason)
	}
	for _, s := range f.Plan.Skipped {
		fmt.Fprintf(&b, "\n  skip %s: %s", s.Partition, s.Reason)
	}
	if f.CommitAttempts > 0 {
		fmt.Fprintf(&b, "\n  committed %d groups (%d failed, %d dropped for conflicts, %d rewritten by merging columns): %d files -> %d files, %d -> %d bytes, %d delete files removed, %d commit attempts, %d ms",
			f.GroupsCommitted, f.GroupsFailed, f.GroupsDropped, f.GroupsMerged, f.InputFiles, f.OutputFiles, f.InputBytes, f.OutputBytes, f.DeleteFilesRemoved, f.CommitAttempts, f.DurationMs)
	}
	for _, e := range f.Errors {
		fmt.Fprintf(&b, "\n  error %s", e)
	}
	return b.String()
}

// Counters implements jobs.Counter.
func (f *Figures) Counters() map[string]float64 {
	return map[string]float64{"bytes_compacted": float64(f.InputBytes), "files_compacted": float64(f.InputFiles), "files_written": float64(f.OutputFiles)}
}

// Run implements jobs.Job.
func (j *Job) Run(ctx context.Context, t jobs.Target, cfg maintenance.Config, opts jobs.Options) (jobs.Outcome, error) {
	start := time.Now()
	targetMB := *cfg.Compaction.TargetFileSizeMB
	fig := &Figures{TargetFileSizeMB: targetMB}
	out := jobs.Outcome{Figures: fig}
	tbl, err := t.Bucket.LoadTable(ctx, t.Table)
	if err != nil {
		return out, err
	}
	if fig.Strategy, err = strategy(cfg.Compaction.Strategy, tbl); err != nil {
		return out, err
	}
	snap := tbl.CurrentSnapshot()
	if snap == nil {
		return out, nil // an empty table
	}
	tasks, err := tbl.Scan().PlanFiles(ctx)
	if err != nil {
		return out, fmt.Errorf("plan scan of %s: %w", t.Table, err)
	}
	tasks = wholeFiles(tasks)
	var addedAt map[string]time.Time
	minAge := time.Duration(t.Bucket.Config.Compaction.MinFileAgeMinutes) * time.Minute
	if minAge > 0 {
		if addedAt, err = fileAges(ctx, tbl); err != nil {
			return out, err
		}
	}
	files := make([]planner.File, len(tasks))
	for i, task := range tasks {
		df := task.File
		files[i] = planner.File{ID: i, Path: df.FilePath(), Partition: partitionKey(df), Label: partitionLabel(tbl.Metadata(), df), Format: strings.ToLower(string(df.FileFormat())),
			SizeBytes: df.FileSizeBytes(), Records: df.Count(),
			DeleteFiles: len(task.DeleteFiles) + len(task.EqualityDeleteFiles) + len(task.DeletionVectorFiles)}
		if at, ok := addedAt[df.FilePath()]; ok && opts.Now.Sub(at) < minAge {
			files[i].Skip = fmt.Sprintf("committed %v ago, younger than the minimum file age of %v", opts.Now.Sub(at).Round(time.Second), minAge)
		}
	}
	target := int64(targetMB) << 20
	if fig.Plan, err = planner.Make(files, planner.Options{TargetBytes: target, MinInputFiles: j.MinInputFiles}); err != nil {
		return out, err
	}
	fig.GroupsPlanned = len(fig.Plan.Groups)
	fig.DurationMs = time.Since(start).Milliseconds()
	if opts.DryRun || len(fig.Plan.Groups) == 0 {
		return out, nil
	}

	fs, err := tbl.FS(ctx)
	if err != nil {
		return out, err
	}
	wfs, ok := fs.(icebergio.WriteFileIO)
	if !ok {
		return out, fmt.Errorf("the file system of %s cannot write", tbl.Location())
	}
	// Rewrite through a file system that records every file created, so
	// that whatever does not end up committed — outputs of dropped groups,
	// partial outputs of a group that failed midway — is removed now.
	rec := &recordingFS{WriteFileIO: wfs}
	cat, err := t.Bucket.Catalog(ctx)
	if err != nil {
		return out, err
	}
	rtbl := table.New(tbl.Identifier(), tbl.Metadata(), tbl.MetadataLocation(), func(context.Context) (icebergio.IO, error) { return rec, nil }, cat)
	results := j.rewrite(ctx, rtbl, tasks, fig.Plan.Groups, target, fig.Strategy, opts.Progress, fig)
	committedFiles := map[string]bool{}
	defer func() {
		// A commit whose answer was lost (a timeout, a cancelled context)
		// may have landed after all: keep every output the table's
		// snapshots since the start have added, whatever we believe.
		added, err := addedSince(context.WithoutCancel(ctx), t, snap)
		if err != nil {
			return // unsure: leave the outputs to unreferenced file removal
		}
		for p := range added {
			committedFiles[p] = true
		}
		rec.removeExcept(committedFiles)
	}()
	if fig.GroupsFailed > 0 {
		// A file that cannot be read is a broken table, not a busy one:
		// commit nothing and leave it for a human.
		fig.DurationMs = time.Since(start).Milliseconds()
		return out, fmt.Errorf("%d of %d groups could not be rewritten, nothing committed; first: %s", fig.GroupsFailed, fig.GroupsPlanned, fig.Errors[0])
	}
	deletes := attachments(tasks)
	if deletes.dangling, err = danglingDeletes(ctx, tbl, deletes.covers); err != nil {
		return out, err
	}
	var commitErr error
	base := tbl
	for _, batch := range j.batches(results) {
		if commitErr != nil {
			break
		}
		var committed, dropped []table.CompactionGroupResult
		base, committed, dropped, commitErr = j.commitBatch(ctx, t, base, snap, batch, deletes, fig)
		deletes.dangling = nil // removed with the first commit, or left for the next run
		fig.GroupsDropped += len(dropped)
		for _, r := range committed {
			fig.GroupsCommitted++
			fig.InputFiles += len(r.OldDataFiles)
			for _, df := range r.OldDataFiles {
				fig.InputBytes += df.FileSizeBytes()
				fig.InputRecords += df.Count()
			}
			fig.OutputFiles += len(r.NewDataFiles)
			for _, df := range r.NewDataFiles {
				fig.OutputBytes += df.FileSizeBytes()
				fig.OutputRecords += df.Count()
				committedFiles[df.FilePath()] = true
			}
			fig.DeleteFilesRemoved += len(r.SafePosDeletes) + len(r.SafeDeletionVectors)
		}
	}
	fig.DurationMs = time.Since(start).Milliseconds()
	if commitErr != nil {
		return out, commitErr
	}
	return out, nil
}

// batches cuts the results into commits by BatchGroups and BatchBytes.
func (j *Job) batches(results []table.CompactionGroupResult) [][]table.CompactionGroupResult {
	maxGroups, maxBytes := j.BatchGroups, j.BatchBytes
	if maxGroups <= 0 {
		maxGroups = 100
	}
	if maxBytes <= 0 {
		maxBytes = 8 << 30
	}
	var out [][]table.CompactionGroupResult
	var cur []table.CompactionGroupResult
	var bytes int64
	for _, r := range results {
		var in int64
		for _, df := range r.OldDataFiles {
			in += df.FileSizeBytes()
		}
		if len(cur) > 0 && (len(cur) >= maxGroups || bytes+in > maxBytes) {
			out = append(out, cur)
			cur, bytes = nil, 0
		}
		cur = append(cur, r)
		bytes += in
	}
	if len(cur) > 0 {
		out = append(out, cur)
	}
	return out
}

// strategy resolves the configured strategy for tbl: auto is sort when the
// table has a sort order, else binpack; sort and z-order need a sort order
// and fail without one rather than silently fall back to binpack.
func strategy(s maintenance.Strategy, tbl *table.Table) (string, error) {
	sorted := !tbl.SortOrder().IsUnsorted()
	switch s {
	case maintenance.StrategyBinpack:
		return string(s), nil
	case maintenance.StrategyAuto, "":
		if sorted {
			return string(maintenance.StrategySort), nil
		}
		return string(maintenance.StrategyBinpack), nil
	case maintenance.StrategySort, maintenance.StrategyZOrder:
		if !sorted {
			return "", fmt.Errorf("%w: strategy %s needs a table sort order (its columns) and the table has none", ErrStrategy, s)
		}
		return string(s), nil
	}
	return "", fmt.Errorf("%w: unknown strategy %q", ErrStrategy, s)
}

// rewrite executes the groups, at most Parallelism at a time, and returns
// the results of those that succeeded, in plan order.
func (j *Job) rewrite(ctx context.Context, tbl *table.Table, tasks []table.FileScanTask, groups []planner.Group, target int64, strat string, progress func(int, int), fig *Figures) []table.CompactionGroupResult {
	par := j.Parallelism
	if par <= 0 {
		par = 2
	}
	results := make([]*table.CompactionGroupResult, len(groups))
	var mu sync.Mutex
	var done atomic.Int64
	p := pool.New().WithContext(ctx).WithMaxGoroutines(par)
	for i, g := range groups {
		p.Go(func(ctx context.Context) error {
			grp := table.CompactionTaskGroup{PartitionKey: g.Partition, TotalSizeBytes: g.InputBytes}
			for _, id := range g.FileIDs {
				grp.Tasks = append(grp.Tasks, tasks[id])
			}
			var r table.CompactionGroupResult
			var err error
			merged := false
			switch {
			case int(grp.Tasks[0].File.SpecID()) != tbl.Metadata().DefaultPartitionSpec():
				// Files of an older spec: their rows spread over the
				// current spec's partitions.
				r, err = repartitionGroup(ctx, tbl, grp.Tasks, target)
			case strat == string(maintenance.StrategySort), strat == string(maintenance.StrategyZOrder):
				r, err = sortedGroup(ctx, tbl, grp.Tasks, target, strat == string(maintenance.StrategyZOrder))
			default:
				r, err = mergeGroup(ctx, tbl, grp.Tasks, target, j.wholeFileBytes)
				merged = err == nil
				if errors.Is(err, errNotMergeable) {
					r, err = table.ExecuteCompactionGroup(ctx, tbl, grp, table.WithCompactionTargetFileSize(target))
				}
			}
			if err == nil {
				// Check every output with a second Parquet reader before
				// anything is committed.
				if fs, ferr := tbl.FS(ctx); ferr != nil {
					err = ferr
				} else {
					for _, df := range r.NewDataFiles {
						if err = verifyOutput(fs, df); err != nil {
							break
						}
					}
				}
			}
			if progress != nil {
				progress(int(done.Add(1)), len(groups))
			}
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				fig.GroupsFailed++
				fig.Errors = append(fig.Errors, fmt.Sprintf("rewrite group %s: %v", g.Partition, err))
				return nil
			}
			results[i] = &r
			if merged {
				fig.GroupsMerged++
			}
			return nil
		})
	}
	_ = p.Wait()
	var out []table.CompactionGroupResult
	for _, r := range results {
		if r != nil {
			out = append(out, *r)
		}
	}
	return out
}

// wholeFiles joins the scan's splits of one file (a large Parquet file is
// planned as several byte ranges) back into one task: compaction replaces
// files, and a file planned twice would be removed by one commit while
// another still had to copy the rest of its rows.
func wholeFiles(tasks []table.FileScanTask) []table.FileScanTask {
	out := make([]table.FileScanTask, 0, len(tasks))
	at := map[string]int{}
	for _, t := range tasks {
		p := t.File.FilePath()
		i, ok := at[p]
		if !ok {
			at[p] = len(out)
			t.Start, t.Length, t.Residual = 0, t.File.FileSizeBytes(), nil
			out = append(out, t)
			continue
		}
		w := &out[i]
		w.DeleteFiles = unionFiles(w.DeleteFiles, t.DeleteFiles)
		w.EqualityDeleteFiles = unionFiles(w.EqualityDeleteFiles, t.EqualityDeleteFiles)
		w.DeletionVectorFiles = unionFiles(w.DeletionVectorFiles, t.DeletionVectorFiles)
	}
	return out
}

func unionFiles(a, b []iceberg.DataFile) []iceberg.DataFile {
	for _, f := range b {
		if !slices.ContainsFunc(a, func(g iceberg.DataFile) bool { return g.FilePath() == f.FilePath() }) {
			a = append(a, f)
		}
	}
	return a
}

// deleteIndex is what the scan at the start attached deletes to.
type deleteIndex struct {
	// covers maps each position and equality delete file to the data
	// files the scan attached it to: every live file it may apply to.
	covers map[string][]string
	// equality maps each data file to its equality delete files.
	equality map[string][]iceberg.DataFile
	// dangling are live position and equality delete files the scan
	// attached to no data file: they apply to nothing, and nothing written
	// later can bring them back into play (position deletes name files
	// that are gone; new data files get higher sequence numbers than an
	// equality delete's). The run's first commit removes them.
	dangling []iceberg.DataFile
}

func attachments(tasks []table.FileScanTask) deleteIndex {
	idx := deleteIndex{covers: map[string][]string{}, equality: map[string][]iceberg.DataFile{}}
	for _, t := range tasks {
		p := t.File.FilePath()
		for _, d := range t.DeleteFiles {
			if d.ContentType() == iceberg.EntryContentPosDeletes {
				idx.covers[d.FilePath()] = append(idx.covers[d.FilePath()], p)
			}
		}
		for _, d := range t.EqualityDeleteFiles {
			idx.covers[d.FilePath()] = append(idx.covers[d.FilePath()], p)
			idx.equality[p] = append(idx.equality[p], d)
		}
	}
	return idx
}

// safeDeletes sets each result's SafePosDeletes — the delete files the
// commit removes — to the position and equality delete files whose every
// attached data file is replaced by this batch. A delete file that may
// still apply to a file outside the batch stays. An equality delete is
// dead once its files are replaced: the outputs carry the start's data
// sequence number, which is not lower than the delete's, so it no longer
// applies to them, and files committed later have higher numbers still.
// Each removed file is listed on one result only.
func safeDeletes(batch []table.CompactionGroupResult, idx deleteIndex) []table.CompactionGroupResult {
	replaced := map[string]bool{}
	for _, r := range batch {
		for _, df := range r.OldDataFiles {
			replaced[df.FilePath()] = true
		}
	}
	out := make([]table.CompactionGroupResult, len(batch))
	taken := map[string]bool{}
	for _, d := range idx.dangling {
		taken[d.FilePath()] = true
	}
	for i, r := range batch {
		candidates := batch[i].SafePosDeletes
		for _, df := range r.OldDataFiles {
			candidates = append(candidates, idx.equality[df.FilePath()]...)
		}
		r.SafePosDeletes = nil
		for _, d := range candidates {
			if taken[d.FilePath()] {
				continue
			}
			covers := idx.covers[d.FilePath()]
			all := len(covers) > 0
			for _, p := range covers {
				all = all && replaced[p]
			}
			if all {
				r.SafePosDeletes = append(r.SafePosDeletes, d)
				taken[d.FilePath()] = true
			}
		}
		out[i] = r
	}
	if len(out) > 0 {
		out[0].SafePosDeletes = append(out[0].SafePosDeletes, idx.dangling...)
	}
	return out
}

// danglingDeletes lists the live position and equality delete files of
// the snapshot that the scan attached to no data file. Deletion vectors
// are left alone: several share one Puffin file.
func danglingDeletes(ctx context.Context, tbl *table.Table, covers map[string][]string) ([]iceberg.DataFile, error) {
	var out []iceberg.DataFile
	seen := map[string]bool{}
	for e, err := range liveEntries(ctx, tbl, iceberg.ManifestContentDeletes) {
		if err != nil {
			return nil, err
		}
		df := e.DataFile()
		p := df.FilePath()
		if df.FileFormat() == iceberg.PuffinFile || len(covers[p]) > 0 || seen[p] {
			continue
		}
		seen[p] = true
		out = append(out, df)
	}
	return out, nil
}

// liveEntries yields the live entries of the current snapshot's manifests
// of one content type.
func liveEntries(ctx context.Context, tbl *table.Table, content iceberg.ManifestContent) iter.Seq2[iceberg.ManifestEntry, error] {
	return func(yield func(iceberg.ManifestEntry, error) bool) {
		fs, err := tbl.FS(ctx)
		if err != nil {
			yield(nil, err)
			return
		}
		snap := tbl.CurrentSnapshot()
		manifests, err := snap.Manifests(fs)
		if err != nil {
			yield(nil, fmt.Errorf("read manifest list %s: %w", snap.ManifestList, err))
			return
		}
		for _, m := range manifests {
			if m.ManifestContent() != content {
				continue
			}
			for e, err := range m.Entries(fs, true) {
				if err != nil {
					yield(nil, fmt.Errorf("read manifest %s: %w", m.FilePath(), err))
					return
				}
				if !yield(e, nil) {
					return
				}
			}
		}
	}
}

// partitionLabel names a file's partition for people: the partition
// fields' names and human-readable values ("ts_day=2026-11-10"), with the
// spec ID when it is not the current one. Grouping uses partitionKey.
func partitionLabel(meta table.Metadata, df iceberg.DataFile) string {
	spec := meta.PartitionSpecByID(int(df.SpecID()))
	if spec == nil || spec.NumFields() == 0 {
		if int(df.SpecID()) == meta.DefaultPartitionSpec() {
			return "unpartitioned"
		}
		return partitionKey(df)
	}
	part := df.Partition()
	var b strings.Builder
	if int(df.SpecID()) != meta.DefaultPartitionSpec() {
		fmt.Fprintf(&b, "spec %d: ", df.SpecID())
	}
	for i := 0; i < spec.NumFields(); i++ {
		f := spec.Field(i)
		if i > 0 {
			b.WriteByte('/')
		}
		v := part[f.FieldID]
		val := "null"
		if v != nil {
			val = fmt.Sprint(v)
			if src, ok := meta.CurrentSchema().FindFieldByID(f.SourceID()); ok {
				if rt := f.Transform.ResultType(src.Type); rt != nil {
					val = f.Transform.ToHumanStrType(rt, v)
				}
			}
		}
		fmt.Fprintf(&b, "%s=%s", f.Name, val)
	}
	return b.String()
}

// partitionKey is the canonical partition of a file: spec ID and the
// partition values by field ID.
func partitionKey(df iceberg.DataFile) string {
	part := df.Partition()
	ids := make([]int, 0, len(part))
	for id := range part {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	var b strings.Builder
	fmt.Fprintf(&b, "spec=%d", df.SpecID())
	for _, id := range ids {
		fmt.Fprintf(&b, "/%d=%v", id, part[id])
	}
	return b.String()
}

// addedSince returns the files added by the snapshots on the current
// lineage after start, read from freshly loaded metadata.
func addedSince(ctx context.Context, t jobs.Target, start *table.Snapshot) (map[string]bool, error) {
	tbl, err := t.Bucket.LoadTable(ctx, t.Table)
	if err != nil {
		return nil, err
	}
	fs, err := tbl.FS(ctx)
	if err != nil {
		return nil, err
	}
	meta := tbl.Metadata()
	out := map[string]bool{}
	for s := tbl.CurrentSnapshot(); s != nil && s.SnapshotID != start.SnapshotID; {
		manifests, err := s.Manifests(fs)
		if err != nil {
			return nil, err
		}
		for _, m := range manifests {
			// A replace rewrites every manifest it removes files from;
			// only those that add files matter here.
			if m.SnapshotID() != s.SnapshotID || !m.HasAddedFiles() {
				continue
			}
			for e, err := range m.Entries(fs, true) {
				if err != nil {
					return nil, err
				}
				if e.Status() == iceberg.EntryStatusADDED {
					out[e.DataFile().FilePath()] = true
				}
			}
		}
		if s.ParentSnapshotID == nil {
			break
		}
		s = meta.SnapshotByID(*s.ParentSnapshotID)
	}
	return out, nil
}

// fileAges maps each live data file of the current snapshot to the commit
// time of the snapshot that added it; files whose adding snapshot has
// expired are absent (and old enough by any measure).
func fileAges(ctx context.Context, tbl *table.Table) (map[string]time.Time, error) {
	meta := tbl.Metadata()
	out := map[string]time.Time{}
	for e, err := range liveEntries(ctx, tbl, iceberg.ManifestContentData) {
		if err != nil {
			return nil, err
		}
		if s := meta.SnapshotByID(e.SnapshotID()); s != nil {
			out[e.DataFile().FilePath()] = time.UnixMilli(s.TimestampMs)
		}
	}
	return out, nil
}

// recordingFS remembers the files the rewrite creates.
type recordingFS struct {
	icebergio.WriteFileIO
	mu      sync.Mutex
	created []string
}

func (r *recordingFS) Create(name string) (icebergio.FileWriter, error) {
	r.mu.Lock()
	r.created = append(r.created, name)
	r.mu.Unlock()
	return r.WriteFileIO.Create(name)
}

// removeExcept deletes the created files that are not in keep: outputs that
// did not commit are unreferenced. A failure here only leaves them for
// unreferenced file removal.
func (r *recordingFS) removeExcept(keep map[string]bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, p := range r.created {
		if !keep[p] {
			_ = r.WriteFileIO.Remove(p)
		}
	}
}
