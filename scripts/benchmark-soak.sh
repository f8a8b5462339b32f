#!/usr/bin/env bash
# The log's whole life under load, in scaled time: a release `liveline dev` (delivery on, to its
# local APNs) with partitions of a minute, activities that live 2 minutes and stay 1 more on
# screen, and a retention of 4 minutes with an archive folder. wrk drives activities that live
# and die (scripts/http-load/soak.lua: requests with a push token, updates, ends) at full speed
# for MINUTES, in runs of SEGMENT seconds; after each run the script reads the database's size.
#
# First, before the soak, the bytes of database per accepted update: 20 s of updates to the
# seeded activities, delivered, and the growth of the database divided by the updates accepted.
#
# Then the same load, not counted, in runs of SEGMENT seconds until the database's size holds:
# activities reach their lifetime, the deadline worker ends and dismisses them as fast as they
# come, and retirement keeps pace (a partition settles once its activities are all dismissed,
# and is kept 4 minutes more). The warm-up lasts at least WARM_UP minutes, then ends after the
# first run whose size is no more than 2 % above the size three runs before (at most
# MAX_WARM_UP minutes; past that the soak starts anyway and says so). How long the size takes
# to hold depends on the rate: measured, about 20 minutes at 900 requests/s, longer at 1,400,
# so a fixed warm-up measured the first third while the database was still filling.
#
# Then the targets of #40, each printed with its figure:
#   - the database's size is flat: growth over the last third ≤ 5 % of its size (the trend of the size
#     read every 5 s, a least-squares line, so that the sawtooth of retirement does not decide it);
#   - throughput over the last third ≥ 0.95 × the first third, and p99 ≤ 1.2 × it; beside it, the
#     CPU time per request of wrk, the server and PostgreSQL, and the machine's idle and stolen
#     shares, each run and last third / first third. wrk's work per request does not depend on
#     the server: if its CPU per request rises as much as the others', the host slowed this
#     machine; if only the server's or PostgreSQL's rises, they do more work per request; and
#     the server's resident memory after each run, which holds still when nothing leaks; and the
#     host's speed, the CPU time of a fixed computation between runs (this VM reports no steal);
#   - the p99 of a probe's updates (4 streams, each one update every 20 ms, scripts/lib/latency-probe.py) while a
#     partition is detached or dropped within 5 ms of its p99 otherwise;
#   - every retired partition was archived;
#   - no response was a 5xx (the load's errors are its expected 409s), and the server logged no
#     line at error level;
#   - once every activity is dismissed and the server runs again without retention,
#     `liveline verify --archive` is clean over archives and live log, and they hold every event
#     the server acknowledged (`liveline_events_appended_total`).
#
# With --rate N, the soak's load (warm-up included) is paced at N requests/s instead of full
# speed (scripts/http-load/soak.lua, RATE). At full speed the rate follows this host's speed,
# which varies by a factor of two here, and the database's size follows the rate; at a fixed rate
# below what the server sustains, the growth and the p99 of the last third compare like with
# like, and the throughput ratio says only whether the server kept the pace.
#
# With --statements, PostgreSQL also counts every statement's plans and time over the soak
# (pg_stat_statements, nested statements and planning included; it costs a little throughput),
# and the script prints the statements that took the most planning and the most time.
#   scripts/benchmark-soak.sh [--minutes 15] [--warm-up 12] [--max-warm-up 40] [--segment 60] [--connections 16] [--rate N] [--binary PATH] [--statements]
set -euo pipefail
cd "$(dirname "$0")/.."

MINUTES=15
WARM_UP=12
MAX_WARM_UP=40
SEGMENT=60
CONNECTIONS=16
POOL=10
BINARY=""
RATE=0
STATEMENTS=0
while [[ $# -gt 0 ]]; do
    case "$1" in
        --minutes) MINUTES="$2"; shift 2 ;;
        --warm-up) WARM_UP="$2"; shift 2 ;;
        --max-warm-up) MAX_WARM_UP="$2"; shift 2 ;;
        --segment) SEGMENT="$2"; shift 2 ;;
        --connections) CONNECTIONS="$2"; shift 2 ;;
        --rate) RATE="$2"; shift 2 ;;
        --binary) BINARY="$2"; shift 2 ;;
        --statements) STATEMENTS=1; shift ;;
        *) echo "usage: $0 [--minutes N] [--warm-up N] [--max-warm-up N] [--segment SECONDS] [--connections N] [--rate N] [--binary PATH] [--statements]" >&2; exit 2 ;;
    esac
