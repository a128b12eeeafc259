#!/usr/bin/env bash
# Three-node Cassandra 5.0 cluster for the replication tests:
# scripts/cassandra-cluster.sh up|down|status|env|kill [N]
#
#   up [N]    start the nodes that are not running, one after another (a
#             node joins the ring only after the one before it is up and
#             normal), and wait until each answers CQL and sees the nodes
#             before it. With N (1, 2 or 3), only node N. Idempotent.
#             Fetches Cassandra's jars like scripts/cassandra.sh on first use.
#   down [N]  stop every node, or node N (TERM, then KILL after a deadline).
#             The data stays.
#   kill N    SIGKILL node N, as a crash would, and wait until it is gone.
#   status    one line per node; exit 0 only when all three answer CQL.
#   env       print BW_TEST_CASSANDRA_CLUSTER=host:port,host:port,host:port,
#             BW_CASSANDRA_CLUSTER_SCRIPT (this script, for the tests that
#             stop nodes) and the export line:
#             eval "$(scripts/cassandra-cluster.sh env)"
#   (start and stop are aliases of up and down.)
#
# Node N listens on 127.0.0.(N+1): CQL on BW_CASSANDRA_CLUSTER_PORT (default
# 9042) and internode on BW_CASSANDRA_CLUSTER_STORAGE_PORT (default 17000),
# the same ports on every node as in a real cluster. Linux routes all of
# 127.0.0.0/8 to the loopback interface, so this needs no setup, and the
# single node of scripts/cassandra.sh (127.0.0.1) runs beside it. Node 1 is
# the seed.
#
# Settings (environment), besides those of scripts/cassandra.sh that name
# the jar cache, Java and BW_AUTO_INSTALL:
#   BW_STATE_DIR                        data, logs, pid files (default
#                                       ~/.cache/blackwidow); this script uses
#                                       $BW_STATE_DIR/cassandra-cluster/nodeN
#   BW_CASSANDRA_CLUSTER_HEAP           JVM heap of each node (default 512M)
#   BW_CASSANDRA_CLUSTER_START_TIMEOUT  seconds to wait for each node (default 240)
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
CACHE=${BW_CACHE_DIR:-$HOME/.cache/blackwidow}
STATE_ROOT=${BW_STATE_DIR:-$HOME/.cache/blackwidow}/cassandra-cluster
PORT=${BW_CASSANDRA_CLUSTER_PORT:-9042}
STORAGE_PORT=${BW_CASSANDRA_CLUSTER_STORAGE_PORT:-17000}
HEAP=${BW_CASSANDRA_CLUSTER_HEAP:-512M}
START_TIMEOUT=${BW_CASSANDRA_CLUSTER_START_TIMEOUT:-240}
# STOP_TIMEOUT bounds a graceful stop (it drains and flushes) before KILL.
STOP_TIMEOUT=60
NODES=(1 2 3)

POM=$HERE/cassandra/pom.xml
JARS=$CACHE/cassandra-jars
MARKER=$JARS/.complete
CQLPING=$CACHE/bin/cqlping

SERVICE=cassandra-cluster
# shellcheck source=scripts/lib.sh
. "$HERE/lib.sh"

addr_of() { echo "127.0.0.$(($1 + 1))"; }

# select_node sets the per-node names that lib.sh's await_ready and the
# helpers below use.
select_node() {
	NODE=$1
	ADDRESS=$(addr_of "$NODE")
	STATE=$STATE_ROOT/node$NODE
	PIDFILE=$STATE/cassandra.pid
	LOG=$STATE/cassandra.log
	# A node that is not the first must also see the nodes before it.
	PEERS=$((NODE - 1))
}

log_tail() {
	if [ -f "$LOG" ]; then
		echo "cassandra-cluster: last lines of $LOG:" >&2
		grep -v '^\s*$' "$LOG" | tail -n 40 | cut -c1-300 >&2 || true
	fi
}

need_node() {
	case "${1:-}" in
	1 | 2 | 3) ;;
	*)
		echo "cassandra-cluster: want a node number, 1, 2 or 3; got '${1:-}'" >&2
		exit 2
		;;
	esac
}

# need_tools finds Java, the jars and cqlping. scripts/cassandra.sh installs
# Java and Maven and fetches the jars on its first `up`; this script only
# uses them.
need_tools() {
	find_java
	[ -n "$JAVA" ] && [ -x "$JAVA" ] || die "no Java 17: run scripts/cassandra.sh up once (it installs it), or set BW_JAVA"
	if [ ! -f "$MARKER" ] || [ "$(cat "$MARKER")" != "$(sha256sum "$POM" | cut -d' ' -f1)" ]; then
		die "no Cassandra jars for $POM in $JARS: run scripts/cassandra.sh up once (it fetches them)"
	fi
	build_ping
}

build_ping() {
	local src=$HERE/cassandra/cqlping/main.go
	if [ -x "$CQLPING" ] && [ "$CQLPING" -nt "$src" ]; then
		return 0
	fi
	command -v go >/dev/null 2>&1 || die "go is needed to build scripts/cassandra/cqlping"
	mkdir -p "$(dirname "$CQLPING")"
	(cd "$ROOT" && go build -o "$CQLPING.tmp.$$" ./scripts/cassandra/cqlping) || die "building scripts/cassandra/cqlping failed"
	mv "$CQLPING.tmp.$$" "$CQLPING"
}

port_open() { (exec 3<>"/dev/tcp/$1/$2") 2>/dev/null; }

