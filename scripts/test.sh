#!/usr/bin/env bash
# Runs icekeeper's whole test suite against real servers, from nothing:
# installs PostgreSQL (Debian package) and the versitygw S3 server (go
# install) when missing, starts both on 127.0.0.1 with throw-away data,
# runs gofmt, go vet and go test -race, and stops the servers again.
#
#   scripts/test.sh                 # everything
#   scripts/test.sh ./configs/...   # only some packages (servers still start)
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/servers.sh

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
log "go test -race"
go test -race -count=1 -timeout 30m "${PKGS[@]}"
