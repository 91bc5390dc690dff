#!/usr/bin/env bash
# pg.sh — a throwaway local PostgreSQL for pmgate's PostgreSQL tests.
#
#   scripts/pg.sh start     initdb (once) and start; create database pmgate_test
#   scripts/pg.sh url       print the postgres:// URL of the test database
#   scripts/pg.sh halt      stop the server, keep the data (a "database outage")
#   scripts/pg.sh restart   stop and start again, keeping the data
#   scripts/pg.sh status    exit 0 when the server accepts connections
#   scripts/pg.sh stop      stop the server and remove everything it wrote
#
# The server listens on 127.0.0.1 only (and a unix socket in the data
# directory's parent), trusts local connections, keeps no durability promises
# worth having (fsync off: it is thrown away) and is owned by the `postgres`
# user when this runs as root (PostgreSQL refuses to run as root).
#
# Environment:
#   PMGATE_PG_DIR   working directory       (default /tmp/pmgate-pg)
#   PMGATE_PG_PORT  TCP port on 127.0.0.1   (default 55432)
#   PMGATE_PG_BIN   PostgreSQL binaries     (default /usr/lib/postgresql/15/bin)
#   PMGATE_PG_FSYNC on|off                  (default off)
#
# Every command is idempotent: start on a running server, stop/halt on a
# stopped one, and url at any time, succeed.
set -euo pipefail

DIR=${PMGATE_PG_DIR:-/tmp/pmgate-pg}
PORT=${PMGATE_PG_PORT:-55432}
BIN=${PMGATE_PG_BIN:-/usr/lib/postgresql/15/bin}
FSYNC=${PMGATE_PG_FSYNC:-off}
DATA=$DIR/data
LOG=$DIR/server.log
DB=pmgate_test
SUPER=postgres

die() { echo "pg.sh: $*" >&2; exit 1; }

# as runs a command as the server's owner: postgres when we are root.
as() {
	if [ "$(id -u)" = 0 ]; then
		if command -v runuser >/dev/null 2>&1; then
			runuser -u postgres -- "$@"
		else
			su postgres -s /bin/sh -c "$(printf '%q ' "$@")"
		fi
	else
		"$@"
	fi
}

running() {
	[ -f "$DATA/postmaster.pid" ] && as "$BIN/pg_ctl" -D "$DATA" status >/dev/null 2>&1
}

ready() {
	"$BIN/pg_isready" -q -h 127.0.0.1 -p "$PORT" -d postgres -U "$SUPER" >/dev/null 2>&1
}

url() {
	echo "postgres://$SUPER@127.0.0.1:$PORT/$DB?sslmode=disable"
}

init() {
	[ -x "$BIN/initdb" ] || die "no PostgreSQL binaries in $BIN (set PMGATE_PG_BIN)"
	mkdir -p "$DIR"
	if [ "$(id -u)" = 0 ]; then
		id postgres >/dev/null 2>&1 || die "running as root needs a postgres user"
		chown postgres "$DIR"
	fi
	chmod 0755 "$DIR"
	if [ ! -f "$DATA/PG_VERSION" ]; then
		rm -rf "$DATA"
		as "$BIN/initdb" -D "$DATA" -U "$SUPER" -A trust -E UTF8 --locale=C.UTF-8 --no-sync >"$DIR/initdb.log" 2>&1 ||
			as "$BIN/initdb" -D "$DATA" -U "$SUPER" -A trust -E UTF8 --locale=C --no-sync >"$DIR/initdb.log" 2>&1 ||
			{ cat "$DIR/initdb.log" >&2; die "initdb failed"; }
		cat >>"$DATA/postgresql.conf" <<EOF

# pmgate test server (scripts/pg.sh)
listen_addresses = '127.0.0.1'
port = $PORT
unix_socket_directories = '$DIR'
max_connections = 200
fsync = $FSYNC
synchronous_commit = $FSYNC
full_page_writes = $FSYNC
shared_buffers = 64MB
log_min_messages = warning
log_min_error_statement = panic
EOF
	fi
}

start() {
	if running && ready; then
		return 0
	fi
	init
	if ! running; then
		as "$BIN/pg_ctl" -D "$DATA" -l "$LOG" -w -t 30 -o "-p $PORT" start >/dev/null ||
			{ tail -n 30 "$LOG" >&2 || true; die "pg_ctl start failed"; }
	fi
	for _ in $(seq 1 100); do
		ready && break
		sleep 0.1
	done
	ready || die "server not accepting connections on 127.0.0.1:$PORT"
	if ! "$BIN/psql" -h 127.0.0.1 -p "$PORT" -U "$SUPER" -d postgres -Atqc \
		"SELECT 1 FROM pg_database WHERE datname = '$DB'" | grep -q 1; then
		"$BIN/createdb" -h 127.0.0.1 -p "$PORT" -U "$SUPER" "$DB"
	fi
}

halt() {
	if running; then
		as "$BIN/pg_ctl" -D "$DATA" -w -t 30 -m fast stop >/dev/null
	fi
}

case "${1:-}" in
start) start ;;
url) url ;;
halt) halt ;;
restart) halt; start ;;
status) running && ready ;;
stop)
	halt
	rm -rf "$DIR"
	;;
*)
	echo "usage: $0 start|url|halt|restart|status|stop" >&2
	exit 2
	;;
esac
