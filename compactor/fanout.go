package compactor

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/icekeeper/icekeeper/compactor/merge"
	"github.com/icekeeper/icekeeper/internal/rebase"
	"github.com/icekeeper/icekeeper/jobs"
	"github.com/icekeeper/icekeeper/planner"
)

// A run whose plan has at least Fanout.MinParts groups fans them out: each
// group is a part (groupPart) that any replica's worker rewrites
// (RunPart) from the snapshot the run planned on. The worker writes the
// group's new files, reads them back like any output, and lists them in
// an Avro manifest — Iceberg's own serialization of data files with their
// statistics — that travels in the part's output (groupOutput), a few KiB
// in River's row rather than one more object to write, read and delete.
// The coordinator decodes each into the group's result as it comes in and
// commits the groups in batches with the same committer as a run that
// rewrites here, rebase and all.
//
// Failures:
//   - A replica that dies mid-group loses that group's attempt; the
//     engine's sweep rescues the part and another replica rewrites it. What
//     the dead attempt wrote is left to unreferenced file removal, which
//     checks references before it deletes.
//   - Each part is read once, when it finishes, so no group commits twice.
//   - A group that fails for good (its attempts spent) stops the run: the
//     parts not finished are cancelled, the groups committed before stay,
//     the rest is left for the next run.
//   - A coordinator that dies leaves its parts without a lease holder:
//     they cancel themselves when they start, and the rescued run plans
//     again on the table as its committed batches left it.

// groupPart is one group as the coordinator hands it out. The snapshot ID
// is a string: River's PostgreSQL insert takes JSON numbers through a
// float, which keeps 53 bits of a 63-bit ID.
type groupPart struct {
	Snapshot    int64    `json:"snapshot,string"`
	Partition   string   `json:"partition"`
	Path        string   `json:"path"`
	InputBytes  int64    `json:"inputBytes"`
	TargetBytes int64    `json:"targetBytes"`
	Files       []string `json:"files"`
}

// groupOutput is a part's output: the path taken and the Avro manifest
// that lists the new files (none when every row was deleted).
type groupOutput struct {
	Path     string `json:"path"`
	Manifest []byte `json:"manifest,omitempty"`
	SpecID   int32  `json:"specId,omitempty"`
	Version  int    `json:"version,omitempty"`
}

// fanOut rewrites the plan's groups on every replica's workers and commits
// them in batches as they come in.
func (j *Job) fanOut(ctx context.Context, fan jobs.Fanout, sc scanned, fig *Figures, c *rebase.Committer, rec *rebase.RecordingFS, target int64, progress func(int, int)) error {
	groups := fig.Plan.Groups
	parts := make([]json.RawMessage, len(groups))
	for i, g := range groups {
		p := groupPart{Snapshot: sc.start.SnapshotID, Partition: g.Partition, Path: g.Path, InputBytes: g.InputBytes, TargetBytes: target}
		for _, task := range planner.GroupTasks(sc.tasks, g) {
			p.Files = append(p.Files, task.File.FilePath())
		}
		var err error
		if parts[i], err = json.Marshal(p); err != nil {
			return err
		}
	}
	fig.GroupsFannedOut = len(groups)
	begin := time.Now()
	var committing time.Duration
	var ready []table.CompactionGroupResult
	finished := 0
	err := fan.Fan(ctx, parts, func(r jobs.PartResult) error {
		finished++
		if progress != nil {
			progress(finished, len(parts))
		}
		g := groups[r.Index]
		rw := readPart(rec, planner.GroupTasks(sc.tasks, g), g, r)
		fig.addRewrites([]rewritten{rw})
		if rw.err != nil {
			return rw.err
		}
		ready = append(ready, rw.result)
		if len(ready) < c.BatchLimit() && finished < len(parts) {
			return nil
		}
		start := time.Now()
		err := c.Run(ctx, ready)
		committing += time.Since(start)
		ready = nil
		return err
	})
	fig.CommitMs = committing.Milliseconds()
	fig.RewriteMs = (time.Since(begin) - committing).Milliseconds()
	if err != nil && fig.GroupsFailed > 0 {
		return fmt.Errorf("%d of %d groups could not be rewritten, the %d committed before stay; first: %s", fig.GroupsFailed, fig.GroupsPlanned, len(c.Committed().Groups), fig.Errors[0])
	}
	return err
}

