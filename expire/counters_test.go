package expire

import (
	"testing"

	"github.com/icekeeper/icekeeper/internal/testkit"
	"github.com/icekeeper/icekeeper/maintenance"
)

func TestFiguresCountersHaveMetrics(t *testing.T) {
	testkit.CheckCounters(t, maintenance.SnapshotManagement, &Figures{CommitAttempts: 1, SnapshotsExpired: 1})
}
