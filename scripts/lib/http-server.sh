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

# start_server BINARY POOL [APP]: starts the server on a fresh cluster and seeds it; sets SERVER
# (its pid), DATA (its folder), DATABASE_URL, and exports LIVELINE_KEY and ACTIVITIES for wrk.
# APP "demo" seeds the demo app of `liveline dev` (its pushes go to the local APNs), and gives
# each activity a push token. SERVER_ENV adds environment variables (LIVELINE_DELIVERY=off).
start_server() {
    local binary="$1" pool="$2" app="${3:-bench}"
    DATA="$(mktemp -d /tmp/liveline-http-bench-XXXXXX)"
    chmod 755 "$DATA"
    launch_server "$binary" "$pool"
    if [[ "$app" == demo ]]; then
        admin -X PATCH "$BASE/v1/admin/apps/demo" -d '{"maxOpen":10000000,"priorityBudgetPerHour":1000000}' > /dev/null
    else
        admin -X POST "$BASE/v1/admin/apps" \
            -d '{"appId":"'"$app"'","bundleId":"com.example.'"$app"'","maxOpen":10000000,"priorityBudgetPerHour":1000000}' > /dev/null
    fi
    admin -X PUT "$BASE/v1/admin/limits" -d '{"globalMaxOpen":100000000}' > /dev/null
    LIVELINE_KEY="$(admin -X POST "$BASE/v1/admin/apps/$app/keys" | sed 's/.*"key":"\([^"]*\)".*/\1/')"
    export LIVELINE_KEY ACTIVITIES BASE

    seq 1 "$ACTIVITIES" | xargs -P 8 -I{} curl -sf -o /dev/null -X POST "$BASE/v1/activities" \
        -H "Authorization: Bearer $LIVELINE_KEY" -H 'Content-Type: application/json' \
        -d '{"activityId":"a{}","activityType":"delivery","attributes":{"order":"A-{}","store":"Lyon 3"},"contentState":{"status":"preparing","etaMinutes":30}}'
    if [[ "$app" == demo ]]; then
        # shellcheck disable=SC2016
        seq 1 "$ACTIVITIES" | xargs -P 8 -I{} sh -c 'curl -sf -o /dev/null -X PUT "$BASE/v1/activities/a$1/push-token" \
            -H "Authorization: Bearer $LIVELINE_KEY" -H "Content-Type: application/json" \
            -d "{\"pushToken\":\"$(printf %064x "$1")\"}"' _ {}
    fi
}

# Builds liveline for release and sets BINARY to it, unless BINARY names another build already.
use_release_build() {
    if [[ -z "${BINARY:-}" ]]; then
        swift build -c release --product liveline
        BINARY="$(swift build -c release --show-bin-path)/liveline"
    fi
}

# launch_server BINARY POOL: runs `liveline dev` on the cluster under $DATA (made by the first
# launch, found again by the next) and waits until it is ready; sets SERVER and DATABASE_URL.
# APNS_ENV adds the variables that point it at another APNs (see start_local_apns).
launch_server() {
    env ${SERVER_ENV:-} ${APNS_ENV:-} LIVELINE_DEV_DATA="$DATA" LIVELINE_PORT="$PORT" LIVELINE_ADMIN_KEY="$ADMIN" \
        LIVELINE_LOG_LEVEL=warning LIVELINE_POOL_SIZE="$2" "$1" dev > "$DATA/server.out" 2> "$DATA/server.err" &
    SERVER=$!
    for _ in $(seq 1 120); do
        curl -sf "$BASE/readyz" > /dev/null 2>&1 && break
        sleep 0.5
    done
    curl -sf "$BASE/readyz" > /dev/null || { cat "$DATA/server.err" >&2; exit 1; }
    DATABASE_URL="$(sed -n 's/^ *database: *//p' "$DATA/server.out")"
}

# restart_server BINARY POOL: stops the server gracefully and launches it again on the same
# cluster and data (SERVER_ENV and APNS_ENV as set now).
restart_server() {
    kill -INT "$SERVER"
    wait "$SERVER" || { echo "the server exited with status $?" >&2; tail -n 40 "$DATA/server.err" >&2; exit 1; }
    launch_server "$1" "$2"
}

admin() { curl -sf -H "Authorization: Bearer $ADMIN" -H 'Content-Type: application/json' "$@"; }

# sql QUERY: runs QUERY on the server's database; its rows, unaligned.
sql() { psql "$DATABASE_URL" -Atc "$1"; }

# caught_up POSITION: waits until every shard's cursor has passed POSITION (at most 5 minutes).
caught_up() {
    for _ in $(seq 1 1500); do
        [[ "$(sql "SELECT min(position) >= $1 FROM delivery_shards")" == t ]] && return
        sleep 0.2
    done
    echo "delivery did not catch up with position $1 in 5 minutes" >&2
    exit 1
}

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

# run_wrk SCRIPT CONNECTIONS SECONDS: drives the server with scripts/http-load/SCRIPT.lua (which
# finds wrk's thread count in WRK_THREADS); its report goes to $DATA/SCRIPT.txt, and the CPU it,
# the server and PostgreSQL used to $DATA/SCRIPT.cpu (see measure_cpu).
run_wrk() {
    local threads=$(($2 < 2 ? $2 : 2))
    WRK_THREADS=$threads measure_cpu "$DATA/$1.cpu" wrk -t"$threads" -c"$2" -d"$3s" --latency -s "scripts/http-load/$1.lua" "$BASE" > "$DATA/$1.txt"
}

# CPU clock ticks used so far by a process's threads; with "children", also by its children
# that have ended (PostgreSQL's backends, once they disconnect, count in the postmaster's).
process_ticks() {
    awk -v children="${2:-}" '{print $14 + $15 + (children ? $16 + $17 : 0)}' "/proc/$1/stat" 2> /dev/null || echo 0
}

# CPU ticks of the benchmark's PostgreSQL: every process of its cluster, and the backends that
# have ended.
postgres_ticks() {
    local postmaster total=0 pid
    postmaster="$(head -n 1 "$DATA/postgres/postmaster.pid")"
    total=$(process_ticks "$postmaster" children)
    for pid in $(pgrep -P "$postmaster"); do total=$((total + $(process_ticks "$pid"))); done
    echo "$total"
}

# The machine's CPU ticks so far, all cores: "busy idle steal" (idle counts the time waiting for
# I/O; steal is the time the host ran something else while this machine had work).
machine_ticks() {
    awk '$1 == "cpu" {print $2 + $3 + $4 + $7 + $8, $5 + $6, $9}' /proc/stat
}

# measure_cpu FILE COMMAND...: runs COMMAND (the load tool) and writes to FILE the CPU time in
# seconds that the tool, the server and PostgreSQL used meanwhile, and the shares of the
# machine's CPU time that were idle and stolen: "tool server postgres idle% steal%".
measure_cpu() {
    local file="$1" server postgres machine busy idle steal status=0
    shift
    server=$(process_ticks "$SERVER")
    postgres=$(postgres_ticks)
    machine="$(machine_ticks)"
    /usr/bin/time -f "%U %S" -o "$file.tool" "$@" || status=$?
    server=$(($(process_ticks "$SERVER") - server))
    postgres=$(($(postgres_ticks) - postgres))
    read -r busy idle steal <<< "$(machine_ticks | awk -v before="$machine" \
        'BEGIN {split(before, b, " ")} {print $1 - b[1], $2 - b[2], $3 - b[3]}')"
    awk -v server="$server" -v postgres="$postgres" -v tick="$(getconf CLK_TCK)" \
        -v busy="$busy" -v idle="$idle" -v steal="$steal" \
        'BEGIN {all = busy + idle + steal; if (all == 0) all = 1}
        {printf "%.2f %.2f %.2f %.1f %.1f\n", $(NF - 1) + $NF, server / tick, postgres / tick, 100 * idle / all, 100 * steal / all}' \
        "$file.tool" > "$file"
    return $status
}

# cpu_per_item FILE COUNT: "tool T µs, server S µs, PostgreSQL P µs" per item from a CPU file.
cpu_per_item() {
    awk -v n="$2" '{printf "tool %4.0f µs, server %4.0f µs, PostgreSQL %4.0f µs", 1e6 * $1 / n, 1e6 * $2 / n, 1e6 * $3 / n}' "$1"
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
