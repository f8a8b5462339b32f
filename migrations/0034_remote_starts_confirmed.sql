-- Remote starts APNs accepted, and whether their devices confirmed them (#58). A push-to-start
-- that APNs answers 200 may still show nothing: the token went stale, or the person turned Live
-- Activities off. The device's confirmation is the new activity's push token, which it reports
-- once the activity shows. The delivery worker writes a row as it records the start's 200 (not
-- for an activity on a channel, which has no token to wait for); the deadline worker settles it
-- once the start confirmation window has run out: `confirmed` (the token came), `unconfirmed`
-- (it did not: `activity.start_unconfirmed` is appended to the activity's stream in the same
-- transaction), or `dismissed` (the activity was dismissed first: no verdict). A token's latest
-- settled starts, read with whether their activities have a token now (one that came late
-- confirms its start after all), say how many went unconfirmed in a row. Rows leave with their
-- activity's projection, when its partition is retired.
CREATE TABLE remote_starts (
    app_id liveline_id NOT NULL,
    activity_id liveline_id NOT NULL,
    device_id liveline_id NOT NULL,
    activity_type text NOT NULL,
    token text NOT NULL,
    position bigint NOT NULL,
    accepted_at timestamptz NOT NULL,
    verdict text CHECK (verdict IN ('confirmed', 'unconfirmed', 'dismissed')),
    settled_at timestamptz,
    PRIMARY KEY (app_id, activity_id),
    CHECK ((verdict IS NULL) = (settled_at IS NULL))
);
CREATE INDEX remote_starts_waiting ON remote_starts (accepted_at) WHERE verdict IS NULL;
CREATE INDEX remote_starts_of_token ON remote_starts (app_id, device_id, activity_type, token, accepted_at);

GRANT SELECT, INSERT, UPDATE, DELETE ON remote_starts TO liveline_service;
GRANT SELECT ON remote_starts TO liveline_dashboard;

-- For dashboards: the verdicts per minute of settling, by app.
CREATE VIEW remote_start_verdicts_per_minute AS
SELECT date_trunc('minute', settled_at) AS minute, app_id, verdict, count(*) AS starts
FROM remote_starts
WHERE verdict IS NOT NULL
GROUP BY 1, 2, 3;
GRANT SELECT ON remote_start_verdicts_per_minute TO liveline_dashboard;
