-- Appends one entry to the admin audit trail, by the actor the session names (`liveline.actor`)
-- or else the SQL user.
CREATE OR REPLACE FUNCTION liveline_record_admin_change(p_action text, p_app_id text, p_details jsonb)
RETURNS void LANGUAGE sql AS $$
    INSERT INTO admin_changes (actor, action, app_id, details)
    VALUES (coalesce(nullif(current_setting('liveline.actor', true), ''), 'sql:' || current_user),
            p_action, p_app_id, p_details)
$$;
