#!/usr/bin/env bash
# Throwaway PostgreSQL for the tests: scripts/postgres.sh up|down|status|env
#
#   up      install PostgreSQL with apt if its binaries are missing, create a
#           cluster under the state dir on first use, start it (idempotent:
#           returns at once when it is already running) and create the
#           database blackwidow_test.
#   down    stop it (the data stays; `up` starts it again).
#   status  exit 0 when it is running.
#   env     print BW_TEST_POSTGRES=… and `export BW_TEST_POSTGRES`
#           (for `eval "$(scripts/postgres.sh env)"`).
#
# Settings (environment):
#   BW_STATE_DIR          state dir (default ~/.cache/blackwidow); the cluster
#                         lives in $BW_STATE_DIR/pg
#   BW_POSTGRES_PORT      port on 127.0.0.1 (default 55432)
#
# The cluster trusts every loopback connection and runs with fsync off: it is
# for tests only. As root the server runs as the `postgres` OS user (initdb
# refuses root); when that user cannot reach the state dir (root's home is
# mode 700), the cluster goes to /var/tmp/blackwidow-pg instead.
set -euo pipefail

PORT=${BW_POSTGRES_PORT:-55432}
DB=blackwidow_test
STATE=${BW_STATE_DIR:-$HOME/.cache/blackwidow}
PGROOT=$STATE/pg

die() { echo "postgres: $*" >&2; exit 1; }

dsn() { echo "postgres://postgres@127.0.0.1:$PORT/$DB?sslmode=disable"; }

