#!/usr/bin/env bash
# The HTTP API under load, and pgbench running the SQL of an update on the same database in the
# same run. A release build of `liveline dev` serves on a private PostgreSQL cluster (default
# durability), seeded with one app and $ACTIVITIES activities; wrk (a second process) drives
#   1. updates only, then
#   2. a realistic mix: 70 % updates, 15 % requests, 15 % ends,
# over CONNECTIONS connections for SECONDS each; then pgbench runs the two statements an update
# executes (the load query and liveline_append) with 16 clients (#20's reference), while the
# server delivers nothing (it is restarted with delivery off, and on again after, caught up with
# pgbench's events before the next round). The server
# runs with its default pool (10 connections, a quarter of them writers) unless --pool says
# otherwise. ROUNDS rounds of the three alternate, so that neither side gains from
# running later; the ratio is of the means. Each run also reports the CPU that the load tool,
# the server and PostgreSQL used per request (from /proc): the ratio is, roughly, PostgreSQL's
# share of all of it. Figures go to BENCHMARKS.md.
#   scripts/benchmark-http.sh [--connections 32] [--seconds 20] [--pool 10] [--rounds 2] [--binary PATH]
# --binary runs another build of liveline (an older commit's, to measure a change in pairs).
set -euo pipefail
cd "$(dirname "$0")/.."

CONNECTIONS=32
SECONDS_PER_RUN=20
POOL=10
PGBENCH_CLIENTS=16
ROUNDS=2
BINARY=""
while [[ $# -gt 0 ]]; do
    case "$1" in
        --connections) CONNECTIONS="$2"; shift 2 ;;
        --seconds) SECONDS_PER_RUN="$2"; shift 2 ;;
        --pool) POOL="$2"; shift 2 ;;
        --rounds) ROUNDS="$2"; shift 2 ;;
        --binary) BINARY="$2"; shift 2 ;;
        *) echo "usage: $0 [--connections N] [--seconds N] [--pool N] [--rounds N] [--binary PATH]" >&2; exit 2 ;;
    esac
done
source scripts/lib/http-server.sh
require_load_tools
use_release_build
trap stop_server EXIT
start_server "$BINARY" "$POOL"

# The server's counter NAME from /metrics (0 before its first increment).
counter() {
    curl -sf "$BASE/metrics" | awk -v name="$1" '$1 == name {v = $2} END {print v + 0}'
}

report_wrk() {
    local batches commands
    batches="$(counter liveline_command_batches_total)"
    commands="$(counter liveline_batched_commands_total)"
    run_wrk "$1" "$CONNECTIONS" "$SECONDS_PER_RUN"
    printf '%-8s %10s requests/s   p50 %8s   p99 %8s   errors %s\n' "$1" "$(wrk_field "$1" rate)" \
        "$(wrk_field "$1" p50)" "$(wrk_field "$1" p99)" "$(wrk_field "$1" errors)"
    awk -v b="$(( $(counter liveline_command_batches_total) - batches ))" \
        -v c="$(( $(counter liveline_batched_commands_total) - commands ))" \
        'BEGIN {if (b > 0) printf "%-8s commands per write batch: %.1f (%d batches)\n", "", c / b, b}'
    printf '%-8s CPU per request: %s (wrk is the tool)\n' "" "$(cpu_per_item "$DATA/$1.cpu" "$(wrk_field "$1" requests)")"
    wrk_field "$1" rate >> "$DATA/$1.rates"
}

# The two statements of an update as the server runs them (CommandQueries: the load of a command
# that is not a request, then liveline_append), with a real projection row and event data.
# pgbench runs while the server delivers nothing (restarted with delivery off): its events are
# not the server's work, and delivering them meanwhile would take the cores from pgbench. Then,
# before the next round, delivery is on again and catches up with them, so that no round serves
# requests while the worker drains a backlog. Restarting the server restarts its PostgreSQL too:
# each phase after the first starts after a shutdown checkpoint, on cold shared buffers.
run_pgbench() {
    SERVER_ENV="LIVELINE_DELIVERY=off" restart_server "$BINARY" "$POOL"
    measure_cpu "$DATA/pgbench.cpu" pgbench -n -c "$PGBENCH_CLIENTS" -j 2 -T "$SECONDS_PER_RUN" -M prepared -f "$DATA/update.sql" \
        -D "row=$ROW" -D "data=$EVENT" "$DATABASE_URL" > "$DATA/pgbench.txt" 2>&1 || { cat "$DATA/pgbench.txt" >&2; exit 1; }
    local tps
    tps="$(awk '/^tps = / {print $3}' "$DATA/pgbench.txt")"
    printf '%-8s %10s transactions/s (the SQL of an update, %s clients)\n' pgbench "$tps" "$PGBENCH_CLIENTS"
    printf '%-8s CPU per transaction: %s (pgbench is the tool; the server delivers nothing)\n' "" \
        "$(cpu_per_item "$DATA/pgbench.cpu" "$(awk '/number of transactions actually processed/ {print $NF}' "$DATA/pgbench.txt" | cut -d/ -f1)")"
    echo "$tps" >> "$DATA/pgbench.rates"
    if [[ $ROUND -lt $ROUNDS ]]; then
        local head
        head="$(sql 'SELECT max(position) FROM events')"
        SERVER_ENV="" restart_server "$BINARY" "$POOL"
        caught_up "$head"
    fi
}

echo "connections: $CONNECTIONS, seconds per run: $SECONDS_PER_RUN, server pool: $POOL, activities: $ACTIVITIES, rounds: $ROUNDS"
for round in $(seq 1 "$ROUNDS"); do
    echo "round $round"
    export ROUND="$round"
    report_wrk updates
    report_wrk mix
    if [[ $round -eq 1 ]]; then
        ROW="$(sql "SELECT to_jsonb(p)::text FROM activities p WHERE app_id = 'bench' AND activity_id = 'a1'")"
        EVENT="$(sql "SELECT data::text FROM events WHERE type = 'activity.updated' LIMIT 1")"
        PER_CLIENT=$((ACTIVITIES / PGBENCH_CLIENTS))
        cat > "$DATA/update.sql" <<SQL
\set n :client_id * $PER_CLIENT + random(1, $PER_CLIENT)
SELECT a.max_open, a.max_open_per_device, a.priority_budget_per_hour, a.frequent_updates, NULL::bigint, NULL::bigint, (SELECT global_max_open FROM service_limits), NULL::integer, r.*, r.version AS v FROM apps a LEFT JOIN liveline_activity_rows r ON r.app_id = a.app_id AND r.activity_id = 'a' || :n WHERE a.app_id = 'bench' \gset
SELECT first_position, recorded_at FROM liveline_append('bench', 'a' || :n, :v, jsonb_set(:row::jsonb, '{version}', to_jsonb(:v + 1)), ARRAY['activity.updated'], ARRAY[:data::jsonb], ARRAY['app'], ARRAY[now()], 0, NULL, NULL, NULL, NULL, NULL);
SQL
    fi
    run_pgbench
done

mean() { awk '{s += $1} END {printf "%.1f", s / NR}' "$1"; }
echo
echo "means: updates $(mean "$DATA/updates.rates") requests/s, mix $(mean "$DATA/mix.rates") requests/s, pgbench $(mean "$DATA/pgbench.rates") transactions/s"
awk -v u="$(mean "$DATA/updates.rates")" -v p="$(mean "$DATA/pgbench.rates")" 'BEGIN {printf "HTTP updates / pgbench: %5.1f %%  (target >= 100 %%)\n", 100 * u / p}'
