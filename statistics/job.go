package statistics

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/apache/iceberg-go"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/puffin"
	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"
	"github.com/sourcegraph/conc/pool"

	"github.com/icekeeper/icekeeper/internal/commit"
	"github.com/icekeeper/icekeeper/internal/cost"
	"github.com/icekeeper/icekeeper/internal/rebase"
	"github.com/icekeeper/icekeeper/internal/theta"
	"github.com/icekeeper/icekeeper/internal/verified"
	"github.com/icekeeper/icekeeper/jobs"
	"github.com/icekeeper/icekeeper/maintenance"
	"github.com/icekeeper/icekeeper/planner"
)

// Job is icebergStatistics.
type Job struct {
	// Retry is the commit retry policy where the table sets none.
	Retry *commit.Policy
	// Logger receives the run's plan and commit at debug level (nil:
	// none).
	Logger *slog.Logger

	// beforeCommit, when set (tests only), runs before each commit
	// attempt.
	beforeCommit func(attempt int)
}

// Definition is icebergStatistics' definition.
func (j *Job) Definition() *jobs.Definition[planner.StatisticsSettings, *Figures] {
	return &jobs.Definition[planner.StatisticsSettings, *Figures]{
		Name:     maintenance.Statistics,
		Settings: planner.StatisticsSettingsOf,
		Figures: func(planner.StatisticsSettings, jobs.Options) *Figures {
			return &Figures{}
		},
		Run: j.run,
		Check: func(tbl *table.Table, s planner.StatisticsSettings) error {
			_, err := planner.StatisticsColumns(tbl.Schema(), s)
			return err
		},
		// What a run does is a function of the metadata (the statistics
		// it lists and the snapshots since) and the settings: a run on
		// the metadata file the last run committed finds it up to date.
		Unchanged: &jobs.Rule[planner.StatisticsSettings]{},
		Oldest: func(meta table.Metadata, _ planner.StatisticsSettings, _ *planner.Base, _ time.Time) (planner.Oldest, bool, error) {
			o, ok := planner.StatisticsOldest(meta)
			return o, ok, nil
		},
		Summary: summary,
		// Processed, not billed: S3 Tables keeps no statistics.
		Processed: func(f *Figures) cost.Work {
			return cost.Work{Objects: int64(f.DataFilesRead), Bytes: f.BytesRead}
		},
	}
}

