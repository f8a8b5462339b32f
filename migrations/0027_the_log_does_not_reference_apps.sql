-- The probe of #40: no table split by time has a foreign key to `apps` any more. A partition of a
-- table with one cannot leave without changing `apps`: detaching it gives the key triggers on
-- `apps` of its own (SHARE ROW EXCLUSIVE, so writes to `apps` wait), and dropping it removes them
-- (ACCESS EXCLUSIVE, so every command, which reads its app, waits behind the drop). Logged in the
-- soak (log_lock_waits): each drop of a partition of `rejections` queued the commands behind it.
-- The log's partitions never had the key (since migration 0022, only the partition of the rows
-- from before partitions kept the old table's, if it is still there).
--
-- What the keys guaranteed still holds. Events and rejections are written only by the append
-- functions, for an app the command has just read, and by replay, from events; and an app is
-- never deleted: every app has open-count stripes that reference it, and now the server's role
-- may not delete one either.
ALTER TABLE rejections DROP CONSTRAINT rejections_app_id_fkey;
ALTER TABLE IF EXISTS events_before_partitions DROP CONSTRAINT IF EXISTS events_app_id_fkey;
REVOKE DELETE ON apps FROM liveline_service;
