#!/usr/bin/env bash
# make conformance: schemathesis (../shared/tools/schemathesis) with --checks all on every
# operation of every spec/openapi-*.yaml, against its own service, on a fresh data directory.
# Embedded default (PGlite, in-process broker, SQLite) unless DATABASE_URL is set: then a
# fresh PostgreSQL database beside it, migrated by its owner and served as svc_app, and
# Redis when REDIS_URL is set, as in production.
#   CONFORMANCE_EXAMPLES  examples per operation (default 100)
#   CONFORMANCE_SEED      hypothesis seed (default: a new one, printed)
# Exits non-zero when any check fails on any service (or the server logged an error); each
# failure is printed with a curl line that reproduces it.
set -euo pipefail
cd "$(dirname "$0")/../.."
# The offline schemathesis kit beside the repository (as CI lays it out), or SCHEMATHESIS.
ST="${SCHEMATHESIS:-../shared/tools/schemathesis/run}"
[ -x "$ST" ] || { echo "conformance: no schemathesis at $ST: set SCHEMATHESIS to its run script (or lay shared/ beside the repository)" >&2; exit 1; }
EXAMPLES="${CONFORMANCE_EXAMPLES:-100}"
SEED="${CONFORMANCE_SEED:-$RANDOM$RANDOM}"