func (j *Job) run(ctx context.Context, r *jobs.Run[planner.StatisticsSettings], fig *Figures) error {
	t, s := r.Target, r.Settings
	tbl, err := r.Load(ctx)
	if err != nil {
		return err
	}
	plan, err := planner.PlanStatistics(tbl.Metadata(), s)
	if err != nil {
		return err
	}
	fig.SnapshotID, fig.Full, fig.Reason, fig.CommitsBehind, fig.Drift = plan.SnapshotID, plan.Full, plan.Reason, plan.CommitsBehind, plan.Drift
	if !plan.Behind.IsZero() {
		fig.AgeSeconds = int64(r.Now.Sub(plan.Behind) / time.Second)
	}
	j.log().Debug("statistics planned", "table", t.Table.String(), "snapshot", plan.SnapshotID, "full", plan.Full, "reason", plan.Reason)
	// Partition statistics are written with every run that writes column
	// statistics, and on their own where the setting was turned on after
	// the column statistics were current.
	needParts := s.PartitionStatistics && plan.SnapshotID != 0 && partitioned(tbl.Metadata()) &&
		!planner.HasPartitionStatistics(tbl.Metadata(), plan.SnapshotID)
	if plan.SnapshotID == 0 || (plan.UpToDate && len(plan.Remove) == 0 && !needParts) {
		r.Settled(tbl, time.Time{})
		return nil
	}
	fsys, err := tbl.FS(ctx)
	if err != nil {
		return fmt.Errorf("open file system of %s: %w", tbl.Location(), err)
	}
	var blobs []blob
	if !plan.UpToDate {
		if blobs, err = j.sketch(ctx, fsys, tbl.Metadata(), plan, fig); err != nil {
			return fmt.Errorf("statistics of %s: %w", t.Table, err)
		}
	}
	var parts *partitionFile
	if needParts {
		if parts, err = j.partitions(ctx, fsys, tbl.Metadata(), plan.SnapshotID, fig); err != nil {
			return fmt.Errorf("partition statistics of %s: %w", t.Table, err)
		}
		if parts != nil {
			fig.Partitions = len(parts.rows)
		}
	}
	if r.DryRun {
		return nil
	}
	wfs, cat, err := rebase.OpenWriting(ctx, t.Bucket, tbl)
	if err != nil {
		return fmt.Errorf("statistics of %s: %w", t.Table, err)
	}
	locs, err := tbl.LocationProvider()
	if err != nil {
		return fmt.Errorf("statistics of %s: %w", t.Table, err)
	}
	var stats *table.StatisticsFile
	if len(blobs) > 0 {
		name := fmt.Sprintf("%d-%s.stats", plan.SnapshotID, uuid.NewString())
		sf, err := writePuffin(wfs, locs.NewMetadataLocation(name), plan, blobs)
		if err != nil {
			return fmt.Errorf("statistics of %s: %w", t.Table, err)
		}
		stats = &sf
		fig.StatisticsPath = sf.StatisticsPath
	}
	var pstats *table.PartitionStatisticsFile
	if parts != nil {
		// Under metadata/, as Iceberg's Java writer puts them. Table
		// bucket stores that allow only metadata and manifest files there
		// (SeaweedFS refuses *.parquet under metadata/) take them where
		// data files go: readers find the file by its path in the
		// metadata, wherever it is.
		name := fmt.Sprintf("partition-stats-%d-%s.parquet", plan.SnapshotID, uuid.NewString())
		pf, err := writePartitionStatistics(wfs, locs.NewMetadataLocation(name), plan.SnapshotID, parts)
		if err != nil {
			var err2 error
			if pf, err2 = writePartitionStatistics(wfs, locs.NewDataLocation(name), plan.SnapshotID, parts); err2 != nil {
				return fmt.Errorf("partition statistics of %s: %w", t.Table, errors.Join(err, err2))
			}
			j.log().Debug("partition statistics written with the data files", "table", t.Table.String(), "refused", err)
		}
		pstats = &pf
		fig.PartitionStatisticsPath = pf.StatisticsPath
	}
	policy, err := commit.TablePolicy(tbl.Properties(), j.Retry)
	if err != nil {
		return fmt.Errorf("statistics of %s: %w", t.Table, err)
	}
	read := tbl.Metadata().TableUUID()
	st, err := commit.Do(ctx, policy, func(ctx context.Context, attempt int) error {
		if attempt > 1 {
			if tbl, err = t.Bucket.LoadTable(ctx, t.Table); err != nil {
				return err
			}
		}
		if j.beforeCommit != nil {
			j.beforeCommit(attempt)
		}
		meta := tbl.Metadata()
		if meta.TableUUID() != read {
			// The commit asserts the UUID too; this names what happened.
			return fmt.Errorf("%s was dropped and created again during the run (table UUID %s, now %s): its statistics are not the new table's",
				t.Table, read, meta.TableUUID())
		}
		if meta.SnapshotByID(plan.SnapshotID) == nil {
			return fmt.Errorf("snapshot %d, which the statistics describe, was expired during the run", plan.SnapshotID)
		}
		// The snapshot described stays what it was whatever was committed
		// since: the statistics still hold for it. Only which older files
		// go is decided again on the metadata the commit lands on.
		remove := planner.StaleStatistics(meta, plan.SnapshotID)
		removeParts := planner.StalePartitionStatistics(meta, plan.SnapshotID)
		var updates []table.Update
		if stats != nil {
			updates = append(updates, table.NewSetStatisticsUpdate(*stats))
		}
		if pstats != nil {
			updates = append(updates, table.NewSetPartitionStatisticsUpdate(*pstats))
		}
		for _, id := range remove {
			updates = append(updates, table.NewRemoveStatisticsUpdate(id))
		}
		for _, id := range removeParts {
			updates = append(updates, table.NewRemovePartitionStatisticsUpdate(id))
		}
		if len(updates) == 0 {
			return nil
		}
		start := time.Now()
		_, _, err := cat.CommitTable(ctx, tbl.Identifier(), []table.Requirement{table.AssertTableUUID(meta.TableUUID())}, updates)
		j.log().Debug("commit attempted", "table", t.Table.String(), "operation", "set-statistics", "attempt", attempt,
			"conflict", commit.IsConflict(err), "error", err, "duration", time.Since(start))
		if err != nil && !commit.IsConflict(err) {
			return fmt.Errorf("commit statistics of %s: %w", tbl.Identifier(), err)
		}
		if err == nil {
			fig.Removed = remove
		}
		return err
	})
	fig.CommitAttempts, fig.Conflicts = st.Attempts, st.Conflicts
	return err
}

