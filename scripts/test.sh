#!/usr/bin/env bash
# Runs icekeeper's whole test suite against real servers, from nothing:
# installs PostgreSQL and Chromium (Debian packages), versitygw, toxiproxy,
# SeaweedFS, helm and promtool (Go builds) when missing, in background jobs
# while gofmt, go vet and the test build run; then starts the servers on
# 127.0.0.1 with throw-away data, runs go test -race, and stops them again.
#
#   scripts/test.sh                 # everything
#   scripts/test.sh ./configs/...   # only some packages (servers still start)
set -euo pipefail
cd "$(dirname "$0")/.."
# servers.sh installs in the background; this script adds its own installs
# to the same jobs, vets and compiles while they run, then starts the servers.
SERVERS_START=later
source scripts/servers.sh

# helm renders the chart in deploy/, promtool checks and tests the alert
# rules (each about 4 minutes to build the first time).
HELM_VERSION=v3.22.0
install_helm() {
	GOFLAGS= go install "helm.sh/helm/v3/cmd/helm@$HELM_VERSION"
}
PROMTOOL_VERSION=v0.316.0
install_promtool() {
	GOFLAGS= go install "github.com/prometheus/prometheus/cmd/promtool@$PROMTOOL_VERSION"
}

plan_server_installs
if ! "$GOBIN_DIR/helm" version --short 2>/dev/null | grep -q "^${HELM_VERSION%.*}"; then
	GO_LANE_B+=(install_helm)
fi
if [ ! -x "$GOBIN_DIR/promtool" ]; then
	GO_LANE_A+=(install_promtool)
fi
# Chromium (Debian package) drives the dashboard's browser test; its
# screenshot is kept in test-artifacts/. It joins PostgreSQL's apt-get call.
if ! command -v chromium >/dev/null; then
	APT_PACKAGES+=(chromium)
fi
start_installs
export ICEKEEPER_TEST_ARTIFACTS="$PWD/test-artifacts"

PKGS=("$@")
[ ${#PKGS[@]} -eq 0 ] && PKGS=(./...)

log "gofmt"
unformatted="$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))"
if [ -n "$unformatted" ]; then
	echo "not gofmt-formatted:" >&2
	echo "$unformatted" >&2
	exit 1
fi
# While the tools install: vet, and compile the race-enabled test binaries
# into the build cache (-run '^$' runs no test), so that the test run below
# mostly links and runs.
start=$SECONDS
log "go vet"
go vet "${PKGS[@]}"
log "compiling the tests (go test -race -run '^\$')"
go test -race -count=1 -run '^$' "${PKGS[@]}" >/dev/null
log "vet and test build took $((SECONDS - start)) s"

wait_installs
start_servers

log "go test -race (each package reported as it finishes)"
# gotestsum is pinned as a tool in go.mod; it prints a line per package as
# it finishes, and the output of failing tests in full.
events="$WORK/test-events.json" # removed with the servers' data
# The compactor package runs about 15 minutes under -race on 2 idle
# cores; the timeout leaves room for a busy machine.
go tool gotestsum --format pkgname-and-test-fails --format-hide-empty-pkg --jsonfile "$events" -- \
	-race -count=1 -timeout 50m "${PKGS[@]}"
log "tests slower than 20s"
go tool gotestsum tool slowest --jsonfile "$events" --threshold 20s
