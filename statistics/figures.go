package statistics

import (
	"fmt"
	"strings"

	"github.com/icekeeper/icekeeper/internal/human"
	"github.com/icekeeper/icekeeper/jobs"
)

// Figures are what a statistics run found and did: how far behind the
// table's statistics were, whether it computed from scratch or from the
// change (and why), what it read, and the estimate per column.
type Figures struct {
	jobs.Common
	// SnapshotID is the snapshot the run's statistics describe.
	SnapshotID int64 `json:"snapshotId"`
	// CommitsBehind is how many commits the statistics were behind the
	// current snapshot when the run started, and AgeSeconds how long ago
	// the oldest of them was committed (0: none, or no statistics).
	CommitsBehind int   `json:"commitsBehind"`
	AgeSeconds    int64 `json:"ageSeconds"`
	// Full: the run read every live data file, for Reason; otherwise it
	// read only those of the commits since the previous statistics.
	Full   bool   `json:"full"`
	Reason string `json:"reason"`
	// DataFilesRead and BytesRead are the data files the run read and the
	// bytes it read of them (only the chosen columns' chunks and the
	// footers); RowsRead their rows.
	DataFilesRead int   `json:"dataFilesRead"`
	BytesRead     int64 `json:"bytesRead"`
	RowsRead      int64 `json:"rowsRead"`
	// Columns are the estimates written, by column.
	Columns []ColumnNDV `json:"columns,omitempty"`
	// Drift is the share of the table's rows the sketches may count
	// although they were removed: each ndv is an upper bound by that much.
	Drift float64 `json:"drift"`
	// StatisticsPath is the Puffin file written, PartitionStatisticsPath
	// the partition statistics file (empty: none).
	StatisticsPath          string `json:"statisticsPath,omitempty"`
	PartitionStatisticsPath string `json:"partitionStatisticsPath,omitempty"`
	Partitions              int    `json:"partitions,omitempty"`
	// PartitionsFromChange: the partition statistics were brought up to
	// date from the manifests the commits since the previous file wrote,
	// not counted from every manifest.
	PartitionsFromChange bool `json:"partitionsFromChange,omitempty"`
	// Removed are the snapshots whose older statistics the commit took
	// out of the metadata.
	Removed        []int64 `json:"removed,omitempty"`
	CommitAttempts int     `json:"commitAttempts"`
	Conflicts      int     `json:"conflicts"`
}

// ColumnNDV is one column's estimate.
type ColumnNDV struct {
	FieldID int    `json:"fieldId"`
	Name    string `json:"name"`
	NDV     int64  `json:"ndv"`
}

// Empty reports whether the run stopped before it planned (a failed load,
// settings it cannot run with): its figures are then only zeros, not worth
// printing.
func (f *Figures) Empty() bool {
	return f.Reason == "" && f.SnapshotID == 0 && f.DataFilesRead == 0 && f.StatisticsPath == ""
}

// Counters implements jobs.Figures.
func (f *Figures) Counters() map[string]float64 {
	recomputes := 0.0
	if f.Full && f.StatisticsPath != "" {
		recomputes = 1
	}
	return map[string]float64{
		"statistics_data_files_read": float64(f.DataFilesRead),
		"statistics_bytes_read":      float64(f.BytesRead),
		"statistics_columns":         float64(len(f.Columns)),
		"statistics_recomputes":      recomputes,
	}
}

// Text implements jobs.Figures.
func (f *Figures) Text() string {
	var b strings.Builder
	line, skipped := f.Unchanged.Text(f.DryRun, "read")
	b.WriteString(line)
	if skipped {
		return b.String()
	}
	how := "from the change"
	if f.Full {
		how = "from every data file"
	}
	fmt.Fprintf(&b, "  snapshot %d, %d commits behind: %s (%s); read %d data files, %d bytes, %d rows; drift %.2f%%",
		f.SnapshotID, f.CommitsBehind, how, f.Reason, f.DataFilesRead, f.BytesRead, f.RowsRead, 100*f.Drift)
	for _, c := range f.Columns {
		fmt.Fprintf(&b, "\n  %s (field %d): ndv %d", c.Name, c.FieldID, c.NDV)
	}
	if f.StatisticsPath != "" {
		fmt.Fprintf(&b, "\n  wrote %s", f.StatisticsPath)
	}
	if f.PartitionStatisticsPath != "" {
		how := "counted from the manifests"
		if f.PartitionsFromChange {
			how = "from the change"
		}
		fmt.Fprintf(&b, "\n  wrote %s (%d partitions, %s)", f.PartitionStatisticsPath, f.Partitions, how)
	}
	return b.String()
}

// summary is a run in one line (jobs.Definition.Summary).
func summary(f *Figures) string {
	if f.StatisticsPath == "" {
		if f.DryRun {
			return fmt.Sprintf("would describe snapshot %d: %s", f.SnapshotID, f.Reason)
		}
		return "up to date"
	}
	how := "from the change"
	if f.Full {
		how = "from every data file"
	}
	return fmt.Sprintf("%s of snapshot %d %s, %s read, %d commits behind before",
		human.Count(int64(len(f.Columns)), "column sketch"), f.SnapshotID, how,
		human.Count(int64(f.DataFilesRead), "data file"), f.CommitsBehind)
}
