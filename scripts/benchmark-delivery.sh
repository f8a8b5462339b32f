#!/usr/bin/env bash
# Delivery under load. A release `liveline dev` (its private PostgreSQL, default durability)
# delivering to a local APNs over HTTP/2 and TLS in a process of its own (`liveline local-apns`,
# so that the APNs side's TLS and checks are not in the server's CPU; `--apns server` puts it back
# in the server's process, as before 2026-11-26), with $ACTIVITIES activities of the demo app,
# each with a push token; wrk (a third process) sends content updates. CPU is counted per
# process: the server (Liveline alone), PostgreSQL, the local APNs. One server, its
# delivery switched by restarting it with or without LIVELINE_DELIVERY=off (the data stays):
#   2. a backlog drained: BACKLOG more activities, each with a push token and one update, are
#      accepted with delivery off; the server restarts with delivery on and sends them all, with
#      nothing else running — deliveries per second, and CPU per delivery;
#   1 and 3, in ROUNDS alternating rounds (this machine's speed drifts between minutes, so one
#      pair says little): updates as fast as they go with delivery off (1), then on (3), once
#      delivery has caught up — the HTTP rates, their ratio per round and the median ratio, and
#      the sustained deliveries per second under HTTP load;
#   4. delivery on: updates at about RATE a second — commit-to-APNs-answer latency p50/p99
#      (from `deliveries` joined with `events`: recorded_at to the answer);
#   5. broadcast (iOS 18): the same content to the $ACTIVITIES devices, as one update to each of
#      their activities (one push each), against one update to an activity on a channel (one
#      broadcast) — requests to APNs, time from the first commit to the last answer, and CPU of
#      the server and PostgreSQL, both in one run; the broadcast is repeated BROADCASTS times, one
#      after the other, for its latency.
# Deliveries are counted from the `deliveries` table over the run, with how many were superseded
# by newer content (latest wins). Figures go to BENCHMARKS.md.
#   scripts/benchmark-delivery.sh [--connections 32] [--seconds 20] [--rate 1000] [--pool 16]
#                                 [--backlog 10000] [--rounds 3] [--broadcasts 20] [--cases "1 2 3 4 5"]
#                                 [--apns process|server] [--binary PATH] [--compare PATH]
# --binary runs another build of liveline (an older commit's, to measure a change in pairs; with
# --apns process it needs `liveline local-apns`). --compare PATH measures the drain (2) in pairs:
# ROUNDS rounds, each draining one backlog with this build and one with PATH's (a build on the
# same migrations), in alternating order, and the median of each; and the on/off ratio (1 and 3)
# the same way, each round with both builds.
set -euo pipefail
cd "$(dirname "$0")/.."

CONNECTIONS=32
SECONDS_PER_RUN=20
RATE=1000
POOL=16
BACKLOG=10000
ROUNDS=3
BROADCASTS=20
CASES="1 2 3 4 5"
APNS=process
BINARY=""
COMPARE=""
while [[ $# -gt 0 ]]; do
    case "$1" in
        --connections) CONNECTIONS="$2"; shift 2 ;;
        --seconds) SECONDS_PER_RUN="$2"; shift 2 ;;
        --rate) RATE="$2"; shift 2 ;;
        --pool) POOL="$2"; shift 2 ;;
        --backlog) BACKLOG="$2"; shift 2 ;;
        --rounds) ROUNDS="$2"; shift 2 ;;
        --broadcasts) BROADCASTS="$2"; shift 2 ;;
        --cases) CASES="$2"; shift 2 ;;
        --apns) APNS="$2"; shift 2 ;;
        --binary) BINARY="$2"; shift 2 ;;
        --compare) COMPARE="$2"; shift 2 ;;
        *) echo "usage: $0 [--connections N] [--seconds N] [--rate N] [--pool N] [--backlog N] [--rounds N] [--broadcasts N] [--cases \"1 2 3 4 5\"] [--apns process|server] [--binary PATH] [--compare PATH]" >&2; exit 2 ;;
    esac
done
[[ $APNS == process || $APNS == server ]] || { echo "--apns is process or server" >&2; exit 2; }
source scripts/lib/http-server.sh
require_load_tools
use_release_build

