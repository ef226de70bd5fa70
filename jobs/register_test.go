package jobs

import (
	"errors"
	"strings"
	"testing"

	"github.com/icekeeper/icekeeper/maintenance"
)

// The registry starts only with one job for each row of the type table.
func TestRegister(t *testing.T) {
	all := func(extra ...Job) []Job {
		var js []Job
		for _, typ := range maintenance.JobTypes() {
			js = append(js, (&fakeJob{typ: typ}).def())
		}
		return append(js, extra...)
	}
	got, err := Register(all()...)
	if err != nil || len(got) != len(maintenance.JobTypes()) {
		t.Fatalf("Register(every type) = %d jobs, %v", len(got), err)
	}
	for name, tc := range map[string]struct {
		jobs []Job
		want string
	}{
		"missing": {all()[1:], "no job runs " + string(maintenance.JobTypes()[0])},
		"twice":   {all((&fakeJob{typ: maintenance.Compaction}).def()), "icebergCompaction registered twice"},
		"unknown": {all((&fakeJob{typ: "icebergTableRepair"}).def()), "icebergTableRepair is not in the type table"},
	} {
		if _, err := Register(tc.jobs...); !errors.Is(err, ErrRegistry) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", name, err, tc.want)
		}
	}
}
