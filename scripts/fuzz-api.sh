#!/usr/bin/env bash
# Fuzzes the HTTP API against its own OpenAPI document with schemathesis (from PyPI) and every
# check it has (turned on in scripts/fuzz-api.toml): no server error; statuses, headers and
# bodies as documented; requests the schemas refuse are refused, and requests they admit are
# accepted (or answered with one of the business outcomes scripts/fuzz-api.toml lists, each with
# its reason); a method a path does not take is 405 with Allow; stateful sequences through the
# inferred links. Runs a debug `liveline dev` on a private PostgreSQL cluster of its own, removed
# afterwards, and fails on any error in its log. Bounded in time; scripts/test.sh runs it with a
# small example count.
#   scripts/fuzz-api.sh [--max-examples 100]
set -euo pipefail
cd "$(dirname "$0")/.."

EXAMPLES=100
if [[ "${1:-}" == "--max-examples" ]]; then EXAMPLES="$2"; fi
PORT=18091
ADMIN=fuzz-admin-key
BASE="http://127.0.0.1:$PORT"

# schemathesis from PATH, else in a virtual environment of its own under .build/.
SCHEMATHESIS="$(command -v schemathesis || true)"
if [[ -z "$SCHEMATHESIS" ]]; then
    VENV=.build/schemathesis
    if [[ ! -x "$VENV/bin/schemathesis" ]]; then
        python3 -m venv "$VENV"
        "$VENV/bin/pip" install -q 'schemathesis>=4.32,<5'
    fi
    SCHEMATHESIS="$VENV/bin/schemathesis"
fi
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

# App routes with the demo app's key, admin routes with the admin key; the event stream (which
# never ends) is left out.
fuzz() { "$SCHEMATHESIS" --config-file scripts/fuzz-api.toml run "$BASE/openapi.yaml" --url "$BASE" --max-examples "$EXAMPLES" "$@"; }
status=0
fuzz -H "Authorization: Bearer $KEY" --exclude-path-regex '/v1/admin|/v1/events/stream' || status=1
fuzz -H "Authorization: Bearer $ADMIN" --include-path-regex '/v1/admin' || status=1
if grep -q " error " "$DATA/server.err"; then
    echo "the server logged errors:" >&2
    grep " error " "$DATA/server.err" | head -20 >&2
    status=1
fi
exit "$status"
