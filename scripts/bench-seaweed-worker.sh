#!/usr/bin/env bash
# icekeeper beside SeaweedFS's own maintenance worker, by whole-process
# wall, over SeaweedFS's Iceberg REST catalog and S3 (BENCHMARKS.md).
#
# `weed mini` (the version scripts/servers.sh pins, built by it when
# missing) runs with its admin server and maintenance worker inside a
# private network namespace (`unshare -n`, loopback only), so no port it
# opens is reachable from outside; every client enters the namespace with
# nsenter. (It still makes its local gRPC Unix sockets in /tmp, files
# that a network namespace does not cover; it removes them when it stops.
# Its logs go to a temporary directory of the script's own.) For each input, two identical tables are
# built in a fresh table bucket through the REST catalog (the same seed;
# compactor's TestSeaweedWorkerBenchChild):
#
#   flat         200 appends of 5,000 rows (int, long, timestamp, double
#                with nulls, a short enum string, a 50-200 character random
#                string, p), zstd: 200 files
#   partitioned  the same columns over 16 identity partitions of p, 312
#                rows each per append (4,992 rows): 3,200 files
#
# Side "worker": SeaweedFS's iceberg_maintenance job (operations=compact,
# target_file_size_mb=128, scoped to the bucket and table), called through
# the admin API as WORKER says:
#   execute  (the default) POST /api/plugin/job-types/iceberg_maintenance/detect,
#            then POST /api/plugin/jobs/execute with the job it proposed:
#            plan and run, as a caller of the API gets them; the wall is
#            both calls', the detection's shown apart
#   run      POST /api/plugin/job-types/iceberg_maintenance/run, which
#            detects, filters the proposals against active jobs, dispatches
#            them and answers when they are done
# Its CPU is what the weed process (worker, filer, volume and S3 servers in
# one) spent meanwhile.
# Side "icekeeper": `icekeeper run --job compaction` (one-shot, bin-pack,
# 128 MB) on the other copy; its wall and CPU are the process's
# (/usr/bin/time), and the weed process's CPU meanwhile is reported
# beside it: what the storage server spent serving icekeeper, part of
# icekeeper's cost. Scheduled iceberg maintenance stays off throughout.
# The sides alternate which goes first and neither waits for the weed
# process to go idle (SETTLE=1 waits, as earlier versions of this script
# did): whichever side goes second pays for what the first left running.
# BUSY=1 keeps one core busy with another process throughout (a shell
# loop), for the figures on a loaded machine.
#
# Then both tables are read back: each side's rows against the input's
# (a multiset fingerprint), and its data files and bytes.
#
#   scripts/bench-seaweed-worker.sh [flat] [partitioned]
#
# REPEAT=N runs each input N times on freshly built tables, alternating
# which side goes first (worker first on odd runs). ICEKEEPER_BENCH_COMPACT_FILES
# changes the number of appends. A line per side and run (icekeeper's with a
# second: its page faults and context switches), then the
# check's JSON. OUT=DIR keeps each run's `icekeeper run --json` output and
# its log there (ICEKEEPER_LOG_LEVEL=debug gives the log its timings).
# ICEKEEPER_BENCH_SKIP_ROW_CHECK=1 runs icekeeper without its row check
# (what the check's read-back costs the storage server).
# ICEKEEPER_BENCH_UNSIGNED_PAYLOAD=1 runs icekeeper with s3UnsignedPayload:
# its uploads unsigned, checked by weed against their CRC32 alone.
# WEED_PROFILE=DIR starts weed with its profiling server (inside the
# namespace) and keeps in DIR a CPU profile of the weed process for the
# first WEED_PROFILE_SECONDS (3) of each icekeeper run and of each
# worker execution: where weed's CPU serving each side goes.
# Needs root (unshare, nsenter).
set -euo pipefail
cd "$(dirname "$0")/.."
INPUTS=("$@")
[ ${#INPUTS[@]} -gt 0 ] || INPUTS=(flat partitioned)
REPEAT="${REPEAT:-1}"
WORKER="${WORKER:-execute}"
case "$WORKER" in execute | run) ;; *) echo "WORKER must be execute or run, not $WORKER" >&2; exit 2 ;; esac

SERVERS_START=later
# shellcheck source=servers.sh
source scripts/servers.sh # WEED, install_seaweedfs, stop_pid; its trap removes $WORK and stops $SW_PID
[ -x "$WEED" ] || { log "building SeaweedFS $SEAWEEDFS_VERSION"; install_seaweedfs; }

log "building icekeeper and the table child"
mkdir -p "$WORK/bin"
go build -o "$WORK/bin/icekeeper" ./cmd/icekeeper
go test -c -o "$WORK/bin/compactor.test" ./compactor

