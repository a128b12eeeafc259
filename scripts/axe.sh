#!/usr/bin/env bash
# axe-core, the accessibility checker the dashboard's browser tests inject
# into the page: scripts/axe.sh [path|env]
#
#   path    (the default) make sure axe-core is installed and print the path
#           of its axe.min.js. Idempotent: once it is in the cache, it only
#           prints the path (no network).
#   env     the same, but print BW_AXE=<path> and `export BW_AXE`
#           (for `eval "$(scripts/axe.sh env)"`).
#
# axe-core comes from the npm registry through npm (npm pack), at the version
# pinned below, into a cache shared by every checkout.
#
# Settings (environment):
#   BW_AXE_VERSION   the axe-core version (default below)
#   BW_CACHE_DIR     the cache (default ${XDG_CACHE_HOME:-~/.cache}/blackwidow)
set -euo pipefail

AXE_VERSION=${BW_AXE_VERSION:-4.14.1}
CACHE=${BW_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/blackwidow}
DIR="$CACHE/axe-core-$AXE_VERSION"
FILE="$DIR/axe.min.js"

die() { echo "axe: $*" >&2; exit 1; }

ensure() {
	[ -s "$FILE" ] && return 0
	command -v npm >/dev/null 2>&1 || die "npm is missing (apt-get install -y npm), needed once to fetch axe-core $AXE_VERSION"
	mkdir -p "$CACHE"
	local tmp
	tmp=$(mktemp -d "$CACHE/.axe.XXXXXX")
	trap 'rm -rf "$tmp"' RETURN
	(cd "$tmp" && npm pack --silent "axe-core@$AXE_VERSION" >/dev/null) || die "npm pack axe-core@$AXE_VERSION failed"
	tar -xzf "$tmp"/axe-core-"$AXE_VERSION".tgz -C "$tmp"
	[ -s "$tmp/package/axe.min.js" ] || die "axe-core $AXE_VERSION has no axe.min.js"
	mkdir -p "$tmp/out"
	cp "$tmp/package/axe.min.js" "$tmp/package/LICENSE" "$tmp/out/"
	# Another run may have finished first; either copy is the same file.
	mv -T "$tmp/out" "$DIR" 2>/dev/null || [ -s "$FILE" ] || die "unable to install $DIR"
}

case "${1:-path}" in
path)
	ensure
	echo "$FILE"
	;;
env)
	ensure
	echo "BW_AXE=$FILE"
	echo "export BW_AXE"
	;;
*)
	echo "usage: $0 [path|env]" >&2
	exit 2
	;;
esac
