#!/usr/bin/env bash
# Two builds of `liveline` under the same HTTP load, in alternating pairs: this machine's speed
# drifts more from one run to the next than most changes move it, so a change counts only when
# it wins pair after pair. Each run starts a fresh server (`liveline dev` with a private
# cluster, seeded as by benchmark-http.sh), drives it with wrk for SECONDS — updates, or another
# load of scripts/http-load (`--load requests`: new activities; `--load mix`) — and reports
# the rate, latencies, the server's own CPU time and context switches per request, and
# PostgreSQL's CPU time per request (from /proc). Build each binary with `swift build -c release` and copy it aside first.
#   scripts/compare-http.sh BINARY_A BINARY_B [--pairs 3] [--seconds 15] [--connections 32] [--pool 10] [--load updates]
set -euo pipefail
cd "$(dirname "$0")/.."

usage() {
    echo "usage: $0 BINARY_A BINARY_B [--pairs N] [--seconds N] [--connections N] [--pool N]" \
        "[--migrations-a DIR] [--migrations-b DIR] [--load updates|requests|mix]" >&2
    exit 2
}
[[ $# -ge 2 ]] || usage
BINARIES=("$1" "$2")
shift 2
PAIRS=3
SECONDS_PER_RUN=15
CONNECTIONS=32
POOL=10
MIGRATIONS=(migrations migrations)
LOAD=updates
while [[ $# -gt 0 ]]; do
    case "$1" in
        --pairs) PAIRS="$2"; shift 2 ;;
        --seconds) SECONDS_PER_RUN="$2"; shift 2 ;;
        --connections) CONNECTIONS="$2"; shift 2 ;;
        --pool) POOL="$2"; shift 2 ;;
        --load) LOAD="$2"; shift 2 ;;
        --migrations-a) MIGRATIONS[0]="$2"; shift 2 ;;
        --migrations-b) MIGRATIONS[1]="$2"; shift 2 ;;
        *) usage ;;
    esac
done
for binary in "${BINARIES[@]}"; do
    [[ -x "$binary" ]] || { echo "$binary is not an executable" >&2; exit 2; }
done
[[ -f "scripts/http-load/$LOAD.lua" ]] || { echo "no load scripts/http-load/$LOAD.lua" >&2; exit 2; }
for folder in "${MIGRATIONS[@]}"; do
    [[ -d "$folder" ]] || { echo "$folder is not a folder of migrations" >&2; exit 2; }
done

source scripts/lib/http-server.sh
require_load_tools
trap stop_server EXIT

# Context switches of the server, all threads.
switches() { cat /proc/"$SERVER"/task/*/status | awk '/ctxt_switches/ {n += $2} END {print n}'; }

echo "pairs: $PAIRS, seconds per run: $SECONDS_PER_RUN, connections: $CONNECTIONS, server pool: $POOL, load: $LOAD"
for pair in $(seq 1 "$PAIRS"); do
    for label in A B; do
        side=$([[ $label == A ]] && echo 0 || echo 1)
        SERVER_ENV="LIVELINE_MIGRATIONS=$(realpath "${MIGRATIONS[$side]}")" start_server "${BINARIES[$side]}" "$POOL"
        ticks=$(process_ticks "$SERVER")
        postgres=$(postgres_ticks)
        switched=$(switches)
        run_wrk "$LOAD" "$CONNECTIONS" "$SECONDS_PER_RUN"
        ticks=$(($(process_ticks "$SERVER") - ticks))
        postgres=$(($(postgres_ticks) - postgres))
        switched=$(($(switches) - switched))
        requests=$(wrk_field "$LOAD" requests)
        per_request() { echo "$1 * 1000000 / $(getconf CLK_TCK) / $requests" | bc -l; }
        printf 'pair %s  %s  %9s requests/s  p50 %8s  p99 %8s  errors %s  CPU %4.0f µs/request (PostgreSQL %4.0f)  %.2f switches/request\n' \
            "$pair" "$label" "$(wrk_field "$LOAD" rate)" "$(wrk_field "$LOAD" p50)" "$(wrk_field "$LOAD" p99)" \
            "$(wrk_field "$LOAD" errors)" "$(per_request "$ticks")" "$(per_request "$postgres")" \
            "$(echo "$switched / $requests" | bc -l)"
        stop_server
    done
done