log "starting weed mini (SeaweedFS $SEAWEEDFS_VERSION) in a private network namespace"
mkdir -p "$WORK/weed" "$WORK/tmp"
# The S3 identity comes from the AWS variables, as in scripts/servers.sh;
# weed's logs go to $WORK, not /tmp.
TMPDIR="$WORK/tmp" AWS_ACCESS_KEY_ID=icekeeper AWS_SECRET_ACCESS_KEY=icekeeper-secret \
	unshare -n sh -c 'ip link set lo up && exec "$0" "$@"' \
	"$WEED" mini -dir="$WORK/weed" -ip=127.0.0.1 -ip.bind=127.0.0.1 -master.telemetry=false \
	-webdav=false -s3.port.lance=0 ${WEED_PROFILE:+-debug -debug.port=6060} >"$WORK/weed.log" 2>&1 &
SW_PID=$!

in_ns() { nsenter --net="/proc/$SW_PID/ns/net" "$@"; }
ADMIN=http://127.0.0.1:12535
for i in $(seq 1 600); do
	if in_ns curl -sf "$ADMIN/api/plugin/workers" 2>/dev/null | grep -q '"iceberg_maintenance"' &&
		in_ns curl -sf http://127.0.0.1:8181/v1/config >/dev/null 2>&1; then
		break
	fi
	if [ "$i" = 600 ] || ! kill -0 "$SW_PID" 2>/dev/null; then
		echo "weed mini did not start with an iceberg_maintenance worker; its log:" >&2
		tail -20 "$WORK/weed.log" >&2
		exit 1
	fi
	sleep 0.2
done

export AWS_ACCESS_KEY_ID=icekeeper AWS_SECRET_ACCESS_KEY=icekeeper-secret AWS_EC2_METADATA_DISABLED=true
export ICEKEEPER_TEST_REST=http://127.0.0.1:8181 ICEKEEPER_TEST_REST_S3=http://127.0.0.1:8333
export ICEKEEPER_TEST_REST_KEY=icekeeper ICEKEEPER_TEST_REST_SECRET=icekeeper-secret

CLK_TCK=$(getconf CLK_TCK)
# weed_cpu prints the weed process's user+system CPU so far, in seconds.
weed_cpu() { awk -v hz="$CLK_TCK" '{ printf "%.2f", ($14 + $15) / hz }' "/proc/$SW_PID/stat"; }
now() { date +%s.%N; }
sub() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a - b }'; }

# settle waits (up to 2 minutes) until the weed process spends under 5% of
# a core: after a build it keeps working for a while (volume growth, its
# own housekeeping), and whichever side ran first would otherwise pay for it.
settle() {
	[ "${SETTLE:-0}" = 1 ] || return 0
	local a b
	for _ in $(seq 1 60); do
		a=$(weed_cpu)
		sleep 2
		b=$(weed_cpu)
		awk -v a="$a" -v b="$b" 'BEGIN { exit !(b - a < 0.1) }' && return 0
	done
	log "weed still busy after 2 minutes; measuring anyway"
}

# profile NAME: with WEED_PROFILE, a CPU profile of weed in the background,
# to $WEED_PROFILE/NAME.prof; its PID in PROFILE_PID (waited for by the side).
PROFILE_PID=
profile() {
	[ -n "${WEED_PROFILE:-}" ] || return 0
	mkdir -p "$WEED_PROFILE"
	in_ns curl -sS -o "$WEED_PROFILE/$1.prof" "http://127.0.0.1:6060/debug/pprof/profile?seconds=${WEED_PROFILE_SECONDS:-3}" &
	PROFILE_PID=$!
}
profiled() { [ -z "$PROFILE_PID" ] || wait "$PROFILE_PID"; PROFILE_PID=; }

child() { # child ARGS...: the table child, inside the namespace
	in_ns env ICEKEEPER_BENCH_CHILD="$(printf '%s\n' "$@" | jq -R . | jq -sc .)" \
		"$WORK/bin/compactor.test" -test.run '^TestSeaweedWorkerBenchChild$' -test.count=1
}

# configure_worker BUCKET: compaction only, toward 128 MB, on bench.worker
# of BUCKET, and never on a schedule.
configure_worker() {
	in_ns curl -sf -X PUT -H 'Content-Type: application/json' \
		"$ADMIN/api/plugin/job-types/iceberg_maintenance/config" -d @- >/dev/null <<JSON
{
  "admin_runtime": {"enabled": false},
  "admin_config_values": {
    "bucket_filter": {"string_value": "$1"},
    "namespace_filter": {"string_value": "bench"},
    "table_filter": {"string_value": "worker"}
  },
  "worker_config_values": {
    "operations": {"string_value": "compact"},
    "target_file_size_mb": {"int64_value": "128"},
    "rewrite_strategy": {"string_value": "binpack"}
  }
}
JSON
}

