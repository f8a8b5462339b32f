#!/usr/bin/env bash
# The write path's SQL alone, for two folders of migrations (and their functions/), in
# alternating pairs: how long `liveline_append_batch` takes per batch in one session, so that a
# change to the stored functions is measured without the HTTP layer, the Swift store or other
# clients moving the figures. Each side gets a database of its own in one private cluster
# (commits without waiting for the WAL flush, no autovacuum or timed checkpoint in the middle of
# a run, so that neither disk time nor background work swamps the SQL), migrated
# by `liveline migrate`, with one app of a large cap and a device cap of 3. Per pair and side,
# BATCHES batches of 8 commands each, each batch its own transaction:
#   openings        8 new activities on 8 devices: admitted together
#   cap pressure    8 new activities on 2 devices (4 each, cap 3): admitted one by one, 2 refused
#   updates         8 plain appends to existing activities
# and BATCHES lone commands, each its own transaction, through the entry point a batch of one
# takes (`liveline_append`), as the deadline worker's and a quiet server's commands do:
#   lone opening    a new activity
#   lone update     an append to an existing activity
# Each pair runs the sides in turn, A first in odd pairs and B first in even ones. Prints
# microseconds per batch (or lone command) for each case and side, the median over the pairs, and in how many
# pairs B was faster.
#   scripts/compare-batch-sql.sh MIGRATIONS_A MIGRATIONS_B [--pairs 5] [--batches 1000] [--binary B]
set -euo pipefail
cd "$(dirname "$0")/.."

usage() {
    echo "usage: $0 MIGRATIONS_A MIGRATIONS_B [--pairs N] [--batches N] [--binary LIVELINE]" >&2
    exit 2
}
[[ $# -ge 2 ]] || usage
FOLDERS=("$(realpath "$1")" "$(realpath "$2")")
shift 2
PAIRS=5
BATCHES=1000
BINARY=.build/release/liveline
while [[ $# -gt 0 ]]; do
    case "$1" in
        --pairs) PAIRS="$2"; shift 2 ;;
        --batches) BATCHES="$2"; shift 2 ;;
        --binary) BINARY="$2"; shift 2 ;;
        *) usage ;;
    esac
done
for folder in "${FOLDERS[@]}"; do
    [[ -d "$folder/functions" ]] || { echo "$folder has no functions/ folder" >&2; exit 2; }
done
if [[ ! -x "$BINARY" ]]; then
    swift build -c release --product liveline
fi

