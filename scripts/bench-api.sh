#!/usr/bin/env bash
# The API benchmark recorded in BENCHMARKS.md: job-status requests per
# second and latency with wrk against a daemon with 1,000 tables, then the
# idle CPU and RSS of a daemon with 10,000 tables. With BASE=REV, the same
# runs are made first with the daemon built from REV, side by side.
# Installs wrk (Debian package) when missing. Everything listens on
# 127.0.0.1 and is stopped.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v wrk >/dev/null || { apt-get update -qq && apt-get install -y -qq wrk >/dev/null; }

WORK="$(mktemp -d /tmp/icekeeper-bench-api.XXXXXX)"
PID=""
cleanup() {
	[ -n "$PID" ] && kill "$PID" 2>/dev/null && wait "$PID" 2>/dev/null
	[ -d "$WORK/base-src" ] && git worktree remove --force "$WORK/base-src"
	rm -rf "$WORK"
}
trap cleanup EXIT
go build -o "$WORK/icekeeper" ./cmd/icekeeper
go build -o "$WORK/mktables" ./internal/testkit/child/mktables
BINARIES=("$WORK/icekeeper")
if [ -n "${BASE:-}" ]; then
	git worktree add -q "$WORK/base-src" "$BASE"
	(cd "$WORK/base-src" && go build -o "$WORK/icekeeper-base" ./cmd/icekeeper)
	BINARIES=("$WORK/icekeeper-base" "$WORK/icekeeper")
fi

free_port() { for _ in $(seq 50); do p=$(( (RANDOM % 30000) + 20000 )); (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null || { echo "$p"; return; }; done; }

serve() { # serve BINARY HOME: start the daemon on the home's tables with daily schedules
	local bin=$1 home=$2 port
	port=$(free_port)
	rm -f "$home/state.db"*
	cat >"$home/icekeeper.yaml" <<YAML
listen: 127.0.0.1:$port
state: sqlite://$home/state.db
buckets:
  - arn: arn:aws:s3tables:local:000000000000:bucket/local
    catalog:
      type: sql
      uri: "file:$home/catalog.db?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_txlock=immediate"
      warehouse: file://$home/warehouse
schedules: {icebergCompaction: "@daily", icebergSnapshotManagement: "@daily", icebergUnreferencedFileRemoval: "@daily"}
YAML
	"$bin" serve --config "$home/icekeeper.yaml" 2>"$home/serve.log" &
	PID=$!
	for _ in $(seq 100); do curl -fs "http://127.0.0.1:$port/healthz" >/dev/null 2>&1 && break; sleep 0.1; done
	PORT=$port
	# What a daemon does once at its start (listing every table, the
	# health refresh that reads every table's metadata) is not what
	# either measurement is about: let it end first.
	sleep "${SETTLE:-30}"
}
stop() { kill "$PID"; wait "$PID" 2>/dev/null || true; PID=""; }

# Each request names the next of the 1,000 tables.
cat >"$WORK/rotate.lua" <<'LUA'
local arn = "arn%3Aaws%3As3tables%3Alocal%3A000000000000%3Abucket%2Flocal"
local i = 0
request = function()
	i = (i + 1) % 1000
	return wrk.format("GET", string.format("/tables/%s/bench/t%05d/maintenance-job-status", arn, i))
end
LUA

"$WORK/mktables" --home "$WORK/k1" --tables 1000
"$WORK/mktables" --home "$WORK/k10" --tables 10000
# Each setting runs every build back to back, so both see the same
# machine load (other work on the machine drifts over minutes).
for procs in "" 1; do
	# Twice: the daemon free to use both cores, which it then contends for
	# with wrk; and held to one (GOMAXPROCS=1), leaving the other to wrk.
	for bin in "${BINARIES[@]}"; do
		echo "== $(basename "$bin"), 1,000 tables: job status under load${procs:+, GOMAXPROCS=$procs} (load average $(cut -d' ' -f1 /proc/loadavg))"
		GOMAXPROCS=$procs serve "$bin" "$WORK/k1"
		curl -fs "http://127.0.0.1:$PORT/tables/arn%3Aaws%3As3tables%3Alocal%3A000000000000%3Abucket%2Flocal/bench/t00500/maintenance-job-status"; echo
		wrk -t2 -c32 -d20s --latency -s "$WORK/rotate.lua" "http://127.0.0.1:$PORT"
		stop
	done
done

for bin in "${BINARIES[@]}"; do
	echo "== $(basename "$bin"), 10,000 tables: idle daemon"
	serve "$bin" "$WORK/k10"
	ticks() { awk '{print $14 + $15}' "/proc/$PID/stat"; }
	t0=$(ticks); sleep 60; t1=$(ticks)
	hz=$(getconf CLK_TCK)
	echo "idle CPU over 60 s: $(awk -v a="$t0" -v b="$t1" -v hz="$hz" 'BEGIN{printf "%.2f%% of one core", (b-a)/hz/60*100}')"
	grep -E 'VmRSS|VmHWM' "/proc/$PID/status"
	stop
done
