#!/usr/bin/env bash
# Single-node Cassandra 5.0 for the tests: scripts/cassandra.sh up|down|status|env
#
#   up      fetch Cassandra's jars from Maven Central on first use (with mvn,
#           from scripts/cassandra/pom.xml; no tarball), start one node on
#           loopback in the background and wait until it answers CQL.
#           Idempotent: returns at once when the node is already up.
#   down    stop it (TERM, then KILL after a deadline). The data stays.
#   status  exit 0 when the node answers CQL.
#   env     print BW_TEST_CASSANDRA=host:port and `export BW_TEST_CASSANDRA`
#           (for `eval "$(scripts/cassandra.sh env)"`).
#   (start and stop are aliases of up and down.)
#
# Settings (environment):
#   BW_CACHE_DIR                 jar cache (default ~/.cache/blackwidow)
#   BW_STATE_DIR                 data, log, pid file (default ~/.cache/blackwidow);
#                                this script uses $BW_STATE_DIR/cassandra
#   BW_CASSANDRA_PORT            CQL port on 127.0.0.1 (default 9042)
#   BW_CASSANDRA_STORAGE_PORT    internode port on 127.0.0.1 (default 17000)
#   BW_CASSANDRA_HEAP            JVM heap (default 1G)
#   BW_CASSANDRA_START_TIMEOUT   seconds to wait for CQL (default 180)
#   BW_JAVA                      java binary (default: Java 17 if installed, else java)
#   BW_AUTO_INSTALL=1            as root, apt-get install Java and Maven when missing
#                                (otherwise the script says what to install and fails)
#
# Needs Java 11 or 17 and Maven (apt-get install -y openjdk-17-jre-headless maven),
# and Go to build the readiness check (scripts/cassandra/cqlping).
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
CACHE=${BW_CACHE_DIR:-$HOME/.cache/blackwidow}
STATE=${BW_STATE_DIR:-$HOME/.cache/blackwidow}/cassandra
PORT=${BW_CASSANDRA_PORT:-9042}
STORAGE_PORT=${BW_CASSANDRA_STORAGE_PORT:-17000}
HEAP=${BW_CASSANDRA_HEAP:-1G}
START_TIMEOUT=${BW_CASSANDRA_START_TIMEOUT:-180}
ADDR=127.0.0.1:$PORT

POM=$HERE/cassandra/pom.xml
JARS=$CACHE/cassandra-jars
MARKER=$JARS/.complete
PIDFILE=$STATE/cassandra.pid
PORTFILE=$STATE/cassandra.ports
LOG=$STATE/cassandra.log
CQLPING=$CACHE/bin/cqlping

SERVICE=cassandra
# shellcheck source=scripts/lib.sh
. "$HERE/lib.sh"

log_tail() {
	if [ -f "$LOG" ]; then
		echo "cassandra: last lines of $LOG:" >&2
		grep -v '^\s*$' "$LOG" | tail -n 40 | cut -c1-300 >&2 || true
	fi
}

