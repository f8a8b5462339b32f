-- The event store: gapless positions, the complete projection, the append function that writes
-- a command's events, projection and cap counts in one statement, idempotency outcomes, and the
-- views dashboards read.

-- Positions. An event's position is its writing transaction's id times 65536 plus its index in
-- that transaction. Positions are strictly increasing along the log; a reader that only reads
-- positions below the oldest transaction still running (see liveline_events_after) never misses
-- an event that commits later, because every later commit has a larger transaction id.
ALTER TABLE events ALTER COLUMN position DROP IDENTITY;
ALTER TABLE events ADD CONSTRAINT events_position_in_transaction
    CHECK (position >> 16 = transaction_id::text::bigint);
DROP INDEX events_transaction;

-- The projection holds everything the state machine needs, so a command loads one row. Its
-- state and deadline kind become checked text, like its other enumerations, so that the store
-- reads them as text and indexes on them still serve its filters.
DROP INDEX activities_open_by_device;
ALTER TABLE activities
    ALTER COLUMN state TYPE text USING state::text,
    ADD CONSTRAINT activities_state CHECK (state IN ('pending', 'active', 'stale', 'ended', 'dismissed')),
    ALTER COLUMN next_deadline_kind TYPE text USING next_deadline_kind::text,
    ADD CONSTRAINT activities_next_deadline_kind CHECK (next_deadline_kind IN ('start', 'stale', 'lifetime', 'dismissal'));
DROP TYPE activity_state;
DROP TYPE deadline_kind;
CREATE INDEX activities_open_by_device ON activities (app_id, device_id)
    WHERE device_id IS NOT NULL AND state IN ('pending', 'active', 'stale');
ALTER TABLE activities RENAME COLUMN updated_at TO last_event_at;
ALTER TABLE activities
    ADD COLUMN style text CHECK (style IN ('standard', 'transient')),
    ADD COLUMN end_reason text CHECK (end_reason IN ('app', 'lifetime_exceeded')),
    ADD COLUMN priority_updates timestamptz[] NOT NULL DEFAULT '{}',
    ADD COLUMN app_stripe smallint CHECK (app_stripe BETWEEN 0 AND 7),
    ADD COLUMN global_stripe smallint CHECK (global_stripe BETWEEN 0 AND 15),
    ADD CONSTRAINT activities_open_holds_stripes
        CHECK ((state IN ('pending', 'active', 'stale')) = (app_stripe IS NOT NULL AND global_stripe IS NOT NULL));

-- An app's open count, split like the global one into stripes that each hold a share of the
-- app's cap, so that openings of one app do not queue behind one row either.
DROP TABLE app_open_counts;
CREATE TABLE app_open_stripes (
    app_id liveline_id NOT NULL REFERENCES apps,
    stripe smallint NOT NULL CHECK (stripe BETWEEN 0 AND 7),
    capacity integer NOT NULL CHECK (capacity >= 0),
    open integer NOT NULL DEFAULT 0 CHECK (open >= 0),
    PRIMARY KEY (app_id, stripe)
);
CREATE VIEW app_open_counts AS
    SELECT app_id, sum(open)::integer AS open FROM app_open_stripes GROUP BY app_id;

-- Idempotency records keep the outcome (the version reached, or the rejection), not a rendered
-- response: a retry is answered from the log itself.
ALTER TABLE idempotency_keys DROP COLUMN response_status, DROP COLUMN response_body,
    ADD COLUMN activity_id text NOT NULL,
    ADD COLUMN outcome jsonb NOT NULL CHECK (jsonb_typeof(outcome) = 'object');

-- An app's activities, newest first, whatever their state.
CREATE INDEX activities_app_newest ON activities (app_id, requested_at DESC, activity_id);

-- An app's cap is spread over its 8 stripes when the app is created and whenever the cap
-- changes (which waits for openings in flight: it locks every stripe of the app).
CREATE FUNCTION liveline_spread_app_cap() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO app_open_stripes (app_id, stripe, capacity)
        SELECT NEW.app_id, s, NEW.max_open / 8 + CASE WHEN s < NEW.max_open % 8 THEN 1 ELSE 0 END
        FROM generate_series(0, 7) AS s
    ON CONFLICT (app_id, stripe) DO UPDATE SET capacity = excluded.capacity;
    RETURN NEW;
