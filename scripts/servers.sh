# Sourced by test.sh and bench.sh: installs PostgreSQL and versitygw when
# missing, starts both on free 127.0.0.1 ports with throw-away data, exports
# the ICEKEEPER_TEST_* variables, and stops them when the shell exits.
VERSITYGW_VERSION=v1.8.0
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

ensure_postgres() {
	if ! pg_bin >/dev/null; then
		log "installing PostgreSQL"
		export DEBIAN_FRONTEND=noninteractive
		apt-get update -qq
		apt-get install -y -qq postgresql >/dev/null
	fi
}

ensure_versitygw() {
	if ! command -v versitygw >/dev/null; then
		log "installing versitygw $VERSITYGW_VERSION"
		GOFLAGS= go install "github.com/versity/versitygw/cmd/versitygw@$VERSITYGW_VERSION"
	fi
}

WORK="$(mktemp -d /tmp/icekeeper-test.XXXXXX)"
PG_DATA="$WORK/pg"
GW_PID=""
cleanup() {
	set +e
	[ -n "$GW_PID" ] && kill "$GW_PID" 2>/dev/null && wait "$GW_PID" 2>/dev/null
	[ -f "$PG_DATA/postmaster.pid" ] && as_postgres "$(pg_bin)/pg_ctl" -D "$PG_DATA" -m immediate stop >/dev/null 2>&1
	rm -rf "$WORK"
}
trap cleanup EXIT

ensure_postgres
ensure_versitygw

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

export ICEKEEPER_TEST_POSTGRES="postgres://postgres@127.0.0.1:$PG_PORT/postgres?sslmode=disable"
export ICEKEEPER_TEST_S3="http://127.0.0.1:$GW_PORT"
export ICEKEEPER_TEST_S3_KEY=icekeeper
export ICEKEEPER_TEST_S3_SECRET=icekeeper-secret
export ICEKEEPER_REQUIRE_SERVERS=1