need_tools() {
	local missing=()
	find_java
	[ -n "$JAVA" ] && [ -x "$JAVA" ] || missing+=(java)
	if [ ! -f "$MARKER" ] || [ "$(cat "$MARKER")" != "$(pom_sum)" ]; then
		command -v mvn >/dev/null 2>&1 || missing+=(mvn)
	fi
	if [ ${#missing[@]} -gt 0 ] && [ "${BW_AUTO_INSTALL:-}" = 1 ] && [ "$(id -u)" = 0 ]; then
		echo "cassandra: installing Java 17 and Maven with apt-get (BW_AUTO_INSTALL=1)..." >&2
		local alog
		alog=$(mktemp)
		if ! { DEBIAN_FRONTEND=noninteractive apt-get update -q &&
			DEBIAN_FRONTEND=noninteractive apt-get install -y -q openjdk-17-jre-headless maven; } >"$alog" 2>&1; then
			tail -n 30 "$alog" >&2
		fi
		rm -f "$alog"
		unset BW_AUTO_INSTALL
		need_tools
		return
	fi
	if [ ${#missing[@]} -gt 0 ]; then
		echo "cassandra: missing ${missing[*]}; install with:" >&2
		echo "  apt-get install -y openjdk-17-jre-headless maven" >&2
		exit 1
	fi
	local v
	v=$("$JAVA" -version 2>&1 | sed -n 's/.*version "\([0-9]*\).*/\1/p' | head -n 1)
	case "$v" in
	11 | 17) ;;
	*) die "Cassandra 5.0 needs Java 11 or 17, $JAVA is Java ${v:-?}; install openjdk-17-jre-headless or set BW_JAVA" ;;
	esac
}

pom_sum() { sha256sum "$POM" | cut -d' ' -f1; }

# fetch_jars copies Cassandra and its dependencies into $JARS once; the
# marker holds the pom's checksum, so a changed pom fetches again.
fetch_jars() {
	if [ -f "$MARKER" ] && [ "$(cat "$MARKER")" = "$(pom_sum)" ]; then
		return 0
	fi
	echo "cassandra: fetching Cassandra jars with Maven (first use only)..." >&2
	local tmp=$JARS.tmp.$$ mlog
	mlog=$(mktemp)
	rm -rf "$tmp"
	mkdir -p "$tmp"
	if ! mvn -q -B -f "$POM" dependency:copy-dependencies -DoutputDirectory="$tmp" >"$mlog" 2>&1; then
		tail -n 30 "$mlog" >&2
		rm -rf "$tmp" "$mlog"
		die "mvn dependency:copy-dependencies failed"
	fi
	rm -f "$mlog"
	ls "$tmp"/cassandra-all-*.jar >/dev/null 2>&1 || die "no cassandra-all jar after mvn"
	pom_sum >"$tmp/.complete"
	rm -rf "$JARS"
	mv "$tmp" "$JARS"
}

# build_ping builds the CQL readiness check when it is missing or older than
# its source.
build_ping() {
	local src=$HERE/cassandra/cqlping/main.go
	if [ -x "$CQLPING" ] && [ "$CQLPING" -nt "$src" ]; then
		return 0
	fi
	if ! command -v go >/dev/null 2>&1; then
		CQLPING=""
		return 0
	fi
	mkdir -p "$(dirname "$CQLPING")"
	(cd "$ROOT" && go build -o "$CQLPING.tmp" ./scripts/cassandra/cqlping) || die "building scripts/cassandra/cqlping failed"
	mv "$CQLPING.tmp" "$CQLPING"
}

port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# answers is true when the node answers a CQL query (or, without Go, when
# its port accepts connections).
answers() {
	port_open "$PORT" || return 1
	if [ -n "${CQLPING:-}" ] && [ -x "$CQLPING" ]; then
		"$CQLPING" -timeout 5s "$ADDR" >/dev/null 2>&1
	else
		return 0
	fi
}

write_config() {
	mkdir -p "$STATE/data" "$STATE/logs" "$STATE/triggers"
	sed -e "s|@DATA_DIR@|$STATE/data|g" \
		-e "s|@NATIVE_PORT@|$PORT|g" \
		-e "s|@STORAGE_PORT@|$STORAGE_PORT|g" \
		"$HERE/cassandra/cassandra.yaml" >"$STATE/cassandra.yaml"
	cp "$HERE/cassandra/logback.xml" "$STATE/logback.xml"
}

start_node() {
	# A lone loopback node for tests: skip fsync of the system tables
	# (schema changes in tests get much faster).
	start_cassandra -XX:+HeapDumpOnOutOfMemoryError -XX:HeapDumpPath="$STATE/logs" \
		-Dcassandra.unsafesystem=true
	echo "$PORT $STORAGE_PORT" >"$PORTFILE"
}

up() {
	need_tools
	mkdir -p "$STATE" "$CACHE"
	build_ping
	local pid
	if pid=$(cassandra_pid); then
		local ports
		ports=$(cat "$PORTFILE" 2>/dev/null || true)
		if [ -n "$ports" ] && [ "$ports" != "$PORT $STORAGE_PORT" ]; then
			die "a node from this state dir already runs (pid $pid) with CQL and storage ports $ports, not $PORT $STORAGE_PORT; run 'scripts/cassandra.sh down' first"
		fi
		answers && return 0
		# Started but not ready yet (another `up` is waiting, or it is slow).
	else
		if answers; then
			echo "cassandra: $ADDR already answers CQL (not started by this script); using it" >&2
			return 0
		fi
		if port_open "$PORT"; then
			die "port $ADDR is taken by another process; set BW_CASSANDRA_PORT"
		fi
		if port_open "$STORAGE_PORT"; then
			die "port 127.0.0.1:$STORAGE_PORT is taken by another process; set BW_CASSANDRA_STORAGE_PORT"
		fi
		fetch_jars
		write_config
		start_node
		pid=$(cat "$PIDFILE")
	fi
	await_ready "$pid" "$START_TIMEOUT" 1 "the node exited before answering CQL on $ADDR" \
		"no CQL answer on $ADDR after ${START_TIMEOUT}s (the node is still running, pid $pid; 'scripts/cassandra.sh down' stops it)"
}

down() {
	local pid
	if ! pid=$(cassandra_pid); then
		rm -f "$PIDFILE"
		return 0
	fi
	kill -TERM "$pid" 2>/dev/null || true
	local deadline=$((SECONDS + 60))
	while kill -0 "$pid" 2>/dev/null; do
		if [ "$SECONDS" -ge "$deadline" ]; then
			echo "cassandra: pid $pid did not stop after TERM; killing it" >&2
			kill -KILL "$pid" 2>/dev/null || true
			sleep 1
			break
		fi
		sleep 0.5
	done
	rm -f "$PIDFILE" "$PORTFILE"
}

status() {
	local pid=""
	pid=$(cassandra_pid) || true
	CQLPING=$CACHE/bin/cqlping
	if answers; then
		if [ -n "$pid" ]; then
			echo "cassandra: up on $ADDR (pid $pid, data $STATE/data)"
		else
			echo "cassandra: $ADDR answers CQL (not started by this script)"
		fi
	elif [ -n "$pid" ]; then
		echo "cassandra: starting (pid $pid), no CQL answer on $ADDR yet"
		return 1
	else
		echo "cassandra: not running"
		return 1
	fi
}

case "${1:-}" in
up | start) up ;;
down | stop) down ;;
status) status ;;
env)
	echo "BW_TEST_CASSANDRA=$ADDR"
	echo "export BW_TEST_CASSANDRA"
	;;
*)
	echo "usage: $0 up|down|status|env" >&2
	exit 2
	;;
esac
