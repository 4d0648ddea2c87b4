# The two commands: `make run` starts every service; `make test` passes the whole suite.
# Both install what is missing first.
SHELL := /bin/bash
export PATH := $(CURDIR)/node_modules/.bin:$(PATH)
SPECS := control-plane rules context-webhook telemetry collector

.PHONY: install build run test test-embedded test-real gen gen-check lint typecheck fuzz bench bench-tools browser caddy py-tools conformance clean

# npm ci runs the postinstall script: patch-package applies patches/ (fixes not yet released
# upstream; the README's "A patched driver" says which and why), and node-gyp (npm's own)
# builds native/sha256, the SHA-256 addon of the audit log's verify paths (src/shared/sha256.ts;
# the README's "Hashing on the verify paths" says why), as it builds better-sqlite3.
node_modules/.installed: package.json package-lock.json clients/ts/package.json $(wildcard patches/*.patch) native/sha256/sha256.c native/sha256/binding.gyp
	npm ci --no-audit --no-fund
	@touch $@

# The TypeScript client (clients/ts, the package @svc/client, linked into node_modules by the
# root's file: dependency) is used from its built dist/, as outside this repository: tsc
# rebuilds it when one of its sources changed since the stamp.
CLIENT_TS_SRC := $(shell find clients/ts/src -name '*.ts' 2>/dev/null) clients/ts/package.json clients/ts/tsconfig.json
clients/ts/dist/.built: node_modules/.installed $(CLIENT_TS_SRC)
	rm -rf clients/ts/dist
	tsc -p clients/ts/tsconfig.json
	@touch $@

install: node_modules/.installed clients/ts/dist/.built

# V8's young generation at 16 MB per semi-space, Node 20's default, named so that every place
# that starts the server (the systemd units, tests, benchmarks) passes the same. It was 32 MB
# when a smaller nursery cost about a fifth of a context request's CPU; on the tree of
# 2026-11-27, four alternated pairs of the context benchmark gave REST W1 116-164 µs of CPU
# a request at 16 MB against 143-204 at 32 (gRPC and W2 alike), and 16 MB keeps the process
# about 30 MB smaller at rest and verify's peak 30-50 MB lower (README, Benchmarks).
# The old generation's limit at twice what survives a full collection. V8's own factor, from
# its measured collection speed, kept the limit a few MB above the live heap while verify
# streamed records, and the server ran a full collection every 100-200 ms (44-93 of them while
# `svc audit verify --since` read 1,000,000 leaves; 7 with this flag).
# On 2026-12-05, alternated: GET /api/audit/verify 144,852-188,390 records/s at 5.5-6.6 us of
# server CPU a record, peak RSS 206-218 MB, against 109,104-194,316 at 5.5-9.3 us, 222-239 MB
# (README, Benchmarks). Flags on the command line: NODE_OPTIONS refuses this one.
NODE_FLAGS := --max-semi-space-size=16 --heap-growing-percent=100
# glibc's malloc in two arenas instead of up to eight a core: V8's and libuv's threads each
# take an arena of their own, and memory freed into one stays resident. On 2026-11-27
# (1,000,000 records, PostgreSQL, the compiled server, a probe timing verify alone): with the
# default a fresh API held 171-261 MB (7 starts) and `GET /api/audit/verify` peaked at 209-304
# MB in 6.2-6.5 s; with two arenas 167-169 MB (4 starts) and 198-205 MB in 6.4-6.8 s. The audit
# benchmark afterwards: 215 and 323 MB (174 and 259 MB before the call): about one start in
# three held some 80 MB more before any request, arenas or not (most likely V8 optimizing
# the contract's parse, then four parses a start: see specDocument), and verify added 41-64 MB to it, against
# 63-102 MB in three runs with the default. The context benchmark
# was unchanged (REST W1 9,247 against 9,356 req/s, gRPC 8,519 against 8,494, 80 and 91 µs of
# CPU a request either way). The systemd units and the tests' and benchmarks' server processes
# set the same.
SERVER_ENV := MALLOC_ARENA_MAX=2

# The server as it runs: src/ and gen/ compiled by tsc into dist/ (tsconfig.build.json), in
# the same layout, so that each module finds spec/ and migrations/ where it looks for them
# (dist/spec, dist/migrations and dist/native link to them) and the SCS JSON schemas and the console's
# assets beside it (copied).
# Run through tsx instead, the process holds about 40 MB more (tsx's loader and the sources
# it transformed): 243-249 against 202-205 MB at rest, measured 2026-11-27.
# Tests run the sources through tsx; the systemd units, make run and make bench run dist/.
SERVER_SRC := $(shell find src gen -name '*.ts' -not -name '*.test.ts') $(shell find src/core/scs/schemas src/console/assets -type f) tsconfig.build.json tsconfig.json Makefile
dist/.built: node_modules/.installed $(SERVER_SRC)
	rm -rf dist
	tsc -p tsconfig.build.json
	cp -r src/core/scs/schemas dist/src/core/scs/
	cp -r src/console/assets dist/src/console/
	ln -s ../spec dist/spec
	ln -s ../migrations dist/migrations
	ln -s ../native dist/native
	@touch $@

build: install dist/.built

run: build
	$(SERVER_ENV) node $(NODE_FLAGS) dist/src/main.js $(SERVICES)

# The Python client (clients/python) is generated and tested with Debian's packages: protoc
# and grpc_python_plugin (protobuf-compiler, protobuf-compiler-grpc) for the stubs,
# python3-yaml for the TypedDicts, python3-grpcio and python3-protobuf to run it. They are
# installed for Debian's interpreter, so that one runs the generator, not a python3 that
# may come first on PATH (pyenv). py-tools installs what is missing, as root, when apt-get
# exists; gen then fails without protoc, and the client's test skips without grpcio.
PYTHON := /usr/bin/python3
PY_CLIENT := clients/python/src/svc_client
PY_DEBS := protobuf-compiler protobuf-compiler-grpc python3-grpcio python3-protobuf python3-yaml
py-tools:
	@{ command -v protoc && command -v grpc_python_plugin && $(PYTHON) -c 'import grpc, google.protobuf, yaml'; } >/dev/null 2>&1 || \
	  { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null && \
	    { apt-get install -y -q -o DPkg::Lock::Timeout=300 $(PY_DEBS) >/dev/null 2>&1 || \
	      { apt-get update -q >/dev/null 2>&1 && apt-get install -y -q -o DPkg::Lock::Timeout=300 $(PY_DEBS) >/dev/null 2>&1; }; }; } || \
	  echo "$(PY_DEBS) could not be installed: make gen fails without protoc, the Python client's test skips" >&2

# gen is phony: it always regenerates from spec/.
# --default-non-nullable=false: the edge validates requests but does not fill in schema
# defaults (openapi-backend without useDefaults), so a property with a default is optional
# in what a handler receives; typing it as present would be a lie about the request.
# The client's copy (clients/ts/src/gen) is the same output, so that the package stands alone.
gen: node_modules/.installed py-tools
	@mkdir -p gen/openapi gen/proto clients/ts/src/gen/openapi clients/ts/src/gen/proto
	@for s in $(SPECS); do openapi-typescript spec/openapi-$$s.yaml -o gen/openapi/$$s.ts --silent --default-non-nullable=false || exit 1; \
	  cp gen/openapi/$$s.ts clients/ts/src/gen/openapi/$$s.ts; done
	buf lint
	buf generate
	$(PYTHON) clients/python/gen_types.py spec/openapi-control-plane.yaml $(PY_CLIENT)/control_plane_types.py
	protoc -I spec --python_out=$(PY_CLIENT) --pyi_out=$(PY_CLIENT) --grpc_out=$(PY_CLIENT) --plugin=protoc-gen-grpc="$$(command -v grpc_python_plugin)" spec/context.proto
	@# The gRPC plugin imports its sibling as a top-level module; inside the package it is relative.
	@sed -i 's/^import context_pb2 as context__pb2$$/from . import context_pb2 as context__pb2/' $(PY_CLIENT)/context_pb2_grpc.py

# Fails when gen/ or clients/ is out of date with spec/ (or a generated file is not committed).
gen-check: gen
	@git diff --exit-code --stat -- gen clients || (echo "gen/ or clients/ is out of date with spec/: run make gen and commit" >&2; exit 1)
	@test -z "$$(git status --porcelain --untracked-files=all -- gen clients)" || \
	  (git status --short -- gen clients >&2; echo "generated files under gen/ or clients/ are not committed: run make gen and commit" >&2; exit 1)

typecheck: install
	tsc --noEmit -p tsconfig.json

# All three run, and any finding fails: eslint (eslint.config.js: typescript-eslint's
# recommended rules and the layering of src/ as import rules), knip (knip.json: unused
# files, exports and dependencies), madge (no import cycle in src/ or cli/).
lint: install
	@status=0; \
	echo "eslint"; eslint --max-warnings 0 . || status=1; \
	echo "knip"; knip --no-progress || status=1; \
	echo "madge"; madge --circular --no-spinner --extensions ts --ts-config tsconfig.json src cli || status=1; \
	exit $$status

# Debian's chromium, when missing, for test/docs/docs.test.ts (the API reference opened in a
# browser through playwright-core); where it cannot be installed (not root, no apt-get) that
# test is skipped and prints why.
browser:
	@command -v chromium >/dev/null || \
	  { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null && \
	    { DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium >/dev/null 2>&1 || \
	      { apt-get update -q >/dev/null 2>&1 && DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium >/dev/null 2>&1; }; }; } || \
	  echo "chromium could not be installed: test/docs/docs.test.ts is skipped" >&2

# Debian's caddy, when missing, for test/deploy/caddy.test.ts (deploy/Caddyfile validated and
# run in front of the services); where it cannot be installed that test is skipped and says why.
caddy:
	@command -v caddy >/dev/null || \
	  { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null && \
	    { DEBIAN_FRONTEND=noninteractive apt-get install -y -q caddy >/dev/null 2>&1 || \
	      { apt-get update -q >/dev/null 2>&1 && DEBIAN_FRONTEND=noninteractive apt-get install -y -q caddy >/dev/null 2>&1; }; }; } || \
	  echo "caddy could not be installed: test/deploy/caddy.test.ts is skipped" >&2

# The whole suite on the embedded default (PGlite, in-process broker), then, when
# DATABASE_URL / REDIS_URL are set, again on PostgreSQL and Redis.
test: install typecheck build browser caddy py-tools
	@$(MAKE) --no-print-directory test-embedded
	@if [ -n "$$DATABASE_URL" ]; then $(MAKE) --no-print-directory test-real; fi

test-embedded:
	env -u DATABASE_URL -u REDIS_URL -u DATABASE_MIGRATION_URL vitest run

test-real:
	SVC_TEST_REAL=1 vitest run

# schemathesis (../shared/tools/schemathesis, which installs its Debian packages itself) with
# --checks all on every operation of every spec, against the services started on free ports:
# embedded default, or a fresh PostgreSQL database (and Redis) when DATABASE_URL (REDIS_URL)
# is set. CONFORMANCE_EXAMPLES (100) and CONFORMANCE_SEED choose the run; see test/conformance/run.sh.
conformance: build
	SERVER_ENV='$(SERVER_ENV)' NODE_FLAGS='$(NODE_FLAGS)' bash test/conformance/run.sh

fuzz: install
	FUZZ_RUNS=$${FUZZ_RUNS:-2000} vitest run test/contract/fuzz.test.ts test/collector/fuzz.test.ts

# The benchmarks' load generators, wrk and h2load (Debian's wrk and nghttp2-client), when
# missing; where they cannot be installed the benchmarks use a Node generator and say so.
bench-tools:
	@command -v wrk >/dev/null && command -v h2load >/dev/null || \
	  { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null && \
	    { apt-get install -y -q wrk nghttp2-client >/dev/null 2>&1 || \
	      { apt-get update -q >/dev/null 2>&1 && apt-get install -y -q wrk nghttp2-client >/dev/null 2>&1; }; }; } || \
	  echo "wrk/h2load could not be installed: the benchmarks use the Node load generator" >&2

bench: build bench-tools
	SVC_TEST_REAL=1 tsx bench/run.ts $(ONLY)

clean:
	rm -rf .svc-data node_modules/.installed clients/ts/dist dist native/sha256/build