END
$$;
CREATE TRIGGER apps_spread_cap AFTER INSERT OR UPDATE OF max_open ON apps
    FOR EACH ROW EXECUTE FUNCTION liveline_spread_app_cap();

-- Raised by liveline_append; the store maps them to rejections and conflicts.
--   LL409 version conflict    DETAIL {"actual": <version or null>}
--   LL001 app cap             DETAIL {"limit": n, "count": n}
--   LL002 global cap          DETAIL {"limit": n, "count": n}
--   LL003 device cap          DETAIL {"limit": n, "count": n}

-- Appends one command's events to a stream and brings the projection and the open counts along,
-- atomically. `p_row` is the projection after the events (every column of activities, as JSON);
-- `p_open_change` is -1 when the command closes the activity (a new activity always opens).
-- Returns the position of the first event and the time recorded.
CREATE FUNCTION liveline_append(
    p_app_id text,
    p_activity_id text,
    p_expected_version integer,
    p_row jsonb,
    p_types text[],
    p_data jsonb[],
    p_causes text[],
    p_occurred_at timestamptz[],
    p_open_change integer,
    p_max_open_per_device integer,
    p_idempotency_key text,
    p_request_sha256 bytea,
    p_outcome jsonb
) RETURNS TABLE (first_position bigint, recorded_at timestamptz)
LANGUAGE plpgsql AS $$
DECLARE
    v_device text := p_row ->> 'device_id';
    v_stripe smallint;
    v_app_stripe smallint;
    v_count bigint;
    v_limit bigint;
    v_version integer;
    v_xid bigint := pg_current_xact_id()::text::bigint;
    v_first bigint;
