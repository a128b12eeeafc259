#!/usr/bin/env bash
# Measures the Cassandra store's write path against a baseline (a minimal,
# concurrent, prepared gocql insert loop writing one bare row a comment, the
# same columns into a table without the store's indexes) with BenchmarkWrite
# in spawn/internal/store/cassandra, and prints comments/s for both and their
# ratio (target: store >= 0.9 x baseline), then the counted path a spawn's
# comments take (usage intents, then only the comments the store does not
# hold), into partitions the writing store alone writes and into partitions
# another store wrote too (where every key is read). A second pair writes "rich"
# comments (posts of 20 words from a Zipf vocabulary by 10,000 authors, a
# third of them replies) to show what a text's many search terms cost.
#
# Needs a Cassandra: BW_TEST_CASSANDRA=host:port, or the one that
# scripts/cassandra.sh runs (scripts/services.sh up starts it).
#
# Settings: BW_BENCH_ROUNDS (default 3; rounds alternate baseline and store,
# the median of each is reported), BW_BENCH_TIME (go test -benchtime per
# round, default 3s), BW_BENCH_WORKERS (baseline goroutines, default 256).
#
# scripts/bench-store.sh --cluster instead compares the store's write rate on
# the single node with the same path on the three-node cluster of
# scripts/cassandra-cluster.sh (three copies, QUORUM), with
# BenchmarkWriteCluster, and prints the ratio cluster/single.
set -euo pipefail
cd "$(dirname "$0")/.."

CLUSTER=0
case "${1:-}" in
--cluster) CLUSTER=1 ;;
"") ;;
*)
	echo "usage: $0 [--cluster]" >&2
	exit 2
	;;
esac

if [ -z "${BW_TEST_CASSANDRA:-}" ]; then
	if scripts/cassandra.sh status >/dev/null 2>&1; then
		eval "$(scripts/cassandra.sh env)"
	else
		echo "bench-store: BW_TEST_CASSANDRA is not set and no Cassandra is up; run: scripts/services.sh up" >&2
		exit 1
	fi
fi
export BW_TEST_CASSANDRA
# The node's processor time per comment, when this machine runs it and the
# script knows its pid (scripts/cassandra.sh's pid file for the same port).
if [ -z "${BW_BENCH_CASSANDRA_PID:-}" ]; then
	state=${BW_STATE_DIR:-$HOME/.cache/blackwidow}/cassandra
	if [ -f "$state/cassandra.pid" ] && [ -f "$state/cassandra.ports" ] &&
		[ "$(cut -d' ' -f1 "$state/cassandra.ports")" = "${BW_TEST_CASSANDRA##*:}" ]; then
		BW_BENCH_CASSANDRA_PID=$(cat "$state/cassandra.pid")
		export BW_BENCH_CASSANDRA_PID
	fi
fi
if [ "$CLUSTER" = 1 ] && [ -z "${BW_TEST_CASSANDRA_CLUSTER:-}" ]; then
	if scripts/cassandra-cluster.sh status >/dev/null 2>&1; then
		eval "$(scripts/cassandra-cluster.sh env)"
	else
		echo "bench-store: BW_TEST_CASSANDRA_CLUSTER is not set and the cluster is not up; run: scripts/cassandra-cluster.sh up" >&2
		exit 1
	fi
fi
ROUNDS=${BW_BENCH_ROUNDS:-3}
TIME=${BW_BENCH_TIME:-3s}
PKG=./spawn/internal/store/cassandra/
BENCH='^BenchmarkWrite$'
[ "$CLUSTER" = 1 ] && BENCH='^BenchmarkWriteCluster$'

run() {
	local out
	if ! out=$(go test -count=1 -run '^$' -bench "$BENCH" -benchtime "$1" "$PKG" 2>&1); then
		echo "$out" >&2
		echo "bench-store: benchmark failed" >&2
		exit 1
	fi
	echo "$out"
}

# Warm-up round (JIT of a freshly started Cassandra), not counted.
run 5x >/dev/null
results=""
for _ in $(seq 1 "$ROUNDS"); do
	results+=$(run "$TIME" | grep 'comments/s')$'\n'
done

if [ "$CLUSTER" = 1 ]; then
	echo "$results" | awk '
