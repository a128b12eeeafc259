#!/usr/bin/env bash
# PostgreSQL, Cassandra and NATS for the tests: scripts/services.sh up|down|status|env
#
#   up      start all three (installing/fetching them on first use; idempotent),
#           then print the env lines below.
#   down    stop all three.
#   status  say whether each runs; exit 0 only when all do.
#   env     print BW_TEST_POSTGRES=…, BW_TEST_CASSANDRA=…, BW_TEST_NATS=… and the export
#           lines for them: eval "$(scripts/services.sh env)"
#
# See scripts/postgres.sh, scripts/cassandra.sh and scripts/nats.sh for their settings.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)

env_lines() {
	"$HERE/postgres.sh" env
	"$HERE/cassandra.sh" env
	"$HERE/nats.sh" env
}

case "${1:-}" in
up | start)
	"$HERE/postgres.sh" up
	"$HERE/cassandra.sh" up
	"$HERE/nats.sh" up
	env_lines
	;;
down | stop)
	rc=0
	"$HERE/nats.sh" down || rc=1
	"$HERE/cassandra.sh" down || rc=1
	"$HERE/postgres.sh" down || rc=1
	exit $rc
	;;
status)
	rc=0
	"$HERE/postgres.sh" status || rc=1
	"$HERE/cassandra.sh" status || rc=1
	"$HERE/nats.sh" status || rc=1
	exit $rc
	;;
env) env_lines ;;
*)
	echo "usage: $0 up|down|status|env" >&2
	exit 2
	;;
esac
