# Black Widow — build, test and demo.
GO       ?= go
BIN      := bin
PKGS     := ./...
# Fuzz targets run a bounded number of inputs inside `make test` (5-20 s
# each on the 2-core test machine, eighteen targets; run scripts/fuzz.sh
# with a larger count for a longer search). A count rather than a duration: when a
# duration runs out while a worker is busy, Go's fuzzing coordinator can
# report the deadline as a failure (golang/go#75804); a count has no deadline.
FUZZTIME ?= 30000x
# The service scripts install what they miss (Java, Maven, PostgreSQL,
# Chromium, promtool) with apt-get when run as root; set to 0 to be told
# instead.
export BW_AUTO_INSTALL ?= 1

.PHONY: all build test test-cluster unit vet fmt-check services services-down demo bench bench-hub bench-hub-10k clean

all: build

build:
	$(GO) build -o $(BIN)/ ./hub ./spawn ./cmd/bwctl ./internal/fakes/feedserver/cmd/feedserver

vet:
	$(GO) vet $(PKGS)

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

# Starts PostgreSQL and Cassandra (installing them on first use), then runs
# every test against them with the race detector.
test: build fmt-check vet
	scripts/services.sh up
	scripts/chromium.sh >/dev/null
	scripts/promtool.sh check
	eval "$$(scripts/services.sh env)" && eval "$$(scripts/mailpit.sh env)" && BW_REQUIRE_SERVICES=1 BW_BIN_DIR=$(CURDIR)/$(BIN) BW_ARTIFACTS=$(CURDIR)/e2e/artifacts \
		$(GO) test -race -count=1 -timeout 25m $(PKGS)
	# Stops and restarts the shared Cassandra, so it runs alone.
	eval "$$(scripts/services.sh env)" && BW_REQUIRE_SERVICES=1 BW_CASSANDRA_OUTAGE_TEST=1 \
		$(GO) test -race -count=1 -timeout 5m -run TestCassandra_OutageLosesNothingCounted ./e2e/
	# Every fuzz target of the module, found by name (scripts/fuzz.sh).
	GO=$(GO) scripts/fuzz.sh $(FUZZTIME)

# Replication on real clusters: spawns against three Cassandra nodes
# (scripts/cassandra-cluster.sh on 127.0.0.2-4, 2-3 minutes to start on two
# cores) while the tests kill and stop nodes; about 6 minutes in all, so it
# is its own step (.ci/run runs it after `make test`); it stops the cluster
# when done, and when it could not start. The NATS cluster test starts its own three servers (seconds), so
# `make test` runs it too.
test-cluster:
	scripts/services.sh up >/dev/null
	rc=0; scripts/cassandra-cluster.sh up || rc=$$?; \
	if [ $$rc = 0 ]; then eval "$$(scripts/services.sh env)" && eval "$$(scripts/cassandra-cluster.sh env)" && \
		BW_REQUIRE_SERVICES=1 BW_REQUIRE_CLUSTER=1 $(GO) test -race -count=1 -timeout 15m \
		-run '^Test(CassandraCluster|NatsCluster)_' ./e2e/ || rc=$$?; fi; \
	scripts/cassandra-cluster.sh down; exit $$rc

# Tests that need no external server.
unit:
	$(GO) test -race -count=1 -short $(PKGS)

services:
	@scripts/services.sh up

services-down:
	@scripts/services.sh down

demo: build
	scripts/demo.sh

# demo-kill-spawn stops one of the running demo's spawns, by its PID file
# (SIGNAL=KILL for a crash instead of a drain).
.PHONY: demo-kill-spawn
demo-kill-spawn:
	scripts/demo-kill-spawn.sh

bench:
	scripts/bench-store.sh
	scripts/cassandra-cluster.sh up
	scripts/bench-store.sh --cluster
	$(GO) test -run '^$$' -bench Route -benchtime 2s ./hub/internal/cluster/
	$(GO) test -run '^$$' -bench 'Throughput$$' -benchtime 200000x -count 3 ./spawn/internal/node/
	$(GO) test -run '^$$' -bench 'ThroughputTerms$$' -benchtime 400000x -count 3 ./spawn/internal/node/
	eval "$$(scripts/services.sh env)" && $(GO) test -run '^$$' -bench ThroughputTermsCassandra -benchtime 100000x -count 3 ./spawn/internal/node/
	$(GO) test -run '^$$' -bench 'QueryIndex' -count 3 ./spawn/internal/match/
	$(GO) test -run '^$$' -bench BlueskyPath -benchtime 40x -count 5 ./spawn/internal/node/

# The hub against 1,000 simulated spawns and 100,000 crawlers (several minutes).
bench-hub:
	$(GO) test -run '^$$' -bench HubScale -benchtime 3x -timeout 30m ./hub/internal/cluster/

# The hub against 10,000 simulated spawns and 1,000,000 crawlers, on SQLite and
# then on PostgreSQL (about 8 minutes each, 3 GiB of memory; needs make services).
bench-hub-10k:
	BW_SCALE_NODES=10000 BW_SCALE_CRAWLERS=1000000 $(GO) test -run '^$$' -bench HubScale -benchtime 1x -timeout 60m ./hub/internal/cluster/
	eval "$$(scripts/services.sh env)" && BW_SCALE_DB=postgres BW_SCALE_NODES=10000 BW_SCALE_CRAWLERS=1000000 \
		$(GO) test -run '^$$' -bench HubScale -benchtime 1x -timeout 60m ./hub/internal/cluster/

clean:
	rm -rf $(BIN)
