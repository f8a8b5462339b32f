-- Replay sends the rows it rebuilds with COPY in the columns of `activities`, typed, instead of
-- as JSON objects that `jsonb_populate_record` had to read back (which cost more than the COPY).
-- The snapshot's rows go straight into `activities_replay`; the rows of streams caught up under
-- the gate go to `activities_replay_staged` first, since they replace rows already there.
-- The scratch tables hold ids as plain text: they come from the log, whose ids were checked when
-- appended, and checking the `liveline_id` domain again took most of the COPY's time.
DROP TABLE activities_replay_rows;
DROP VIEW liveline_replay_rows;
ALTER TABLE activities_replay ALTER COLUMN app_id TYPE text, ALTER COLUMN activity_id TYPE text;
CREATE UNLOGGED TABLE activities_replay_staged (LIKE activities_replay);
GRANT SELECT, INSERT, DELETE, TRUNCATE ON activities_replay_staged TO liveline_service;

-- As in 0003 (a view cannot outlive a change of its columns' types).
CREATE VIEW liveline_replay_rows AS
    SELECT app_id, activity_id, state, version, activity_type, attributes, content_state,
           stale_date, relevance_score, push_type, push_token, device_id::text, start_date, last_timestamp,
           requested_at, activated_at, ended_at, dismissed_at, dismissal_date, next_deadline_at,
           next_deadline_kind, last_event_at, style, end_reason, priority_updates
    FROM activities_replay;
GRANT SELECT ON liveline_replay_rows TO liveline_service;
