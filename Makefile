# Lethe's everyday commands. `make run` starts a server on 127.0.0.1:27017;
# `make test` runs every test, real MongoDB clients included.

GO      ?= go
CLIENTS := integration/clients
# npm ci leaves this file behind; it is older than the lock file when the
# installed clients are stale.
CLIENTS_STAMP := $(CLIENTS)/node_modules/.package-lock.json

.PHONY: build run test model bench fuzz lint clients

build:
	$(GO) build -o bin/lethe ./cmd/lethe

run: build
	./bin/lethe --listen 127.0.0.1:27017 --data-dir ./data

# The client tests fail rather than skip when a client is missing, and the
# write path's assertions (package internal/invariants) are compiled in. The
# model tests (engine/model_*_test.go) run in a second step with -v, so that
# their summary lines (steps, operations per kind) show; on a failure their
# whole output, with the seed and the operation log, is printed.
test: clients
	LETHE_REQUIRE_CLIENTS=1 $(GO) test -tags lethe_invariants -timeout 20m -skip '^TestModel' ./...
	@out=$$(mktemp); \
	$(GO) test -tags lethe_invariants -count=1 -timeout 10m -run '^TestModel' -v ./engine >$$out 2>&1; rc=$$?; \
	if [ $$rc -eq 0 ]; then grep -E 'model summary|^ok' $$out; else cat $$out; fi; \
	rm -f $$out; exit $$rc

# The model tests for longer: MODEL_DURATION each, fresh random seeds, on
# every storage backend or the one MODEL_BACKEND names. Replay a failure
# with the backend and seed it prints:
#   go test ./engine -run TestModelSequential -v -model.backend=B -model.seed=N -model.steps=M
MODEL_DURATION ?= 5m
MODEL_BACKEND ?=
model:
	LETHE_MODEL_DURATION=$(MODEL_DURATION) LETHE_MODEL_BACKEND=$(MODEL_BACKEND) $(GO) test -count=1 -timeout 0 -run '^TestModel' -v ./engine

clients: $(CLIENTS_STAMP)

$(CLIENTS_STAMP): $(CLIENTS)/package.json $(CLIENTS)/package-lock.json
	npm ci --prefix $(CLIENTS) --no-audit --no-fund
	touch $@

# Microbenchmarks, then the load tool: every workload at 16 clients with its
# ceiling (ping, raw synced pebble commits), the index workload, connection
# setup with SCRAM, failed logins, TLS, $text over 100,000 documents, a
# collated sort of 100,000 strings, the YCSB mixes A, B, C, E and F
# (zipfian, 20,000 records of 1 KB), $near over 1,000,000 points, and the
# TTL workload over 1,000,000 documents.
bench:
	$(GO) test -run='^$$' -bench=. -benchtime=1s ./...
	$(GO) run ./cmd/lethe-load --workloads=all,ycsb-a,ycsb-b,ycsb-c,ycsb-e,ycsb-f,geo-near --ycsb-records=20000 --ttl-docs=1000000

fuzz:
	$(GO) test -run='^$$' -fuzz=FuzzDecode -fuzztime=15s ./wire
	$(GO) test -run='^$$' -fuzz=FuzzEncodeOrder -fuzztime=15s ./engine/keycodec
	$(GO) test -run='^$$' -fuzz=FuzzCommands -fuzztime=15s ./server
	$(GO) test -run='^$$' -fuzz=FuzzConversation -fuzztime=15s ./auth

lint:
	@unformatted=$$(gofmt -l $$(find . -name '*.go' -not -path './$(CLIENTS)/node_modules/*')); \
	if [ -n "$$unformatted" ]; then echo "gofmt -l reports:"; echo "$$unformatted"; exit 1; fi
	$(GO) vet ./...
