-- The baseline: the schema of migrations 0001 to 0039, for a new database to be made in one
-- step. Written by scripts/update-baseline.sh from a database migrated through them; not
-- edited by hand (a change to the schema is a new numbered migration, then the script again).
-- The triggers, which name the functions.

CREATE TRIGGER admin_changes_no_truncate BEFORE TRUNCATE ON public.admin_changes FOR EACH STATEMENT EXECUTE FUNCTION public.liveline_refuse_event_change();

CREATE TRIGGER admin_changes_no_update_or_delete BEFORE DELETE OR UPDATE ON public.admin_changes FOR EACH ROW EXECUTE FUNCTION public.liveline_refuse_event_change();

CREATE TRIGGER api_keys_audit AFTER INSERT OR UPDATE ON public.api_keys FOR EACH ROW EXECUTE FUNCTION public.liveline_audit_key();

CREATE TRIGGER apns_credentials_audit AFTER INSERT OR DELETE OR UPDATE ON public.apns_credentials FOR EACH ROW EXECUTE FUNCTION public.liveline_audit_apns_credentials();

CREATE TRIGGER apps_audit AFTER INSERT OR UPDATE OF bundle_id, max_open, max_open_per_device, priority_budget_per_hour, frequent_updates, push_to_start_budget_per_hour ON public.apps FOR EACH ROW EXECUTE FUNCTION public.liveline_audit_app();

CREATE TRIGGER apps_spread_cap AFTER INSERT OR UPDATE OF max_open ON public.apps FOR EACH ROW EXECUTE FUNCTION public.liveline_spread_app_cap();

CREATE TRIGGER broadcast_channels_audit AFTER INSERT OR UPDATE ON public.broadcast_channels FOR EACH ROW EXECUTE FUNCTION public.liveline_audit_broadcast_channel();

CREATE TRIGGER broadcast_channels_guard BEFORE DELETE OR UPDATE ON public.broadcast_channels FOR EACH ROW EXECUTE FUNCTION public.liveline_guard_broadcast_channel();

CREATE TRIGGER deliveries_append_only BEFORE DELETE OR UPDATE ON public.deliveries FOR EACH ROW EXECUTE FUNCTION public.liveline_refuse_history_change();

CREATE TRIGGER delivery_suspensions_append_only BEFORE DELETE OR UPDATE ON public.delivery_suspensions FOR EACH ROW EXECUTE FUNCTION public.liveline_refuse_history_change();

CREATE TRIGGER event_traces_append_only BEFORE DELETE OR UPDATE ON public.event_traces FOR EACH ROW EXECUTE FUNCTION public.liveline_refuse_history_change();

CREATE TRIGGER events_no_truncate BEFORE TRUNCATE ON public.events FOR EACH STATEMENT EXECUTE FUNCTION public.liveline_refuse_event_change();

CREATE TRIGGER events_no_truncate BEFORE TRUNCATE ON public.events_before_partitions FOR EACH STATEMENT EXECUTE FUNCTION public.liveline_refuse_event_change();

CREATE TRIGGER events_no_update_or_delete BEFORE DELETE OR UPDATE ON public.events FOR EACH ROW EXECUTE FUNCTION public.liveline_refuse_event_change();

CREATE TRIGGER push_to_start_token_changes_append_only BEFORE DELETE OR UPDATE ON public.push_to_start_token_changes FOR EACH ROW EXECUTE FUNCTION public.liveline_refuse_history_change();

CREATE TRIGGER push_token_invalidations_append_only BEFORE DELETE OR UPDATE ON public.push_token_invalidations FOR EACH ROW EXECUTE FUNCTION public.liveline_refuse_history_change();

CREATE TRIGGER reload_deliveries_append_only BEFORE DELETE OR UPDATE ON public.reload_deliveries FOR EACH ROW EXECUTE FUNCTION public.liveline_refuse_history_change();

CREATE TRIGGER reload_token_changes_append_only BEFORE DELETE OR UPDATE ON public.reload_token_changes FOR EACH ROW EXECUTE FUNCTION public.liveline_refuse_history_change();

CREATE TRIGGER service_limits_audit AFTER UPDATE ON public.service_limits FOR EACH ROW EXECUTE FUNCTION public.liveline_audit_limits();
