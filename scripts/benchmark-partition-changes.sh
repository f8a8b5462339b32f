#!/usr/bin/env bash
# What a change to the log's partitions costs the requests around it, measured many times over in
# one run: the soak's load (scripts/http-load/soak.lua, delivery on, lifetimes 2m + 1m) at full
# speed on a release `liveline dev`, and beside it scripts/lib/partition-changes.py: a probe of
# updates, and every PERIOD seconds a partition of `events` filled with ROWS rows, attached,
# detached concurrently and dropped, as creation and retirement do. It prints the p99 of the
# probe's updates in the window of each change and in as long a window with no change. BALLAST
# empty partitions are attached first, so that `events` has as many partitions as in the soak
# (about a dozen): after each change every session plans again over all of them. The drop is
# retirement's: the indexes one at a time, then the table; --drop-at-once drops the table with
# its indexes in one statement, as retirement did before ADR 0032.
#
# The soak (scripts/benchmark-soak.sh) meets about a hundred detaches and drops in 40 minutes, a
# few hundred probe updates; this run meets CYCLES of each, thousands of updates, in a few
# minutes, so that two builds can be compared in pairs. The server keeps no retention and makes
# partitions of an hour, so that no change but the cycles' happens while it runs.
#   scripts/benchmark-partition-changes.sh [--cycles 40] [--rows 100000] [--ballast 10] [--period 12] [--drop-at-once] [--connections 16] [--binary PATH]
set -euo pipefail
cd "$(dirname "$0")/.."

CYCLES=40
ROWS=100000
BALLAST=10
export DROP_AT_ONCE=0
PERIOD=12
CONNECTIONS=16
POOL=10
BINARY=""
while [[ $# -gt 0 ]]; do
    case "$1" in
        --cycles) CYCLES="$2"; shift 2 ;;
        --rows) ROWS="$2"; shift 2 ;;
        --ballast) BALLAST="$2"; shift 2 ;;
        --drop-at-once) DROP_AT_ONCE=1; shift ;;
        --period) PERIOD="$2"; shift 2 ;;
        --connections) CONNECTIONS="$2"; shift 2 ;;
        --binary) BINARY="$2"; shift 2 ;;
        *) echo "usage: $0 [--cycles N] [--rows N] [--ballast N] [--period SECONDS] [--drop-at-once] [--connections N] [--binary PATH]" >&2; exit 2 ;;
    esac
done
source scripts/lib/http-server.sh
require_load_tools
use_release_build
trap stop_server EXIT

export LIVE_SECONDS=90
SERVER_ENV="LIVELINE_PARTITION_INTERVAL=1h LIVELINE_ACTIVE_LIFETIME=2m LIVELINE_DISMISSAL_WINDOW=1m" \
    start_server "$BINARY" "$POOL" demo
# A minute of the load first, so that the log holds rows to fill partitions with and the
# deadline worker ends activities as they come.
export ROUND=warm
run_wrk soak "$CONNECTIONS" 60
echo "warm-up: 60 s at $(wrk_field soak rate) requests/s"
export ROUND=measured
seconds=$(awk -v c="$CYCLES" -v p="$PERIOD" 'BEGIN {printf "%d", c * p + 15}')
run_wrk soak "$CONNECTIONS" "$seconds" &
load=$!
sleep 3
python3 scripts/lib/partition-changes.py "$BASE" "$LIVELINE_KEY" "$DATABASE_URL" "$CYCLES" "$ROWS" "$BALLAST" "$PERIOD"
wait "$load"
echo "load: $(wrk_field soak rate) requests/s, p99 $(wrk_field soak p99), $(wrk_field soak errors) errors"
