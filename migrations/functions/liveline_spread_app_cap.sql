-- Trigger: spreads an app's cap over its stripes when the app is created or its cap changes.
CREATE OR REPLACE FUNCTION liveline_spread_app_cap() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM liveline_respread_app_cap(NEW.app_id);
    RETURN NEW;
END
$$;
