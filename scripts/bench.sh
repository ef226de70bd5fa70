#!/usr/bin/env bash
# Runs the side-by-side benchmarks recorded in BENCHMARKS.md, with the same
# real servers as the tests (the S3 benchmarks need versitygw).
#
#   scripts/bench.sh                          # all of them
#   scripts/bench.sh -bench RemovalScan ./orphan   # go test arguments
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/servers.sh

if [ $# -eq 0 ]; then
	set -- -bench . ./expire ./orphan
fi
go test -run '^$' -benchtime 3x -timeout 120m "$@"
