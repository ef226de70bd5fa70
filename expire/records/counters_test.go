package records

import (
	"testing"

	"github.com/icekeeper/icekeeper/internal/testkit"
	"github.com/icekeeper/icekeeper/maintenance"
)

func TestFiguresCountersHaveMetrics(t *testing.T) {
	testkit.CheckCounters(t, maintenance.RecordExpiration, &ExpirationFigures{DeletedRecords: 1})
}