BEGIN
    IF p_expected_version = 0 THEN
        -- A new activity: it opens, so it must fit every cap. Locks are taken in one order
        -- (app stripe, device, global stripe, activity) by every path, so they cannot deadlock.
        -- Any of the app's stripes with room that no one else holds; if all those are held,
        -- wait for one and take it if it still has room once its holder commits.
        SELECT stripe INTO v_app_stripe FROM app_open_stripes
            WHERE app_id = p_app_id AND open < capacity ORDER BY random() LIMIT 1 FOR UPDATE SKIP LOCKED;
        IF NOT FOUND THEN
            SELECT stripe INTO v_app_stripe FROM app_open_stripes
                WHERE app_id = p_app_id AND open < capacity ORDER BY stripe LIMIT 1 FOR UPDATE;
        END IF;
        IF NOT FOUND THEN
            SELECT sum(open) INTO v_count FROM app_open_stripes WHERE app_id = p_app_id;
            SELECT max_open INTO v_limit FROM apps WHERE app_id = p_app_id;
            RAISE EXCEPTION 'app cap reached' USING ERRCODE = 'LL001',
                DETAIL = json_build_object('limit', v_limit, 'count', v_count)::text;
        END IF;
        UPDATE app_open_stripes SET open = open + 1 WHERE app_id = p_app_id AND stripe = v_app_stripe;
        IF v_device IS NOT NULL THEN
            INSERT INTO device_open_counts AS d (app_id, device_id, open) VALUES (p_app_id, v_device, 1)
            ON CONFLICT (app_id, device_id) DO UPDATE SET open = d.open + 1
                WHERE p_max_open_per_device IS NULL OR d.open < p_max_open_per_device;
            IF NOT FOUND THEN
                SELECT open INTO v_count FROM device_open_counts WHERE app_id = p_app_id AND device_id = v_device;
                RAISE EXCEPTION 'device cap reached' USING ERRCODE = 'LL003',
                    DETAIL = json_build_object('limit', p_max_open_per_device, 'count', v_count)::text;
            END IF;
        END IF;
        -- Any stripe with room that no one else holds; if all those are held, wait for one, and
        -- take it if it still has room once its holder commits.
        SELECT stripe INTO v_stripe FROM global_open_stripes WHERE open < capacity
            ORDER BY random() LIMIT 1 FOR UPDATE SKIP LOCKED;
        IF NOT FOUND THEN
            SELECT stripe INTO v_stripe FROM global_open_stripes WHERE open < capacity
                ORDER BY stripe LIMIT 1 FOR UPDATE;
        END IF;
        IF NOT FOUND THEN
            SELECT sum(open) INTO v_count FROM global_open_stripes;
            SELECT global_max_open INTO v_limit FROM service_limits;
            RAISE EXCEPTION 'global cap reached' USING ERRCODE = 'LL002',
                DETAIL = json_build_object('limit', v_limit, 'count', v_count)::text;
        END IF;
        UPDATE global_open_stripes SET open = open + 1 WHERE stripe = v_stripe;
        INSERT INTO activities
            SELECT * FROM jsonb_populate_record(
                NULL::activities, p_row || jsonb_build_object('app_stripe', v_app_stripe, 'global_stripe', v_stripe))
            ON CONFLICT (app_id, activity_id) DO NOTHING;
        IF NOT FOUND THEN
            SELECT version INTO v_version FROM activities WHERE app_id = p_app_id AND activity_id = p_activity_id;
            RAISE EXCEPTION 'version conflict' USING ERRCODE = 'LL409',
                DETAIL = json_build_object('actual', v_version)::text;
        END IF;
    ELSE
        SELECT app_stripe, global_stripe INTO v_app_stripe, v_stripe FROM activities
            WHERE app_id = p_app_id AND activity_id = p_activity_id AND version = p_expected_version
            FOR UPDATE;
        IF NOT FOUND THEN
            SELECT version INTO v_version FROM activities WHERE app_id = p_app_id AND activity_id = p_activity_id;
            RAISE EXCEPTION 'version conflict' USING ERRCODE = 'LL409',
                DETAIL = json_build_object('actual', v_version)::text;
        END IF;
        IF p_open_change = -1 THEN
            UPDATE app_open_stripes SET open = open - 1 WHERE app_id = p_app_id AND stripe = v_app_stripe;
            IF v_device IS NOT NULL THEN
                UPDATE device_open_counts SET open = open - 1 WHERE app_id = p_app_id AND device_id = v_device;
            END IF;
            UPDATE global_open_stripes SET open = open - 1 WHERE stripe = v_stripe;
            v_app_stripe := NULL;
            v_stripe := NULL;
        END IF;
        UPDATE activities AS a SET
            (state, version, activity_type, attributes, content_state, stale_date, relevance_score,
             push_type, push_token, device_id, start_date, last_timestamp, requested_at, activated_at,
             ended_at, dismissed_at, dismissal_date, next_deadline_at, next_deadline_kind, last_event_at,
             style, end_reason, priority_updates, app_stripe, global_stripe)
            = (r.state, r.version, r.activity_type, r.attributes, r.content_state, r.stale_date, r.relevance_score,
               r.push_type, r.push_token, r.device_id, r.start_date, r.last_timestamp, r.requested_at, r.activated_at,
               r.ended_at, r.dismissed_at, r.dismissal_date, r.next_deadline_at, r.next_deadline_kind, r.last_event_at,
               r.style, r.end_reason, r.priority_updates, v_app_stripe, v_stripe)
            FROM jsonb_populate_record(NULL::activities, p_row) AS r
            WHERE a.app_id = p_app_id AND a.activity_id = p_activity_id;
    END IF;

    -- This transaction's next position: usually the first of its block.
    SELECT coalesce(max(position) + 1, v_xid << 16) INTO v_first FROM events
        WHERE position >= v_xid << 16 AND position < (v_xid + 1) << 16;
    INSERT INTO events (position, transaction_id, app_id, activity_id, version, type, data, caused_by, occurred_at)
        SELECT v_first + e.n - 1, pg_current_xact_id(), p_app_id, p_activity_id, p_expected_version + e.n::integer,
               e.type, e.data, e.cause::event_cause, e.occurred_at
        FROM unnest(p_types, p_data, p_causes, p_occurred_at) WITH ORDINALITY AS e(type, data, cause, occurred_at, n);

    IF p_idempotency_key IS NOT NULL THEN
        INSERT INTO idempotency_keys (app_id, idempotency_key, request_sha256, activity_id, outcome)
            VALUES (p_app_id, p_idempotency_key, p_request_sha256, p_activity_id, p_outcome);
    END IF;
    RETURN QUERY SELECT v_first, now();
END
$$;

-- The projection as the store reads it: every column the state machine needs, in a fixed order,
-- with enumerations as text.
CREATE VIEW liveline_activity_rows AS
    SELECT app_id::text, activity_id::text, state, version, activity_type, attributes, content_state,
           stale_date, relevance_score, push_type, push_token, device_id::text, start_date, last_timestamp,
           requested_at, activated_at, ended_at, dismissed_at, dismissal_date, next_deadline_at,
           next_deadline_kind, last_event_at, style, end_reason, priority_updates
    FROM activities;

