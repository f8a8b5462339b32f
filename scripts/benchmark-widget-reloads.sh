#!/usr/bin/env bash
# Widget reloads fanned out (#57). A release `liveline dev` (its private PostgreSQL) delivering to
# `liveline local-apns` in a process of its own, DEVICES devices of the demo app with a widget
# token each (a widget of kind Score). In ROUNDS rounds, with nothing else running:
#   - a backlog of BACKLOG Live Activity updates (each of its own activity) accepted with
#     delivery off, then drained: Live Activity pushes per second (as benchmark-delivery.sh's 2);
#   - one reload of the Score widget on every device (`POST /v1/reloads`, `allDevices`): the
#     202's time, the first push's attempt after the 202 came back, reload pushes per
#     second from the first attempt to the last, their ratio to the round's drain (target ≥ 0.9),
#     the server's and PostgreSQL's CPU per reload, and the server's resident memory at its
#     highest during the fan-out against just before it (target: growth under 20 MB).
# The demo app's widget reload interval is INTERVAL seconds, 0 by default so that every round
# reloads every device (with more, each page reads its devices' past reloads, and a second round
# within the interval is coalesced).
#   scripts/benchmark-widget-reloads.sh [--devices 100000] [--backlog 10000] [--rounds 2] [--pool 16]
#                                       [--interval 0] [--binary PATH]
set -euo pipefail
cd "$(dirname "$0")/.."

DEVICES=100000
BACKLOG=10000
ROUNDS=2
POOL=16
INTERVAL=0
BINARY=""
APNS=process
while [[ $# -gt 0 ]]; do
    case "$1" in
        --devices) DEVICES="$2"; shift 2 ;;
        --backlog) BACKLOG="$2"; shift 2 ;;
        --rounds) ROUNDS="$2"; shift 2 ;;
        --pool) POOL="$2"; shift 2 ;;
        --interval) INTERVAL="$2"; shift 2 ;;
        --binary) BINARY="$2"; shift 2 ;;
        *) echo "usage: $0 [--devices N] [--backlog N] [--rounds N] [--pool N] [--interval S] [--binary PATH]" >&2
           exit 2 ;;
    esac
done
source scripts/lib/http-server.sh
require_load_tools
use_release_build
source scripts/lib/delivery.sh
trap cleanup EXIT
ACTIVITIES=10

# rss_kb: the server's resident memory, in kB.
rss_kb() { awk '/^VmRSS/ {print $2}' "/proc/$SERVER/status"; }

# reload ROUND: one reload of every device's Score widget; waits until each device's reload is
# recorded (at most 5 minutes: its fan-out gone, then every device counted) and prints what it
# took. The wait's own queries are light while the reloads go: a look for the fan-out's rows.
reload() {
    local before peak rss posted answered accepted reload_id server postgres done_devices
    before=$(rss_kb)
    peak=$before
    server=$(process_ticks "$SERVER")
    postgres=$(postgres_ticks)
    posted=$(date +%s.%N)
    accepted="$(curl -sf -X POST "$BASE/v1/reloads" -H "Authorization: Bearer $LIVELINE_KEY" \
        -H 'Content-Type: application/json' -d '{"pushType":"widgets","widgetKinds":["Score"],"allDevices":true}')"
    answered=$(date +%s.%N)
    awk -v a="$posted" -v b="$answered" 'BEGIN {printf "  202 in %.1f ms", 1000 * (b - a)}'
    reload_id="$(sed 's/.*"reloadId":\([0-9]*\).*/\1/' <<< "$accepted")"
    echo ", targets $(sed 's/.*"targets":\([0-9]*\).*/\1/' <<< "$accepted")"
    for _ in $(seq 1 3000); do
        rss=$(rss_kb)
        ((rss > peak)) && peak=$rss
        [[ "$(sql "SELECT count(*) FROM reload_fanouts WHERE reload_id = $reload_id")" == 0 ]] && break
        sleep 0.1
    done
    for _ in $(seq 1 600); do
        done_devices="$(sql "SELECT count(DISTINCT device_id) FROM reload_deliveries
                             WHERE reload_id = $reload_id AND outcome NOT IN ('retrying')")"
        [[ "$done_devices" -ge "$DEVICES" ]] && break
        sleep 0.5
    done
    server=$(($(process_ticks "$SERVER") - server))
    postgres=$(($(postgres_ticks) - postgres))
    sql "SELECT count(*) FILTER (WHERE d.outcome = 'delivered'), count(*) FILTER (WHERE d.outcome <> 'delivered'),
                extract(epoch FROM max(d.attempted_at) - min(d.attempted_at)),
                round(((extract(epoch FROM min(d.attempted_at)) - $answered) * 1000)::numeric, 1)
         FROM reload_deliveries d WHERE d.reload_id = $reload_id" |
        awk -F'|' -v server="$server" -v postgres="$postgres" -v tick="$(getconf CLK_TCK)" -v before="$before" \
            -v peak="$peak" -v drain="$(cat "$DATA/drain-rate")" 'BEGIN {}
            {
                printf "  delivered %d in %.2f s: %.0f/s (%.2f× the drain; target >= 0.9), other outcomes %d\n",
                    $1, $3, $1 / $3, ($1 / $3) / drain, $2
                printf "  first push %.1f ms after the 202 (target <= 100)\n", $4
                printf "  CPU per reload: server %.0f µs, PostgreSQL %.0f µs\n", 1e6 * server / tick / $1, 1e6 * postgres / tick / $1
                printf "  server memory: %.1f MB before, %.1f MB at most during the fan-out: +%.1f MB (target < 20)\n",
                    before / 1024, peak / 1024, (peak - before) / 1024
            }'
}

echo "devices: $DEVICES, backlog: $BACKLOG, rounds: $ROUNDS, server pool: $POOL, widget reload interval: $INTERVAL s"
start_local_apns
SERVER_ENV="LIVELINE_DELIVERY=off" start_server "$BINARY" "$POOL" demo
use_local_apns
admin -X PATCH "$BASE/v1/admin/apps/demo" -d "{\"widgetReloadIntervalSeconds\":$INTERVAL}" > /dev/null
echo "registering $DEVICES widget tokens"
python3 scripts/lib/register-widget-tokens.py "$DEVICES" "$BASE" "$LIVELINE_KEY"
for round in $(seq 1 "$ROUNDS"); do
    echo "round $round: a backlog of $BACKLOG Live Activity updates drained"
    [[ $DELIVERING == false ]] || delivery_off
    seed_backlog "r$round"
    drain "$BINARY"
    echo "round $round: one widget reload to $DEVICES devices"
    delivery_on
    reload "$round"
done
