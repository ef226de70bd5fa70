package status

import (
	"sort"
	"strconv"
	"time"

	"github.com/apache/iceberg-go/table"
)

// logPointJSON is a table's state after one snapshot, as that snapshot's
// summary tells it: history the table carries itself, for the days before
// the daemon took its own samples. A figure the summary leaves out is
// absent, not zero.
type logPointJSON struct {
	At          time.Time `json:"at"`
	SnapshotID  int64     `json:"snapshotId"`
	Operation   string    `json:"operation,omitempty"`
	DataFiles   *int64    `json:"dataFiles,omitempty"`
	DeleteFiles *int64    `json:"deleteFiles,omitempty"`
	TotalBytes  *int64    `json:"totalBytes,omitempty"`
	Records     *int64    `json:"records,omitempty"`
	// Snapshots counts the snapshots still in the metadata committed up to
	// this one: those expired since are gone from the log, so an older
	// point reads low rather than inventing what was there.
	Snapshots int `json:"snapshots"`
}

// snapshotLog is what the snapshots of meta committed at or after since
// say of the table, oldest first. Only the metadata is read: the summaries'
// totals stand in for a scan of the manifests.
func snapshotLog(meta table.Metadata, since time.Time) []logPointJSON {
	snaps := meta.Snapshots()
	sorted := make([]table.Snapshot, len(snaps))
	copy(sorted, snaps)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].TimestampMs < sorted[j].TimestampMs })
	out := []logPointJSON{}
	for i, sn := range sorted {
		at := time.UnixMilli(sn.TimestampMs).UTC()
		if at.Before(since) {
			continue
		}
		p := logPointJSON{At: at, SnapshotID: sn.SnapshotID, Snapshots: i + 1}
		if sn.Summary != nil {
			p.Operation = string(sn.Summary.Operation)
			p.DataFiles = summaryInt(sn.Summary.Properties, "total-data-files")
			p.DeleteFiles = summaryInt(sn.Summary.Properties, "total-delete-files")
			p.TotalBytes = summaryInt(sn.Summary.Properties, "total-files-size")
			p.Records = summaryInt(sn.Summary.Properties, "total-records")
		}
		out = append(out, p)
	}
	return out
}

// summaryInt is a summary's whole-number property; nil when the writer
// left it out or wrote something else.
func summaryInt(props map[string]string, key string) *int64 {
	v, ok := props[key]
	if !ok {
		return nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 {
		return nil
	}
	return &n
}
