package rebase

import (
	"context"
	"fmt"
	"iter"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/icekeeper/icekeeper/internal/rowdigest"
)

// Rewrite reads tasks' files with their deletes applied and writes the
// rows, passed through keep when it is set, into new files of about target
// bytes, each read back before it may be committed. It proves the rows:
// the row digest of what it read, of what keep passed on, and of what the
// new files hold read back from storage must add up (the claim's Removed
// is what keep dropped), or it fails with rowdigest.ErrRowsDiffer. On a v3 table whose
// files carry row lineage the rows keep their _row_id, which iceberg-go
// can only synthesise from a file's unfiltered positions, so keep filters
// after the read rather than a scan filter before it. The fanout writer,
// not the clustered one: files of an older spec may fall into several
// partitions of the current one.
func Rewrite(ctx context.Context, tbl *table.Table, tasks []table.FileScanTask, target int64,
	keep func(iter.Seq2[arrow.RecordBatch, error]) iter.Seq2[arrow.RecordBatch, error]) ([]iceberg.DataFile, rowdigest.Claim, error) {
	var claim rowdigest.Claim
	var scanOpts []table.ScanOption
	writeOpts := []table.WriteRecordOption{table.WithTargetFileSize(target)}
	lineage := tbl.Metadata().Version() >= 3 && haveLineage(tasks)
	if lineage {
		scanOpts = append(scanOpts, table.WithRowLineage())
		writeOpts = append(writeOpts, table.WithPreserveRowLineage(iceberg.SchemaWithRowLineage(tbl.Schema())))
	}
	sc, records, err := tbl.Scan(scanOpts...).ReadTasks(ctx, tasks)
	if err != nil {
		return nil, claim, fmt.Errorf("read: %w", err)
	}
	if lineage {
		// The lineage columns' field IDs must reach the writer.
		if sc, err = table.SchemaToArrowSchemaWithOptions(iceberg.SchemaWithRowLineage(tbl.Schema()),
			table.ArrowSchemaOptions{IncludeFieldIDs: true, TableProperties: tbl.Metadata().Properties()}); err != nil {
			return nil, claim, err
		}
	}
	read, kept := rowdigest.NewHasher(tbl.Schema()), rowdigest.NewHasher(tbl.Schema())
	records = hashed(records, read)
	if keep != nil {
		records = hashed(keep(records), kept)
	}
	fs, err := tbl.FS(ctx)
	if err != nil {
		return nil, claim, err
	}
	var files []iceberg.DataFile
	for df, err := range table.WriteRecords(ctx, tbl, sc, records, writeOpts...) {
		if err != nil {
			return files, claim, fmt.Errorf("write: %w", err)
		}
		if df.Count() == 0 {
			continue
		}
		if err := VerifyOutput(ctx, fs, tbl.Location(), df); err != nil {
			return files, claim, err
		}
		files = append(files, df)
	}
	claim.Read = read.Digest()
	if keep != nil {
		claim.Removed = claim.Read.Minus(kept.Digest())
	}
	if claim.Written, err = WrittenRows(ctx, tbl, files); err != nil {
		return files, claim, err
	}
	if !claim.Holds() {
		return files, claim, fmt.Errorf("%w: read %s, removed %s, wrote %s", rowdigest.ErrRowsDiffer, claim.Read, claim.Removed, claim.Written)
	}
	return files, claim, nil
}

// hashed passes records on, adding each to h first.
func hashed(records iter.Seq2[arrow.RecordBatch, error], h *rowdigest.Hasher) iter.Seq2[arrow.RecordBatch, error] {
	return func(yield func(arrow.RecordBatch, error) bool) {
		for rec, err := range records {
			if err == nil {
				if err = h.Add(rec); err != nil {
					rec.Release()
					rec = nil
				}
			}
			if !yield(rec, err) || err != nil {
				return
			}
		}
	}
}

// WrittenRows is the row digest of files, read back from storage.
func WrittenRows(ctx context.Context, tbl *table.Table, files []iceberg.DataFile) (rowdigest.Digest, error) {
	scan := tbl.Scan()
	sc, err := scan.Projection()
	if err != nil {
		return rowdigest.Digest{}, err
	}
	tasks := make([]table.FileScanTask, len(files))
	for i, df := range files {
		tasks[i] = table.FileScanTask{File: df, Length: df.FileSizeBytes()}
	}
	d, err := rowdigest.Tasks(ctx, scan, sc, tasks, nil)
	if err != nil {
		return d, fmt.Errorf("digest the rows written: %w", err)
	}
	return d, nil
}

func haveLineage(tasks []table.FileScanTask) bool {
	for _, t := range tasks {
		if t.FirstRowID == nil {
			return false
		}
	}
	return len(tasks) > 0
}
