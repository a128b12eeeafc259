#!/usr/bin/env bash
# promtool for checking the Prometheus rules: scripts/promtool.sh [path|check]
#
#   path    (the default) make sure promtool is installed and print its path.
#           Idempotent: when promtool is there, it only prints the path.
#   check   the same, then run `promtool check rules` on configs/prometheus/*.yml
#           rule files (every file there but prometheus.yml, which
#           `promtool check config` checks instead).
#
# Settings (environment):
#   BW_PROMTOOL         promtool binary to use (default: promtool from PATH)
#   BW_AUTO_INSTALL=1   as root, apt-get install Debian's prometheus package
#                       (which ships promtool) when missing; otherwise the
#                       script says what to install and fails
set -euo pipefail
cd "$(dirname "$0")/.."

die() { echo "promtool: $*" >&2; exit 1; }

find_promtool() {
	if [ -n "${BW_PROMTOOL:-}" ]; then
		command -v "$BW_PROMTOOL" >/dev/null 2>&1 || return 1
		command -v "$BW_PROMTOOL"
		return 0
	fi
	command -v promtool 2>/dev/null
}

ensure() {
	if PROMTOOL=$(find_promtool); then
		return 0
	fi
	[ -z "${BW_PROMTOOL:-}" ] || die "BW_PROMTOOL=$BW_PROMTOOL is not an executable"
	if [ "${BW_AUTO_INSTALL:-}" = 1 ] && [ "$(id -u)" = 0 ]; then
		echo "promtool: installing Debian's prometheus package with apt-get (BW_AUTO_INSTALL=1)..." >&2
		local alog
		alog=$(mktemp)
		# The package's service is not wanted: only its promtool is used.
		if ! { DEBIAN_FRONTEND=noninteractive apt-get update -q &&
			RUNLEVEL=1 DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends prometheus; } >"$alog" 2>&1; then
			tail -n 30 "$alog" >&2
			rm -f "$alog"
			die "apt-get install prometheus failed"
		fi
		rm -f "$alog"
		PROMTOOL=$(find_promtool) || die "promtool is still missing after apt-get install"
		return 0
	fi
	echo "promtool: promtool is missing; install with:" >&2
	echo "  apt-get install -y --no-install-recommends prometheus" >&2
	echo "  (or run this script as root with BW_AUTO_INSTALL=1)" >&2
	exit 1
}

case "${1:-path}" in
path)
	ensure
	echo "$PROMTOOL"
	;;
check)
	ensure
	rules=()
	for f in configs/prometheus/*.yml; do
		[ "$(basename "$f")" = prometheus.yml ] || rules+=("$f")
	done
	"$PROMTOOL" check rules "${rules[@]}"
	"$PROMTOOL" check config --syntax-only configs/prometheus/prometheus.yml
	;;
*)
	echo "usage: $0 [path|check]" >&2
	exit 2
	;;
esac
