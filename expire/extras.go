package expire

import (
	"context"
	"errors"
	"slices"
	"time"

	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"

	"github.com/icekeeper/icekeeper/internal/verified"
	"github.com/icekeeper/icekeeper/jobs"
	"github.com/icekeeper/icekeeper/maintenance"
	"github.com/icekeeper/icekeeper/planner"
)

// unused returns the schemas and partition specs that no snapshot kept by
// d uses, never the current schema or default spec.
// It reads the manifest list of every kept snapshot, telling progress
// (when set) how many it read.
func unused(fs icebergio.IO, meta table.Metadata, d planner.SnapshotDecision, progress func(done, total int)) (schemas, specs []int, err error) {
	usedSchemas := map[int]bool{meta.CurrentSchema().ID: true}
	usedSpecs := map[int]bool{meta.DefaultPartitionSpec(): true}
	read := 0
	for _, snap := range meta.Snapshots() {
		if _, kept := d.Kept[snap.SnapshotID]; !kept {
			continue
		}
		if read++; progress != nil {
			progress(read, len(d.Kept))
		}
		if snap.SchemaID == nil {
			// A snapshot that does not say which schema it used could
			// use any: keep them all.
			return nil, nil, nil
		}
		usedSchemas[*snap.SchemaID] = true
		manifests, err := verified.Manifests(fs, &snap)
		if err != nil {
			return nil, nil, err
		}
		for _, m := range manifests {
			usedSpecs[int(m.PartitionSpecID())] = true
		}
	}
	for _, sc := range meta.Schemas() {
		if !usedSchemas[sc.ID] {
			schemas = append(schemas, sc.ID)
		}
	}
	for _, sp := range meta.PartitionSpecs() {
		if !usedSpecs[sp.ID()] {
			specs = append(specs, sp.ID())
		}
	}
	slices.Sort(schemas)
	slices.Sort(specs)
	return schemas, specs, nil
}

// expiredFiles are the files the snapshots a decision expires reach, as
// FilesOf lists them: read before the expiry is committed, so that a
// damaged manifest of an expiring snapshot fails the run with the table
// unchanged. (A manifest only kept snapshots reach is read by the
// deletion's re-check after the commit; expiring other snapshots loses no
// way back to its entries, which they never held.)
type expiredFiles struct{ manifests, files []string }

// listExpired lists the files the snapshots d expires reach in before.
func (j *Job) listExpired(t jobs.Target, fs icebergio.IO, before table.Metadata, d planner.SnapshotDecision, progress func(done, total int)) (expiredFiles, error) {
	if j.DeleteFiles == nil {
		return expiredFiles{}, errors.New("expiration.deleteExpiredFiles is set but this icekeeper has no file deleter wired")
	}
	start := time.Now()
	manifests, files, err := FilesOf(fs, before, d.ExpireIDs(), progress)
	if err != nil {
		return expiredFiles{}, err
	}
	j.log().Debug("files of expired snapshots listed", "table", t.Table.String(), "snapshots", len(d.Expire),
		"manifests", len(manifests), "files", len(files), "duration", time.Since(start))
	return expiredFiles{manifests, files}, nil
}

// deleteExpired deletes the files that only the expired snapshots reached:
// their manifest lists, and the manifests and data and delete files listed
// in them (listExpired). DeleteFiles re-checks every one against the
// metadata as it is now, so a file a kept snapshot still reaches is never
// deleted.
func (j *Job) deleteExpired(ctx context.Context, t jobs.Target, s maintenance.Settings, ex expiredFiles, fig *Figures) error {
	manifests, files := ex.manifests, ex.files
	start := time.Now()
	n, err := j.DeleteFiles(ctx, t, s, slices.Concat(manifests, files))
	fig.FilesDeleted = n
	j.log().Debug("files of expired snapshots deleted", "table", t.Table.String(), "deleted", n,
		"of", len(manifests)+len(files), "error", err, "duration", time.Since(start))
	return err
}

// FilesOf lists every file the snapshots ids of before reach, each once,
// read through verified metadata: their manifest lists and manifests, and
// the data and delete files listed in those. It tells progress (when
// set) how many of the snapshots it read.
func FilesOf(fs icebergio.IO, before table.Metadata, ids []int64, progress func(done, total int)) (manifests, files []string, err error) {
	seen := map[string]bool{}
	add := func(to *[]string, p string) bool {
		if seen[p] {
			return false
		}
		seen[p] = true
		*to = append(*to, p)
		return true
	}
	for i, id := range ids {
		if progress != nil {
			progress(i+1, len(ids))
		}
		snap := before.SnapshotByID(id)
		if snap == nil {
			continue
		}
		add(&manifests, snap.ManifestList)
		list, err := verified.Manifests(fs, snap)
		if err != nil {
			return nil, nil, err
		}
		for _, m := range list {
			if !add(&manifests, m.FilePath()) {
				continue // shared with a snapshot already read
			}
			for entry, err := range verified.Entries(fs, m, false) {
				if err != nil {
					return nil, nil, err
				}
				add(&files, entry.DataFile().FilePath())
			}
		}
	}
	return manifests, files, nil
}