done
if ((MINUTES * 60 / SEGMENT < 3)); then
    echo "$0: --minutes $MINUTES makes fewer than 3 runs of ${SEGMENT}s: the soak compares its first third with its last" >&2
    exit 2
fi
source scripts/lib/http-server.sh
require_load_tools
use_release_build
ARCHIVE="$(mktemp -d /tmp/liveline-soak-archive-XXXXXX)"
PROBE=""
SIZES=""
cleanup() {
    # The probe and the size readings run until stopped, also when the script stops early.
    [[ -z "$SIZES" ]] || kill "$SIZES" 2> /dev/null || true
    [[ -z "$PROBE" ]] || kill -TERM "$PROBE" 2> /dev/null || true
    stop_server
    rm -rf "$ARCHIVE"
}
trap cleanup EXIT

LIFETIMES="LIVELINE_ACTIVE_LIFETIME=2m LIVELINE_DISMISSAL_WINDOW=1m"
SCALED="LIVELINE_PARTITION_INTERVAL=1m $LIFETIMES"
export LIVE_SECONDS=90
SERVER_ENV="$SCALED LIVELINE_RETENTION=4m LIVELINE_ARCHIVE_DIR=$ARCHIVE" start_server "$BINARY" "$POOL" demo
# statement_profile ORDER: the 12 statements first by ORDER (a column of pg_stat_statements).
statement_profile() {
    psql "$DATABASE_URL" -c "SELECT calls, plans, round(total_plan_time) AS plan_ms, round(total_exec_time) AS exec_ms,
            round((total_plan_time / greatest(plans, 1))::numeric, 3) AS ms_a_plan,
            left(regexp_replace(query, '\s+', ' ', 'g'), 90) AS statement
        FROM pg_stat_statements ORDER BY $1 DESC LIMIT 12"
}

metric_sum() {
    curl -sf "$BASE/metrics" | awk -v name="$1" 'index($1, name) == 1 {s += $2} END {printf "%d", s}'
}
acknowledged_before_restart=0
if [[ $STATEMENTS == 1 ]]; then
    # The library loads only at PostgreSQL's start: the server restarts its cluster with it (the
    # events it acknowledged before, the seed's, are counted apart).
    acknowledged_before_restart="$(metric_sum liveline_events_appended_total)"
    sql "ALTER SYSTEM SET shared_preload_libraries = 'pg_stat_statements'" > /dev/null
    SERVER_ENV="$SCALED LIVELINE_RETENTION=4m LIVELINE_ARCHIVE_DIR=$ARCHIVE" restart_server "$BINARY" "$POOL"
    sql "CREATE EXTENSION pg_stat_statements" > /dev/null
    sql "ALTER SYSTEM SET pg_stat_statements.track = 'all'" > /dev/null
    sql "ALTER SYSTEM SET pg_stat_statements.track_planning = on" > /dev/null
    sql "SELECT pg_reload_conf()" > /dev/null
fi
database_bytes() { sql "SELECT pg_database_size(current_database())"; }
# The minutes of time the log holds: from the start of its oldest partition not retired to now.
# The database's size is about this span times the rate, so a size that grows while the span
# holds follows the rate (wrk runs at full speed, and this host's speed varies), not retirement.
held_minutes() { sql "SELECT round(extract(epoch FROM now() - min(from_time)) / 60, 1) FROM log_partitions WHERE parent = 'events' AND retired_at IS NULL AND from_time > '2001-01-01'"; }
# A duration as wrk prints it (850.00us, 12.34ms, 1.20s), in milliseconds.
milliseconds() { awk -v d="$1" 'BEGIN {n = d + 0; if (d ~ /us$/) n /= 1000; else if (d ~ /[0-9]s$/ && d !~ /ms$/) n *= 1000; printf "%.2f", n}'; }
accepted() { echo $(($(wrk_field "$1" requests) - $(wrk_field "$1" errors))); }