-- The positions below which the log is final: every transaction that could still add an event
-- below it has finished. Readers page up to (not including) this bound.
CREATE FUNCTION liveline_stable_position() RETURNS bigint LANGUAGE sql STABLE AS $$
    SELECT pg_snapshot_xmin(pg_current_snapshot())::text::bigint << 16
$$;

-- Dashboard views (documented in docs/event-log.md).
CREATE VIEW open_activities AS
    SELECT app_id, state, count(*) AS activities
    FROM activities WHERE state IN ('pending', 'active', 'stale')
    GROUP BY app_id, state;

CREATE VIEW events_per_minute AS
    SELECT date_trunc('minute', occurred_at) AS minute, app_id, type, count(*) AS events
    FROM events GROUP BY 1, 2, 3;

CREATE VIEW cap_utilisation AS
    SELECT 'app' AS scope, a.app_id, c.open::bigint, a.max_open AS cap,
           round(100.0 * c.open / nullif(a.max_open, 0), 1) AS percent
    FROM apps a JOIN app_open_counts c USING (app_id)
    UNION ALL
    SELECT 'global', NULL, sum(s.open), max(l.global_max_open),
           round(100.0 * sum(s.open) / nullif(max(l.global_max_open), 0), 1)
    FROM global_open_stripes s CROSS JOIN service_limits l;

CREATE VIEW rejections_per_minute AS
    SELECT date_trunc('minute', occurred_at) AS minute, app_id, code, count(*) AS rejections
    FROM rejections GROUP BY 1, 2, 3;

CREATE VIEW alerts_per_minute AS
    SELECT date_trunc('minute', occurred_at) AS minute, app_id, count(*) AS alerts
    FROM events WHERE type = 'activity.updated' AND data ? 'alert'
    GROUP BY 1, 2;

-- Each state an activity entered, when, and for how long (until its next state, or until now).
CREATE VIEW state_intervals AS
    WITH transitions AS (
        SELECT app_id, activity_id, occurred_at,
               CASE type
                   WHEN 'activity.requested' THEN
                       CASE WHEN (data ->> 'startDate')::timestamptz > occurred_at THEN 'pending' ELSE 'active' END
                   WHEN 'activity.started' THEN 'active'
                   WHEN 'activity.became_stale' THEN 'stale'
                   WHEN 'activity.ended' THEN 'ended'
                   WHEN 'activity.dismissed' THEN 'dismissed'
                   WHEN 'activity.updated' THEN 'active'
               END AS state,
               version
        FROM events
        WHERE type IN ('activity.requested', 'activity.started', 'activity.became_stale', 'activity.ended',
                       'activity.dismissed', 'activity.updated')
    ), changes AS (
        SELECT *, lag(state) OVER (PARTITION BY app_id, activity_id ORDER BY version) AS previous
        FROM transitions
    ), entered AS (
        SELECT app_id, activity_id, state, occurred_at AS entered_at, version
        FROM changes WHERE previous IS DISTINCT FROM state
    )
    SELECT app_id, activity_id, state, entered_at,
           lead(entered_at) OVER (PARTITION BY app_id, activity_id ORDER BY version) AS left_at,
           coalesce(lead(entered_at) OVER (PARTITION BY app_id, activity_id ORDER BY version),
                    CASE WHEN state = 'dismissed' THEN entered_at ELSE now() END) - entered_at AS duration
    FROM entered;

CREATE VIEW time_in_state AS
    SELECT app_id, state, count(*) AS intervals, avg(duration) AS average, sum(duration) AS total
    FROM state_intervals WHERE state <> 'dismissed'
    GROUP BY app_id, state;

GRANT SELECT ON open_activities, events_per_minute, cap_utilisation, rejections_per_minute,
    alerts_per_minute, state_intervals, time_in_state TO liveline_dashboard;
GRANT SELECT, INSERT ON idempotency_keys TO liveline_service;
GRANT SELECT ON liveline_activity_rows TO liveline_service;
GRANT SELECT, INSERT, UPDATE ON app_open_stripes TO liveline_service;
GRANT SELECT ON app_open_stripes, app_open_counts TO liveline_dashboard, liveline_service;
GRANT EXECUTE ON FUNCTION liveline_append, liveline_stable_position TO liveline_service;
GRANT EXECUTE ON FUNCTION liveline_stable_position TO liveline_dashboard;