find_bin() {
	local d
	if command -v initdb >/dev/null 2>&1 && command -v pg_ctl >/dev/null 2>&1; then
		PGBIN=$(dirname "$(readlink -f "$(command -v pg_ctl)")")
		[ -x "$PGBIN/psql" ] && return 0
	fi
	for d in $(printf '%s\n' /usr/lib/postgresql/*/bin | sort -V -r); do
		if [ -x "$d/initdb" ] && [ -x "$d/pg_ctl" ] && [ -x "$d/postgres" ]; then
			PGBIN=$d
			return 0
		fi
	done
	return 1
}

install_pg() {
	[ "$(id -u)" = 0 ] || die "PostgreSQL is not installed; run: sudo apt-get install -y postgresql"
	echo "postgres: installing PostgreSQL with apt-get..." >&2
	export DEBIAN_FRONTEND=noninteractive
	local log
	log=$(mktemp)
	if ! { apt-get update -q && apt-get install -y -q postgresql; } >"$log" 2>&1; then
		tail -n 30 "$log" >&2
		rm -f "$log"
		die "apt-get install postgresql failed"
	fi
	rm -f "$log"
	# Debian's package may start its own cluster on 5432; it is not ours and
	# not needed, so leave it alone unless it was just started by the install.
}

# as_pg runs a command as the cluster's owner.
as_pg() {
	if [ "$(id -u)" = 0 ]; then
		runuser -u postgres -- "$@"
	else
		"$@"
	fi
}

setup_dirs() {
	if [ "$(id -u)" = 0 ]; then
		id postgres >/dev/null 2>&1 || useradd --system --home-dir /var/lib/postgresql --shell /bin/sh postgres
		mkdir -p "$PGROOT"
		chown postgres: "$PGROOT"
		if ! runuser -u postgres -- test -w "$PGROOT" 2>/dev/null; then
			PGROOT=/var/tmp/blackwidow-pg
			mkdir -p "$PGROOT"
			chown postgres: "$PGROOT"
		fi
	else
		mkdir -p "$PGROOT"
	fi
	DATA=$PGROOT/data
	LOG=$PGROOT/postgres.log
}

# locate sets PGROOT/DATA/LOG without creating anything.
locate() {
	DATA=$PGROOT/data
	if [ ! -f "$DATA/PG_VERSION" ] && [ -f /var/tmp/blackwidow-pg/data/PG_VERSION ] && [ "$(id -u)" = 0 ]; then
		PGROOT=/var/tmp/blackwidow-pg
		DATA=$PGROOT/data
	fi
	LOG=$PGROOT/postgres.log
}

running() {
	[ -f "$DATA/postmaster.pid" ] && as_pg "$PGBIN/pg_ctl" -D "$DATA" status >/dev/null 2>&1
}

port_busy() {
	(exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null
}

psql_q() {
	"$PGBIN/psql" -X -q -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$PORT" -U postgres "$@"
}

up() {
	find_bin || { install_pg; find_bin || die "no PostgreSQL binaries found under /usr/lib/postgresql/*/bin after install"; }
	setup_dirs
	if [ ! -f "$DATA/PG_VERSION" ]; then
		rm -rf "$DATA"
		local out
		if ! out=$(as_pg "$PGBIN/initdb" -D "$DATA" -U postgres --auth=trust -E UTF8 --locale=C.UTF-8 --no-sync 2>&1); then
			echo "$out" | tail -n 20 >&2
			die "initdb failed"
		fi
		cat >>"$DATA/postgresql.conf" <<-EOF

			# blackwidow test cluster (scripts/postgres.sh)
			listen_addresses = '127.0.0.1'
			port = $PORT
			unix_socket_directories = '$PGROOT'
			max_connections = 300
			fsync = off
			synchronous_commit = off
			full_page_writes = off
			log_min_messages = warning
		EOF
		cat >"$DATA/pg_hba.conf" <<-EOF
			# blackwidow test cluster: trust on loopback only.
			local all all trust
			host  all all 127.0.0.1/32 trust
			host  all all ::1/128 trust
		EOF
	fi
	if running; then
		local cur
		cur=$(sed -n 4p "$DATA/postmaster.pid")
		if [ "$cur" != "$PORT" ]; then
			die "the cluster in $DATA already runs on port $cur, not $PORT; run 'scripts/postgres.sh down' first"
		fi
	else
		# The port may have been changed since the cluster was created.
		sed -i "s/^port = .*/port = $PORT/" "$DATA/postgresql.conf"
		if port_busy; then
			die "port 127.0.0.1:$PORT is taken by another process; set BW_POSTGRES_PORT"
		fi
		if ! as_pg "$PGBIN/pg_ctl" -D "$DATA" -l "$LOG" -w -t 60 start >/dev/null 2>&1; then
			echo "postgres: server did not start; last lines of $LOG:" >&2
			tail -n 30 "$LOG" >&2 || true
			exit 1
		fi
	fi
	if [ "$(psql_q -d postgres -tAc "SELECT 1 FROM pg_database WHERE datname = '$DB'")" != 1 ]; then
		psql_q -d postgres -c "CREATE DATABASE $DB" >/dev/null || die "CREATE DATABASE $DB failed"
	fi
}

down() {
	find_bin || return 0
	locate
	[ -f "$DATA/PG_VERSION" ] || return 0
	if running; then
		as_pg "$PGBIN/pg_ctl" -D "$DATA" -m fast -w -t 60 stop >/dev/null 2>&1 || {
			tail -n 20 "$LOG" >&2 || true
			die "pg_ctl stop failed"
		}
	fi
}

status() {
	find_bin || { echo "postgres: not installed"; return 1; }
	locate
	if running; then
		echo "postgres: running on 127.0.0.1:$PORT (data $DATA)"
	else
		echo "postgres: not running"
		return 1
	fi
}

case "${1:-}" in
up | start) up ;;
down | stop) down ;;
status) status ;;
env)
	# A plain assignment (no globbing of the '?', even in dash) and then an
	# export, so that eval "$(scripts/postgres.sh env)" reaches child processes.
	echo "BW_TEST_POSTGRES=$(dsn)"
	echo "export BW_TEST_POSTGRES"
	;;
*)
	echo "usage: $0 up|down|status|env" >&2
	exit 2
	;;
esac