# The CPU time per request of the last run, in µs, of wrk, the server and PostgreSQL, and the
# machine's idle and stolen shares: "wrk server postgres idle% steal%". wrk's work per request
# does not depend on the server, so it is the control: if it rises with the others, the host
# gave this machine less CPU, not the server more work.
cpu_per_request() {
    awk -v n="$(wrk_field soak requests)" '{printf "%.0f %.0f %.0f %s %s", 1e6 * $1 / n, 1e6 * $2 / n, 1e6 * $3 / n, $4, $5}' "$DATA/soak.cpu"
}

# The server's resident memory, in MB: it holds still under load unless something keeps what
# it should let go (the local APNs of `liveline dev` kept every push until `keepingAccepted`).
server_megabytes() { awk '/^VmRSS:/ {printf "%.0f", $2 / 1024}' "/proc/$SERVER/status"; }

# The host's speed: the CPU time, in ms, of a fixed computation (the least of three), run
# between two runs. It counts only its own CPU time, so it rises when the host gives this
# machine slower CPU (a busy neighbour, a lower clock), which this VM does not report as steal.
host_milliseconds() {
    python3 -c '
import time
def once():
    start = time.process_time()
    total = 0
    for i in range(2_000_000): total += i
    return time.process_time() - start
print(round(1000 * min(once() for _ in range(3))))'
}

# The bytes of each table, its partitions, indexes and TOAST included: "table bytes" lines.
table_bytes() {
    sql "SELECT coalesce(i.inhparent::regclass::text, c.oid::regclass::text), sum(pg_total_relation_size(c.oid))
         FROM pg_class c LEFT JOIN pg_inherits i ON i.inhrelid = c.oid
         WHERE c.relkind = 'r' AND c.relnamespace = 'public'::regnamespace GROUP BY 1" | tr '|' ' '
}

# Bytes per accepted update, delivered.
before="$(database_bytes)"
table_bytes > "$DATA/tables.before"
run_wrk updates "$CONNECTIONS" 20
caught_up "$(sql 'SELECT max(position) FROM events')"
sql "CHECKPOINT" > /dev/null
grown=$(($(database_bytes) - before))
updates="$(accepted updates)"
echo "bytes of database per accepted update: $((grown / updates)) ($grown bytes for $updates updates, delivered; target <= 600)"
table_bytes > "$DATA/tables.after"
awk -v n="$updates" 'NR == FNR {before[$1] = $2; next} {grew = $2 - before[$1]} grew > 0 {printf "  %-28s %5.0f bytes per update\n", $1, grew / n}' \
    "$DATA/tables.before" "$DATA/tables.after" | sort -k2 -n -r