# answers is true when the selected node answers CQL on its own address and
# lists the nodes before it as peers with tokens.
answers() {
	port_open "$ADDRESS" "$PORT" || return 1
	"$CQLPING" -timeout 5s -peers "$PEERS" "$ADDRESS:$PORT" >/dev/null 2>&1
}

write_config() {
	mkdir -p "$STATE/data" "$STATE/logs" "$STATE/triggers"
	sed -e "s|@DATA_DIR@|$STATE/data|g" \
		-e "s|@ADDRESS@|$ADDRESS|g" \
		-e "s|@SEED@|$(addr_of 1)|g" \
		-e "s|@NATIVE_PORT@|$PORT|g" \
		-e "s|@STORAGE_PORT@|$STORAGE_PORT|g" \
		"$HERE/cassandra/cluster.yaml" >"$STATE/cassandra.yaml"
	cp "$HERE/cassandra/logback.xml" "$STATE/logback.xml"
}

start_node() {
	# Three JVMs on two cores: fewer JIT and GC threads each. (Unlike the
	# lone test node, the system tables keep their commit log: a node killed
	# by the tests must come back knowing the schema it had.)
	start_cassandra -XX:CICompilerCount=2 -XX:ParallelGCThreads=1 -XX:ConcGCThreads=1
}

up_node() {
	select_node "$1"
	mkdir -p "$STATE"
	local pid
	if ! pid=$(cassandra_pid); then
		if port_open "$ADDRESS" "$PORT"; then
			die "node $NODE: $ADDRESS:$PORT is taken by a process this script did not start"
		fi
		if port_open "$ADDRESS" "$STORAGE_PORT"; then
			die "node $NODE: $ADDRESS:$STORAGE_PORT is taken by a process this script did not start"
		fi
		write_config
		start_node
		pid=$(cat "$PIDFILE")
		echo "cassandra-cluster: starting node $NODE on $ADDRESS (pid $pid)" >&2
	fi
	local started=$SECONDS
	await_ready "$pid" "$START_TIMEOUT" 1 "node $NODE exited before answering CQL on $ADDRESS:$PORT" \
		"node $NODE: no CQL answer on $ADDRESS:$PORT after ${START_TIMEOUT}s (still running, pid $pid; 'scripts/cassandra-cluster.sh down' stops it)"
	if [ $((SECONDS - started)) -gt 0 ]; then
		echo "cassandra-cluster: node $NODE up on $ADDRESS:$PORT after $((SECONDS - started))s" >&2
	fi
}

up() {
	need_tools
	mkdir -p "$STATE_ROOT"
	if [ -n "${1:-}" ]; then
		need_node "$1"
		up_node "$1"
		return
	fi
	local n
	for n in "${NODES[@]}"; do
		up_node "$n"
	done
}

# signal_node sends SIG to node N and waits up to WAIT seconds for it to
# exit, killing it after that.
signal_node() {
	local sig=$2 wait=$3 pid
	select_node "$1"
	if ! pid=$(cassandra_pid); then
		rm -f "$PIDFILE"
		return 0
	fi
	kill -"$sig" "$pid" 2>/dev/null || true
	local deadline=$((SECONDS + wait))
	while kill -0 "$pid" 2>/dev/null; do
		if [ "$SECONDS" -ge "$deadline" ]; then
			echo "cassandra-cluster: node $NODE (pid $pid) did not stop after $sig; killing it" >&2
			kill -KILL "$pid" 2>/dev/null || true
			deadline=$((SECONDS + 10))
		fi
		sleep 0.2
	done
	rm -f "$PIDFILE"
}

down() {
	if [ -n "${1:-}" ]; then
		need_node "$1"
		signal_node "$1" TERM "$STOP_TIMEOUT"
		return
	fi
	local n
	for n in "${NODES[@]}"; do
		signal_node "$n" TERM "$STOP_TIMEOUT"
	done
}

status() {
	local n pid rc=0
	for n in "${NODES[@]}"; do
		select_node "$n"
		pid=$(cassandra_pid) || pid=""
		if [ -x "$CQLPING" ] && answers; then
			echo "cassandra-cluster: node $n up on $ADDRESS:$PORT (pid ${pid:-?}, data $STATE/data)"
		elif [ -n "$pid" ]; then
			echo "cassandra-cluster: node $n starting (pid $pid), no CQL answer on $ADDRESS:$PORT yet"
			rc=1
		else
			echo "cassandra-cluster: node $n not running"
			rc=1
		fi
	done
	return $rc
}

env_lines() {
	local n hosts=()
	for n in "${NODES[@]}"; do
		hosts+=("$(addr_of "$n"):$PORT")
	done
	echo "BW_TEST_CASSANDRA_CLUSTER=$(
		IFS=,
		echo "${hosts[*]}"
	)"
	echo "BW_CASSANDRA_CLUSTER_SCRIPT=$HERE/cassandra-cluster.sh"
	echo "export BW_TEST_CASSANDRA_CLUSTER BW_CASSANDRA_CLUSTER_SCRIPT"
}

case "${1:-}" in
up | start) up "${2:-}" ;;
down | stop) down "${2:-}" ;;
kill)
	need_node "${2:-}"
	signal_node "$2" KILL 10
	;;
status) status ;;
env) env_lines ;;
*)
	echo "usage: $0 up [N] | down [N] | kill N | status | env" >&2
	exit 2
	;;
esac