// readPart turns a finished part into the group's rewrite: the new files
// from its manifest, the old files and the deletes they take along from
// the coordinator's own scan. Every file the part names is recorded in
// rec, so that what does not commit is removed.
func readPart(rec *rebase.RecordingFS, tasks []table.FileScanTask, g planner.Group, r jobs.PartResult) rewritten {
	rw := rewritten{path: g.Path}
	if rw.err = r.Err; rw.err == nil {
		rw.result, rw.path, rw.err = decodePart(rec, tasks, r.Output)
	}
	if rw.err != nil {
		rw.err = fmt.Errorf("rewrite group %s: %w", g.Partition, rw.err)
	}
	rw.result.PartitionKey = g.Partition
	rw.result.BytesBefore = g.InputBytes
	return rw
}

func decodePart(rec *rebase.RecordingFS, tasks []table.FileScanTask, raw json.RawMessage) (table.CompactionGroupResult, string, error) {
	var res table.CompactionGroupResult
	var out groupOutput
	if err := json.Unmarshal(raw, &out); err != nil {
		return res, "", fmt.Errorf("decode the output %q: %w", raw, err)
	}
	for _, t := range tasks {
		res.OldDataFiles = append(res.OldDataFiles, t.File)
	}
	res.SafePosDeletes = table.CollectSafePositionDeletes(tasks)
	res.SafeDeletionVectors = table.CollectSafeDeletionVectors(tasks)
	if len(out.Manifest) == 0 {
		return res, out.Path, nil
	}
	m := iceberg.NewManifestFile(out.Version, "", int64(len(out.Manifest)), out.SpecID, 0).Build()
	entries, err := iceberg.ReadManifest(m, bytes.NewReader(out.Manifest), false)
	if err != nil {
		return res, out.Path, fmt.Errorf("read the manifest of its outputs: %w", err)
	}
	for _, e := range entries {
		df := e.DataFile()
		rec.Add(df.FilePath())
		res.NewDataFiles = append(res.NewDataFiles, df)
		res.BytesAfter += df.FileSizeBytes()
	}
	return res, out.Path, nil
}

// RunPart is the definition's RunPart: it rewrites one group of a fanned-out
// run, from the snapshot the run planned on, and returns the manifest of
// its new files. A group that fails leaves nothing behind.
func (j *Job) RunPart(ctx context.Context, t jobs.Target, raw json.RawMessage) (json.RawMessage, error) {
	var p groupPart
	if err := json.Unmarshal(raw, &p); err != nil {
		return nil, fmt.Errorf("decode the group: %w", err)
	}
	tbl, tasks, err := j.partTasks(ctx, t, p)
	if err != nil {
		return nil, err
	}
	wfs, cat, err := rebase.OpenWriting(ctx, t.Bucket, tbl)
	if err != nil {
		return nil, err
	}
	rec := &rebase.RecordingFS{WriteFileIO: wfs}
	rtbl := rec.Table(tbl, cat)
	g := planner.Group{Partition: p.Partition, Path: p.Path, InputBytes: p.InputBytes}
	rw := j.rewriteGroup(ctx, &merge.Merger{WholeFileBytes: j.wholeFileBytes, NoStorageCopies: j.NoStorageCopies, CheckRows: !j.SkipRowCheck}, rtbl, tasks, g, p.TargetBytes, !j.SkipRowCheck)
	out := groupOutput{Path: rw.path}
	if rw.err == nil && len(rw.result.NewDataFiles) > 0 {
		rw.err = listOutputs(tbl.Metadata(), p.Snapshot, rw.result.NewDataFiles, &out)
	}
	if rw.err != nil {
		rec.RemoveExcept(nil)
		return nil, rw.err
	}
	return json.Marshal(out)
}

