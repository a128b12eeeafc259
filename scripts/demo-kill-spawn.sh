#!/usr/bin/env bash
# Stops one spawn of the running demo (make demo), found by the PID the
# demo wrote to $RUN/pids: never a process of another user or another run.
# SIGTERM by default: the spawn drains, its crawlers move to the other
# spawns first. SIGNAL=KILL makes it a crash: the hub notices within a
# few polls and moves them then.
set -euo pipefail
cd "$(dirname "$0")/.."

BIN=${BIN:-bin}
RUN=${BW_DEMO_DIR:-demo-run}
SIGNAL=${SIGNAL:-TERM}

for f in "$RUN"/pids/spawn*.pid; do
	[ -e "$f" ] || break
	pid=$(cat "$f")
	# The PID must still be one of the demo's spawns: the PID of a process
	# gone may have been given to another.
	case "$(ps -p "$pid" -o command= 2>/dev/null)" in
	"$BIN/spawn "*) ;;
	*) continue ;;
	esac
	kill -s "$SIGNAL" "$pid"
	mv "$f" "$f.stopped"
	echo "demo: sent SIG$SIGNAL to $(basename "$f" .pid) (pid $pid); 'bin/bwctl node list' shows the others taking its crawlers"
	exit 0
done
echo "demo: no spawn of the demo is running in $RUN/ (start one with make demo)" >&2
exit 1
