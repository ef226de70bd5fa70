package erasure

import (
	"context"
	"slices"
	"time"

	"github.com/apache/iceberg-go"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"

	"github.com/icekeeper/icekeeper/internal/objects"
	"github.com/icekeeper/icekeeper/internal/rebase"
	"github.com/icekeeper/icekeeper/internal/verified"
)

// namedByPositionDeletes reads the Parquet position delete files the scan
// sc attached to its data files, and returns for each the live data files
// it names. A writer that leaves a position delete file without file_path
// bounds has the scan attach it to every data file of the partition;
// only those it names hold removed rows. sc's index of what each delete
// covers is narrowed to them, so that the rewrite's commit drops a delete
// file once every file it names is replaced (or at once, when it names
// none that is live).
func namedByPositionDeletes(fsys icebergio.IO, sc *rebase.Base) (map[string]map[string]bool, error) {
	named := map[string]map[string]bool{}
	for _, task := range sc.Tasks {
		for _, d := range task.DeleteFiles {
			if _, ok := named[d.FilePath()]; ok || d.ContentType() != iceberg.EntryContentPosDeletes || d.FileFormat() != iceberg.ParquetFile {
				continue
			}
			positions, err := rebase.ReadPositionDeletes(fsys, d)
			if err != nil {
				return nil, err
			}
			names := map[string]bool{}
			for p := range positions {
				names[p] = true
			}
			named[d.FilePath()] = names
		}
	}
	for d, names := range named {
		covers := slices.DeleteFunc(sc.Deletes.Covers[d], func(p string) bool { return !names[p] })
		sc.Deletes.Covers[d] = covers
		if len(covers) == 0 {
			delete(sc.Deletes.Covers, d)
			sc.Deletes.Dangling = append(sc.Deletes.Dangling, deleteFileOf(sc, d))
		}
	}
	return named, nil
}

// deleteFileOf is the delete file at path among those sc attached.
func deleteFileOf(sc *rebase.Base, path string) iceberg.DataFile {
	for _, task := range sc.Tasks {
		for _, d := range task.DeleteFiles {
			if d.FilePath() == path {
				return d
			}
		}
	}
	return nil
}

// deleteAdd is when a delete file was added: by which snapshot, at what
// time (zero: by one the metadata no longer keeps).
type deleteAdd struct {
	snapshot int64
	at       time.Time
}

// manifestDeletes is what one delete manifest adds: each live delete
// file's addition.
type manifestDeletes map[string]deleteAdd

// deleteTimes reads snapshots' manifests once each per run.
type deleteTimes struct {
	fs        icebergio.IO
	manifests map[string]manifestDeletes
	// data are the live data files of each data manifest read.
	data map[string][]string
}

// holds says whether snapshot id of meta reaches a delete file, or a data
// file the current snapshot does not.
func (d *deleteTimes) holds(meta table.Metadata, id int64) (bool, error) {
	snap, cur := meta.SnapshotByID(id), meta.CurrentSnapshot()
	if snap == nil || cur == nil {
		return false, nil
	}
	if _, oldest, err := d.of(meta, snap); err != nil || oldest != nil {
		return oldest != nil, err
	}
	live := map[string]bool{}
	if err := d.dataFiles(cur, func(p string) bool { live[p] = true; return true }); err != nil {
		return false, err
	}
	found := false
	err := d.dataFiles(snap, func(p string) bool { found = !live[p]; return !found })
	return found, err
}

// dataFiles calls fn with each live data file of snap until it returns
// false.
func (d *deleteTimes) dataFiles(snap *table.Snapshot, fn func(string) bool) error {
	list, err := verified.Manifests(d.fs, snap)
	if err != nil {
		return err
	}
	for _, m := range list {
		if m.ManifestContent() != iceberg.ManifestContentData {
			continue
		}
		paths, ok := d.data[m.FilePath()]
		if !ok {
			for e, err := range verified.Entries(d.fs, m, true) {
				if err != nil {
					return err
				}
				paths = append(paths, e.DataFile().FilePath())
			}
			d.data[m.FilePath()] = paths
		}
		for _, p := range paths {
			if !fn(p) {
				return nil
			}
		}
	}
	return nil
}

// of returns when each live delete file of snap was added, and the oldest
// of those times (nil: snap has no live delete file).
func (d *deleteTimes) of(meta table.Metadata, snap *table.Snapshot) (map[string]deleteAdd, *time.Time, error) {
	list, err := verified.Manifests(d.fs, snap)
	if err != nil {
		return nil, nil, err
	}
	out := map[string]deleteAdd{}
	var oldest *time.Time
	for _, m := range list {
		if m.ManifestContent() != iceberg.ManifestContentDeletes {
			continue
		}
		md, ok := d.manifests[m.FilePath()]
		if !ok {
			md = manifestDeletes{}
			for e, err := range verified.Entries(d.fs, m, true) {
				if err != nil {
					return nil, nil, err
				}
				a := deleteAdd{snapshot: e.SnapshotID()}
				if s := meta.SnapshotByID(a.snapshot); s != nil {
					a.at = time.UnixMilli(s.TimestampMs).UTC()
				} else {
					a.snapshot = 0
				}
				p := e.DataFile().FilePath()
				if old, ok := md[p]; !ok || a.at.Before(old.at) {
					md[p] = a
				}
			}
			d.manifests[m.FilePath()] = md
		}
		for p, a := range md {
			if old, ok := out[p]; !ok || a.at.Before(old.at) {
				out[p] = a
			}
			if oldest == nil || a.at.Before(*oldest) {
				at := a.at
				oldest = &at
			}
		}
	}
	return out, oldest, nil
}

// absent sorts paths into those storage no longer has and those it still
// has, asking storage of each (objects.Gone: a "not found" that S3 did not
// answer is an error, not a proof).
func absent(ctx context.Context, fsys icebergio.IO, location string, paths []string) (gone, kept []string, err error) {
	slices.Sort(paths)
	for _, p := range slices.Compact(paths) {
		ok, err := objects.Gone(ctx, fsys, location, p)
		switch {
		case err != nil:
			return gone, kept, err
		case ok:
			gone = append(gone, p)
		default:
			kept = append(kept, p)
		}
	}
	return gone, kept, nil
}