# The warm-up: runs until the size holds (see above); the sizes after each run, oldest first.
# From here on the load is paced when --rate asks it.
export RATE
pace="$([[ $RATE == 0 ]] && echo "at full speed" || echo "paced at $RATE requests/s")"
sizes=()
warmed=0
while true; do
    # Each run requests activities under ids of its own round.
    export ROUND="warm$((warmed / SEGMENT + 1))"
    run_wrk soak "$CONNECTIONS" "$SEGMENT"
    warmed=$((warmed + SEGMENT))
    sizes+=("$(database_bytes)")
    n=${#sizes[@]}
    held=$([[ $n -gt 3 ]] && awk -v now="${sizes[n - 1]}" -v before="${sizes[n - 4]}" 'BEGIN {print (now <= 1.02 * before)}' || echo 0)
    if [[ $warmed -ge $((WARM_UP * 60)) && $held == 1 ]]; then
        echo "warm-up: $((warmed / 60))m, until the size held ($((sizes[n - 4] / 1000000)) → $((sizes[n - 1] / 1000000)) MB over the last three runs); last run $(wrk_field soak rate) requests/s"
        break
    fi
    if [[ $warmed -ge $((MAX_WARM_UP * 60)) ]]; then
        echo "warm-up: $((warmed / 60))m and the size still grows ($((sizes[n - 1] / 1000000)) MB); counting anyway"
        break
    fi
done
SEGMENTS=$((MINUTES * 60 / SEGMENT))
echo "soak: $SEGMENTS runs of ${SEGMENT}s, $CONNECTIONS connections $pace; partitions of 1m, retention 4m, lifetimes 2m + 1m"
printf '%4s %10s %10s %8s %14s %9s %9s %9s %21s %6s %6s %9s %10s %8s\n' run requests/s p99 errors "database bytes" retired archived "held (m)" \
    "µs/request wrk srv pg" "idle%" steal% "dead rows" "server MB" "host ms"
[[ $STATEMENTS == 0 ]] || sql "SELECT pg_stat_statements_reset()" > /dev/null
: > "$DATA/soak.rows"
# Beside the load, the latency of updates while partitions are retired and otherwise.
python3 scripts/lib/latency-probe.py "$BASE" "$LIVELINE_KEY" "$DATABASE_URL" > "$DATA/probe.txt" 2>&1 &
PROBE=$!
# The database's size every 5 s ("seconds bytes" lines), for the growth's trend.
while sleep 5; do echo "$(date +%s.%N) $(database_bytes)"; done > "$DATA/sizes" &
SIZES=$!
for segment in $(seq 1 "$SEGMENTS"); do
    export ROUND="$segment"
    run_wrk soak "$CONNECTIONS" "$SEGMENT"
    host="$(host_milliseconds)"
    read -r retired archived <<< "$(sql "SELECT count(retired_at), count(archive) FROM log_partitions" | tr '|' ' ')"
    row="$segment $(wrk_field soak rate) $(milliseconds "$(wrk_field soak p99)") $(wrk_field soak errors) $(database_bytes) $retired $archived $(held_minutes)"
    row="$row $(cpu_per_request) $(sql "SELECT sum(n_dead_tup) FROM pg_stat_user_tables") $(server_megabytes) $host"
    echo "$row" >> "$DATA/soak.rows"
    printf '%4s %10s %8sms %8s %14s %9s %9s %9s %7s %6s %6s %6s %6s %9s %10s %8s\n' $row
    [[ $segment -ne $((SEGMENTS / 3)) ]] || table_bytes > "$DATA/tables.first-third"
    [[ $segment -ne $((SEGMENTS - SEGMENTS / 3)) ]] || last_third_from="$(date +%s.%N)"
done
# Which tables the size moved in over the last two thirds (partitions, indexes and TOAST included).
table_bytes > "$DATA/tables.end"
echo "bytes by table, after the first third → at the end:"
awk 'NR == FNR {before[$1] = $2; next} ($2 > 1e6 || before[$1] > 1e6) {printf "  %-28s %6.1f → %6.1f MB\n", $1, before[$1] / 1e6, $2 / 1e6}' \
    "$DATA/tables.first-third" "$DATA/tables.end"

if [[ $STATEMENTS == 1 ]]; then
    echo "statements over the soak, by planning time (ms):"
    statement_profile total_plan_time
    echo "statements over the soak, by time executing (ms; a function's includes its statements'):"
    statement_profile total_exec_time
fi

kill "$SIZES"
kill -TERM "$PROBE"
wait "$PROBE" || true
SIZES=""
PROBE=""
cat "$DATA/probe.txt"

third=$((SEGMENTS / 3))
awk -v third="$third" -v n="$SEGMENTS" -v pace="$pace" '
    NR <= third {r1 += $2; p1 += $3; w1 += $9; s1 += $10; g1 += $11; i1 += $12; t1 += $13; h1 += $16; e1 += ($10 + $11) / $9}
    NR > n - third {r3 += $2; p3 += $3; w3 += $9; s3 += $10; g3 += $11; i3 += $12; t3 += $13; h3 += $16; e3 += ($10 + $11) / $9}
    NR == n - third {start = $5; held_start = $8}
    NR == n {end = $5; held_end = $8; memory_end = $15}
    NR == 1 {memory_start = $15}
    END {
        r1 /= third; r3 /= third; p1 /= third; p3 /= third
        growth = 100 * (end - start) / end
        printf "database size, last third: %.1f %% from its first reading to its last\n", growth
        printf "time the log holds, last third: %.1f → %.1f minutes (flat: retirement keeps pace, whatever the rate)\n", held_start, held_end
        printf "throughput, last third / first third: %.3f (%.0f / %.0f requests/s, %s; target >= 0.95)\n", r3 / r1, r3, r1, pace
        printf "p99, last third / first third: %.2f (%.1f / %.1f ms; target <= 1.2)\n", p3 / p1, p3, p1
        printf "host speed, last third / first third: %.3f (the CPU time of a fixed computation, %.0f / %.0f ms: above 1, the host was slower)\n", h3 / h1, h3 / third, h1 / third
        printf "server memory: %d MB after the first run, %d MB after the last\n", memory_start, memory_end
        printf "CPU per request, last third / first third: wrk %.3f (the control), server %.3f, PostgreSQL %.3f; idle %.1f → %.1f %%, steal %.1f → %.1f %%\n",
            w3 / w1, s3 / s1, g3 / g1, i1 / third, i3 / third, t1 / third, t3 / third
        printf "CPU per request of the server and PostgreSQL relative to wrk, last third / first third: %.3f (%.1f / %.1f; above 1, they do more per request as the log ages, whatever the host)\n",
            e3 / e1, e3 / third, e1 / third
    }' "$DATA/soak.rows"
# The growth over the last third: the trend of the size read every 5 s (a least-squares line, so
# that where the sawtooth of retirement stands at its two ends does not decide it), over the
# third's length, as a share of its mean size.
awk -v from="$last_third_from" '$1 >= from {x = $1 - from; n++; t += x; b += $2; tt += x * x; tb += x * $2; if (n == 1) first = x; last = x}
    END {
        slope = (n * tb - t * b) / (n * tt - t * t)
        printf "database growth over the last third: %.1f %% of its size (trend of %d readings every 5 s; target <= 5 %%)\n",
            100 * slope * (last - first) / (b / n), n
    }' "$DATA/sizes"
echo "retired partitions without an archive: $(sql "SELECT count(*) FROM log_partitions WHERE retired_at IS NOT NULL AND archive IS NULL")"
# The load's errors are its expected 409s (updates to activities the server ended); a 5xx is a fault.
echo "responses 5xx since the server started, warm-up included: $(curl -sf "$BASE/metrics" |
    awk '/^hb_requests\{/ && /http_response_status_code="5/ {n += $NF} END {printf "%d", n}') (target 0)"
