# Shared by the delivery benchmarks (sourced after http-server.sh, not run): a local APNs in a
# process of its own, a backlog of Live Activity pushes, and draining it.

# start_local_apns: `liveline local-apns` in a process of its own, accepting a new key of the
# demo app; sets APNS_PID, APNS_DIR, and APNS_ENV (which points the server at it).
APNS_PID=""
APNS_DIR=""
start_local_apns() {
    local port=18443 secret
    APNS_DIR="$(mktemp -d /tmp/liveline-apns-bench-XXXXXX)"
    openssl ecparam -name prime256v1 -genkey -noout | openssl pkcs8 -topk8 -nocrypt -out "$APNS_DIR/AuthKey.p8"
    "$BINARY" local-apns --port "$port" --team-id BENCHTEAM1 --key-id BENCHKEY01 --bundle-id com.example.demo \
        --key-file "$APNS_DIR/AuthKey.p8" --certificate-file "$APNS_DIR/apns.pem" --quiet \
        > "$APNS_DIR/out" 2> "$APNS_DIR/err" &
    APNS_PID=$!
    for _ in $(seq 1 100); do grep -q listening "$APNS_DIR/out" && break; sleep 0.1; done
    grep -q listening "$APNS_DIR/out" || { cat "$APNS_DIR/err" >&2; exit 1; }
    secret="$(openssl rand -base64 32)"
    APNS_ENV="LIVELINE_SECRET_KEY=$secret LIVELINE_APNS_CA_FILE=$APNS_DIR/apns.pem LIVELINE_APNS_SANDBOX_URL=https://127.0.0.1:$port"
    APNS_ENV+=" LIVELINE_APNS_BROADCAST_SANDBOX_URL=https://127.0.0.1:$port LIVELINE_APNS_CHANNELS_SANDBOX_URL=https://127.0.0.1:$port"
}

# use_local_apns: gives the demo app the key the local APNs accepts.
use_local_apns() {
    env $APNS_ENV DATABASE_URL="$DATABASE_URL" "$BINARY" apps apns set demo --team-id BENCHTEAM1 \
        --key-id BENCHKEY01 --key-file "$APNS_DIR/AuthKey.p8" --environment sandbox > /dev/null
}

cleanup() {
    stop_server
    if [[ -n "$APNS_PID" ]]; then kill -INT "$APNS_PID" 2> /dev/null || true; wait "$APNS_PID" 2> /dev/null || true; fi
    [[ -z "$APNS_DIR" ]] || rm -rf "$APNS_DIR"
}

# apns_ticks: CPU ticks of the local APNs' process (0 when it runs in the server's).
apns_ticks() { if [[ -n "$APNS_PID" ]]; then process_ticks "$APNS_PID"; else echo 0; fi; }

# deliveries_since T0 T1 SECONDS: what the worker recorded for pushes attempted in [T0, T1].
deliveries_since() {
    sql "SELECT count(*) FILTER (WHERE outcome = 'delivered'), count(*) FILTER (WHERE outcome = 'superseded'),
                count(*) FILTER (WHERE outcome NOT IN ('delivered', 'superseded'))
         FROM deliveries WHERE attempted_at BETWEEN '$1' AND '$2'" | tr '|' ' '
}

# seed_backlog PREFIX: BACKLOG activities PREFIX1 … PREFIXN, each with a push token and one
# content update (one curl, three requests, per activity).
seed_backlog() {
    # shellcheck disable=SC2016
    seq 1 "$BACKLOG" | PREFIX="$1" xargs -P 8 -I{} sh -c 'auth="Authorization: Bearer $LIVELINE_KEY"; json="Content-Type: application/json"
        curl -sf -o /dev/null -H "$auth" -H "$json" -X POST "$BASE/v1/activities" \
            -d "{\"activityId\":\"$PREFIX$1\",\"activityType\":\"delivery\",\"contentState\":{\"status\":\"preparing\",\"etaMinutes\":30}}" \
            --next -sf -o /dev/null -H "$auth" -H "$json" -X PUT "$BASE/v1/activities/$PREFIX$1/push-token" \
            -d "{\"pushToken\":\"$(printf %064x $((1000000 + $1)))\"}" \
            --next -sf -o /dev/null -H "$auth" -H "$json" -X POST "$BASE/v1/activities/$PREFIX$1/updates" \
            -d "{\"contentState\":{\"status\":\"on the way\",\"etaMinutes\":12},\"priority\":5}"' _ {}
}

# delivery_on [BINARY]: unless that build (this one by default) delivers already, restarts the
# server with it and delivery on, and waits until it has delivered what was accepted while it
# was off.
DELIVERING=false
RUNNING=""
delivery_on() {
    local binary="${1:-$BINARY}" head
    [[ $DELIVERING == false || $RUNNING != "$binary" ]] || return 0
    head="$(sql 'SELECT max(position) FROM events')"
    SERVER_ENV="" restart_server "$binary" "$POOL"
    DELIVERING=true RUNNING="$binary"
    caught_up "$head"
    sleep 2 # the worker settles into its steady state
}

# delivery_off [BINARY]: restarts the server (this build by default) with LIVELINE_DELIVERY=off.
delivery_off() {
    local binary="${1:-$BINARY}"
    SERVER_ENV="LIVELINE_DELIVERY=off" restart_server "$binary" "$POOL"
    DELIVERING=false RUNNING="$binary"
}

# drain BINARY: restarts the server (BINARY) with delivery on and waits until every shard's cursor
# has passed the log's last event (at most 5 minutes); prints the deliveries made, their rate
# from the first attempt to the last, and the CPU per delivery (the server's also to
# $DATA/drain-cpu, its rate to $DATA/drain-rate), then restarts the server with delivery off.
drain() {
    local head started server postgres apns delivered superseded other span
    head="$(sql 'SELECT max(position) FROM events')"
    SERVER_ENV="" restart_server "$1" "$POOL"
    DELIVERING=true
    started="$(sql 'SELECT now()')"
    server=$(process_ticks "$SERVER")
    postgres=$(postgres_ticks)
    apns=$(apns_ticks)
    caught_up "$head"
    server=$(($(process_ticks "$SERVER") - server))
    postgres=$(($(postgres_ticks) - postgres))
    apns=$(($(apns_ticks) - apns))
    read -r delivered superseded other <<< "$(deliveries_since "$started" infinity)"
    span="$(sql "SELECT extract(epoch FROM max(attempted_at) - min(attempted_at)) FROM deliveries WHERE attempted_at >= '$started'")"
    awk -v d="$delivered" -v sup="$superseded" -v o="$other" -v span="$span" -v server="$server" \
        -v postgres="$postgres" -v apns="$apns" -v where="$APNS" -v tick="$(getconf CLK_TCK)" 'BEGIN {
            printf "  delivered %d in %.2f s: %.0f/s; superseded %d, other outcomes %d\n", d, span, d / span, sup, o
            printf "  CPU per delivery: server %.0f µs (target <= 60 with the local APNs out of process), PostgreSQL %.0f µs", \
                1e6 * server / tick / d, 1e6 * postgres / tick / d
            if (where == "process") printf ", local APNs %.0f µs", 1e6 * apns / tick / d
            printf "\n"
            printf "%.1f\n", 1e6 * server / tick / d > "'"$DATA/drain-cpu"'"
            printf "%.1f\n", d / span > "'"$DATA/drain-rate"'"
        }'
    delivery_off
}