run_worker() { # run_worker INPUT RUN BUCKET
	local t0 c0 td t1 c1 res det job detect=""
	configure_worker "$3"
	settle
	c0=$(weed_cpu)
	t0=$(now)
	if [ "$WORKER" = run ]; then
		res=$(in_ns curl -sS -X POST -H 'Content-Type: application/json' \
			"$ADMIN/api/plugin/job-types/iceberg_maintenance/run" -d '{"timeout_seconds": 3600}')
		t1=$(now)
		c1=$(weed_cpu)
		if [ "$(jq -r '.success_count // 0' <<<"$res")" -lt 1 ]; then
			echo "the worker's run did not succeed: $res" >&2
			exit 1
		fi
	else
		det=$(in_ns curl -sS -X POST -H 'Content-Type: application/json' \
			"$ADMIN/api/plugin/job-types/iceberg_maintenance/detect" -d '{"timeout_seconds": 3600}')
		td=$(now)
		profile "$1-$2-worker"
		# The job the detection proposed, as the scheduler would make it.
		job=$(jq -c --arg id "bench-$1-$2" '.proposals[0] // empty | {job_id: $id, job_type, dedupe_key, priority, summary, detail, parameters, labels}' <<<"$det")
		if [ -z "$job" ]; then
			echo "the worker's detection proposed nothing: $det" >&2
			exit 1
		fi
		res=$(in_ns curl -sS -X POST -H 'Content-Type: application/json' \
			"$ADMIN/api/plugin/jobs/execute" -d "{\"job\": $job, \"timeout_seconds\": 3600}")
		t1=$(now)
		c1=$(weed_cpu)
		if [ "$(jq -r '.success // false' <<<"$res")" != true ]; then
			echo "the worker's execution did not succeed: $res" >&2
			exit 1
		fi
		profiled
		detect=" detect $(sub "$td" "$t0") s"
		res=$(jq -c '{success, result: (.result // {} | del(.output_values))}' <<<"$res")
	fi
	printf '%s run %d worker %s: wall %6.2f s%s  weed CPU %6.2f s  (%s)\n' "$1" "$2" "$WORKER" "$(sub "$t1" "$t0")" "$detect" "$(sub "$c1" "$c0")" "$res"
}

run_icekeeper() { # run_icekeeper INPUT RUN BUCKET DIR
	local c0 c1 tf=$4/time.txt
	settle
	c0=$(weed_cpu)
	profile "$1-$2-icekeeper"
	in_ns /usr/bin/time -f '%e %U %S %M %R %w %c' -o "$tf" "$WORK/bin/icekeeper" run --config "$4/icekeeper.yaml" \
		--table "$3/bench/icekeeper" --job compaction --json >"$4/run.json" 2>"$4/run.log"
	c1=$(weed_cpu)
	profiled
	read -r wall user sys rss minflt vcsw ivcsw <"$tf"
	if [ "$(jq -r '.icebergCompaction.status' "$4/run.json")" != Successful ]; then
		echo "icekeeper's run did not succeed: $(cat "$4/run.json")" >&2
		exit 1
	fi
	local cpu weed
	cpu=$(awk -v u="$user" -v s="$sys" 'BEGIN { print u + s }')
	weed=$(sub "$c1" "$c0")
	printf '%s run %d icekeeper: wall %6.2f s  CPU %6.2f s (user %s, system %s)  peak RSS %d MiB  weed CPU %6.2f s  total CPU %6.2f s\n' "$1" "$2" "$wall" \
		"$cpu" "$user" "$sys" "$((rss / 1024))" "$weed" "$(awk -v a="$cpu" -v b="$weed" 'BEGIN { print a + b }')"
	# Where system time goes: page faults, and context switches the
	# process asked for (waiting on the network) and was made to take.
	printf '%s run %d icekeeper: %s minor page faults, %s voluntary and %s involuntary context switches\n' "$1" "$2" "$minflt" "$vcsw" "$ivcsw"
	jq -c '.icebergCompaction.figures | {durationMs, manifestMs, rewriteMs, commitMs, groupsPlanned, groupsMerged, outputFiles}' "$4/run.json"
}

if [ "${BUSY:-0}" = 1 ]; then
	log "keeping one core busy"
	sh -c 'while :; do :; done' &
	BUSY_PID=$!
	trap 'kill "$BUSY_PID" 2>/dev/null; cleanup' EXIT # servers.sh's cleanup too
fi

for input in "${INPUTS[@]}"; do
	for run in $(seq 1 "$REPEAT"); do
		dir="$WORK/$input-$run"
		mkdir -p "$dir"
		log "$input run $run: building the tables"
		child build "$dir" "$input" | grep -v '^PASS$'
		bucket=$(cat "$dir/bucket")
		if [ $((run % 2)) = 1 ]; then
			run_worker "$input" "$run" "$bucket"
			run_icekeeper "$input" "$run" "$bucket" "$dir"
		else
			run_icekeeper "$input" "$run" "$bucket" "$dir"
			run_worker "$input" "$run" "$bucket"
		fi
		log "$input run $run: reading both tables back"
		child check "$dir" | grep -v '^PASS$'
		[ -z "${OUT:-}" ] || { mkdir -p "$OUT/$input-$run" && cp "$dir"/run.json "$dir"/run.log "$dir"/time.txt "$OUT/$input-$run/"; }
	done
done
