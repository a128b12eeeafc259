#!/usr/bin/env bash
# Mailpit, the SMTP server the e-mail alert tests send through:
# scripts/mailpit.sh [path|env]
#
#   path    (the default) make sure mailpit is installed and print its path.
#           Idempotent and cached: once built, it only prints the path.
#   env     the same, but print BW_MAILPIT=<path> and `export BW_MAILPIT`
#           (for `eval "$(scripts/mailpit.sh env)"`).
#
# Mailpit (github.com/axllent/mailpit, MIT) is a maintained SMTP server in
# Go with STARTTLS, SMTP AUTH and an HTTP API to read what it received, so a
# test sends through a real SMTP conversation and reads the message back.
# It is built from the Go module proxy with the Go toolchain the project
# uses (`go install`), into the cache directory below: no other download.
#
# Settings (environment):
#   BW_MAILPIT          mailpit binary to use (default: the cached build, else
#                       mailpit from PATH, else build it)
#   BW_MAILPIT_VERSION  module version to build (default v1.27.11)
#   BW_CACHE_DIR        cache directory (default ~/.cache/blackwidow)
set -euo pipefail

VERSION=${BW_MAILPIT_VERSION:-v1.27.11}
CACHE=${BW_CACHE_DIR:-$HOME/.cache/blackwidow}
BIN=$CACHE/mailpit-$VERSION/mailpit

die() { echo "mailpit: $*" >&2; exit 1; }

find_mailpit() {
	if [ -n "${BW_MAILPIT:-}" ]; then
		[ -x "$BW_MAILPIT" ] || return 1
		echo "$BW_MAILPIT"
		return 0
	fi
	if [ -x "$BIN" ]; then
		echo "$BIN"
		return 0
	fi
	command -v mailpit 2>/dev/null
}

ensure() {
	local path
	if path=$(find_mailpit); then
		echo "$path"
		return 0
	fi
	[ -z "${BW_MAILPIT:-}" ] || die "BW_MAILPIT=$BW_MAILPIT is not executable"
	command -v go >/dev/null 2>&1 || die "go is needed to build mailpit $VERSION"
	echo "mailpit: building github.com/axllent/mailpit@$VERSION into $(dirname "$BIN") (once)" >&2
	mkdir -p "$(dirname "$BIN")"
	GOBIN=$(dirname "$BIN") GOFLAGS=-mod=mod go install "github.com/axllent/mailpit@$VERSION" >&2 ||
		die "go install github.com/axllent/mailpit@$VERSION failed"
	[ -x "$BIN" ] || die "the build left no binary at $BIN"
	echo "$BIN"
}

case "${1:-path}" in
path) ensure ;;
env)
	path=$(ensure)
	echo "BW_MAILPIT=$path"
	echo "export BW_MAILPIT"
	;;
*)
	echo "usage: $0 [path|env]" >&2
	exit 2
	;;
esac
