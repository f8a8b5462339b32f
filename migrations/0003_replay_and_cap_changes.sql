-- Exact caps across cap changes, the gate that lets `liveline replay` swap the projection in
-- while the server keeps serving, and the audit trail of administrative changes.

-- Lowering a cap below the open count used to leave stripes holding more than their new share
-- while others had room, so concurrent requests could open activities beyond the cap. Now a
-- cap change gives every stripe at least what it holds, and when the open count is above the
-- new cap, the excess is recorded: each closing retires one unit of excess (and its stripe's
-- share) before any room is given back. Invariant, per app and globally:
--   every stripe's open <= its capacity, and sum(capacity) - open_excess = the cap.
ALTER TABLE apps ADD COLUMN open_excess integer NOT NULL DEFAULT 0 CHECK (open_excess >= 0);
ALTER TABLE service_limits ADD COLUMN open_excess integer NOT NULL DEFAULT 0 CHECK (open_excess >= 0);

-- Spreads an app's cap over its stripes from what they hold now. Locks the app's stripes (in
-- stripe order), so it waits for openings and closings of the app in flight. Runs when an app is
-- created, when its cap changes, and when replay has recounted. Whoever changes a cap locks the
-- stripes before the app's row, the order closings take them in.
CREATE FUNCTION liveline_respread_app_cap(p_app_id text) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    v_cap bigint;
    v_open bigint;
    v_room bigint;
BEGIN
    INSERT INTO app_open_stripes (app_id, stripe, capacity)
        SELECT p_app_id, s, 0 FROM generate_series(0, 7) AS s
    ON CONFLICT (app_id, stripe) DO NOTHING;
    PERFORM 1 FROM app_open_stripes WHERE app_id = p_app_id ORDER BY stripe FOR UPDATE;
    SELECT max_open INTO v_cap FROM apps WHERE app_id = p_app_id;
    SELECT sum(open) INTO v_open FROM app_open_stripes WHERE app_id = p_app_id;
    v_room := greatest(v_cap - v_open, 0);
    UPDATE app_open_stripes
        SET capacity = open + v_room / 8 + CASE WHEN stripe < v_room % 8 THEN 1 ELSE 0 END
        WHERE app_id = p_app_id;
    UPDATE apps SET open_excess = greatest(v_open - v_cap, 0)
        WHERE app_id = p_app_id AND open_excess <> greatest(v_open - v_cap, 0);
END
$$;

-- The same for the global cap over the 16 global stripes.
CREATE FUNCTION liveline_respread_global_cap() RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    v_cap bigint;
    v_open bigint;
    v_room bigint;
BEGIN
    PERFORM 1 FROM global_open_stripes ORDER BY stripe FOR UPDATE;
    SELECT global_max_open INTO v_cap FROM service_limits;
    SELECT sum(open) INTO v_open FROM global_open_stripes;
    v_room := greatest(v_cap - v_open, 0);
    UPDATE global_open_stripes
        SET capacity = open + v_room / 16 + CASE WHEN stripe < v_room % 16 THEN 1 ELSE 0 END;
    UPDATE service_limits SET open_excess = greatest(v_open - v_cap, 0)
        WHERE open_excess <> greatest(v_open - v_cap, 0);
END
$$;

CREATE OR REPLACE FUNCTION liveline_spread_app_cap() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM liveline_respread_app_cap(NEW.app_id);
    RETURN NEW;
END
$$;

-- Every append passes this gate first, in ROW EXCLUSIVE mode (which never waits for another
-- append). Replay takes it in EXCLUSIVE mode for its final catch-up and swap: appends then wait
-- at the gate, before they hold any lock the swap needs, so the two cannot deadlock.
CREATE TABLE liveline_append_gate ();
GRANT UPDATE ON liveline_append_gate TO liveline_service;

