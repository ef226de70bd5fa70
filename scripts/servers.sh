# Sourced by test.sh and bench.sh: installs PostgreSQL, versitygw and
# SeaweedFS when missing, starts them on free 127.0.0.1 ports with
# throw-away data, exports the ICEKEEPER_TEST_* variables, and stops them
# when the shell exits. With SERVERS_START=later it only defines what
# follows, and the sourcing script adds installs of its own, does other
# work while they run, and calls wait_installs and start_servers itself
# (test.sh does).
#
# The installs run as background jobs, because from nothing they took most
# of a CI run one after another: the apt download, the Go module downloads
# and the builds overlap. All Debian packages go into ONE apt-get call
# (two at once fail on dpkg's lock). Go builds are CPU bound: a lone `go
# build` leaves cores idle while it downloads, links or waits on a chain of
# packages, but more than two at a time on 2 cores only compete, so the Go
# tools are built in two lanes, each one tool after another. A job's output
# goes to $WORK/install-NAME.log; wait_installs reports how long each
# install took, and the end of the log of any that failed, and fails.
#
# SeaweedFS is the Iceberg REST catalog (with SigV4, S3 Tables and S3)
# that the REST-path tests run against. It runs as `weed server`, not
# `weed mini`: `server` binds every listener to -ip.bind and starts neither
# the admin server (which `mini` binds to every interface) nor SeaweedFS's
# own maintenance worker (which `mini` runs on every table, and which would
# compact the tables under test). Its go.mod has a replace directive, so
# `go install` refuses it: the module source is downloaded, copied and
# built (about 4 minutes on 2 cores), and the binary is kept in GOPATH/bin
# under its version for the next run. Every table bucket is a collection
# that takes 7 volumes, so volumes are small (64 MB) and many (1,000): a
# test makes a table bucket of its own.
#
# toxiproxy sits between tests and an S3 server where a test wants the
# latency of real object storage; tests make their proxies through its API.
VERSITYGW_VERSION=v1.8.0
SEAWEEDFS_VERSION=v0.0.0-20261109003541-7506e5f91cd6
TOXIPROXY_VERSION=v2.5.0
GOBIN_DIR="$(go env GOPATH)/bin"
export PATH="$GOBIN_DIR:$PATH"

log() { printf '== %s\n' "$*" >&2; }

free_port() {
	local p
	for _ in $(seq 1 50); do
		p=$(( (RANDOM % 30000) + 20000 ))
		if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
			echo "$p"
			return
		fi
	done
	echo "no free port found" >&2
	return 1
}