// partTasks are the table and the scan tasks of the part's files at its
// snapshot. Both are loaded once for the parts of one run this replica
// works on: the scan reads every manifest.
func (j *Job) partTasks(ctx context.Context, t jobs.Target, p groupPart) (*table.Table, []table.FileScanTask, error) {
	sc, err := j.scans.get(fmt.Sprintf("%s@%d", t.Key(), p.Snapshot), func() (*snapshotScan, error) {
		tbl, err := t.Bucket.LoadTable(ctx, t.Table)
		if err != nil {
			return nil, err
		}
		snap := tbl.Metadata().SnapshotByID(p.Snapshot)
		if snap == nil {
			return nil, fmt.Errorf("snapshot %d of %s, which the group was planned on, is gone", p.Snapshot, t.Table)
		}
		tasks, err := rebase.PlanVerified(ctx, tbl, snap)
		if err != nil {
			return nil, err
		}
		sc := &snapshotScan{tbl: tbl, byPath: map[string]table.FileScanTask{}}
		for _, task := range tasks {
			sc.byPath[task.File.FilePath()] = task
		}
		return sc, nil
	})
	if err != nil {
		return nil, nil, err
	}
	tasks := make([]table.FileScanTask, len(p.Files))
	for i, f := range p.Files {
		task, ok := sc.byPath[f]
		if !ok {
			return nil, nil, fmt.Errorf("snapshot %d of %s has no data file %s", p.Snapshot, t.Table, f)
		}
		tasks[i] = task
	}
	return sc.tbl, tasks, nil
}

// listOutputs writes the manifest that lists a group's new files, all of
// one partition spec, into out.
func listOutputs(meta table.Metadata, snapshot int64, files []iceberg.DataFile, out *groupOutput) error {
	specID := files[0].SpecID()
	spec := meta.PartitionSpecByID(int(specID))
	if spec == nil {
		return fmt.Errorf("a new file has partition spec %d, which the table does not have", specID)
	}
	var buf bytes.Buffer
	w, err := iceberg.NewManifestWriter(meta.Version(), &buf, *spec, meta.CurrentSchema(), snapshot)
	if err != nil {
		return err
	}
	seq := meta.SnapshotByID(snapshot).SequenceNumber
	for _, df := range files {
		if df.SpecID() != specID {
			return fmt.Errorf("the group wrote files of partition specs %d and %d", specID, df.SpecID())
		}
		if err := w.Add(iceberg.NewManifestEntry(iceberg.EntryStatusADDED, &snapshot, &seq, nil, df)); err != nil {
			return err
		}
	}
	if err := w.Close(); err != nil {
		return fmt.Errorf("list a group's outputs: %w", err)
	}
	out.Manifest, out.SpecID, out.Version = buf.Bytes(), specID, meta.Version()
	return nil
}

// scanCache keeps the last few snapshot scans of the parts this replica
// worked on; one is loaded once however many parts ask for it at once.
type scanCache struct {
	mu      sync.Mutex
	entries []*cachedScan // oldest first
}

// snapshotScan is a table as loaded for a run's parts, and its data files
// at the run's snapshot by path.
type snapshotScan struct {
	tbl    *table.Table
	byPath map[string]table.FileScanTask
}

type cachedScan struct {
	key  string
	once sync.Once
	scan *snapshotScan
	err  error
}

// scansKept bounds the cache: a replica works on the parts of a few runs
// at a time at most.
const scansKept = 4

func (c *scanCache) get(key string, load func() (*snapshotScan, error)) (*snapshotScan, error) {
	c.mu.Lock()
	var e *cachedScan
	for _, x := range c.entries {
		if x.key == key {
			e = x
		}
	}
	if e == nil {
		e = &cachedScan{key: key}
		c.entries = append(c.entries, e)
		if len(c.entries) > scansKept {
			c.entries = c.entries[1:]
		}
	}
	c.mu.Unlock()
	e.once.Do(func() { e.scan, e.err = load() })
	if e.err != nil {
		// Not kept: the next part tries again.
		c.mu.Lock()
		for i, x := range c.entries {
			if x == e {
				c.entries = append(c.entries[:i], c.entries[i+1:]...)
				break
			}
		}
		c.mu.Unlock()
	}
	return e.scan, e.err
}
