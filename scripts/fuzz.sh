#!/usr/bin/env bash
# Runs every fuzz target of the module for a bounded number of inputs:
#   scripts/fuzz.sh [FUZZTIME]        (default 100000x)
# Targets are found, not listed: a package that gains a `func FuzzX` in a
# _test.go file is fuzzed from then on. A count rather than a duration:
# when a duration runs out while a worker is busy, Go's fuzzing coordinator
# can report the deadline as a failure (golang/go#75804); a count has none.
set -euo pipefail
cd "$(dirname "$0")/.."
FUZZTIME=${1:-100000x}
GO=${GO:-go}
# bench/ is a module of its own.
grep -rl --include='*_test.go' '^func Fuzz' . | grep -v '^./bench/' | sort | while read -r file; do
	dir=./$(dirname "${file#./}")
	for name in $(sed -n 's/^func \(Fuzz[A-Za-z0-9_]*\)(.*/\1/p' "$file"); do
		echo "fuzz: $dir $name ($FUZZTIME)"
		"$GO" test -run '^$' -fuzz "^${name}\$" -fuzztime "$FUZZTIME" -fuzzminimizetime 2s "$dir"
	done
done
