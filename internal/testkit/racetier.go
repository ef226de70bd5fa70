package testkit

import "testing"

// scripts/test.sh runs the whole suite without the race detector, then the
// in-process tier (-short) under it. The detector slows the data path
// (megabytes of Parquet decoded, merged and encoded) five- to tenfold and
// finds nothing there that a smaller test driving the same code does not;
// what it is for is the code that runs concurrently. These two helpers say
// which tests its run leaves to the whole-suite run.

// SkipUnderRace skips, under the race detector, a test whose point is the
// data path, not concurrency: the whole-suite run runs it.
func SkipUnderRace(t testing.TB) {
	t.Helper()
	if Race {
		t.Skip("a data-path test: the whole suite runs it without -race (scripts/test.sh)")
	}
}

// FirstUnderRace skips, under the race detector, the variants after the
// first (i > 0) of a test that runs the same concurrency over several data
// layouts (format versions, partitionings): the whole-suite run runs them
// all.
func FirstUnderRace(t testing.TB, i int) {
	t.Helper()
	if Race && i > 0 {
		t.Skip("a further data variant: the whole suite runs it without -race (scripts/test.sh)")
	}
}
