#!/usr/bin/env bash
# Runs icekeeper's whole test suite against real servers, from nothing:
# installs PostgreSQL and Chromium (Debian packages), the versitygw S3 server,
# helm and promtool (go install) when missing, starts both on 127.0.0.1 with throw-away data,
# runs gofmt, go vet and go test -race, and stops the servers again.
#
#   scripts/test.sh                 # everything
#   scripts/test.sh ./configs/...   # only some packages (servers still start)
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/servers.sh

# helm renders the chart in deploy/, promtool checks and tests the alert
# rules (about 4 minutes to build the first time).
HELM_VERSION=v3.22.0
if ! "$GOBIN_DIR/helm" version --short 2>/dev/null | grep -q "^${HELM_VERSION%.*}"; then
	log "installing helm $HELM_VERSION"
	GOFLAGS= go install "helm.sh/helm/v3/cmd/helm@$HELM_VERSION"
fi
PROMTOOL_VERSION=v0.316.0
if [ ! -x "$GOBIN_DIR/promtool" ]; then
	log "installing promtool $PROMTOOL_VERSION"
	GOFLAGS= go install "github.com/prometheus/prometheus/cmd/promtool@$PROMTOOL_VERSION"
fi

# Chromium (Debian package) drives the dashboard's browser test; its
# screenshot is kept in test-artifacts/.
if ! command -v chromium >/dev/null; then
	log "installing Chromium"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	apt-get install -y -qq chromium >/dev/null
fi
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
log "go vet"
go vet "${PKGS[@]}"
log "go test -race (each package reported as it finishes)"
# gotestsum is pinned as a tool in go.mod; it prints a line per package as
# it finishes, and the output of failing tests in full.
events="$WORK/test-events.json" # removed with the servers' data
go tool gotestsum --format pkgname-and-test-fails --format-hide-empty-pkg --jsonfile "$events" -- \
	-race -count=1 -timeout 30m "${PKGS[@]}"
log "tests slower than 20s"
go tool gotestsum tool slowest --jsonfile "$events" --threshold 20s
