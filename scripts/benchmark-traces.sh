#!/usr/bin/env bash
# What traces cost the HTTP API, in rounds: each round runs the same release build of
# `liveline dev` three times — traces off, on with 1 % of requests sampled, on with all of them —
# in turn, so that none gains from running later. A run seeds a fresh cluster as
# benchmark-http.sh does, with the demo app, whose activities have push tokens (each update is
# pushed to the local APNs, so a sampled trace runs from the request to APNs' answer), and drives
# `updates` with wrk for SECONDS over CONNECTIONS connections. Traces go over OTLP/HTTP
# (protobuf, swift-otel's batch defaults) to scripts/lib/otlp-sink.py, a collector on loopback
# that keeps nothing. Each run reports the rate, the CPU per request (server, PostgreSQL), the
# write-ahead log and the bytes of `events` and `event_traces` per update, and what the sink
# received; the ratios are of the means. Figures go to BENCHMARKS.md.
#   scripts/benchmark-traces.sh [--rounds 3] [--seconds 20] [--connections 32] [--pool 10] [--binary PATH]
set -euo pipefail
cd "$(dirname "$0")/.."

ROUNDS=3
SECONDS_PER_RUN=20
CONNECTIONS=32
POOL=10
BINARY=""
SINK_PORT=14318
while [[ $# -gt 0 ]]; do
    case "$1" in
        --rounds) ROUNDS="$2"; shift 2 ;;
        --seconds) SECONDS_PER_RUN="$2"; shift 2 ;;
        --connections) CONNECTIONS="$2"; shift 2 ;;
        --pool) POOL="$2"; shift 2 ;;
        --binary) BINARY="$2"; shift 2 ;;
        *) echo "usage: $0 [--rounds N] [--seconds N] [--connections N] [--pool N] [--binary PATH]" >&2; exit 2 ;;
    esac
done
source scripts/lib/http-server.sh
require_load_tools
use_release_build
RESULTS="$(mktemp -d /tmp/liveline-traces-bench-XXXXXX)"
python3 scripts/lib/otlp-sink.py "$SINK_PORT" &
SINK=$!
trap 'stop_server; kill $SINK 2> /dev/null || true' EXIT

# Bytes of a table split by time: its partitions, their indexes and TOAST.
table_bytes() {
    sql "SELECT coalesce(sum(pg_total_relation_size(inhrelid)), 0) FROM pg_inherits WHERE inhparent = '$1'::regclass"
}

# run LABEL ENV...: one run with the server's environment ENV.
run() {
    local label="$1" sink_before sink_ticks wal_before events_before traces_before requests
    shift
    SERVER_ENV="$*" start_server "$BINARY" "$POOL" demo
    sink_before="$(curl -sf "http://127.0.0.1:$SINK_PORT/count")"
    sink_ticks="$(process_ticks "$SINK")"
    wal_before="$(sql 'SELECT pg_current_wal_lsn()')"
    events_before="$(table_bytes events)"
    traces_before="$(table_bytes event_traces)"
    run_wrk updates "$CONNECTIONS" "$SECONDS_PER_RUN"
    requests="$(wrk_field updates requests)"
    sleep 6 # the batch span processor exports every 5 s
    read -r exports sink_bytes <<< "$(curl -sf "http://127.0.0.1:$SINK_PORT/count" | awk -v b="$sink_before" \
        'BEGIN {split(b, x, " ")} {print $1 - x[1], $2 - x[2]}')"
    printf '%-5s %9s requests/s   p50 %8s   p99 %8s   errors %s\n' "$label" "$(wrk_field updates rate)" \
        "$(wrk_field updates p50)" "$(wrk_field updates p99)" "$(wrk_field updates errors)"
    printf '      CPU per request: %s\n' "$(cpu_per_item "$DATA/updates.cpu" "$requests")"
    sql "SELECT round(pg_wal_lsn_diff(pg_current_wal_lsn(), '$wal_before') / $requests),
                round(($(table_bytes events) - $events_before)::numeric / $requests),
                round(($(table_bytes event_traces) - $traces_before)::numeric / $requests),
                (SELECT count(*) FROM event_traces)" |
        awk -F'|' '{printf "      per update: WAL %s B, events %s B, event_traces %s B (%s rows in all)\n", $1, $2, $3, $4}'
    awk -v e="$exports" -v b="$sink_bytes" -v n="$requests" -v t="$(($(process_ticks "$SINK") - sink_ticks))" \
        -v tick="$(getconf CLK_TCK)" 'BEGIN {printf "      exported: %d requests to the collector, %.0f B per update (the collector: %.0f µs of CPU per update)\n", e, b / n, 1e6 * t / tick / n}'
    wrk_field updates rate >> "$RESULTS/$label.rates"
    stop_server
}

COLLECTOR="OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:$SINK_PORT"
echo "rounds: $ROUNDS, seconds per run: $SECONDS_PER_RUN, connections: $CONNECTIONS, server pool: $POOL, activities: $ACTIVITIES"
for round in $(seq 1 "$ROUNDS"); do
    echo "round $round"
    run off
    run 1% "$COLLECTOR" OTEL_TRACES_SAMPLER=parentbased_traceidratio OTEL_TRACES_SAMPLER_ARG=0.01
    run 100% "$COLLECTOR" OTEL_TRACES_SAMPLER=parentbased_always_on
done

mean() { awk '{s += $1} END {printf "%.1f", s / NR}' "$RESULTS/$1.rates"; }
echo
echo "means: off $(mean off), 1 % $(mean 1%), 100 % $(mean 100%) requests/s"
awk -v off="$(mean off)" -v one="$(mean 1%)" -v all="$(mean 100%)" 'BEGIN {
    printf "1 %% sampled / off:   %.3f×  (target >= 0.97)\n", one / off
    printf "100 %% sampled / off: %.3f×  (target >= 0.85)\n", all / off }'
rm -rf "$RESULTS"
