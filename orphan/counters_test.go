package orphan

import (
	"testing"

	"github.com/icekeeper/icekeeper/internal/testkit"
	"github.com/icekeeper/icekeeper/maintenance"
)

func TestFiguresCountersHaveMetrics(t *testing.T) {
	testkit.CheckCounters(t, maintenance.UnreferencedFileRemoval, &Figures{Marked: 1, References: refStats{ManifestsRead: 1, ManifestsFromIndex: 1}})
}