source scripts/lib/delivery.sh
trap cleanup EXIT

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
    local t0 t1 delivered superseded other apns
    t0="$(sql 'SELECT now()')"
    apns=$(apns_ticks)
    run_wrk "$1" "$2" "$SECONDS_PER_RUN"
    apns=$(($(apns_ticks) - apns))
    sleep 3
    t1="$(sql 'SELECT now()')"
    read -r delivered superseded other <<< "$(deliveries_since "$t0" "$t1")"
    printf '  HTTP updates %10s/s   p50 %8s   p99 %8s   errors %s\n' "$(wrk_field "$1" rate)" \
        "$(wrk_field "$1" p50)" "$(wrk_field "$1" p99)" "$(wrk_field "$1" errors)"
    printf '  CPU per update: %s' "$(cpu_per_item "$DATA/$1.cpu" "$(wrk_field "$1" requests)")"
    # The local APNs shares the machine's cores: its CPU is part of what delivery on costs here.
    awk -v ticks="$apns" -v tick="$(getconf CLK_TCK)" -v n="$(wrk_field "$1" requests)" \
        'BEGIN {if (ticks > 0) printf ", local APNs %4.0f µs", 1e6 * ticks / tick / n; print ""}'
    if [[ "$delivered$superseded$other" != 000 ]]; then
        awk -v d="$delivered" -v s="$SECONDS_PER_RUN" -v sup="$superseded" -v o="$other" \
            'BEGIN {printf "  delivered %d (%.0f/s over the run), superseded %d, other outcomes %d\n", d, d / s, sup, o}'
        read -r p50 p99 wait50 wait99 request50 request99 <<< "$(latency "$t0" "$t1")"
        printf '  commit to APNs answer: p50 %s ms, p99 %s ms (commit to request: p50 %s, p99 %s; request: p50 %s, p99 %s)\n' \
            "$p50" "$p99" "$wait50" "$wait99" "$request50" "$request99"
    fi
    wrk_field "$1" rate > "$DATA/rate"
}

# fan_out NAME ACTIVITY_PATTERN EXPECTED CHANGES COMMAND…: runs COMMAND (which sends CHANGES
# changes of content), waits until EXPECTED pushes of activities LIKE ACTIVITY_PATTERN were
# delivered since it started (at most 2 minutes), and prints the requests, the time from the first
# commit to the last answer, and the CPU the server and PostgreSQL used meanwhile, per change.
fan_out() {
    local name="$1" pattern="$2" expected="$3" changes="$4" t0 server postgres
    shift 4
    t0="$(sql 'SELECT now()')"
    server=$(process_ticks "$SERVER")
    postgres=$(postgres_ticks)
    "$@"
    for _ in $(seq 1 600); do
        [[ "$(sql "SELECT count(*) FROM deliveries d JOIN events e ON e.position = d.position
                   WHERE d.outcome = 'delivered' AND e.activity_id LIKE '$pattern'
                   AND d.attempted_at >= '$t0'")" -ge "$expected" ]] && break
        sleep 0.2
    done
    server=$(($(process_ticks "$SERVER") - server))
    postgres=$(($(postgres_ticks) - postgres))
    sql "SELECT count(*), round((extract(epoch FROM max(d.attempted_at + d.latency_us * interval '1 microsecond')
                                                   - min(e.recorded_at)) * 1000)::numeric, 1),
                round((percentile_cont(0.5) WITHIN GROUP (ORDER BY extract(epoch FROM d.attempted_at - e.recorded_at)
                                                        * 1000 + d.latency_us / 1000.0))::numeric, 1)
         FROM deliveries d JOIN events e ON e.position = d.position
         WHERE d.outcome = 'delivered' AND e.activity_id LIKE '$pattern' AND d.attempted_at >= '$t0'" |
        awk -F'|' -v name="$name" -v changes="$changes" -v server="$server" -v postgres="$postgres" \
            -v tick="$(getconf CLK_TCK)" '{
            printf "  %s: %d requests to APNs, first commit to last answer %.1f ms, median commit to answer %.1f ms\n",
                name, $1, $2, $3
            printf "    CPU per change of content: server %.1f ms, PostgreSQL %.1f ms\n",
                1000 * server / tick / changes, 1000 * postgres / tick / changes
        }'
}

# per_device_updates: the same content to each of the ACTIVITIES activities, one update each.
per_device_updates() {
    seq 1 "$ACTIVITIES" | xargs -P 8 -I{} curl -sf -o /dev/null -X POST "$BASE/v1/activities/a{}/updates" \
        -H "Authorization: Bearer $LIVELINE_KEY" -H 'Content-Type: application/json' \
        -d '{"contentState":{"status":"delivered","etaMinutes":0},"priority":10}'
}

# broadcast_updates: BROADCASTS updates of the channel's activity, 100 ms apart (each is answered
# long before the next, so none supersedes another).
broadcast_updates() {
    local i
    for i in $(seq 1 "$BROADCASTS"); do
        curl -sf -o /dev/null -X POST "$BASE/v1/activities/match/updates" \
            -H "Authorization: Bearer $LIVELINE_KEY" -H 'Content-Type: application/json' \
            -d '{"contentState":{"status":"delivered","etaMinutes":'"$i"'},"priority":10}'
        sleep 0.1
    done
}

wants() { [[ " $CASES " == *" $1 "* ]]; }

median() { sort -g | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }

echo "activities: $ACTIVITIES, connections: $CONNECTIONS, seconds per run: $SECONDS_PER_RUN, server pool: $POOL, backlog: $BACKLOG, rounds: $ROUNDS"
echo "APNs: $([[ $APNS == process ]] && echo "a local APNs in a process of its own" || echo "the local APNs in the server's process")"
[[ $APNS == server ]] || start_local_apns
SERVER_ENV="LIVELINE_DELIVERY=off" start_server "$BINARY" "$POOL" demo
[[ $APNS == server ]] || use_local_apns
if wants 2 && [[ -z "$COMPARE" ]]; then
    echo "2. a backlog of $BACKLOG updates (each of its own activity) accepted with delivery off, then drained"
    seed_backlog b
    drain "$BINARY"
