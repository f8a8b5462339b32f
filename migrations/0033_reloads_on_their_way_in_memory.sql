-- Reloads on their way are the worker's to know (#57, the fan-out's second design): nothing is
-- written for a device as its reload leaves. The fan-out's cursor moves past a page only once its
-- outcomes are recorded, and a reload taken from its slot's due time stays due until its answer
-- is recorded, so a worker that takes a shard over sends again at most what was on the wire.
-- When a device was last sent a reload is read from `reload_deliveries` (its latest row with an
-- `apns_id`), not kept: a slot is written only to coalesce a request or to retry one.
ALTER TABLE reload_tokens
    DROP COLUMN last_sent_at,
    DROP COLUMN sending_reload,
    DROP COLUMN sending_attempt;

