// Package child runs one side of a side-by-side benchmark in a child
// process, so that each side's peak RSS is its own and neither inherits
// the other's heap. The benchmark binary re-executes itself, running only
// the named child test, which does the work and reports a Result line.
package child

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
)

// Result is what a child reports.
type Result struct {
	Ms         float64 `json:"ms"`
	PeakRSSMiB float64 `json:"peakRSSMiB"`
	Count      int     `json:"count"` // what the side produced (files found, snapshots expired…)
	Bytes      int64   `json:"bytes"` // bytes the side produced, where that matters
	// AllocBytes is what the side allocated on the heap, where reported.
	AllocBytes int64 `json:"allocBytes,omitempty"`
	// CPUMs is the child process's user and system CPU time, set by Run:
	// the whole process, start-up included.
	CPUMs float64 `json:"cpuMs,omitempty"`
	// Cost is what the side's requests cost (cost.Figures), where
	// measured: its requests and their price, and what S3 Tables would
	// charge for the data it processed.
	Requests    int64   `json:"requests,omitempty"`
	USD         float64 `json:"usd,omitempty"`
	S3TablesUSD float64 `json:"s3TablesUSD,omitempty"`
}

const envKey = "ICEKEEPER_BENCH_CHILD"

// The two sides of every comparison; a child gets its side as Args()[0].
const (
	Icekeeper = "icekeeper"
	IcebergGo = "iceberg-go"
)

// Args returns the arguments the child was started with, or nil when this
// process is not a benchmark child.
func Args() []string {
	var args []string
	if v := os.Getenv(envKey); v != "" {
		_ = json.Unmarshal([]byte(v), &args)
	}
	return args
}

// Pair runs both sides of iteration i, icekeeper first on even iterations
// and iceberg-go first on odd ones, so neither side always runs on the
// warmer cache; each child gets its side followed by args.
func Pair(i int, childTest string, args ...string) (ik, ig Result, err error) {
	order := []string{Icekeeper, IcebergGo}
	if i%2 == 1 {
		order = []string{IcebergGo, Icekeeper}
	}
	for _, side := range order {
		r, err := Run(childTest, append([]string{side}, args...)...)
		if err != nil {
			return ik, ig, err
		}
		if side == Icekeeper {
			ik = r
		} else {
			ig = r
		}
	}
	return ik, ig, nil
}

// Add sums r into s, for averaging over iterations.
func (s *Result) Add(r Result) {
	s.Ms += r.Ms
	s.PeakRSSMiB += r.PeakRSSMiB
	s.Count += r.Count
	s.Bytes += r.Bytes
	s.AllocBytes += r.AllocBytes
	s.CPUMs += r.CPUMs
	s.Requests += r.Requests
	s.USD += r.USD
	s.S3TablesUSD += r.S3TablesUSD
}

// Run re-executes the test binary, running only childTest with args.
func Run(childTest string, args ...string) (Result, error) {
	spec, err := json.Marshal(args)
	if err != nil {
		return Result{}, err
	}
	cmdArgs := []string{"-test.run=^" + childTest + "$", "-test.count=1"}
	if dir := os.Getenv("ICEKEEPER_BENCH_PROFILE_DIR"); dir != "" && len(args) > 0 {
		// Each side's CPU and allocation profiles, to see where a
		// benchmark's CPU and garbage go (the last iteration's are kept).
		cmdArgs = append(cmdArgs, "-test.cpuprofile="+filepath.Join(dir, args[0]+".prof"),
			"-test.memprofile="+filepath.Join(dir, args[0]+".mem"))
	}
	cmd := exec.Command(os.Args[0], cmdArgs...)
	cmd.Env = append(os.Environ(), envKey+"="+string(spec))
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
			err := json.Unmarshal([]byte(js), &r)
			r.CPUMs = float64((cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()).Microseconds()) / 1000
			return r, err
		}
	}
	return Result{}, fmt.Errorf("child %s printed no result:\n%s", spec, out.String())
}

// Report prints the child's result for Run to read, with the process's
// peak RSS.
func Report(ms float64, count int) { ReportBytes(ms, count, 0) }

// ReportBytes is Report with a byte count.
func ReportBytes(ms float64, count int, bytes int64) {
	ReportResult(Result{Ms: ms, Count: count, Bytes: bytes})
}

// ReportResult prints r for Run to read, with the process's peak RSS.
func ReportResult(r Result) {
	r.PeakRSSMiB = PeakRSSMiB()
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
