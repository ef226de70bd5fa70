package rebase

import (
	"bytes"
	"context"
	"fmt"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"

	"github.com/icekeeper/icekeeper/internal/bucket"
	"github.com/icekeeper/icekeeper/internal/s3write"
	"github.com/icekeeper/icekeeper/internal/verified"
)

// staged is what a commit writes before it is attempted — manifests, a
// manifest list per attempt — under one snapshot ID kept on every attempt,
// so that an attempt whose answer was lost is recognised in the table.
// Every operation stages: the groups' snapshots (replace.go) and the
// manifest rewrite (manifests.go).
type staged struct {
	fs       icebergio.WriteFileIO
	locs     table.LocationProvider
	id       int64 // the snapshot's ID, the same on every attempt
	commitID uuid.UUID
	written  []string // every file written, in order
	// list is the manifest list of snapshot listOf, the last head read
	// (headManifests).
	list   []iceberg.ManifestFile
	listOf int64
}

// headManifests is verified.Manifests of head, read once per head: a
// snapshot's manifest list never changes, and a stage reads its head's
// list when it plans and again at its first commit attempt.
func (s *staged) headManifests(head *table.Snapshot) ([]iceberg.ManifestFile, error) {
	if s.list != nil && s.listOf == head.SnapshotID {
		return s.list, nil
	}
	list, err := verified.Manifests(s.fs, head)
	if err != nil {
		return nil, err
	}
	s.list, s.listOf = list, head.SnapshotID
	return list, nil
}

func newStaged(fs icebergio.WriteFileIO, locs table.LocationProvider) staged {
	return staged{fs: fs, locs: locs, id: newSnapshotID(), commitID: uuid.New()}
}

// OpenWriting is what a stage that writes to tbl, a table of b, needs: its
// file system, writable, and the bucket's catalog to commit to.
func OpenWriting(ctx context.Context, b *bucket.Bucket, tbl *table.Table) (icebergio.WriteFileIO, catalog.Catalog, error) {
	wfs, err := WritableFS(ctx, tbl)
	if err != nil {
		return nil, nil, err
	}
	cat, err := b.Catalog(ctx)
	if err != nil {
		return nil, nil, err
	}
	return wfs, cat, nil
}

// WritableFS is tbl's file system, which rewrites write to.
func WritableFS(ctx context.Context, tbl *table.Table) (icebergio.WriteFileIO, error) {
	fs, err := tbl.FS(ctx)
	if err != nil {
		return nil, err
	}
	wfs, ok := fs.(icebergio.WriteFileIO)
	if !ok {
		return nil, fmt.Errorf("the file system of %s cannot write", tbl.Location())
	}
	return s3write.Wrap(ctx, wfs, tbl.Location()), nil
}

// discard removes the files written that are not in keep. A failure only
// leaves them to unreferenced file removal.
func (r *staged) discard(keep []string) {
	kept := map[string]bool{}
	for _, p := range keep {
		kept[p] = true
	}
	for _, p := range r.written {
		if !kept[p] {
			_ = r.fs.Remove(p)
		}
	}
}

// onMain is the requirements and updates that make snap the head of main,
// on main as meta has it, keeping main's retention settings.
func onMain(meta table.Metadata, snap *table.Snapshot) ([]table.Requirement, []table.Update) {
	var maxRefAge, maxSnapAge int64
	var minKeep int
	for name, main := range meta.Refs() {
		if name != table.MainBranch {
			continue
		}
		if main.MaxRefAgeMs != nil {
			maxRefAge = *main.MaxRefAgeMs
		}
		if main.MaxSnapshotAgeMs != nil {
			maxSnapAge = *main.MaxSnapshotAgeMs
		}
		if main.MinSnapshotsToKeep != nil {
			minKeep = *main.MinSnapshotsToKeep
		}
	}
	reqs := []table.Requirement{table.AssertTableUUID(meta.TableUUID()), table.AssertRefSnapshotID(table.MainBranch, snap.ParentSnapshotID)}
	updates := []table.Update{
		table.NewAddSnapshotUpdate(snap),
		table.NewSetSnapshotRefUpdate(table.MainBranch, snap.SnapshotID, table.BranchRef, maxRefAge, maxSnapAge, minKeep),
	}
	return reqs, updates
}

// newSnapshotID draws a positive random snapshot ID, as iceberg-go does.
func newSnapshotID() int64 {
	u := uuid.New()
	var v int64
	for i := 0; i < 8; i++ {
		v = v<<8 | int64(u[i]^u[i+8])
	}
	if v < 0 {
		v = -v
	}
	if v == 0 {
		v = 1
	}
	return v
}

func (r *staged) writeManifest(meta table.Metadata, spec iceberg.PartitionSpec, content iceberg.ManifestContent, fill func(*iceberg.ManifestWriter) error) (iceberg.ManifestFile, error) {
	// Written whole into memory first: a manifest is small, its length goes
	// into the manifest list, and on object storage one PUT is best.
	path := r.locs.NewMetadataLocation(fmt.Sprintf("%s-m%d.avro", r.commitID, len(r.written)))
	var buf bytes.Buffer
	w, err := iceberg.NewManifestWriter(meta.Version(), &buf, spec, meta.CurrentSchema(), r.id, iceberg.WithManifestWriterContent(content))
	if err == nil {
		err = fill(w)
	}
	if err == nil {
		err = w.Close()
	}
	if err == nil {
		r.written = append(r.written, path)
		err = WriteFile(r.fs, path, buf.Bytes())
	}
	if err != nil {
		return nil, fmt.Errorf("write manifest %s: %w", path, err)
	}
	return w.ToManifestFile(path, int64(buf.Len()))
}

// WriteFile writes data as the file at path, in one call: on object
// storage one PUT.
func WriteFile(fs icebergio.WriteFileIO, path string, data []byte) error {
	out, err := fs.Create(path)
	if err != nil {
		return err
	}
	_, err = out.Write(data)
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	return err
}

func (r *staged) writeList(path string, version int, seq, firstRowID, parent int64, list []iceberg.ManifestFile) (addedRows int64, err error) {
	var buf bytes.Buffer
	var w *iceberg.ManifestListWriter
	switch version {
	case 1:
		w, err = iceberg.NewManifestListWriterV1(&buf, r.id, &parent)
	case 2:
		w, err = iceberg.NewManifestListWriterV2(&buf, r.id, seq, &parent)
	case 3:
		w, err = iceberg.NewManifestListWriterV3(&buf, r.id, seq, firstRowID, &parent)
	default:
		err = fmt.Errorf("format version %d", version)
	}
	if err == nil {
		err = w.AddManifests(list)
		if cerr := w.Close(); err == nil {
			err = cerr
		}
		if version >= 3 && err == nil && w.NextRowID() != nil {
			addedRows = *w.NextRowID() - firstRowID
		}
	}
	if err == nil {
		r.written = append(r.written, path)
		err = WriteFile(r.fs, path, buf.Bytes())
	}
	if err != nil {
		return 0, fmt.Errorf("write manifest list %s: %w", path, err)
	}
	return addedRows, nil
}
