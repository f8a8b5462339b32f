-- Replay sends the rows it rebuilds with COPY in the columns of `activities`, typed, instead of
-- as JSON objects that `jsonb_populate_record` had to read back (which cost more than the COPY).
-- The snapshot's rows go straight into `activities_replay`; the rows of streams caught up under
-- the gate go to `activities_replay_staged` first, since they replace rows already there.
DROP TABLE activities_replay_rows;
CREATE UNLOGGED TABLE activities_replay_staged (LIKE activities_replay);
GRANT SELECT, INSERT, DELETE, TRUNCATE ON activities_replay_staged TO liveline_service;