// partitions are the partition statistics of snapshot id: the previous
// file of the lineage brought up to date from the manifests the commits
// since wrote, or, where there is none or it does not add up to the
// snapshot's totals, counted from every manifest of the snapshot.
func (j *Job) partitions(ctx context.Context, fs icebergio.IO, meta table.Metadata, id int64, fig *Figures) (*partitionFile, error) {
	if _, path, steps, ok := planner.PartitionStatisticsBase(meta); ok {
		p, err := partitionsFromChange(ctx, fs, meta, path, steps, id)
		if err == nil {
			fig.PartitionsFromChange = true
			return p, nil
		}
		if !errors.Is(err, errNotFromChange) {
			return nil, err
		}
		j.log().Debug("partition statistics counted afresh", "reason", err)
	}
	return partitionStatistics(ctx, fs, meta, id)
}

// partitioned says whether any of meta's specs partitions: an
// unpartitioned table gets no partition statistics file.
func partitioned(meta table.Metadata) bool {
	for _, spec := range meta.PartitionSpecs() {
		if spec.NumFields() > 0 {
			return true
		}
	}
	return false
}

func (j *Job) log() *slog.Logger {
	if j.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return j.Logger
}

// blob is one column's merged sketch.
type blob struct {
	col    planner.StatisticsColumn
	sketch theta.Compact
}

// sketch reads what plan names and returns each column's sketch: from
// every live data file of the snapshot, or the previous statistics' sketch
// merged with the data files the commits since added.
func (j *Job) sketch(ctx context.Context, fs icebergio.IO, meta table.Metadata, plan planner.StatisticsPlan, fig *Figures) ([]blob, error) {
	files, err := filesToRead(ctx, fs, meta, plan)
	if err != nil {
		return nil, err
	}
	var prev map[int]theta.Compact
	if !plan.Full {
		if prev, err = readPuffin(fs, plan.Base.Path); err != nil {
			return nil, err
		}
	}
	sk := newSketcher(plan.Columns)
	if err := sk.addAll(ctx, fs, files); err != nil {
		return nil, err
	}
	fig.DataFilesRead, fig.BytesRead, fig.RowsRead = int(sk.files.Load()), sk.bytes.Load(), sk.rows.Load()
	out := make([]blob, len(plan.Columns))
	for i, c := range plan.Columns {
		// Every result goes through a union, cut back to K hashes, so that
		// a full computation and a merge give sketches of one shape.
		u := theta.NewUnion()
		u.Add(sk.sketches[i].Compact())
		if p, ok := prev[c.FieldID]; ok {
			u.Add(p)
		} else if !plan.Full {
			return nil, fmt.Errorf("the statistics file %s has no sketch of column %s", plan.Base.Path, c.Name)
		}
		out[i] = blob{col: c, sketch: u.Result()}
		fig.Columns = append(fig.Columns, ColumnNDV{FieldID: c.FieldID, Name: c.Name, NDV: ndv(out[i].sketch)})
	}
	return out, nil
}

