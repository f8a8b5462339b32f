-- Pushes held while their app is suspended (APNs refused its credentials): each activity's
-- newest held push, and its remote start when that was held too. A row is written with the
-- `app_suspended` outcome that held it, and deleted with the outcome of the push that is sent
-- again once new credentials resume the app (or of a newer push that supersedes it). It is a
-- list of work, not history: `deliveries` keeps what happened.
CREATE TABLE delivery_holds (
    app_id liveline_id NOT NULL,
    activity_id liveline_id NOT NULL,
    position bigint NOT NULL,
    starts_activity boolean NOT NULL,
    held_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (app_id, activity_id, position)
);

GRANT SELECT, INSERT, DELETE ON delivery_holds TO liveline_service;
GRANT SELECT ON delivery_holds TO liveline_dashboard;

-- A push-to-start is recorded `sending` before it goes, so that a worker taking over after a
-- crash never sends it a second time.
ALTER TABLE deliveries DROP CONSTRAINT deliveries_outcome_check;
ALTER TABLE deliveries ADD CONSTRAINT deliveries_outcome_check CHECK (outcome IN (
    'delivered', 'retrying', 'failed', 'token_invalidated', 'app_suspended', 'superseded',
    'awaiting_token', 'no_credentials', 'undeliverable', 'expired', 'sending'
));
