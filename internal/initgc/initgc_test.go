package initgc

import (
	"math"
	"os"
	"runtime/debug"
	"strconv"
	"testing"
)

// Until Done, the collector is off with a memory limit of its own; Done
// puts back GOGC's percent and GOMEMLIMIT's limit, once.
func TestDone(t *testing.T) {
	if p := debug.SetGCPercent(-1); p != -1 {
		t.Fatalf("the collector ran at %d%% before Done", p)
	}
	if l := debug.SetMemoryLimit(-1); l > initLimit {
		t.Fatalf("the memory limit before Done is %d, over %d", l, int64(initLimit))
	}
	wantPercent := 100
	if v, err := strconv.Atoi(os.Getenv("GOGC")); err == nil {
		wantPercent = v
	}
	Done()
	Done()
	if p := debug.SetGCPercent(wantPercent); p != wantPercent {
		t.Errorf("after Done the collector runs at %d%%, want GOGC's %d%%", p, wantPercent)
	}
	if l := debug.SetMemoryLimit(-1); os.Getenv("GOMEMLIMIT") == "" && l != math.MaxInt64 {
		t.Errorf("after Done the memory limit is %d, want none", l)
	}
}
