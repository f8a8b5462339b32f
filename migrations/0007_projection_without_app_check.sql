-- The projection (`activities`) no longer checks its app against `apps` row by row. Its rows are
-- written only by `liveline_append`, for an app the command has just loaded, and by replay, from
-- events that reference `apps` themselves; apps are never deleted. So the check could not fail,
-- yet each row paid for it (a lookup and a share lock on the app's row): about 3.6 µs per opening,
-- and 0.4 s of a replay that rewrites 100,000 rows while appends wait. The log keeps its own
-- reference to `apps`.
ALTER TABLE activities DROP CONSTRAINT activities_app_id_fkey;