-- Replay's scratch space, used by one replay at a time (it holds a session advisory lock).
-- Unlogged: it is rebuilt from the log whenever it is needed, so a crash loses nothing.
--   activities_replay          the projection as the log says it is (no constraints: it may
--                              hold open activities whose stripes are not chosen yet)
--   activities_replay_rows     rows as replay sends them with COPY: the JSON objects that
--                              jsonb_populate_record reads, as for appends
--   activities_replay_changes  activities whose live row differs from the rebuilt one
CREATE UNLOGGED TABLE activities_replay (LIKE activities INCLUDING DEFAULTS, PRIMARY KEY (app_id, activity_id));
CREATE UNLOGGED TABLE activities_replay_rows (row jsonb NOT NULL);
CREATE UNLOGGED TABLE activities_replay_changes (
    app_id text NOT NULL,
    activity_id text NOT NULL,
    PRIMARY KEY (app_id, activity_id)
);
-- The rebuilt projection with the columns, in the order, of liveline_activity_rows.
CREATE VIEW liveline_replay_rows AS
    SELECT app_id::text, activity_id::text, state, version, activity_type, attributes, content_state,
           stale_date, relevance_score, push_type, push_token, device_id::text, start_date, last_timestamp,
           requested_at, activated_at, ended_at, dismissed_at, dismissal_date, next_deadline_at,
           next_deadline_kind, last_event_at, style, end_reason, priority_updates
    FROM activities_replay;
GRANT SELECT, INSERT, UPDATE, DELETE, TRUNCATE ON activities_replay, activities_replay_rows,
    activities_replay_changes TO liveline_service;
GRANT SELECT ON liveline_replay_rows TO liveline_service;
GRANT UPDATE ON device_open_counts, global_open_stripes, app_open_stripes TO liveline_service;

