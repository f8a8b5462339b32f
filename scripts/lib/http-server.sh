# Shared by the HTTP benchmarks (sourced, not run): a release `liveline dev` on a private
# PostgreSQL cluster, seeded with one app and $ACTIVITIES activities for the wrk scripts of
# scripts/http-load/.

ACTIVITIES=1000
PORT=18089
ADMIN=bench-admin-key
BASE="http://127.0.0.1:$PORT"
SERVER=""
DATA=""

# Installs wrk and pgbench where missing.
require_load_tools() {
    command -v wrk > /dev/null || { apt-get update -qq && apt-get install -y -qq wrk; }
    command -v pgbench > /dev/null || { apt-get update -qq && apt-get install -y -qq postgresql-client; }
}

# start_server BINARY POOL: starts the server on a fresh cluster and seeds it; sets SERVER (its
# pid), DATA (its folder), DATABASE_URL, and exports LIVELINE_KEY and ACTIVITIES for wrk.
start_server() {
    local binary="$1" pool="$2"
    DATA="$(mktemp -d /tmp/liveline-http-bench-XXXXXX)"
    chmod 755 "$DATA"
    LIVELINE_DEV_DATA="$DATA" LIVELINE_PORT="$PORT" LIVELINE_ADMIN_KEY="$ADMIN" LIVELINE_LOG_LEVEL=warning \
        LIVELINE_POOL_SIZE="$pool" "$binary" dev > "$DATA/server.out" 2> "$DATA/server.err" &
    SERVER=$!
    for _ in $(seq 1 120); do
        curl -sf "$BASE/readyz" > /dev/null 2>&1 && break
        sleep 0.5
    done
    curl -sf "$BASE/readyz" > /dev/null || { cat "$DATA/server.err" >&2; exit 1; }
    DATABASE_URL="$(sed -n 's/^ *database: *//p' "$DATA/server.out")"

    admin -X POST "$BASE/v1/admin/apps" \
        -d '{"appId":"bench","bundleId":"com.example.bench","maxOpen":10000000,"priorityBudgetPerHour":1000000}' > /dev/null
    admin -X PUT "$BASE/v1/admin/limits" -d '{"globalMaxOpen":100000000}' > /dev/null
    LIVELINE_KEY="$(admin -X POST "$BASE/v1/admin/apps/bench/keys" | sed 's/.*"key":"\([^"]*\)".*/\1/')"
    export LIVELINE_KEY ACTIVITIES

    seq 1 "$ACTIVITIES" | xargs -P 8 -I{} curl -sf -o /dev/null -X POST "$BASE/v1/activities" \
        -H "Authorization: Bearer $LIVELINE_KEY" -H 'Content-Type: application/json' \
        -d '{"activityId":"a{}","activityType":"delivery","attributes":{"order":"A-{}","store":"Lyon 3"},"contentState":{"status":"preparing","etaMinutes":30}}'
}

admin() { curl -sf -H "Authorization: Bearer $ADMIN" -H 'Content-Type: application/json' "$@"; }

# Stops the server (and its cluster) if one runs, shows its log if it failed, removes its folder.
stop_server() {
    local status=0
    if [[ -n "$SERVER" ]]; then
        kill -INT "$SERVER" 2> /dev/null || true
        wait "$SERVER" 2> /dev/null || status=$?
    fi
    if [[ $status -ne 0 ]]; then
        echo "the server exited with status $status; its log:" >&2
        cp "$DATA/server.err" /tmp/liveline-benchmark-server.err
        echo "(whole log in /tmp/liveline-benchmark-server.err)" >&2
        tail -n 40 "$DATA/server.err" >&2
    fi
    [[ -z "$DATA" ]] || rm -rf "$DATA"
    SERVER=""
    DATA=""
}

# run_wrk SCRIPT CONNECTIONS SECONDS: drives the server with scripts/http-load/SCRIPT.lua; its
# report goes to $DATA/SCRIPT.txt.
run_wrk() {
    wrk -t2 -c"$2" -d"$3s" --latency -s "scripts/http-load/$1.lua" "$BASE" > "$DATA/$1.txt"
}

# wrk_field SCRIPT FIELD: rate, p50, p99, requests or errors from the last run of SCRIPT.
wrk_field() {
    local report="$DATA/$1.txt"
    case "$2" in
        rate) awk '/^Requests\/sec:/ {print $2}' "$report" ;;
        p50) awk '$1 == "50%" {print $2}' "$report" ;;
        p99) awk '$1 == "99%" {print $2}' "$report" ;;
        requests) awk '/requests in/ {print $1}' "$report" ;;
        errors) awk '/Non-2xx or 3xx responses:/ {n += $NF} /Socket errors:/ {n += $4 + $6 + $8 + $10} END {print n + 0}' "$report" | tr -d ',' ;;
    esac
}