work="$(mktemp -d /tmp/svc-conformance.XXXXXX)"
server_pid=""
db=""
cleanup() {
  if [ -n "$server_pid" ]; then
    kill -TERM "$server_pid" 2>/dev/null || true
    for _ in $(seq 1 50); do kill -0 "$server_pid" 2>/dev/null || break; sleep 0.2; done
    kill -KILL "$server_pid" 2>/dev/null || true
  fi
  if [ -n "$db" ]; then
    psql "$DATABASE_URL" -q -c "DROP DATABASE IF EXISTS $db WITH (FORCE)" >/dev/null 2>&1 || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT

# Six free loopback ports, one per service.
read -r API_PORT RULES_PORT CONTEXT_GRPC_PORT CONTEXT_WEBHOOK_PORT TELEMETRY_PORT COLLECTOR_PORT < <(
  node -e 'const net=require("net");(async()=>{const s=[];for(let i=0;i<6;i++){const v=net.createServer();await new Promise(r=>v.listen(0,"127.0.0.1",r));s.push(v)}console.log(s.map(v=>v.address().port).join(" "));s.forEach(v=>v.close())})()')
export API_PORT RULES_PORT CONTEXT_GRPC_PORT CONTEXT_WEBHOOK_PORT TELEMETRY_PORT COLLECTOR_PORT

export SVC_DATA_DIR="$work/data"
# Fresh secrets for this run only.
read -r ADMIN_API_KEY JWT_SECRET DEPLOYMENT_ID COLLECTOR_HMAC_SECRET < <(
  node -e 'const c=require("crypto");const r=(n)=>c.randomBytes(n).toString("base64url");console.log("admin_"+r(24),r(48),c.randomUUID(),r(32))')
export ADMIN_API_KEY JWT_SECRET DEPLOYMENT_ID COLLECTOR_HMAC_SECRET
# The transparency log's signing key (`TLOG_SIGNING_KEY=<key>`, as an environment file takes it).
TLOG_SIGNING_KEY="$(npx tsx cli/main.ts audit keygen --name svc.conformance/audit-log --signer-only)"
export TLOG_SIGNING_KEY="${TLOG_SIGNING_KEY#TLOG_SIGNING_KEY=}"
export LOG_LEVEL="${LOG_LEVEL:-warn}"
where="embedded default (PGlite, in-process broker, SQLite)"
if [ -n "${DATABASE_URL:-}" ]; then
  db="svc_conf_$(date +%s)_$$"
  psql "$DATABASE_URL" -v ON_ERROR_STOP=1 -q -c "CREATE DATABASE $db"
  owner_url="$(node -p 'const u=new URL(process.argv[1]);u.pathname="/"+process.argv[2];u.toString()' "$DATABASE_URL" "$db")"
  # svc_app is cluster-wide: the migrations create it and grant it; it needs to log in.
  psql "$owner_url" -v ON_ERROR_STOP=1 -q -c "DO \$\$ BEGIN IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'svc_app') THEN CREATE ROLE svc_app; END IF; END \$\$" \
    -c "ALTER ROLE svc_app WITH LOGIN PASSWORD 'svc-conformance-only-0000'"
  export DATABASE_MIGRATION_URL="$owner_url"
  DATABASE_URL="$(node -p 'const u=new URL(process.argv[1]);u.username="svc_app";u.password="";u.toString()' "$owner_url")"
  export DATABASE_URL DB_PASSWORD='svc-conformance-only-0000'
  where="PostgreSQL (fresh database $db, served as svc_app)${REDIS_URL:+ and Redis}"
fi

echo "conformance: $EXAMPLES examples per operation, seed $SEED, on the $where"
# The services as make run starts them: dist/, which make conformance builds first, with the
# Makefile's SERVER_ENV and NODE_FLAGS (make conformance passes them; one home for both).
: "${SERVER_ENV:?run through make conformance, which passes the Makefile SERVER_ENV}" "${NODE_FLAGS:?run through make conformance, which passes the Makefile NODE_FLAGS}"
# shellcheck disable=SC2086 # SERVER_ENV is a list of NAME=value words, NODE_FLAGS of flags
env $SERVER_ENV node $NODE_FLAGS dist/src/main.js >"$work/server.log" 2>&1 &
server_pid=$!
if ! prep="$(node --import tsx test/conformance/prepare.ts)"; then
  echo "the services did not start; their log:" >&2
  cat "$work/server.log" >&2
  exit 1
fi
eval "$prep"

failed=()
# Two passes per spec: valid data on every operation, then invalid data (schemathesis skips,
# and lists as skipped, the operations with no input to make invalid: /health, /docs, ...).
# Hypothesis's filter_too_much health check is off: it judges the generator, not the API
# (with some seeds, invalid data for the ownership accept/reject operations, a header and an
# optional body, is mostly filtered out, and the run failed with no request sent).
run_spec() {
  local spec="$1" port="$2" mode
  shift 2
  for mode in positive negative; do
    echo
    echo "== $spec on 127.0.0.1:$port, $mode data"
    if ! "$ST" "spec/openapi-$spec.yaml" --base-url "http://127.0.0.1:$port" --checks all -D "$mode" \
      --hypothesis-database=none --hypothesis-max-examples "$EXAMPLES" --hypothesis-seed "$SEED" \
      --hypothesis-suppress-health-check filter_too_much \
      --request-timeout 20000 --show-errors-tracebacks "$@"; then
      failed+=("$spec ($mode)")
    fi
  done
}
# The SSE stream (GET /api/audit/stream) never ends by itself: it is left out (-E keeps the rest).
run_spec control-plane "$API_PORT" -H "X-Admin-Key: $ADMIN_API_KEY" -H "X-API-Key: $AGENT_KEY" -E '^/(?!api/audit/stream$)'
run_spec rules "$RULES_PORT" -H "X-Admin-Key: $ADMIN_API_KEY"
run_spec telemetry "$TELEMETRY_PORT" -H "X-Admin-Key: $ADMIN_API_KEY"
run_spec collector "$COLLECTOR_PORT"
# Signed just before its run: a webhook token lives at most 300 s.
WEBHOOK_TOKEN="$(node --import tsx test/conformance/prepare.ts webhook-token)"
run_spec context-webhook "$CONTEXT_WEBHOOK_PORT" -H "Authorization: Bearer $WEBHOOK_TOKEN"

if grep -q '"level":"error"\|unhandled error' "$work/server.log"; then
  echo
  echo "the server logged errors during the run:" >&2
  grep '"level":"error"\|unhandled error' "$work/server.log" | head -20 >&2
  failed+=("server log")
fi
echo
if [ ${#failed[@]} -gt 0 ]; then
  echo "conformance: FAILED on ${failed[*]} (seed $SEED)"
  exit 1
fi
echo "conformance: every operation of every spec passed every check ($EXAMPLES examples each, seed $SEED)"
