package statistics

import (
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
)

// partitionFile is the rows of a partition statistics file.
type partitionFile struct {
	rows []partitionRow
}

type partitionRow struct{}

func partitionStatistics(fs icebergio.IO, meta table.Metadata, snapshotID int64) (*partitionFile, error) {
	return nil, nil
}

func writePartitionStatistics(fs icebergio.WriteFileIO, path string, snapshotID int64, p *partitionFile) (table.PartitionStatisticsFile, error) {
	return table.PartitionStatisticsFile{}, nil
}
