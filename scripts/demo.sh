#!/usr/bin/env bash
# Runs the whole system on one machine: a local feed server that publishes
# new items continuously (and Bluesky posts on its local Jetstream), a hub and three spawns, a few crawlers (two of them
# on the same feed, so they share one data source) spread so that every
# spawn runs some, the dashboard's address and admin token, and a progress
# view until Ctrl-C. Nothing is left running afterwards. A previous run's
# directory is kept, renamed with the time it was moved aside; the PIDs of
# this run's processes are in $RUN/pids (make demo-kill-spawn reads them).
set -euo pipefail
cd "$(dirname "$0")/.."

BIN=${BIN:-bin}
RUN=${BW_DEMO_DIR:-demo-run}
HUB_ADDR=${BW_DEMO_HUB:-127.0.0.1:8700}
FEED_ADDR=${BW_DEMO_FEEDS:-127.0.0.1:8780}
REFRESH=${BW_DEMO_REFRESH:-3}

for b in hub spawn bwctl feedserver; do
	[ -x "$BIN/$b" ] || { echo "demo: $BIN/$b missing; run 'make build' first" >&2; exit 1; }
done

# port_taken ADDR says whether something already listens on host:port: a
# hub of another run there would answer this demo's requests (and refuse
# its token).
port_taken() {
	local host=${1%:*} port=${1##*:}
	(exec 3<>"/dev/tcp/$host/$port") 2>/dev/null
}
# demo_pid FILE prints the PID in FILE if it is a live process of a demo
# started from here (a PID of a process gone may have been reused).
demo_pid() {
	local pid
	pid=$(cat "$1" 2>/dev/null) || return 1
	case "$(ps -p "$pid" -o command= 2>/dev/null)" in
	"$BIN/"*) echo "$pid" ;;
	*) return 1 ;;
	esac
}
for f in "$RUN"/pids/*.pid; do
	if [ -e "$f" ] && demo_pid "$f" >/dev/null; then
		echo "demo: a demo is already running in $RUN/ (pid $(cat "$f")); stop it (Ctrl-C in its shell), or set BW_DEMO_DIR to run another" >&2
		exit 1
	fi
done
# next_port ADDR is host:port+1, an address to suggest instead.
next_port() { echo "${1%:*}:$((${1##*:} + 1))"; }
if port_taken "$HUB_ADDR"; then
	echo "demo: $HUB_ADDR is already taken (another hub?); stop what listens there, or give the demo's hub another address: BW_DEMO_HUB=$(next_port "$HUB_ADDR") make demo" >&2
	exit 1
fi
if port_taken "$FEED_ADDR"; then
	echo "demo: $FEED_ADDR is already taken; stop what listens there, or give the demo's feed server another address: BW_DEMO_FEEDS=$(next_port "$FEED_ADDR") make demo" >&2
	exit 1
fi

if [ -e "$RUN" ]; then
	kept="$RUN.$(date +%Y%m%d-%H%M%S)"
	mv "$RUN" "$kept"
	echo "demo: the previous run's data and logs are kept in $kept/ (rm -rf $RUN.* deletes every earlier run)"
fi
mkdir -p "$RUN/logs" "$RUN/pids"
pids=()
cleanup() {
	trap - INT TERM EXIT
	echo
	echo "demo: stopping..."
	for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
	for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
	echo "demo: stopped. Logs and data are in $RUN/."
}
# A signal stops everything and ends the script (a trap alone would return
# to the refresh loop); a normal exit or an error cleans up too.
trap 'cleanup; exit 130' INT
trap 'cleanup; exit 143' TERM
trap cleanup EXIT

export BW_NODE_TOKEN=${BW_NODE_TOKEN:-demo-local-node-token}
export BW_ADMIN_TOKEN=${BW_ADMIN_TOKEN:-demo-admin-token}
export BW_HUB_URL="http://$HUB_ADDR"

# Extra feeds give crawlers of their own until every spawn runs one.
EXTRA_FEEDS=(science world culture health travel music)
"$BIN/feedserver" --listen "$FEED_ADDR" --feeds "news,tech,sport,$(IFS=,; echo "${EXTRA_FEEDS[*]}")" --every 1s >"$RUN/logs/feedserver.log" 2>&1 &
pids+=($!)
echo $! >"$RUN/pids/feedserver.pid"
"$BIN/hub" --listen "$HUB_ADDR" --db "sqlite://$RUN/blackwidow.db" --poll-interval 1s >"$RUN/logs/hub.log" 2>&1 &
pids+=($!)
hub_pid=$!
echo $hub_pid >"$RUN/pids/hub.pid"

wait_http() {
	local url=$1 deadline=$((SECONDS + 20))
	until curl -fsS -o /dev/null "$url" 2>/dev/null; do
		if ((SECONDS > deadline)); then echo "demo: $url did not come up; see $RUN/logs" >&2; exit 1; fi
		sleep 0.2
	done
}
wait_http "http://$FEED_ADDR/healthz"
wait_http "http://$HUB_ADDR/healthz"
# What answers must be this demo's hub, not one that took the address
# since it was checked.
if ! kill -0 "$hub_pid" 2>/dev/null; then
	echo "demo: the hub stopped: $(tail -n 1 "$RUN/logs/hub.log")" >&2
	exit 1
fi

for i in 1 2 3; do
	"$BIN/spawn" --hub "http://$HUB_ADDR" --store "file://$RUN/data" --allow-targets 127.0.0.0/8 \
		--feed-interval 2s --bluesky-jetstream-url "ws://$FEED_ADDR/subscribe" --bluesky-appview-url "http://$FEED_ADDR" >"$RUN/logs/spawn$i.log" 2>&1 &
	pids+=($!)
	echo $! >"$RUN/pids/spawn$i.pid"
done

# spawns lists the demo's spawns with their PIDs, and which have stopped.
spawns() {
	local out=() f pid
	for f in "$RUN"/pids/spawn*.pid "$RUN"/pids/spawn*.pid.stopped; do
		[ -e "$f" ] || continue
		pid=$(cat "$f")
		if demo_pid "$f" >/dev/null; then
			out+=("$(basename "${f%%.pid*}") pid $pid")
		else
			out+=("$(basename "${f%%.pid*}") pid $pid (stopped)")
		fi
	done
	(IFS=,; echo "${out[*]}" | sed 's/,/, /g')
}

bw() { "$BIN/bwctl" "$@"; }
bw user add demo-customer --limit 5000 >/dev/null
bw user add newsroom >/dev/null
feeds="http://$FEED_ADDR/feeds"
bw crawler add --user 1 --source rss --query "$feeds/news.xml" --keywords golang,cassandra >/dev/null
bw crawler add --user 1 --source rss --query "$feeds/news.xml" --keywords weather >/dev/null
bw crawler add --user 1 --source rss --query "$feeds/tech.xml" >/dev/null
bw crawler add --user 1 --source rss --query "$feeds/sport.xml,$feeds/tech.xml" --limit 40 >/dev/null

# wait_for CMD... retries CMD for up to 20 s.
wait_for() {
	local what=$1 deadline=$((SECONDS + 20))
	shift
	until "$@"; do
		if ((SECONDS > deadline)); then echo "demo: timed out waiting for $what; see $RUN/logs" >&2; return 1; fi
		sleep 0.3
	done
}
three_nodes() { [ "$(bw node list | awk 'NR > 1' | wc -l)" -eq 3 ]; }
# none_pending holds when the hub has placed every crawler on a node.
none_pending() { bw crawler list | awk 'NR > 1 && $4 == "pending" {p = 1} END {exit p}'; }
# spread holds when each of the three spawns runs a crawler that has no
# limit (crawler 4 leaves its spawn once it reaches its own).
spread() {
	bw crawler list | awk 'NR > 1 && $4 == "running" && $7 == "0" {on[$5] = 1}
		END {n = 0; for (id in on) n++; exit !(n == 3)}'
}

# Routing is by query uuid (hash modulo the node count), so which spawn a
# crawler lands on depends on its feeds: add crawlers on other feeds until
# all three spawns run at least one.
wait_for "three spawns" three_nodes
wait_for "the crawlers to be placed" none_pending
for feed in "${EXTRA_FEEDS[@]}"; do
	spread && break
	bw crawler add --user 2 --source rss --query "$feeds/$feed.xml" >/dev/null
	wait_for "the crawlers to be placed" none_pending
done
spread || echo "demo: warning: a spawn runs no crawler; see $RUN/logs" >&2

# --- Bluesky: a crawler against the local Jetstream server ------------------
# The feed server also serves Jetstream at /subscribe, posting every 500 ms;
# the spawns read it instead of the public one (--bluesky-jetstream-url) and
# ask it, as their AppView, for the authors' handles (--bluesky-appview-url).
bw crawler add --user 2 --source bluesky --query 'golang OR cassandra OR #weather' >/dev/null
# -----------------------------------------------------------------------------

while true; do
	clear 2>/dev/null || printf '\n\n'
	echo "Black Widow demo — hub $BW_HUB_URL, feeds at http://$FEED_ADDR/feeds/<name>.xml"
	echo "Dashboard: $BW_HUB_URL/  (admin token: $BW_ADMIN_TOKEN)"
	echo "Crawlers 1 and 2 read the same feed: they run on one spawn and share one fetch."
	echo "Crawler 4 stops at its limit of 40 comments. Ctrl-C stops everything."
	echo "Spawns: $(spawns). 'make demo-kill-spawn' stops one of them."
	echo
	bw crawler list || true
	echo
	bw node list || true
	echo
	echo "Comments on disk: $(cat "$RUN"/data/*/*.jsonl 2>/dev/null | wc -l) lines under $RUN/data/"
	sleep "$REFRESH"
done
