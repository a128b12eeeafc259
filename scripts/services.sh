#!/usr/bin/env bash
# PostgreSQL and Cassandra for the tests: scripts/services.sh up|down|status|env
#
#   up      start both (installing/fetching them on first use; idempotent),
#           then print the env lines below.
#   down    stop both.
#   status  say whether each runs; exit 0 only when both do.
#   env     print BW_TEST_POSTGRES=…, BW_TEST_CASSANDRA=… and the export
#           lines for them: eval "$(scripts/services.sh env)"
#
# See scripts/postgres.sh and scripts/cassandra.sh for their settings.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)

env_lines() {
	"$HERE/postgres.sh" env
	"$HERE/cassandra.sh" env
}

case "${1:-}" in
up | start)
	"$HERE/postgres.sh" up
	"$HERE/cassandra.sh" up
	env_lines
	;;
down | stop)
	rc=0
	"$HERE/cassandra.sh" down || rc=1
	"$HERE/postgres.sh" down || rc=1
	exit $rc
	;;
status)
	rc=0
	"$HERE/postgres.sh" status || rc=1
	"$HERE/cassandra.sh" status || rc=1
	exit $rc
	;;
env) env_lines ;;
*)
	echo "usage: $0 up|down|status|env" >&2
	exit 2
	;;
esac
