#!/usr/bin/env bash
# NATS server with JetStream for the tests: scripts/nats.sh up|down|status|env
#
#   up      start Debian's nats-server on loopback with JetStream in the
#           background and wait until it greets clients. Idempotent: returns
#           at once when it is already up.
#   down    stop it (TERM, then KILL after a deadline). The JetStream data
#           stays.
#   status  exit 0 when the server greets clients.
#   env     print BW_TEST_NATS=nats://127.0.0.1:PORT and `export BW_TEST_NATS`
#           (for `eval "$(scripts/nats.sh env)"`).
#   (start and stop are aliases of up and down.)
#
# Settings (environment):
#   BW_NATS_PORT            client port on 127.0.0.1 (default 54222, away from
#                           NATS's usual 4222 so a developer's own server is
#                           left alone)
#   BW_NATS_STATE_DIR       JetStream store, log and pid file
#                           (default /var/tmp/blackwidow-nats)
#   BW_NATS_START_TIMEOUT   seconds to wait for the server (default 30)
#   BW_NATS_SERVER          nats-server binary (default: the one on PATH, or
#                           /usr/sbin/nats-server where Debian puts it)
#   BW_AUTO_INSTALL=1       as root, apt-get install nats-server when missing
#                           (otherwise the script says what to install and fails)
#
# The server trusts every loopback client: it is for tests only.
set -euo pipefail

PORT=${BW_NATS_PORT:-54222}
STATE=${BW_NATS_STATE_DIR:-/var/tmp/blackwidow-nats}
START_TIMEOUT=${BW_NATS_START_TIMEOUT:-30}
STOP_TIMEOUT=20
ADDR=127.0.0.1:$PORT

PIDFILE=$STATE/nats-server.pid
PORTFILE=$STATE/nats-server.port
LOG=$STATE/nats-server.log

SERVICE=nats
# shellcheck source=scripts/lib.sh
. "$(cd "$(dirname "$0")" && pwd)/lib.sh"

log_tail() {
	if [ -f "$LOG" ]; then
		echo "nats: last lines of $LOG:" >&2
		tail -n 30 "$LOG" | cut -c1-300 >&2 || true
	fi
}

find_server() {
	if [ -n "${BW_NATS_SERVER:-}" ]; then
		NATS_SERVER=$BW_NATS_SERVER
		[ -x "$NATS_SERVER" ] || die "BW_NATS_SERVER=$NATS_SERVER is not executable"
		return 0
	fi
	# Debian installs it in /usr/sbin, which a user's PATH may lack.
	NATS_SERVER=$(command -v nats-server || true)
	if [ -z "$NATS_SERVER" ] && [ -x /usr/sbin/nats-server ]; then
		NATS_SERVER=/usr/sbin/nats-server
	fi
	[ -n "$NATS_SERVER" ]
}

install_server() {
	if [ "${BW_AUTO_INSTALL:-}" != 1 ] || [ "$(id -u)" != 0 ]; then
		echo "nats: nats-server is missing; install it with:" >&2
		echo "  apt-get install -y nats-server" >&2
		echo "(or run this script as root with BW_AUTO_INSTALL=1, or set BW_NATS_SERVER)" >&2
		exit 1
	fi
	echo "nats: installing nats-server with apt-get (BW_AUTO_INSTALL=1)..." >&2
	export DEBIAN_FRONTEND=noninteractive
	local alog
	alog=$(mktemp)
	# An empty or stale package index knows no nats-server: refresh it first.
	if ! apt-cache show nats-server >/dev/null 2>&1; then
		apt-get update -q >"$alog" 2>&1 || { tail -n 30 "$alog" >&2; rm -f "$alog"; die "apt-get update failed"; }
	fi
	if ! apt-get install -y -q nats-server >"$alog" 2>&1; then
		tail -n 30 "$alog" >&2
		rm -f "$alog"
		die "apt-get install nats-server failed"
	fi
	rm -f "$alog"
}

# greeting prints the INFO line a NATS server sends on connect, or fails.
greeting() {
	local line=""
	exec 3<>"/dev/tcp/127.0.0.1/$PORT" || return 1
	IFS= read -r -t 2 line <&3 || true
	exec 3<&- 3>&-
	case "$line" in
	INFO*) printf '%s\n' "$line" ;;
	*) return 1 ;;
	esac
}

