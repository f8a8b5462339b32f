-- A batch took a transaction lock on every activity it named, existing or not; the deadline
-- worker, which claims its activities' rows first, could then wait for that lock while a batch
-- holding it waited for one of those rows (a deadlock). `liveline_batch_lock_keys` now takes the
-- commands' expected versions and locks only the activities a batch creates; its definition
-- with four arguments goes. (On a database being created, the function definitions come after
-- the migrations: it does not exist yet.)
DROP FUNCTION IF EXISTS liveline_batch_lock_keys(text[], text[], text[], text[]);
