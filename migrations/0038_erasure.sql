-- Erasure (#59, docs/decisions/0040): a person's data removed from the live log on request.
--
-- An erasure is recorded with who asked, when, its scope (`activity` or `device`) and a random
-- reference that stands for the device in the log from then on — never a device id, a token or
-- content. Its targets are the activities it erases, by id; each is erased (its rows rewritten
-- into their redacted form, liveline_redacted_event_data) in a transaction that marks it done,
-- and the erasure is finished with its last target. A process that stops half-way leaves
-- targets pending; the next one finishes them.
CREATE TABLE erasures (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    app_id liveline_id NOT NULL,
    scope text NOT NULL CHECK (scope IN ('activity', 'device')),
    -- The activity of an `activity` erasure; NULL for a device's.
    activity_id liveline_id,
    reference uuid NOT NULL,
    requested_by text NOT NULL CHECK (requested_by IN ('app_api', 'command_line')),
    requested_at timestamptz NOT NULL DEFAULT now(),
    finished_at timestamptz,
    CHECK ((scope = 'activity') = (activity_id IS NOT NULL))
);
CREATE INDEX erasures_pending ON erasures (id) WHERE finished_at IS NULL;
CREATE INDEX erasures_of_activity ON erasures (app_id, activity_id) WHERE activity_id IS NOT NULL;

CREATE TABLE erasure_targets (
    erasure_id bigint NOT NULL REFERENCES erasures (id),
    app_id liveline_id NOT NULL,
    activity_id liveline_id NOT NULL,
    erased_at timestamptz,
    PRIMARY KEY (erasure_id, app_id, activity_id)
);
CREATE INDEX erasure_targets_pending ON erasure_targets (app_id, activity_id) WHERE erased_at IS NULL;
CREATE INDEX erasure_targets_of_activity ON erasure_targets (app_id, activity_id);

GRANT SELECT, INSERT, UPDATE ON erasures, erasure_targets TO liveline_service;
GRANT SELECT ON erasures, erasure_targets TO liveline_dashboard;

-- Each erasure with how many activities it erases and how many it has erased.
CREATE VIEW erasure_progress AS
SELECT e.id, e.app_id, e.scope, e.activity_id, e.reference, e.requested_by, e.requested_at, e.finished_at,
    count(t.activity_id) AS activities, count(t.erased_at) AS erased
FROM erasures e LEFT JOIN erasure_targets t ON t.erasure_id = e.id
GROUP BY e.id;
GRANT SELECT ON erasure_progress TO liveline_service, liveline_dashboard;
