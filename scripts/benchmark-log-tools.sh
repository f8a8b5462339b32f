#!/usr/bin/env bash
# `liveline verify`, `replay` and `audit` on a generated log of a million events. A release build
# of `liveline dev` provides a private, migrated PostgreSQL cluster (default durability); the log
# is written by SQL in bulk (an equivalent of the append path: the same rows `liveline_append`
# writes to `events`, valid for the strict fold), 100,000 activities of 10 events each:
# requested, seven updates, ended with immediate dismissal, dismissed. Reports events/s and
# peak memory (GNU time). Figures go to BENCHMARKS.md.
#   scripts/benchmark-log-tools.sh [--activities 100000]
set -euo pipefail
cd "$(dirname "$0")/.."

ACTIVITIES=100000
if [[ "${1:-}" == "--activities" ]]; then ACTIVITIES="$2"; fi
BATCH=5000 # activities per transaction: 50,000 events, under the 65,536 positions a transaction has
PORT=18092

swift build -c release --product liveline
BIN="$(swift build -c release --show-bin-path)/liveline"
DATA="$(mktemp -d /tmp/liveline-log-bench-XXXXXX)"
chmod 755 "$DATA"
SERVER=""
cleanup() {
    if [[ -n "$SERVER" ]]; then kill -INT "$SERVER" 2> /dev/null || true; wait "$SERVER" 2> /dev/null || true; fi
    rm -rf "$DATA"
}
trap cleanup EXIT

LIVELINE_DEV_DATA="$DATA" LIVELINE_PORT="$PORT" LIVELINE_LOG_LEVEL=warning "$BIN" dev > "$DATA/server.out" 2> "$DATA/server.err" &
SERVER=$!
for _ in $(seq 1 120); do
    curl -sf "http://127.0.0.1:$PORT/readyz" > /dev/null 2>&1 && break
    sleep 0.5
done
export DATABASE_URL="$(sed -n 's/^ *database: *//p' "$DATA/server.out")"

psql "$DATABASE_URL" -qc "INSERT INTO apps (app_id, bundle_id, max_open) VALUES ('bench', 'com.example.bench', 1000000)"
started=$(date +%s.%N)
for ((first = 0; first < ACTIVITIES; first += BATCH)); do
    psql "$DATABASE_URL" -q -v ON_ERROR_STOP=1 <<SQL
WITH steps AS (
    SELECT i, v,
           timestamptz '2026-11-21 08:00:00+00' + make_interval(secs => i * 0.001 + least(v - 1, 8)) AS at
    FROM generate_series($first, least($first + $BATCH, $ACTIVITIES) - 1) AS i, generate_series(1, 10) AS v
)
INSERT INTO events (position, transaction_id, app_id, activity_id, version, type, data, caused_by, occurred_at, recorded_at)
SELECT pg_current_xact_id()::text::bigint * 65536 + row_number() OVER (ORDER BY i, v) - 1, pg_current_xact_id(),
       'bench', 'a' || i, v,
       CASE WHEN v = 1 THEN 'activity.requested' WHEN v <= 8 THEN 'activity.updated'
            WHEN v = 9 THEN 'activity.ended' ELSE 'activity.dismissed' END,
       CASE WHEN v = 1 THEN jsonb_build_object('activityType', 'delivery', 'attributes', jsonb_build_object('order', 'A-' || i),
                                               'content', jsonb_build_object('contentState', jsonb_build_object('stage', 'packed')))
            WHEN v <= 8 THEN jsonb_build_object('content', jsonb_build_object('contentState', jsonb_build_object('stage', 'step ' || v, 'eta', 40 - v)),
                                                'priority', 5)
            WHEN v = 9 THEN jsonb_build_object('reason', 'app', 'dismissalPolicy', 'immediate',
                                               'dismissalDate', to_char(at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'))
            ELSE jsonb_build_object('reason', 'immediate') END,
       (CASE WHEN v = 10 THEN 'system' ELSE 'app' END)::event_cause,
       at, at
FROM steps;
SQL
done
EVENTS=$(psql "$DATABASE_URL" -Atc "SELECT count(*) FROM events")
printf 'generated %s events in %.1f s\n' "$EVENTS" "$(echo "$(date +%s.%N) - $started" | bc)"

# Runs a command; prints its time, the rate over `events` events, its own CPU time (the rest is
# PostgreSQL's and waiting), its peak memory and its last line.
measure() {
    local label="$1" events="$2"; shift 2
    local begin seconds rss
    begin=$(date +%s.%N)
    /usr/bin/time -f "%M %U %S" -o "$DATA/rss" "$@" > "$DATA/out.txt" 2>&1 || true
    seconds=$(echo "$(date +%s.%N) - $begin" | bc)
    read -r rss user system < <(tail -n 1 "$DATA/rss")
    printf '%-26s %7.2f s  %9.0f events/s  CPU %6.2f s  peak RSS %6.1f MiB   %s\n' "$label" "$seconds" \
        "$(echo "$events / $seconds" | bc -l)" "$(echo "$user + $system" | bc -l)" "$(echo "$rss / 1024" | bc -l)" \
        "$(tail -n 1 "$DATA/out.txt")"
}
measure "liveline verify" "$EVENTS" "$BIN" verify
# The bulk log has no projection yet: the first replay builds every row; the next ones find
# nothing to change (the usual case), with and without --verify.
measure "liveline replay (all new)" "$EVENTS" "$BIN" replay
measure "liveline replay --verify" "$EVENTS" "$BIN" replay --verify
measure "liveline replay (same)" "$EVENTS" "$BIN" replay
measure "liveline audit" 10 "$BIN" audit bench a777