# Under normal traffic the server logs nothing at error level (docs/api.md#operations lists the
# lines that say something is wrong); the log is read before the restart below starts a new one.
errors="$(grep -cE '^[^ ]+ (error|critical) ' "$DATA/server.err" || true)"
echo "lines at error level in the server's log, warm-up included: $errors (target 0)"
grep -E '^[^ ]+ (error|critical) ' "$DATA/server.err" | cut -c1-300 | sort | uniq -c | sort -rn | head -5 || true

# Every activity dismissed, then no more retirement while verify reads, and nothing appended.
for _ in $(seq 1 150); do
    [[ "$(sql "SELECT count(*) FROM activities WHERE state <> 'dismissed'")" == 0 ]] && break
    sleep 2
done
acknowledged=$((acknowledged_before_restart + $(metric_sum liveline_events_appended_total)))
SERVER_ENV="$SCALED" restart_server "$BINARY" "$POOL"
env $LIFETIMES DATABASE_URL="$DATABASE_URL" "$BINARY" verify --archive "$ARCHIVE" --json > "$DATA/verify.json" || true
python3 - "$DATA/verify.json" "$acknowledged" << 'PY'
import json, sys
summary = json.load(open(sys.argv[1]))
archive = summary["archive"]
held = summary["events"] + archive["events"]
print(f"verify --archive: {len(summary['findings'])} findings, {len(archive['problems'])} archive problems, "
      f"{archive['archives']} archives ({archive['events']} events) + live log ({summary['events']} events)")
for problem in archive["problems"][:5]: print("  problem:", problem)
for finding in summary["findings"][:5]: print("  finding:", finding)
print(f"events acknowledged by the server: {sys.argv[2]}; held by archives and live log: {held}"
      f" ({'all' if held == int(sys.argv[2]) else 'NOT all'})")
PY
