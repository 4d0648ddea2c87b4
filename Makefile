# The two commands: `make run` starts every service; `make test` passes the whole suite.
# Both install what is missing first.
SHELL := /bin/bash
export PATH := $(CURDIR)/node_modules/.bin:$(PATH)
SPECS := control-plane rules context-webhook telemetry collector

.PHONY: install run test test-embedded test-real gen gen-check lint typecheck fuzz bench bench-tools py-tools clean

node_modules/.installed: package.json package-lock.json
	npm ci --no-audit --no-fund
	@touch $@

install: node_modules/.installed

# V8's young generation at 32 MB per semi-space (default 16): a context request allocates
# briskly and the smaller nursery was scavenged so often that it cost about a fifth of the
# request's CPU. Tests and benchmarks that spawn the server pass the same flag.
NODE_FLAGS := --max-semi-space-size=32

run: install
	NODE_OPTIONS="$(NODE_FLAGS) $$NODE_OPTIONS" tsx src/main.ts $(SERVICES)

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
gen: install py-tools
	@mkdir -p gen/openapi gen/proto
	@for s in $(SPECS); do openapi-typescript spec/openapi-$$s.yaml -o gen/openapi/$$s.ts --silent --default-non-nullable=false || exit 1; done
	buf lint
	buf generate
	$(PYTHON) clients/python/gen_types.py spec/openapi-control-plane.yaml $(PY_CLIENT)/control_plane_types.py
	protoc -I spec --python_out=$(PY_CLIENT) --pyi_out=$(PY_CLIENT) --grpc_out=$(PY_CLIENT) --plugin=protoc-gen-grpc="$$(command -v grpc_python_plugin)" spec/context.proto
	@# The gRPC plugin imports its sibling as a top-level module; inside the package it is relative.
	@sed -i 's/^import context_pb2 as context__pb2$$/from . import context_pb2 as context__pb2/' $(PY_CLIENT)/context_pb2_grpc.py

# Fails when gen/ or the Python client's generated modules are out of date with spec/.
GENERATED := gen $(PY_CLIENT)/context_pb2.py $(PY_CLIENT)/context_pb2.pyi $(PY_CLIENT)/context_pb2_grpc.py $(PY_CLIENT)/control_plane_types.py
gen-check: gen
	@git diff --exit-code --stat -- $(GENERATED) && test -z "$$(git ls-files --others --exclude-standard -- $(GENERATED))" || \
	  (echo "generated code is out of date with spec/ (gen/, $(PY_CLIENT)): run make gen and commit" >&2; exit 1)

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

# The whole suite on the embedded default (PGlite, in-process broker), then, when
# DATABASE_URL / REDIS_URL are set, again on PostgreSQL and Redis.
test: install typecheck py-tools
	@$(MAKE) --no-print-directory test-embedded
	@if [ -n "$$DATABASE_URL" ]; then $(MAKE) --no-print-directory test-real; fi

test-embedded:
	env -u DATABASE_URL -u REDIS_URL -u DATABASE_MIGRATION_URL vitest run

test-real:
	SVC_TEST_REAL=1 vitest run

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

bench: install bench-tools
	SVC_TEST_REAL=1 tsx bench/run.ts $(ONLY)

clean:
	rm -rf .svc-data node_modules/.installed
