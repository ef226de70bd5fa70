package status

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/apache/iceberg-go/table"

	"github.com/icekeeper/icekeeper/internal/state"
)

// The history route loads a table's snapshot log once a minute at most:
// within the minute the log is filtered from memory, after it loaded
// again; a load that failed is not remembered.
func TestSnapshotLogsReuse(t *testing.T) {
	f, _ := historyFixture(t)
	ctx := context.Background()
	loads := 0
	load := func() (table.Metadata, error) {
		loads++
		tbl, err := f.Bucket.LoadTable(ctx, f.ID)
		if err != nil {
			return nil, err
		}
		return tbl.Metadata(), nil
	}
	var c snapshotLogs
	k, now := f.Target().Key(), time.Now()
	all, err := c.since(k, time.Time{}, now, load)
	if err != nil || len(all) < 3 || loads != 1 {
		t.Fatalf("first ask: %d points, %d loads, %v", len(all), loads, err)
	}
	last := all[len(all)-1].At
	recent, err := c.since(k, last, now.Add(snapshotLogTTL-time.Second), load)
	if err != nil || len(recent) == 0 || len(recent) >= len(all) || recent[0].At.Before(last) || loads != 1 {
		t.Fatalf("within the minute, from the last point on: %d of %d points, %d loads, %v", len(recent), len(all), loads, err)
	}
	if _, err := c.since(k, time.Time{}, now.Add(snapshotLogTTL), load); err != nil || loads != 2 {
		t.Fatalf("a minute on: %d loads, %v", loads, err)
	}
	down := errors.New("catalog down")
	failing := func() (table.Metadata, error) { loads++; return nil, down }
	other := state.TableKey{Bucket: k.Bucket, Namespace: k.Namespace, Name: "other"}
	for range 2 {
		if _, err := c.since(other, time.Time{}, now, failing); !errors.Is(err, down) {
			t.Fatalf("failing load: %v", err)
		}
	}
	if loads != 4 {
		t.Fatalf("%d loads, want the failed one tried again", loads)
	}
}
