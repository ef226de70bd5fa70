#!/usr/bin/env bash
# Runs icekeeper's whole test suite against real servers, from nothing.
#
#   scripts/test.sh                 # everything
#   scripts/test.sh ./configs/...   # only some packages (servers still start)
#
# The suite has two tiers:
#   - `go test -short ./...` is every in-process test: no server, no
#     browser, no outside tool. It is the loop a contributor runs before
#     each commit (a few minutes).
#   - This script runs everything. It installs what is missing (a C
#     compiler for the race detector and curl, PostgreSQL and Chromium from
#     Debian in one apt-get call, then an AWS CLI with the s3tables commands
#     with pip; versitygw, toxiproxy, SeaweedFS, helm and
#     promtool with go install or go build) in background jobs while gofmt,
#     go vet and the test build run; starts the servers on 127.0.0.1 with
#     throw-away data; then runs
#       1. the whole suite on the real servers, without the race detector;
#       2. the in-process tier again, under the race detector;
#     and stops the servers.
#
# Why the race detector runs on the in-process tier only: it finds data
# races in icekeeper's own concurrent code (the engine and runner, fan-out,
# parallel manifest reads, the merge path's encoders, the API), which that
# tier drives in full; the server-backed tests drive the same code over
# other I/O, where the detector mostly slowed Parquet encoding five- to
# tenfold (the compactor package took 23 to 30 minutes under -race with the
# servers, and is the longest here without it).
#
# Everything but the race run builds with CGO_ENABLED=0 (nothing needs
# cgo), so go vet, the test binaries and the icekeeper binaries that tests
# build share one compilation of the dependencies.
set -euo pipefail
cd "$(dirname "$0")/.."
TOTAL_START=$SECONDS
export CGO_ENABLED=0
# servers.sh installs in the background; this script adds its own installs
# to the same jobs, vets and compiles while they run, then starts the servers.
SERVERS_START=later
source scripts/servers.sh

PHASES=()
phase_start=$SECONDS
phase_name=""
# phase NAME ends the phase running (recording its time) and starts NAME.
phase() {
	if [ -n "$phase_name" ]; then
		PHASES+=("$(printf '%6d s  %s' $((SECONDS - phase_start)) "$phase_name")")
	fi
	phase_name=$1
	phase_start=$SECONDS
	[ -n "$phase_name" ] && log "$phase_name"
	return 0
}
report_phases() {
	phase ""
	log "phases"
	printf '%s\n' "${PHASES[@]}" >&2
	printf '%6d s  total\n' $((SECONDS - TOTAL_START)) >&2
}

# helm renders the chart in deploy/, promtool checks and tests the alert
# rules (each about 4 minutes to build the first time).
HELM_VERSION=v3.22.0
install_helm() {
	CGO_ENABLED= GOFLAGS= go install "helm.sh/helm/v3/cmd/helm@$HELM_VERSION"
}
PROMTOOL_VERSION=v0.316.0
install_promtool() {
	CGO_ENABLED= GOFLAGS= go install "github.com/prometheus/prometheus/cmd/promtool@$PROMTOOL_VERSION"
}

plan_server_installs
if ! "$GOBIN_DIR/helm" version --short 2>/dev/null | grep -q "^${HELM_VERSION%.*}"; then
	GO_LANE_B+=(install_helm)
fi
if [ ! -x "$GOBIN_DIR/promtool" ]; then
	GO_LANE_A+=(install_promtool)
fi
# Chromium (Debian package) drives the dashboard's browser test; its
# screenshot is kept in test-artifacts/. The race detector needs cgo, so a
# C compiler.
if ! command -v chromium >/dev/null; then
	APT_PACKAGES+=(chromium)
fi
# The AWS CLI drives the API's test with keys; it needs the s3tables
# commands (AWS CLI v1 from 1.36.15, v2 from 2.22.10; the record
# expiration ones from 1.43.7 and 2.32.8). Debian's awscli (2.9.19) has
# none, so a current v1 is installed with pip into a virtual environment
# kept beside the Go tools, and linked there as `aws`.
AWSCLI_VENV="$GOBIN_DIR/awscli-venv"
install_awscli() {
	python3 -m venv "$AWSCLI_VENV"
	"$AWSCLI_VENV/bin/pip" install -q 'awscli>=1.43.7'
	ln -sf "$AWSCLI_VENV/bin/aws" "$GOBIN_DIR/aws"
}
if ! aws s3tables get-table-record-expiration-configuration --generate-cli-skeleton >/dev/null 2>&1; then
	python3 -c 'import ensurepip, venv' 2>/dev/null || APT_PACKAGES+=(python3-venv)
	AFTER_APT+=(install_awscli)
fi
RACE_BUILD_EARLY=1
if ! command -v gcc >/dev/null; then
	APT_PACKAGES+=(gcc libc6-dev)
	RACE_BUILD_EARLY=""
fi
log "to install: ${APT_PACKAGES[*]:-nothing from Debian}; ${AFTER_APT[*]:-} ${GO_LANE_A[*]:-} ${GO_LANE_B[*]:-} (Go builds)"
start_installs
export ICEKEEPER_TEST_ARTIFACTS="$PWD/test-artifacts"

PKGS=("$@")
[ ${#PKGS[@]} -eq 0 ] && PKGS=(./...)

phase "gofmt"
unformatted="$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))"
if [ -n "$unformatted" ]; then
	echo "not gofmt-formatted:" >&2
	echo "$unformatted" >&2
	exit 1
fi
# While the tools install: vet, and compile the test binaries into the
# build cache (-run '^$' runs no test), so that the test runs below mostly
# link and run.
phase "go vet"
go vet "${PKGS[@]}"
phase "compiling the tests"
go test -count=1 -run '^$' "${PKGS[@]}" >/dev/null
race_build() {
	phase "compiling the race-detector tests (-race -short)"
	CGO_ENABLED=1 go test -race -short -count=1 -run '^$' "${PKGS[@]}" >/dev/null
}
[ -n "$RACE_BUILD_EARLY" ] && race_build

phase "waiting for the installs"
wait_installs
[ -z "$RACE_BUILD_EARLY" ] && race_build
phase "starting the servers"
start_servers

# gotestsum is pinned as a tool in go.mod; it prints a line per package as
# it finishes, and the output of failing tests in full.
full="$WORK/test-full.json" # removed with the servers' data
race="$WORK/test-race.json"
# Both runs run whatever the first gave; the script fails if either did.
failed=""
phase "go test: the whole suite on the real servers"
go tool gotestsum --format pkgname-and-test-fails --format-hide-empty-pkg --jsonfile "$full" -- \
	-count=1 -timeout 20m "${PKGS[@]}" || failed+=" whole-suite"
phase "go test -race -short: the in-process tier under the race detector"
CGO_ENABLED=1 go tool gotestsum --format pkgname-and-test-fails --format-hide-empty-pkg --jsonfile "$race" -- \
	-race -short -count=1 -timeout 20m "${PKGS[@]}" || failed+=" race"
phase ""
log "tests slower than 20s (whole suite, then -race -short)"
go tool gotestsum tool slowest --jsonfile "$full" --threshold 20s || true
go tool gotestsum tool slowest --jsonfile "$race" --threshold 20s || true
report_phases
if [ -n "$failed" ]; then
	echo "failed:$failed" >&2
	exit 1
fi