as_postgres() {
	if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

pg_bin() {
	local d
	for d in /usr/lib/postgresql/*/bin; do
		[ -x "$d/initdb" ] && { echo "$d"; return; }
	done
	return 1
}

install_apt() {
	[ ${#APT_PACKAGES[@]} -gt 0 ] || return 0
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	apt-get install -y -qq "${APT_PACKAGES[@]}"
}

install_versitygw() {
	CGO_ENABLED= GOFLAGS= go install "github.com/versity/versitygw/cmd/versitygw@$VERSITYGW_VERSION"
}

TOXIPROXY="$GOBIN_DIR/toxiproxy-server-$TOXIPROXY_VERSION"
install_toxiproxy() {
	# Its command is named "server"; it is kept under a name of its own.
	CGO_ENABLED= GOFLAGS= GOBIN="$WORK/bin" go install "github.com/Shopify/toxiproxy/v2/cmd/server@$TOXIPROXY_VERSION"
	mv "$WORK/bin/server" "$TOXIPROXY"
}

WEED="$GOBIN_DIR/weed-$SEAWEEDFS_VERSION"
install_seaweedfs() {
	local dir src
	dir="$(cd "$WORK" && GOFLAGS= go mod download -json "github.com/seaweedfs/seaweedfs@$SEAWEEDFS_VERSION" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')"
	[ -d "$dir" ] || { echo "go mod download of SeaweedFS gave no directory" >&2; return 1; }
	src="$WORK/seaweedfs-src"
	cp -r "$dir" "$src"
	chmod -R u+w "$src"
	(cd "$src" && CGO_ENABLED= GOFLAGS= go build -o "$WEED.tmp" ./weed)
	mv "$WEED.tmp" "$WEED"
	rm -rf "$src"
}

# What is missing: Debian packages for the one apt-get call, and Go tools'
# install functions for the two build lanes (SeaweedFS, the longest build,
# in lane A, the short ones in lane B). A sourcing script adds its own
# before start_installs.
APT_PACKAGES=()
GO_LANE_A=()
GO_LANE_B=()
# AFTER_APT are install functions that need the Debian packages: they run
# in the apt job, after apt-get.
AFTER_APT=()
plan_server_installs() {
	pg_bin >/dev/null || APT_PACKAGES+=(postgresql)
	command -v curl >/dev/null || APT_PACKAGES+=(curl) # readiness checks below
	[ -x "$WEED" ] || GO_LANE_A+=(install_seaweedfs)
	command -v versitygw >/dev/null || GO_LANE_B+=(install_versitygw)
	[ -x "$TOXIPROXY" ] || GO_LANE_B+=(install_toxiproxy)
	return 0
}

JOB_PIDS=()
JOB_NAMES=()
APT_PID=""

# run_steps runs install functions one after another (errexit stops at the
# first that fails) and writes how long each took, for wait_installs.
run_steps() {
	local step start
	for step in "$@"; do
		start=$SECONDS
		"$step"
		echo "TOOK $step $((SECONDS - start)) s"
	done
}

# start_job NAME STEP... runs the steps in the background, output to its log.
start_job() {
	local name=$1
	shift
	log "installing in the background: $* (log: $WORK/install-$name.log)"
	run_steps "$@" >"$WORK/install-$name.log" 2>&1 &
	JOB_PIDS+=("$!")
	JOB_NAMES+=("$name")
}

start_installs() {
	INSTALLS_START=$SECONDS
	if [ ${#APT_PACKAGES[@]} -gt 0 ] || [ ${#AFTER_APT[@]} -gt 0 ]; then
		start_job apt install_apt ${AFTER_APT[@]+"${AFTER_APT[@]}"}
		APT_PID=$!
	fi
	if [ ${#GO_LANE_A[@]} -gt 0 ]; then start_job go-a "${GO_LANE_A[@]}"; fi
	if [ ${#GO_LANE_B[@]} -gt 0 ]; then start_job go-b "${GO_LANE_B[@]}"; fi
	return 0
}

# wait_installs waits for every job (`wait PID` gives its exit status),
# prints each install's time, and fails after printing the end of the log
# of every job that failed.
wait_installs() {
	local i rc failed=""
	for i in "${!JOB_PIDS[@]}"; do
		if wait "${JOB_PIDS[$i]}"; then
			sed -n 's/^TOOK install_\(.*\)/== installed \1/p' "$WORK/install-${JOB_NAMES[$i]}.log" >&2
		else
			rc=$?
			failed+=" ${JOB_NAMES[$i]}"
			printf '== install job %s FAILED (exit %d); the end of its log:\n' "${JOB_NAMES[$i]}" "$rc" >&2
			tail -n 30 "$WORK/install-${JOB_NAMES[$i]}.log" >&2
		fi
	done
	[ ${#JOB_PIDS[@]} -eq 0 ] || log "installs done after $((SECONDS - INSTALLS_START)) s"
	JOB_PIDS=()
	JOB_NAMES=()
	APT_PID=""
	if [ -n "$failed" ]; then
		echo "installing failed:$failed" >&2
		return 1
	fi
}

# kill_tree stops a process and everything it started (a job's go build
# runs in a subshell of the job; background jobs ignore Ctrl-C).
kill_tree() {
	local child
	kill -STOP "$1" 2>/dev/null # no new children while they are listed
	for child in $(pgrep -P "$1"); do kill_tree "$child"; done
	kill "$1" 2>/dev/null
	kill -CONT "$1" 2>/dev/null
}

# stop_jobs, on an early exit, stops the Go install jobs and their go
# commands, but lets apt-get finish: dpkg interrupted half-way needs a
# manual `dpkg --configure -a`.
stop_jobs() {
	local pid
	for pid in ${JOB_PIDS[@]+"${JOB_PIDS[@]}"}; do
		[ "$pid" = "$APT_PID" ] || kill_tree "$pid"
	done
	[ -n "$APT_PID" ] && wait "$APT_PID" 2>/dev/null
	return 0
}

# stop_pid sends SIGTERM, waits up to 10 s, then sends SIGKILL.
stop_pid() {
	local pid=$1
	kill "$pid" 2>/dev/null || return 0
	for _ in $(seq 1 100); do
		kill -0 "$pid" 2>/dev/null || { wait "$pid" 2>/dev/null; return 0; }
		sleep 0.1
	done
	kill -9 "$pid" 2>/dev/null
	wait "$pid" 2>/dev/null
}

# seaweedfs_ports prints a base port B such that B..B+4 (master, volume,
# filer, S3, Iceberg REST) and their gRPC companions B+10000..B+10004 (the
# SeaweedFS convention) are free. B is below 22800, so that the gRPC ports
# stay under the kernel's ephemeral range, where outgoing connections could
# take them first.
seaweedfs_ports() {
	local b i ok
	for _ in $(seq 1 50); do
		b=$(( (RANDOM % 2700) + 20000 ))
		ok=1
		for i in 0 1 2 3 4 10000 10001 10002 10003 10004; do
			if (exec 3<>"/dev/tcp/127.0.0.1/$((b + i))") 2>/dev/null; then ok=0; break; fi
		done
		[ "$ok" = 1 ] && { echo "$b"; return; }
	done
	echo "no free SeaweedFS ports found" >&2
	return 1
}

WORK="$(mktemp -d /tmp/icekeeper-test.XXXXXX)"
PG_DATA="$WORK/pg"
GW_PID=""
SW_PID=""
TP_PID=""
cleanup() {
	set +e
	stop_jobs
	[ -n "$TP_PID" ] && stop_pid "$TP_PID"
	[ -n "$GW_PID" ] && stop_pid "$GW_PID"
	if [ -n "$SW_PID" ]; then
		stop_pid "$SW_PID"
		# weed server makes its services' gRPC Unix sockets in /tmp,
		# whatever TMPDIR says, and leaves them behind.
		for p in ${SW_MASTER:-} ${SW_VOLUME:-} ${SW_FILER:-} ${SW_S3:-}; do
			rm -f /tmp/seaweedfs-*-grpc-$((p + 10000)).sock
		done
	fi
	[ -f "$PG_DATA/postmaster.pid" ] && as_postgres "$(pg_bin)/pg_ctl" -D "$PG_DATA" -m immediate stop >/dev/null 2>&1
	rm -rf "$WORK"
}
trap cleanup EXIT
trap "exit 143" TERM INT

start_servers() {
	log "starting PostgreSQL"
	PG_PORT="$(free_port)"
	mkdir -p "$PG_DATA"
	[ "$(id -u)" = 0 ] && chown postgres "$WORK" "$PG_DATA"
	as_postgres "$(pg_bin)/initdb" -D "$PG_DATA" -U postgres --auth=trust >/dev/null
	as_postgres "$(pg_bin)/pg_ctl" -D "$PG_DATA" -l "$PG_DATA/server.log" -w \
		-o "-c listen_addresses=127.0.0.1 -p $PG_PORT -k $PG_DATA -c fsync=off -c max_connections=200" start >/dev/null

	log "starting versitygw"
	GW_PORT="$(free_port)"
	GW_DIR="$WORK/s3"
	mkdir -p "$GW_DIR"
	ROOT_ACCESS_KEY=icekeeper ROOT_SECRET_KEY=icekeeper-secret \
		versitygw --port "127.0.0.1:$GW_PORT" --quiet posix "$GW_DIR" >"$WORK/versitygw.log" 2>&1 &
	GW_PID=$!
	for _ in $(seq 1 100); do
		(exec 3<>"/dev/tcp/127.0.0.1/$GW_PORT") 2>/dev/null && break
		sleep 0.1
	done

	log "starting toxiproxy"
	# A port taken between free_port and the bind, or a slow start on a busy
	# machine, would otherwise only show as a test failing later: start it
	# again on another port, and fail here if it never answers.
	TP_UP=""
	for attempt in 1 2 3; do
		TP_PORT="$(free_port)"
		"$TOXIPROXY" -host 127.0.0.1 -port "$TP_PORT" >"$WORK/toxiproxy.log" 2>&1 &
		TP_PID=$!
		for _ in $(seq 1 300); do
			curl -sf "http://127.0.0.1:$TP_PORT/version" >/dev/null 2>&1 && { TP_UP=1; break; }
			kill -0 "$TP_PID" 2>/dev/null || break
			sleep 0.1
		done
		[ -n "$TP_UP" ] && break
		log "toxiproxy did not answer on port $TP_PORT (attempt $attempt); its log:"
		tail -5 "$WORK/toxiproxy.log" >&2
		stop_pid "$TP_PID"
		TP_PID=""
	done
	if [ -z "$TP_UP" ]; then
		echo "toxiproxy did not start" >&2
		exit 1
	fi

	log "starting SeaweedFS"
	SW_BASE="$(seaweedfs_ports)"
	SW_MASTER=$SW_BASE SW_VOLUME=$((SW_BASE + 1)) SW_FILER=$((SW_BASE + 2)) SW_S3=$((SW_BASE + 3)) SW_REST=$((SW_BASE + 4))
	mkdir -p "$WORK/seaweedfs" "$WORK/tmp"
	# weed writes its logs to the temporary directory: $WORK's.
	TMPDIR="$WORK/tmp" AWS_ACCESS_KEY_ID=icekeeper AWS_SECRET_ACCESS_KEY=icekeeper-secret \
		"$WEED" server -dir="$WORK/seaweedfs" -ip=127.0.0.1 -ip.bind=127.0.0.1 -master.telemetry=false \
		-master.volumeSizeLimitMB=64 -volume.max=1000 \
		-master.port="$SW_MASTER" -volume.port="$SW_VOLUME" -filer -filer.port="$SW_FILER" \
		-s3 -s3.port="$SW_S3" -s3.port.iceberg="$SW_REST" -s3.port.lance=0 \
		-s3.localSocket="$WORK/seaweedfs-s3.sock" -filer.localSocket="$WORK/seaweedfs-filer.sock" \
		>"$WORK/seaweedfs.log" 2>&1 &
	SW_PID=$!
	for i in $(seq 1 600); do
		curl -sf "http://127.0.0.1:$SW_REST/v1/config" >/dev/null 2>&1 && break
		if [ "$i" = 600 ] || ! kill -0 "$SW_PID" 2>/dev/null; then
			echo "SeaweedFS did not start; its log:" >&2
			tail -20 "$WORK/seaweedfs.log" >&2
			exit 1
		fi
		sleep 0.1
	done

	export ICEKEEPER_TEST_TOXIPROXY="http://127.0.0.1:$TP_PORT"
	export ICEKEEPER_TEST_REST="http://127.0.0.1:$SW_REST"
	export ICEKEEPER_TEST_REST_S3="http://127.0.0.1:$SW_S3"
	export ICEKEEPER_TEST_REST_KEY=icekeeper
	export ICEKEEPER_TEST_REST_SECRET=icekeeper-secret
	export ICEKEEPER_TEST_POSTGRES="postgres://postgres@127.0.0.1:$PG_PORT/postgres?sslmode=disable"
	export ICEKEEPER_TEST_S3="http://127.0.0.1:$GW_PORT"
	export ICEKEEPER_TEST_S3_KEY=icekeeper
	export ICEKEEPER_TEST_S3_SECRET=icekeeper-secret
	export ICEKEEPER_REQUIRE_SERVERS=1
}

if [ "${SERVERS_START:-now}" = now ]; then
	plan_server_installs
	start_installs
	wait_installs
	start_servers
fi
