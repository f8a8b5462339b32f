#!/usr/bin/env bash
# Fuzzes the HTTP API against its own OpenAPI document with schemathesis (from PyPI): generated
# and mutated requests, stateful sequences through the documented links, and checks that no
# response is a server error, an undocumented status, or a body off the schema. Runs a debug
# `liveline dev` on a private PostgreSQL cluster of its own, removed afterwards. Bounded in time.
#   scripts/fuzz-api.sh [--max-examples 100]
set -euo pipefail
cd "$(dirname "$0")/.."

EXAMPLES=100
if [[ "${1:-}" == "--max-examples" ]]; then EXAMPLES="$2"; fi
PORT=18091
ADMIN=fuzz-admin-key
BASE="http://127.0.0.1:$PORT"

command -v schemathesis > /dev/null || python3 -m pip install -q schemathesis
swift build --product liveline
DATA="$(mktemp -d /tmp/liveline-fuzz-XXXXXX)"
chmod 755 "$DATA"
SERVER=""
cleanup() {
    if [[ -n "$SERVER" ]]; then kill -INT "$SERVER" 2> /dev/null || true; wait "$SERVER" 2> /dev/null || true; fi
    rm -rf "$DATA"
}
trap cleanup EXIT

LIVELINE_DEV_DATA="$DATA" LIVELINE_PORT="$PORT" LIVELINE_ADMIN_KEY="$ADMIN" LIVELINE_LOG_LEVEL=warning \
    .build/debug/liveline dev > "$DATA/server.out" 2> "$DATA/server.err" &
SERVER=$!
for _ in $(seq 1 120); do
    curl -sf "$BASE/readyz" > /dev/null 2>&1 && break
    sleep 0.5
done
KEY="$(sed -n 's/.*app "demo": *key \([^ ]*\).*/\1/p' "$DATA/server.out")"

CHECKS=not_a_server_error,response_schema_conformance,status_code_conformance,content_type_conformance
status=0
schemathesis run "$BASE/openapi.yaml" --url "$BASE" -H "Authorization: Bearer $KEY" --exclude-path-regex '/v1/admin|/v1/events/stream' \
    -c "$CHECKS" --max-examples "$EXAMPLES" || status=1
schemathesis run "$BASE/openapi.yaml" --url "$BASE" -H "Authorization: Bearer $ADMIN" --include-path-regex '/v1/admin' \
    -c "$CHECKS" --max-examples "$EXAMPLES" || status=1
if grep -q " error " "$DATA/server.err"; then
    echo "the server logged errors:" >&2
    grep " error " "$DATA/server.err" | head -20 >&2
    status=1
fi
exit "$status"
