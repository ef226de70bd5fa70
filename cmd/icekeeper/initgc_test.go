package main

import (
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// The binary initializes internal/initgc before iceberg-go's
// table/substrait, whose init allocates 32 MB, and starts no collection
// while packages initialize: without initgc, `icekeeper version` ran 8
// before its main. (One may start after main puts the collector back.)
func TestCollectorHeldThroughInit(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	cmd := exec.Command(buildBinary(t), "version")
	cmd.Env = append(os.Environ(), "GODEBUG=inittrace=1,gctrace=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	// "init PKG @START ms, CLOCK ms clock, ..." and "gc N @SECONDSs ...".
	initLine := regexp.MustCompile(`^init (\S+) @([0-9.]+) ms, ([0-9.]+) ms clock`)
	gcLine := regexp.MustCompile(`^gc \d+ @([0-9.]+)s `)
	var order []string
	var initsEnd float64 // ms
	var collections []float64
	for _, line := range strings.Split(string(out), "\n") {
		if m := initLine.FindStringSubmatch(line); m != nil {
			order = append(order, m[1])
			start, _ := strconv.ParseFloat(m[2], 64)
			clock, _ := strconv.ParseFloat(m[3], 64)
			initsEnd = max(initsEnd, start+clock)
		}
		if m := gcLine.FindStringSubmatch(line); m != nil {
			at, _ := strconv.ParseFloat(m[1], 64)
			collections = append(collections, at*1000)
		}
	}
	held, parsed := -1, -1
	for i, p := range order {
		switch p {
		case "github.com/icekeeper/icekeeper/internal/initgc":
			held = i
		case "github.com/apache/iceberg-go/table/substrait":
			parsed = i
		}
	}
	if held < 0 || parsed < 0 || held > parsed {
		t.Errorf("initgc initialized %dth, iceberg-go's table/substrait %dth (of %d)", held, parsed, len(order))
	}
	// The traces give milliseconds to two figures: one collection may
	// start as main begins, within their rounding of the inits' end.
	for _, at := range collections {
		if at < initsEnd-2 {
			t.Errorf("a collection started at %.1f ms, before the packages were initialized (%.1f ms)", at, initsEnd)
		}
	}
}