# answers is true when a NATS server with JetStream greets clients on PORT.
answers() {
	local info
	info=$(greeting 2>/dev/null) || return 1
	case "$info" in
	*'"jetstream":true'*) return 0 ;;
	*) return 2 ;;
	esac
}

port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null; }

our_pid() {
	local pid
	[ -f "$PIDFILE" ] || return 1
	pid=$(cat "$PIDFILE")
	[ -n "$pid" ] && kill -0 "$pid" 2>/dev/null || return 1
	grep -q nats-server "/proc/$pid/cmdline" 2>/dev/null || return 1
	echo "$pid"
}

start_server() {
	mkdir -p "$STATE/jetstream"
	[ -f "$LOG" ] && mv -f "$LOG" "$LOG.1"
	# setsid: the server must survive the shell (and a Ctrl-C in it) that
	# started it; `down` stops it by its pid.
	setsid nohup "$NATS_SERVER" \
		--addr 127.0.0.1 --port "$PORT" --name "blackwidow-test-$PORT" \
		--jetstream --store_dir "$STATE/jetstream" \
		>>"$LOG" 2>&1 </dev/null &
	echo $! >"$PIDFILE"
	echo "$PORT" >"$PORTFILE"
}

up() {
	find_server || { install_server; find_server || die "no nats-server on PATH after install"; }
	mkdir -p "$STATE"
	local pid rc=0
	if pid=$(our_pid); then
		local port
		port=$(cat "$PORTFILE" 2>/dev/null || true)
		if [ -n "$port" ] && [ "$port" != "$PORT" ]; then
			die "a server from $STATE already runs (pid $pid) on port $port, not $PORT; run 'scripts/nats.sh down' first"
		fi
		answers && return 0
		# Started but not ready yet (another `up` is waiting).
	else
		answers || rc=$?
		case $rc in
		0)
			echo "nats: $ADDR already runs NATS with JetStream (not started by this script); using it" >&2
			return 0
			;;
		2) die "$ADDR runs NATS without JetStream (not started by this script); stop it or set BW_NATS_PORT" ;;
		esac
		if port_open; then
			die "port $ADDR is taken by another process; set BW_NATS_PORT"
		fi
		start_server
		pid=$(cat "$PIDFILE")
	fi
	await_ready "$pid" "$START_TIMEOUT" 0.2 "nats-server exited before greeting clients on $ADDR" \
		"no greeting with JetStream on $ADDR after ${START_TIMEOUT}s (the server still runs, pid $pid; 'scripts/nats.sh down' stops it)"
}

down() {
	local pid
	if ! pid=$(our_pid); then
		rm -f "$PIDFILE" "$PORTFILE"
		return 0
	fi
	kill -TERM "$pid" 2>/dev/null || true
	local deadline=$((SECONDS + STOP_TIMEOUT))
	while kill -0 "$pid" 2>/dev/null; do
		if [ "$SECONDS" -ge "$deadline" ]; then
			echo "nats: pid $pid did not stop after TERM; killing it" >&2
			kill -KILL "$pid" 2>/dev/null || true
			break
		fi
		sleep 0.2
	done
	rm -f "$PIDFILE" "$PORTFILE"
}

status() {
	local pid="" version=""
	pid=$(our_pid) || true
	if answers; then
		version=$(greeting | sed -n 's/.*"version":"\([^"]*\)".*/\1/p')
		if [ -n "$pid" ]; then
			echo "nats: up on $ADDR with JetStream (nats-server ${version:-?}, pid $pid, store $STATE/jetstream)"
		else
			echo "nats: $ADDR runs NATS with JetStream (nats-server ${version:-?}, not started by this script)"
		fi
	elif [ -n "$pid" ]; then
		echo "nats: starting (pid $pid), no greeting on $ADDR yet"
		return 1
	else
		echo "nats: not running"
		return 1
	fi
}

case "${1:-}" in
up | start) up ;;
down | stop) down ;;
status) status ;;
env)
	echo "BW_TEST_NATS=nats://$ADDR"
	echo "export BW_TEST_NATS"
	;;
*)
	echo "usage: $0 up|down|status|env" >&2
	exit 2
	;;
esac
