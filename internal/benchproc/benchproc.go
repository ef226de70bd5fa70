// Package benchproc runs one side of a side-by-side benchmark in a child
// process, so that each side's peak RSS is its own and neither inherits
// the other's heap. The benchmark binary re-executes itself, running only
// the named child test, which does the work and reports a Result line.
package benchproc

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
)

// Result is what a child reports.
type Result struct {
	Ms         float64 `json:"ms"`
	PeakRSSMiB float64 `json:"peakRSSMiB"`
	Count      int     `json:"count"` // what the side produced (files found, snapshots expired…)
	Bytes      int64   `json:"bytes"` // bytes the side produced, where that matters
}

const envKey = "ICEKEEPER_BENCH_CHILD"

// Spec returns the argument the child was started with, or "" when this
// process is not a benchmark child.
func Spec() string { return os.Getenv(envKey) }

// Run re-executes the test binary, running only childTest with spec.
func Run(childTest, spec string) (Result, error) {
	cmd := exec.Command(os.Args[0], "-test.run=^"+childTest+"$", "-test.count=1")
	cmd.Env = append(os.Environ(), envKey+"="+spec)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		return Result{}, fmt.Errorf("child %s: %v\n%s%s", spec, err, out.String(), errOut.String())
	}
	if os.Getenv("ICEKEEPER_BENCH_VERBOSE") != "" {
		os.Stderr.Write(errOut.Bytes()) // what the child says of its run
	}
	for _, line := range strings.Split(out.String(), "\n") {
		if js, ok := strings.CutPrefix(line, "RESULT "); ok {
			var r Result
			return r, json.Unmarshal([]byte(js), &r)
		}
	}
	return Result{}, fmt.Errorf("child %s printed no result:\n%s", spec, out.String())
}

// Report prints the child's result for Run to read, with the process's
// peak RSS.
func Report(ms float64, count int) { ReportBytes(ms, count, 0) }

// ReportBytes is Report with a byte count.
func ReportBytes(ms float64, count int, bytes int64) {
	r := Result{Ms: ms, PeakRSSMiB: PeakRSSMiB(), Count: count, Bytes: bytes}
	data, _ := json.Marshal(r)
	fmt.Printf("RESULT %s\n", data)
}

// PeakRSSMiB reads the process's high-water resident set size (Linux).
func PeakRSSMiB() float64 {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, _ := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 64)
			return kb / 1024
		}
	}
	return 0
}
