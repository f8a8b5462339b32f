#!/usr/bin/env bash
# Delivery under load. A release `liveline dev` (its private PostgreSQL, default durability, and
# its local APNs over HTTP/2 and TLS in the same process) with $ACTIVITIES activities of the demo
# app, each with a push token; wrk (a second process) sends content updates:
#   1. delivery off (LIVELINE_DELIVERY=off): updates as fast as they go, for SECONDS;
#   2. delivery on, on a fresh server: the same — the sustained deliveries per second, and the
#      HTTP rate beside case 1's;
#   3. delivery on: updates at about RATE a second — commit-to-APNs-answer latency p50/p99
#      (from `deliveries` joined with `events`: recorded_at to the answer).
# Deliveries are counted from the `deliveries` table over the run, with how many were superseded
# by newer content (latest wins). Figures go to BENCHMARKS.md.
#   scripts/benchmark-delivery.sh [--connections 32] [--seconds 20] [--rate 1000] [--pool 16]
set -euo pipefail
cd "$(dirname "$0")/.."

CONNECTIONS=32
SECONDS_PER_RUN=20
RATE=1000
POOL=16
while [[ $# -gt 0 ]]; do
    case "$1" in
        --connections) CONNECTIONS="$2"; shift 2 ;;
        --seconds) SECONDS_PER_RUN="$2"; shift 2 ;;
        --rate) RATE="$2"; shift 2 ;;
        --pool) POOL="$2"; shift 2 ;;
        *) echo "usage: $0 [--connections N] [--seconds N] [--rate N] [--pool N]" >&2; exit 2 ;;
    esac
done
source scripts/lib/http-server.sh
require_load_tools
swift build -c release --product liveline
BINARY="$(swift build -c release --show-bin-path)/liveline"
trap stop_server EXIT

sql() { psql "$DATABASE_URL" -Atc "$1"; }

# deliveries_since T0 T1 SECONDS: what the worker recorded for pushes attempted in [T0, T1].
deliveries_since() {
    sql "SELECT count(*) FILTER (WHERE outcome = 'delivered'), count(*) FILTER (WHERE outcome = 'superseded'),
                count(*) FILTER (WHERE outcome NOT IN ('delivered', 'superseded'))
         FROM deliveries WHERE attempted_at BETWEEN '$1' AND '$2'" | tr '|' ' '
}

# latency T0 T1: p50 and p99 from an event's commit to APNs' answer, then of its two parts (commit
# to the request leaving, the request itself), in ms, for pushes delivered in [T0, T1].
latency() {
    sql "SELECT $(for part in total wait request; do
                  printf 'round((percentile_cont(0.5) WITHIN GROUP (ORDER BY %s))::numeric, 1), ' "$part"
                  printf 'round((percentile_cont(0.99) WITHIN GROUP (ORDER BY %s))::numeric, 1)' "$part"
                  [[ $part == request ]] || printf ', '
              done)
         FROM (SELECT wait + request AS total, wait, request
               FROM (SELECT extract(epoch FROM d.attempted_at - e.recorded_at) * 1000 AS wait,
                            d.latency_us / 1000.0 AS request
                     FROM deliveries d JOIN events e ON e.position = d.position
                     WHERE d.outcome = 'delivered' AND d.attempted_at BETWEEN '$1' AND '$2') parts) t" | tr '|' ' '
}

# run SCRIPT CONNECTIONS: wrk for SECONDS_PER_RUN; prints the HTTP rate, and the deliveries made
# meanwhile (and in the 3 s after, for the tail).
run() {
    local t0 t1 delivered superseded other
    t0="$(sql 'SELECT now()')"
    run_wrk "$1" "$2" "$SECONDS_PER_RUN"
    sleep 3
    t1="$(sql 'SELECT now()')"
    read -r delivered superseded other <<< "$(deliveries_since "$t0" "$t1")"
    printf '  HTTP updates %10s/s   p50 %8s   p99 %8s   errors %s\n' "$(wrk_field "$1" rate)" \
        "$(wrk_field "$1" p50)" "$(wrk_field "$1" p99)" "$(wrk_field "$1" errors)"
    printf '  CPU per update: %s\n' "$(cpu_per_item "$DATA/$1.cpu" "$(wrk_field "$1" requests)")"
    if [[ "$delivered$superseded$other" != 000 ]]; then
        awk -v d="$delivered" -v s="$SECONDS_PER_RUN" -v sup="$superseded" -v o="$other" \
            'BEGIN {printf "  delivered %d (%.0f/s over the run), superseded %d, other outcomes %d\n", d, d / s, sup, o}'
        read -r p50 p99 wait50 wait99 request50 request99 <<< "$(latency "$t0" "$t1")"
        printf '  commit to APNs answer: p50 %s ms, p99 %s ms (commit to request: p50 %s, p99 %s; request: p50 %s, p99 %s)\n' \
            "$p50" "$p99" "$wait50" "$wait99" "$request50" "$request99"
    fi
    wrk_field "$1" rate > "$DATA/rate"
}

echo "activities: $ACTIVITIES, connections: $CONNECTIONS, seconds per run: $SECONDS_PER_RUN, server pool: $POOL"
echo "1. delivery off, updates as fast as they go"
SERVER_ENV="LIVELINE_DELIVERY=off" start_server "$BINARY" "$POOL" demo
run updates "$CONNECTIONS"
OFF="$(cat "$DATA/rate")"
stop_server

echo "2. delivery on, updates as fast as they go"
start_server "$BINARY" "$POOL" demo
sleep 3 # the worker takes its shards
run updates "$CONNECTIONS"
ON="$(cat "$DATA/rate")"

PACED_CONNECTIONS=20
export DELAY_MS=$((PACED_CONNECTIONS * 1000 / RATE))
echo "3. delivery on, updates at about $RATE/s ($PACED_CONNECTIONS connections, $DELAY_MS ms between an answer and the next)"
run paced "$PACED_CONNECTIONS"

echo
awk -v on="$ON" -v off="$OFF" 'BEGIN {printf "HTTP updates with delivery on / off: %.1f %%  (target >= 80 %%)\n", 100 * on / off}'
