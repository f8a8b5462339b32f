-- The push-to-start budget (issue #21): a device's own budget of remote starts is small and
-- silent when spent (about 10 in a short window), so each app gives a device at most
-- `push_to_start_budget_per_hour` remote starts in any rolling hour; the server refuses the next
-- one (`push_to_start_budget_exhausted`, 429 with the time until one leaves the hour).
ALTER TABLE apps ADD COLUMN push_to_start_budget_per_hour integer NOT NULL DEFAULT 10
    CHECK (push_to_start_budget_per_hour >= 1);
GRANT SELECT (push_to_start_budget_per_hour) ON apps TO liveline_dashboard;

-- A command's load reads a device's remote starts of the last hours from the log: requests whose
-- data holds a `remoteStart`, by app, device and time.
CREATE INDEX events_remote_starts ON events (app_id, (data ->> 'deviceId'), occurred_at)
    WHERE type = 'activity.requested' AND data ? 'remoteStart';

-- The setting is audited with the others.
CREATE OR REPLACE FUNCTION liveline_app_settings(a apps) RETURNS jsonb LANGUAGE sql IMMUTABLE AS $$
    SELECT jsonb_build_object('bundleId', a.bundle_id, 'maxOpen', a.max_open,
        'maxOpenPerDevice', a.max_open_per_device, 'priorityBudgetPerHour', a.priority_budget_per_hour,
        'frequentUpdates', a.frequent_updates, 'pushToStartBudgetPerHour', a.push_to_start_budget_per_hour)
$$;
DROP TRIGGER apps_audit ON apps;
CREATE TRIGGER apps_audit
    AFTER INSERT OR UPDATE OF bundle_id, max_open, max_open_per_device, priority_budget_per_hour, frequent_updates,
        push_to_start_budget_per_hour ON apps
    FOR EACH ROW EXECUTE FUNCTION liveline_audit_app();