/^BenchmarkWriteCluster\// {
	name = $1; sub(/^BenchmarkWriteCluster\//, "", name); sub(/-[0-9]+$/, "", name)
	for (i = 2; i < NF; i++) if ($(i+1) == "comments/s") v[name, ++n[name]] = $i
}
function median(name,   k, j, t, a, m) {
	m = n[name]
	for (k = 1; k <= m; k++) a[k] = v[name, k] + 0
	for (k = 1; k <= m; k++) for (j = k + 1; j <= m; j++) if (a[j] < a[k]) { t = a[k]; a[k] = a[j]; a[j] = t }
	return (m % 2) ? a[(m + 1) / 2] : (a[m / 2] + a[m / 2 + 1]) / 2
}
function all(name,   k, s) {
	for (k = 1; k <= n[name]; k++) s = s (k > 1 ? ", " : "") int(v[name, k] + 0.5)
	return s
}
END {
	if (!n["single"] || !n["cluster"]) { print "bench-store: no results" > "/dev/stderr"; exit 1 }
	s = median("single"); c = median("cluster")
	printf "single node (1 copy, LOCAL_ONE):      %8.0f comments/s  (rounds: %s)\n", s, all("single")
	printf "three nodes (3 copies, QUORUM):       %8.0f comments/s  (rounds: %s)\n", c, all("cluster")
	printf "ratio cluster/single:                 %8.2f\n", c / s
}'
	exit 0
fi

echo "$results" | awk -v rounds="$ROUNDS" '
/^BenchmarkWrite\// {
	name = $1; sub(/^BenchmarkWrite\//, "", name); sub(/-[0-9]+$/, "", name)
	for (i = 2; i < NF; i++) if ($(i+1) == "comments/s") v[name, ++n[name]] = $i
	for (i = 2; i < NF; i++) if ($(i+1) == "client-cpu-µs/comment") cl[name] = cl[name] (cl[name] == "" ? "" : ", ") $i
	for (i = 2; i < NF; i++) if ($(i+1) == "node-cpu-µs/comment") nd[name] = nd[name] (nd[name] == "" ? "" : ", ") $i
}
function median(name,   k, j, t, a, m) {
	m = n[name]
	for (k = 1; k <= m; k++) a[k] = v[name, k] + 0
	for (k = 1; k <= m; k++) for (j = k + 1; j <= m; j++) if (a[j] < a[k]) { t = a[k]; a[k] = a[j]; a[j] = t }
	return (m % 2) ? a[(m + 1) / 2] : (a[m / 2] + a[m / 2 + 1]) / 2
}
function all(name,   k, s) {
	for (k = 1; k <= n[name]; k++) s = s (k > 1 ? ", " : "") int(v[name, k] + 0.5)
	return s
}
END {
	if (!n["baseline"] || !n["store"]) { print "bench-store: no results" > "/dev/stderr"; exit 1 }
	b = median("baseline"); s = median("store")
	printf "baseline (gocql loop):       %8.0f comments/s  (rounds: %s)\n", b, all("baseline")
	printf "store Write:                 %8.0f comments/s  (rounds: %s)\n", s, all("store")
	if (n["store-alt"]) printf "store, other write mode:     %8.0f comments/s  (rounds: %s)\n", median("store-alt"), all("store-alt")
	if (n["counted"]) printf "counted (intents + new only):%8.0f comments/s  (rounds: %s)\n", median("counted"), all("counted")
	if (n["counted-shared"]) printf "counted, shared partitions:  %8.0f comments/s  (rounds: %s)\n", median("counted-shared"), all("counted-shared")
	if (n["baseline-rich"]) printf "baseline, rich comments:     %8.0f comments/s  (rounds: %s)\n", median("baseline-rich"), all("baseline-rich")
	if (n["store-rich"]) printf "store Write, rich comments:  %8.0f comments/s  (rounds: %s)\n", median("store-rich"), all("store-rich")
	printf "ratio store/baseline:        %8.2f  (target >= 0.90)\n", s / b
	if (n["counted"]) printf "ratio counted/baseline:      %8.2f  (target >= 0.90)\n", median("counted") / b
	if (n["counted-shared"]) printf "ratio counted shared/base:   %8.2f\n", median("counted-shared") / b
	if (n["store-rich"] && n["baseline-rich"]) printf "ratio rich store/baseline:   %8.2f\n", median("store-rich") / median("baseline-rich")
	split("baseline store store-alt counted counted-shared baseline-rich store-rich", paths, " ")
	for (k = 1; k <= 7; k++) if (paths[k] in cl)
		printf "CPU µs a comment, %-14s client %s; node %s\n", paths[k] ":", cl[paths[k]], (nd[paths[k]] == "" ? "not measured" : nd[paths[k]])
	# Each round ran every path once, one after the other: the ratios of
	# each round show how much of the spread the machine made.
	for (k = 1; k <= n["store"] && k <= n["baseline"]; k++) {
		line = sprintf("round %d: store/baseline %.2f", k, v["store", k] / v["baseline", k])
		if (n["counted"] >= k) line = line sprintf(", counted/baseline %.2f", v["counted", k] / v["baseline", k])
		if (n["counted-shared"] >= k) line = line sprintf(", counted shared %.2f", v["counted-shared", k] / v["baseline", k])
		if (n["store-rich"] >= k && n["baseline-rich"] >= k) line = line sprintf(", rich %.2f", v["store-rich", k] / v["baseline-rich", k])
		print line
	}
}'