-- liveline_append as in 0002, with the gate, and closings that retire excess first.
CREATE OR REPLACE FUNCTION liveline_append(
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
    LOCK TABLE liveline_append_gate IN ROW EXCLUSIVE MODE;
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
            -- While a lowered cap leaves excess, a closing retires one unit of it with its
            -- stripe's share instead of making room. The stripe is locked before the app's (or
            -- the service's) row, as a cap change does; the row only while it records excess.
            UPDATE app_open_stripes SET open = open - 1 WHERE app_id = p_app_id AND stripe = v_app_stripe;
            UPDATE apps SET open_excess = open_excess - 1 WHERE app_id = p_app_id AND open_excess > 0;
            IF FOUND THEN
                UPDATE app_open_stripes SET capacity = capacity - 1 WHERE app_id = p_app_id AND stripe = v_app_stripe;
            END IF;
            IF v_device IS NOT NULL THEN
                UPDATE device_open_counts SET open = open - 1 WHERE app_id = p_app_id AND device_id = v_device;
            END IF;
            UPDATE global_open_stripes SET open = open - 1 WHERE stripe = v_stripe;
            UPDATE service_limits SET open_excess = open_excess - 1 WHERE open_excess > 0;
            IF FOUND THEN
                UPDATE global_open_stripes SET capacity = capacity - 1 WHERE stripe = v_stripe;
            END IF;
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

GRANT EXECUTE ON FUNCTION liveline_respread_app_cap(text), liveline_respread_global_cap() TO liveline_service;
GRANT UPDATE ON service_limits TO liveline_service;

-- Establish the invariant for the caps as they stand.
SELECT liveline_respread_app_cap(app_id) FROM apps ORDER BY app_id;
SELECT liveline_respread_global_cap();

-- The audit trail of administrative changes: apps created and changed, keys issued and revoked,
-- the global cap. Written by triggers, so that every change is recorded whoever makes it; the
-- store names the actor with `SET LOCAL liveline.actor` (`admin_api`, `command_line`,
-- `configuration`); a change made in plain SQL is recorded as `sql:<role>`. Append-only.
CREATE TABLE admin_changes (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    occurred_at timestamptz NOT NULL DEFAULT now(),
    actor text NOT NULL,
    action text NOT NULL CHECK (action IN ('app.created', 'app.updated', 'key.issued', 'key.revoked', 'limits.updated')),
    app_id text,
    details jsonb NOT NULL DEFAULT '{}'::jsonb CHECK (jsonb_typeof(details) = 'object')
);
CREATE INDEX admin_changes_app_time ON admin_changes (app_id, occurred_at);
CREATE TRIGGER admin_changes_no_update_or_delete BEFORE UPDATE OR DELETE ON admin_changes
    FOR EACH ROW EXECUTE FUNCTION liveline_refuse_event_change();
CREATE TRIGGER admin_changes_no_truncate BEFORE TRUNCATE ON admin_changes
    FOR EACH STATEMENT EXECUTE FUNCTION liveline_refuse_event_change();

CREATE FUNCTION liveline_record_admin_change(p_action text, p_app_id text, p_details jsonb)
RETURNS void LANGUAGE sql AS $$
    INSERT INTO admin_changes (actor, action, app_id, details)
    VALUES (coalesce(nullif(current_setting('liveline.actor', true), ''), 'sql:' || current_user),
            p_action, p_app_id, p_details)
$$;

-- An app's settings as the API names them.
CREATE FUNCTION liveline_app_settings(a apps) RETURNS jsonb LANGUAGE sql IMMUTABLE AS $$
    SELECT jsonb_build_object('bundleId', a.bundle_id, 'maxOpen', a.max_open,
        'maxOpenPerDevice', a.max_open_per_device, 'priorityBudgetPerHour', a.priority_budget_per_hour,
        'frequentUpdates', a.frequent_updates)
$$;

CREATE FUNCTION liveline_audit_app() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    v_before jsonb;
    v_after jsonb := liveline_app_settings(NEW);
    v_changed jsonb;
BEGIN
    IF TG_OP = 'INSERT' THEN
        PERFORM liveline_record_admin_change('app.created', NEW.app_id, v_after);
        RETURN NULL;
    END IF;
    v_before := liveline_app_settings(OLD);
    -- Only the settings that changed, each as {"from": …, "to": …}.
    SELECT jsonb_object_agg(key, jsonb_build_object('from', v_before -> key, 'to', value)) INTO v_changed
    FROM jsonb_each(v_after) WHERE v_before -> key IS DISTINCT FROM value;
    IF v_changed IS NOT NULL THEN
        PERFORM liveline_record_admin_change('app.updated', NEW.app_id, v_changed);
    END IF;
    RETURN NULL;
END
$$;
CREATE TRIGGER apps_audit
    AFTER INSERT OR UPDATE OF bundle_id, max_open, max_open_per_device, priority_budget_per_hour, frequent_updates ON apps
    FOR EACH ROW EXECUTE FUNCTION liveline_audit_app();

CREATE FUNCTION liveline_audit_key() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        PERFORM liveline_record_admin_change('key.issued', NEW.app_id, jsonb_build_object('keyId', NEW.key_id));
    ELSIF OLD.revoked_at IS NULL AND NEW.revoked_at IS NOT NULL THEN
        PERFORM liveline_record_admin_change('key.revoked', NEW.app_id, jsonb_build_object('keyId', NEW.key_id));
    END IF;
    RETURN NULL;
END
$$;
CREATE TRIGGER api_keys_audit AFTER INSERT OR UPDATE ON api_keys FOR EACH ROW EXECUTE FUNCTION liveline_audit_key();

CREATE FUNCTION liveline_audit_limits() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF OLD.global_max_open IS DISTINCT FROM NEW.global_max_open THEN
        PERFORM liveline_record_admin_change('limits.updated', NULL,
            jsonb_build_object('globalMaxOpen', jsonb_build_object('from', OLD.global_max_open, 'to', NEW.global_max_open)));
    END IF;
    RETURN NULL;
END
$$;
CREATE TRIGGER service_limits_audit AFTER UPDATE ON service_limits FOR EACH ROW EXECUTE FUNCTION liveline_audit_limits();

REVOKE UPDATE, DELETE, TRUNCATE ON admin_changes FROM PUBLIC;
GRANT SELECT, INSERT ON admin_changes TO liveline_service;
GRANT SELECT ON admin_changes TO liveline_dashboard;