func ndv(c theta.Compact) int64 { return int64(math.Round(c.Estimate())) }

// filesToRead lists the data files plan reads: every live one of the
// described snapshot, or those each Read step added. Manifests are read
// through package verified, and an added count that differs from the
// snapshot's summary is an error: a sketch missing a file's values would
// be written as the table's.
func filesToRead(ctx context.Context, fs icebergio.IO, meta table.Metadata, plan planner.StatisticsPlan) ([]iceberg.DataFile, error) {
	if plan.Full {
		snap := meta.SnapshotByID(plan.SnapshotID)
		list, err := verified.Manifests(fs, snap)
		if err != nil {
			return nil, err
		}
		list = slices.DeleteFunc(list, func(m iceberg.ManifestFile) bool { return m.ManifestContent() != iceberg.ManifestContentData })
		var out []iceberg.DataFile
		for m, err := range verified.ReadAhead(ctx, fs, list, true) {
			if err != nil {
				return nil, err
			}
			for _, e := range m.Entries {
				out = append(out, e.DataFile())
			}
		}
		if err := verified.LiveDataFiles(fs, snap, len(out)); err != nil {
			return nil, err
		}
		return out, nil
	}
	var steps []*table.Snapshot
	for _, step := range plan.Steps {
		if step.Read {
			steps = append(steps, meta.SnapshotByID(step.SnapshotID))
		}
	}
	entries, err := stepEntries(ctx, fs, steps, func(m iceberg.ManifestFile) bool {
		return m.ManifestContent() == iceberg.ManifestContentData
	}, true)
	if err != nil {
		return nil, err
	}
	added := make([][]iceberg.DataFile, len(steps))
	for i, es := range entries {
		for _, e := range es {
			if e.Status() == iceberg.EntryStatusADDED && e.SnapshotID() == steps[i].SnapshotID {
				added[i] = append(added[i], e.DataFile())
			}
		}
	}
	var out []iceberg.DataFile
	for i, snap := range steps {
		if n, ok := verified.SummaryTotal(snap, "added-data-files"); ok && n != int64(len(added[i])) {
			return nil, fmt.Errorf("%w: snapshot %d's manifests hold %d data files it added, its summary says %d",
				verified.ErrDamaged, snap.SnapshotID, len(added[i]), n)
		}
		out = append(out, added[i]...)
	}
	return out, nil
}

// stepEntries reads, for each of steps, the entries of the manifests that
// snapshot wrote which keep selects (a manifest another snapshot wrote
// holds nothing the step added or deleted): DELETED entries too unless
// discardDeleted. The steps' manifest lists, then their manifests, are
// read several at once: a run behind a streaming writer's many commits
// would otherwise wait two round trips for each.
func stepEntries(ctx context.Context, fs icebergio.IO, steps []*table.Snapshot, keep func(iceberg.ManifestFile) bool, discardDeleted bool) ([][]iceberg.ManifestEntry, error) {
	lists := make([][]iceberg.ManifestFile, len(steps))
	p := pool.New().WithErrors().WithFirstError().WithMaxGoroutines(verified.ManifestReads)
	for i, snap := range steps {
		p.Go(func() error {
			list, err := verified.Manifests(fs, snap)
			lists[i] = slices.DeleteFunc(list, func(m iceberg.ManifestFile) bool {
				return m.SnapshotID() != snap.SnapshotID || !keep(m)
			})
			return err
		})
	}
	if err := p.Wait(); err != nil {
		return nil, err
	}
	var manifests []iceberg.ManifestFile
	var of []int // the step of each manifest
	for i, list := range lists {
		manifests = append(manifests, list...)
		for range list {
			of = append(of, i)
		}
	}
	out := make([][]iceberg.ManifestEntry, len(steps))
	k := 0
	for m, err := range verified.ReadAhead(ctx, fs, manifests, discardDeleted) {
		if err != nil {
			return nil, err
		}
		out[of[k]] = append(out[of[k]], m.Entries...)
		k++
	}
	return out, nil
}

