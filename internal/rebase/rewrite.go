package rebase

import (
	"context"
	"fmt"
	"iter"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
)

// Rewrite reads tasks' files with their deletes applied and writes the
// rows, passed through keep when it is set, into new files of about target
// bytes, each read back before it may be committed. On a v3 table whose
// files carry row lineage the rows keep their _row_id, which iceberg-go
// can only synthesise from a file's unfiltered positions, so keep filters
// after the read rather than a scan filter before it. The fanout writer,
// not the clustered one: files of an older spec may fall into several
// partitions of the current one.
func Rewrite(ctx context.Context, tbl *table.Table, tasks []table.FileScanTask, target int64,
	keep func(iter.Seq2[arrow.RecordBatch, error]) iter.Seq2[arrow.RecordBatch, error]) ([]iceberg.DataFile, error) {
	var scanOpts []table.ScanOption
	writeOpts := []table.WriteRecordOption{table.WithTargetFileSize(target)}
	lineage := tbl.Metadata().Version() >= 3 && haveLineage(tasks)
	if lineage {
		scanOpts = append(scanOpts, table.WithRowLineage())
		writeOpts = append(writeOpts, table.WithPreserveRowLineage(iceberg.SchemaWithRowLineage(tbl.Schema())))
	}
	sc, records, err := tbl.Scan(scanOpts...).ReadTasks(ctx, tasks)
	if err != nil {
		return nil, fmt.Errorf("read: %w", err)
	}
	if lineage {
		// The lineage columns' field IDs must reach the writer.
		if sc, err = table.SchemaToArrowSchemaWithOptions(iceberg.SchemaWithRowLineage(tbl.Schema()),
			table.ArrowSchemaOptions{IncludeFieldIDs: true, TableProperties: tbl.Metadata().Properties()}); err != nil {
			return nil, err
		}
	}
	if keep != nil {
		records = keep(records)
	}
	fs, err := tbl.FS(ctx)
	if err != nil {
		return nil, err
	}
	var files []iceberg.DataFile
	for df, err := range table.WriteRecords(ctx, tbl, sc, records, writeOpts...) {
		if err != nil {
			return files, fmt.Errorf("write: %w", err)
		}
		if df.Count() == 0 {
			continue
		}
		if err := VerifyOutput(fs, df); err != nil {
			return files, err
		}
		files = append(files, df)
	}
	return files, nil
}

func haveLineage(tasks []table.FileScanTask) bool {
	for _, t := range tasks {
		if t.FirstRowID == nil {
			return false
		}
	}
	return len(tasks) > 0
}
