#!/usr/bin/env bash
# Headless Chromium for the dashboard's browser test: scripts/chromium.sh [path|env]
#
#   path    (the default) make sure Chromium is installed and print its path.
#           Idempotent: when Chromium is there, it only prints the path.
#   env     the same, but print BW_CHROMIUM=<path> and `export BW_CHROMIUM`
#           (for `eval "$(scripts/chromium.sh env)"`).
#
# Settings (environment):
#   BW_CHROMIUM         Chromium binary to use (default: chromium, chromium-browser
#                       or google-chrome from PATH)
#   BW_AUTO_INSTALL=1   as root, apt-get install Debian's chromium when missing
#                       (otherwise the script says what to install and fails)
set -euo pipefail

die() { echo "chromium: $*" >&2; exit 1; }

find_chromium() {
	if [ -n "${BW_CHROMIUM:-}" ]; then
		[ -x "$BW_CHROMIUM" ] || command -v "$BW_CHROMIUM" >/dev/null 2>&1 || return 1
		command -v "$BW_CHROMIUM"
		return 0
	fi
	local name
	for name in chromium chromium-browser google-chrome; do
		if command -v "$name" >/dev/null 2>&1; then
			command -v "$name"
			return 0
		fi
	done
	return 1
}

ensure() {
	if CHROMIUM=$(find_chromium); then
		return 0
	fi
	[ -z "${BW_CHROMIUM:-}" ] || die "BW_CHROMIUM=$BW_CHROMIUM is not an executable"
	if [ "${BW_AUTO_INSTALL:-}" = 1 ] && [ "$(id -u)" = 0 ]; then
		echo "chromium: installing Chromium with apt-get (BW_AUTO_INSTALL=1)..." >&2
		local alog
		alog=$(mktemp)
		if ! { DEBIAN_FRONTEND=noninteractive apt-get update -q &&
			DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends chromium fonts-dejavu-core; } >"$alog" 2>&1; then
			tail -n 30 "$alog" >&2
			rm -f "$alog"
			die "apt-get install chromium failed"
		fi
		rm -f "$alog"
		CHROMIUM=$(find_chromium) || die "chromium is still missing after apt-get install"
		return 0
	fi
	echo "chromium: Chromium is missing; install with:" >&2
	echo "  apt-get install -y --no-install-recommends chromium fonts-dejavu-core" >&2
	echo "  (or run this script as root with BW_AUTO_INSTALL=1)" >&2
	exit 1
}

case "${1:-path}" in
path)
	ensure
	echo "$CHROMIUM"
	;;
env)
	ensure
	echo "BW_CHROMIUM=$CHROMIUM"
	echo "export BW_CHROMIUM"
	;;
*)
	echo "usage: $0 [path|env]" >&2
	exit 2
	;;
esac
