package rowdigest

import (
	"context"
	"fmt"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
)

// Tasks digests the visible rows of tasks as scan reads them (deletes
// applied, projected to sc), one file at a time, and hands each task and
// its row count to each when given.
func Tasks(ctx context.Context, scan *table.Scan, sc *iceberg.Schema, tasks []table.FileScanTask,
	each func(table.FileScanTask, int64) error) (Digest, error) {
	var total Digest
	for _, t := range tasks {
		h := NewHasher(sc)
		_, recs, err := scan.ReadTasks(ctx, []table.FileScanTask{t})
		if err != nil {
			return Digest{}, fmt.Errorf("read %s: %w", t.File.FilePath(), err)
		}
		for rec, err := range recs {
			if err != nil {
				return Digest{}, fmt.Errorf("read %s: %w", t.File.FilePath(), err)
			}
			err = h.Add(rec)
			rec.Release()
			if err != nil {
				return Digest{}, fmt.Errorf("digest %s: %w", t.File.FilePath(), err)
			}
		}
		d := h.Digest()
		if each != nil {
			if err := each(t, d.Count); err != nil {
				return Digest{}, err
			}
		}
		total.Merge(d)
	}
	return total, nil
}