BIN=$(dirname "$(realpath "$(command -v initdb || ls /usr/lib/postgresql/*/bin/initdb | tail -1)")")
CLUSTER=$(mktemp -d /tmp/liveline-batch-sql.XXXXXX)
PORT=$((20000 + RANDOM % 20000))
as_server() {
    if [[ $(id -u) -eq 0 ]]; then runuser -u postgres -- "$@"; else "$@"; fi
}
[[ $(id -u) -eq 0 ]] && chown postgres "$CLUSTER"
stop() {
    as_server "$BIN/pg_ctl" -D "$CLUSTER/data" -m immediate stop >/dev/null 2>&1 || true
    rm -rf "$CLUSTER"
}
trap stop EXIT
as_server "$BIN/initdb" -D "$CLUSTER/data" -U postgres --auth=trust >/dev/null
as_server "$BIN/pg_ctl" -D "$CLUSTER/data" -l "$CLUSTER/log" -w \
    -o "-p $PORT -k $CLUSTER -c listen_addresses='' -c synchronous_commit=off -c autovacuum=off \
        -c checkpoint_timeout=1d -c max_wal_size=20GB" start >/dev/null
psql_on() { psql -X -q -v ON_ERROR_STOP=1 -h "$CLUSTER" -p "$PORT" -U postgres -d "$1" "${@:2}"; }

for side in 0 1; do
    psql_on postgres -c "CREATE DATABASE side_$side"
    DATABASE_URL="postgresql://postgres@/side_$side?host=$CLUSTER&port=$PORT" \
        "$BINARY" migrate --migrations "${FOLDERS[$side]}" --log-level warning >/dev/null
    DATABASE_URL="postgresql://postgres@/side_$side?host=$CLUSTER&port=$PORT" \
        "$BINARY" apps create bench --bundle-id bench --max-open 1000000 --max-open-per-device 3 \
        --migrations "${FOLDERS[$side]}" --log-level warning >/dev/null
    psql_on "side_$side" -c "UPDATE service_limits SET global_max_open = 1000000" \
        -c "SELECT liveline_respread_global_cap()" >/dev/null
    # The log's partitions, where the folder has them (a build before them does not make them).
    psql_on "side_$side" -c "DO \$\$ BEGIN
        IF to_regprocedure('liveline_create_partitions(text)') IS NOT NULL THEN
            PERFORM liveline_create_partitions(parent) FROM (SELECT DISTINCT parent FROM log_partitions) p;
        ELSIF to_regprocedure('liveline_create_partitions()') IS NOT NULL THEN
            PERFORM liveline_create_partitions();
        END IF; END \$\$" >/dev/null
done

# timed DATABASE SETUP STATEMENTS: runs SETUP (SQL, not timed), then STATEMENTS (PL/pgSQL over
# the iteration number b) BATCHES times, each iteration its own transaction; prints µs per
# iteration.
timed() {
    psql_on "$1" -t -A <<SQL
SET synchronous_commit = off;
$2
CREATE TEMP TABLE timing (started timestamptz, finished timestamptz);
INSERT INTO timing VALUES (clock_timestamp(), NULL);
DO \$\$
DECLARE
    v_rows jsonb[];
    v_ids text[];
    v_versions integer[];
BEGIN
    FOR b IN 1 .. $BATCHES LOOP
$3
        COMMIT;
    END LOOP;
END
\$\$;
UPDATE timing SET finished = clock_timestamp();
SELECT round(extract(epoch FROM finished - started) * 1e6 / $BATCHES) FROM timing;
SQL
}

# One case: one call of liveline_append_batch with 8 commands built by the case's expressions
# over the batch number b and the command number k; prints µs per batch.
run_case() {
    local database=$1 activity=$2 device=$3 version=$4 type=$5
    timed "$database" "" "
        SELECT array_agg($activity ORDER BY k), array_agg($version ORDER BY k),
               array_agg(jsonb_build_object('app_id', 'bench', 'activity_id', $activity, 'state', 'pending',
                   'version', $version + 1, 'device_id', $device, 'requested_at', now(), 'last_event_at', now(),
                   'attributes', '{}'::jsonb, 'content_state', jsonb_build_object('batch', b), 'priority_updates', '[]'::jsonb)
                   ORDER BY k)
            INTO v_ids, v_versions, v_rows FROM generate_series(1, 8) AS k;
        PERFORM liveline_append_batch(
            array_fill('bench'::text, ARRAY[8]), v_ids, v_versions, v_rows, array_fill(1, ARRAY[8]),
            array_fill('$type'::text, ARRAY[8]), array_fill('{}'::jsonb, ARRAY[8]), array_fill('app'::text, ARRAY[8]),
            array_fill(now(), ARRAY[8]), array_fill(CASE WHEN $version = 0 THEN 1 ELSE 0 END, ARRAY[8]),
            array_fill(NULL::text, ARRAY[8]), array_fill(NULL::bytea, ARRAY[8]), array_fill(NULL::jsonb, ARRAY[8]),
            '{}', '{}', '{}', '{}', '{}', '{}', '{}', '{}', '{}', NULL, NULL);"
}

# lone_append ACTIVITY VERSION TYPE CONTENT: a call of liveline_append with one command.
lone_append() {
    echo "liveline_append('bench', $1, $2,
            jsonb_build_object('app_id', 'bench', 'activity_id', $1, 'state', 'active', 'version', $2 + 1,
                'requested_at', now(), 'last_event_at', now(), 'attributes', '{}'::jsonb,
                'content_state', $4, 'priority_updates', '[]'::jsonb),
            ARRAY['$3'], ARRAY['{}'::jsonb], ARRAY['app'], ARRAY[now()], 0, NULL, NULL, NULL, NULL, NULL)"
}

# One lone case: one call of liveline_append with one command, an opening of the activity the
# expression over b names, or (an ACTIVITY of its own, opened first, not timed) its b-th update;
# prints µs per command.
run_lone() {
    local database=$1 activity=$2 kind=$3
    local content="jsonb_build_object('lone', b)"
    if [[ $kind == opening ]]; then
        timed "$database" "" "PERFORM $(lone_append "$activity" 0 activity.requested "$content");"
    else
        timed "$database" "DO \$\$ BEGIN PERFORM $(lone_append "$activity" 0 activity.requested "'{}'::jsonb"); END \$\$;" \
            "PERFORM $(lone_append "$activity" b activity.updated "$content");"
    fi
}

CASES=(openings "cap pressure" updates "lone opening" "lone update")
declare -A FIGURES
declare -a WINS
echo "pairs: $PAIRS, batches of 8 per case and run: $BATCHES; µs per batch (A = ${FOLDERS[0]}, B = ${FOLDERS[1]})"
for pair in $(seq 1 "$PAIRS"); do
    line="pair $pair"
    for case_index in 0 1 2 3 4; do
        for order in 0 1; do
            side=$(( (order + pair + 1) % 2 ))
            database="side_$side"
            prefix="'p$pair-'"
            case $case_index in
                0) us=$(run_case "$database" "$prefix || b || '-' || k" "$prefix || b || '-d' || k" 0 activity.requested) ;;
                1) us=$(run_case "$database" "$prefix || 'c' || b || '-' || k" "$prefix || 'c' || b || '-d' || k % 2" 0 \
                    activity.requested) ;;
                2) us=$(run_case "$database" "$prefix || '1-' || k" "$prefix || '1-d' || k" "b" activity.updated) ;;
                3) us=$(run_lone "$database" "$prefix || 'lone-' || b" opening) ;;
                4) us=$(run_lone "$database" "$prefix || 'lone-u' || $order" update) ;;
            esac
            FIGURES[$case_index,$side]+="$us "
            [[ $side == 0 ]] && a_us=$us || b_us=$us
        done
        if [[ $b_us -lt $a_us ]]; then WINS[$case_index]=$(( ${WINS[$case_index]:-0} + 1 )); fi
        line+="  ${CASES[$case_index]} A $a_us B $b_us"
    done
    echo "$line"
done
median() { tr ' ' '\n' | grep . | sort -n | awk '{a[NR] = $1} END {print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2}'; }
for case_index in 0 1 2 3 4; do
    a=$(echo "${FIGURES[$case_index,0]}" | median)
    b=$(echo "${FIGURES[$case_index,1]}" | median)
    printf '%-13s A %6s µs  B %6s µs  B/A %s  B faster in %s of %s pairs\n' "${CASES[$case_index]}" "$a" "$b" \
        "$(awk -v a="$a" -v b="$b" 'BEGIN {printf "%.1f %%", 100 * b / a}')" "${WINS[$case_index]:-0}" "$PAIRS"
done
# Each side must have done the same work: 8 + 6 + 8 events per batch (two openings of each
# cap-pressure batch refused), one per lone command of each case, and the lone updates' openings.
for side in 0 1; do
    events=$(psql_on "side_$side" -t -A -c "SELECT count(*) FROM events")
    expected=$((PAIRS * BATCHES * 24 + PAIRS))
    [[ $events -eq $expected ]] || { echo "side_$side has $events events, expected $expected" >&2; exit 1; }
done