fi
if wants 2 && [[ -n "$COMPARE" ]]; then
    # In pairs: each round drains a backlog of its own with this build, and one with COMPARE,
    # their order alternating from round to round.
    : > "$DATA/drains-this" && : > "$DATA/drains-other"
    for round in $(seq 1 "$ROUNDS"); do
        for side in $( ((round % 2)) && echo "this other" || echo "other this"); do
            echo "2. round $round: a backlog of $BACKLOG updates drained by $([[ $side == this ]] && echo "$BINARY" || echo "$COMPARE")"
            seed_backlog "r$round$side"
            drain "$([[ $side == this ]] && echo "$BINARY" || echo "$COMPARE")"
            cat "$DATA/drain-cpu" >> "$DATA/drains-$side"
        done
    done
    printf '\nserver CPU per push drained, median of %d rounds: %s µs with %s, %s µs with %s\n' "$ROUNDS" \
        "$(median < "$DATA/drains-this")" "$BINARY" "$(median < "$DATA/drains-other")" "$COMPARE"
fi
if wants 1 || wants 3; then
    # With --compare, each round measures both builds (their order alternating), on one database.
    SIDES=this
    [[ -z "$COMPARE" ]] || SIDES="this other"
    : > "$DATA/ratios-this" && : > "$DATA/ratios-other"
    for round in $(seq 1 "$ROUNDS"); do
        for side in $( ((round % 2)) && echo "$SIDES" || echo "$SIDES" | tr ' ' '\n' | tac | tr '\n' ' '); do
            SIDE_BINARY="$([[ $side == this ]] && echo "$BINARY" || echo "$COMPARE")"
            [[ -z "$COMPARE" ]] || echo "round $round with $SIDE_BINARY"
            OFF="" ON=""
            if wants 1; then
                echo "1. round $round: delivery off, updates as fast as they go"
                delivery_off "$SIDE_BINARY"
                run updates "$CONNECTIONS"
                OFF="$(cat "$DATA/rate")"
            fi
            if wants 3; then
                echo "3. round $round: delivery on, updates as fast as they go"
                delivery_on "$SIDE_BINARY"
                run updates "$CONNECTIONS"
                ON="$(cat "$DATA/rate")"
            fi
            if [[ -n "$OFF" && -n "$ON" ]]; then
                awk -v on="$ON" -v off="$OFF" 'BEGIN {printf "  on / off: %.1f %%\n", 100 * on / off}'
                awk -v on="$ON" -v off="$OFF" 'BEGIN {print 100 * on / off}' >> "$DATA/ratios-$side"
            fi
        done
    done
    if [[ -s "$DATA/ratios-this" ]]; then
        printf '\nHTTP updates with delivery on / off, median of %d rounds: %.1f %%  (target >= 80 %%)\n' \
            "$ROUNDS" "$(median < "$DATA/ratios-this")"
    fi
    if [[ -s "$DATA/ratios-other" ]]; then
        printf 'with %s: %.1f %%\n' "$COMPARE" "$(median < "$DATA/ratios-other")"
    fi
fi
if wants 4; then
    # Each connection waits 20 ms after an answer: with answers in about 6 ms and wrk's own
    # pace, 3 connections per 100 updates a second send about RATE (the rate reached is printed).
    export DELAY_MS=20
    PACED_CONNECTIONS=$(((RATE * 3 + 99) / 100))
    echo "4. delivery on, updates at about $RATE/s ($PACED_CONNECTIONS connections, $DELAY_MS ms between an answer and the next)"
    delivery_on
    run paced "$PACED_CONNECTIONS"
fi
if wants 5; then
    echo "5. the same content to $ACTIVITIES devices: one push to each, against one broadcast on a channel"
    delivery_on
    CHANNEL="$(admin -X POST "$BASE/v1/admin/apps/demo/channels" -d '{"messageStoragePolicy":"mostRecent"}' |
        sed 's/.*"channelId":"\([^"]*\)".*/\1/')"
    curl -sf -o /dev/null -X POST "$BASE/v1/activities" -H "Authorization: Bearer $LIVELINE_KEY" \
        -H 'Content-Type: application/json' \
        -d '{"activityId":"match","activityType":"delivery","contentState":{"status":"preparing","etaMinutes":30},"channelId":"'"$CHANNEL"'"}'
    fan_out "per device (one change: $ACTIVITIES HTTP updates)" 'a%' "$ACTIVITIES" 1 per_device_updates
    fan_out "broadcast ($BROADCASTS changes, 100 ms apart)" match "$BROADCASTS" "$BROADCASTS" broadcast_updates
    echo "  (each broadcast reaches every device subscribed to the channel: one request instead of $ACTIVITIES)"
fi
