package status

import (
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/apache/iceberg-go/table"

	"github.com/icekeeper/icekeeper/internal/state"
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

// snapshotLogTTL is how long the history route reuses a table's snapshot
// log. An open table page asks for it at every refresh (15 s), and each
// ask loaded the table: on a REST catalog a request the user pays for,
// and the metadata file, which grows with the log. A chart of 30 days a
// minute late is not wrong.
const snapshotLogTTL = time.Minute

// maxSnapshotLogs bounds the tables snapshotLogs remembers: past it, it
// starts again.
const maxSnapshotLogs = 1024

// snapshotLogs remembers each table's snapshot log (every snapshot's
// point) for snapshotLogTTL. A load that failed is not remembered: the
// next refresh tries again.
type snapshotLogs struct {
	mu sync.Mutex
	m  map[state.TableKey]loggedTable
}

type loggedTable struct {
	at     time.Time
	points []logPointJSON
}

// since is the snapshot log of t from since on, loaded with load unless
// one loaded within snapshotLogTTL of now is at hand.
func (c *snapshotLogs) since(t state.TableKey, since, now time.Time, load func() (table.Metadata, error)) ([]logPointJSON, error) {
	c.mu.Lock()
	e, ok := c.m[t]
	c.mu.Unlock()
	if !ok || now.Sub(e.at) >= snapshotLogTTL || now.Before(e.at) {
		meta, err := load()
		if err != nil {
			return nil, err
		}
		e = loggedTable{at: now, points: snapshotLog(meta, time.Time{})}
		c.mu.Lock()
		if c.m == nil || len(c.m) >= maxSnapshotLogs {
			c.m = make(map[state.TableKey]loggedTable)
		}
		c.m[t] = e
		c.mu.Unlock()
	}
	i := sort.Search(len(e.points), func(i int) bool { return !e.points[i].At.Before(since) })
	return e.points[i:], nil
}
