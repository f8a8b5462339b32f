-- An app's settings as the admin audit trail records them (camelCase keys, as the API names
-- them).
CREATE OR REPLACE FUNCTION liveline_app_settings(a apps) RETURNS jsonb LANGUAGE sql IMMUTABLE AS $$
    SELECT jsonb_build_object('bundleId', a.bundle_id, 'maxOpen', a.max_open,
        'maxOpenPerDevice', a.max_open_per_device, 'priorityBudgetPerHour', a.priority_budget_per_hour,
        'frequentUpdates', a.frequent_updates, 'pushToStartBudgetPerHour', a.push_to_start_budget_per_hour,
        'widgetReloadIntervalSeconds', a.widget_reload_interval_seconds,
        'controlReloadIntervalSeconds', a.control_reload_interval_seconds)
$$;