// writePuffin writes the blobs to path as a Puffin file, one theta blob
// per column, and returns its statistics file entry.
func writePuffin(fs icebergio.WriteFileIO, path string, plan planner.StatisticsPlan, blobs []blob) (table.StatisticsFile, error) {
	var buf bytes.Buffer
	w, err := puffin.NewWriter(&buf)
	if err != nil {
		return table.StatisticsFile{}, err
	}
	if err := w.SetCreatedBy("icekeeper"); err != nil {
		return table.StatisticsFile{}, err
	}
	sf := table.StatisticsFile{SnapshotID: plan.SnapshotID, StatisticsPath: path}
	for _, b := range blobs {
		data, err := b.sketch.MarshalBinary()
		if err != nil {
			return table.StatisticsFile{}, err
		}
		props := map[string]string{
			planner.NDVProperty:          strconv.FormatInt(ndv(b.sketch), 10),
			planner.DriftProperty:        strconv.FormatFloat(plan.Drift, 'f', 6, 64),
			planner.RemovedSinceProperty: strconv.FormatInt(plan.RemovedSince, 10),
			planner.HiddenAtProperty:     strconv.FormatInt(plan.HiddenAt, 10),
			planner.RecomputedProperty:   strconv.FormatInt(plan.RecomputedAt, 10),
		}
		meta, err := w.AddBlob(puffin.BlobMetadataInput{Type: puffin.BlobTypeDataSketchesTheta, SnapshotID: plan.SnapshotID,
			SequenceNumber: plan.SequenceNumber, Fields: []int32{int32(b.col.FieldID)}, Properties: props}, data)
		if err != nil {
			return table.StatisticsFile{}, fmt.Errorf("add the sketch of %s: %w", b.col.Name, err)
		}
		sf.BlobMetadata = append(sf.BlobMetadata, table.BlobMetadata{Type: table.BlobTypeApacheDatasketchesThetaV1,
			SnapshotID: meta.SnapshotID, SequenceNumber: meta.SequenceNumber, Fields: slices.Clone(meta.Fields), Properties: meta.Properties})
	}
	before := int64(buf.Len())
	if err := w.Finish(); err != nil {
		return table.StatisticsFile{}, err
	}
	sf.FileSizeInBytes = int64(buf.Len())
	sf.FileFooterSizeInBytes = sf.FileSizeInBytes - before
	if err := fs.WriteFile(path, buf.Bytes()); err != nil {
		return table.StatisticsFile{}, fmt.Errorf("write statistics file %s: %w", path, err)
	}
	return sf, nil
}

// readPuffin reads the theta blobs of the statistics file at path, by
// field ID. A blob this package cannot parse is an error: the plan took
// the file for icekeeper's.
func readPuffin(fs icebergio.IO, path string) (map[int]theta.Compact, error) {
	f, err := fs.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open statistics file %s: %w", path, err)
	}
	defer f.Close()
	r, err := puffin.NewReader(f)
	if err != nil {
		return nil, fmt.Errorf("read statistics file %s: %w", path, err)
	}
	out := map[int]theta.Compact{}
	for _, m := range r.Blobs() {
		if m.Type != puffin.BlobTypeDataSketchesTheta || len(m.Fields) != 1 {
			continue
		}
		data, err := r.ReadBlobByMetadata(m)
		if err != nil {
			return nil, fmt.Errorf("read statistics file %s: %w", path, err)
		}
		c, err := theta.Parse(data)
		if err != nil {
			return nil, fmt.Errorf("statistics file %s, field %d: %w", path, m.Fields[0], err)
		}
		out[int(m.Fields[0])] = c
	}
	return out, nil
}
