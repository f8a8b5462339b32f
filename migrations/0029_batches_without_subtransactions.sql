-- A batch ran each closing through `liveline_append` in a block of its own (a subtransaction),
-- after it had locked the closing's activity and stripes; and it claimed its openings' stripes in
-- one block and counted them outside it. A row locked by a transaction and updated in one of its
-- subtransactions (or the other way round) gets a multixact, which every later scan of that row
-- version looks up: the stripes, seq-scanned on every opening, cost more the longer the server
-- ran. The batch now decides each refusal before it writes, frees the closings' stripes in one
-- step, and counts the openings in the block that claims them. The steps whose arguments or
-- results changed go, and the one no longer used; their current definitions follow. (On a
-- database being created, the function definitions come after the migrations: they do not exist
-- yet.)
DROP FUNCTION IF EXISTS liveline_batch_claim_stripes(text[], integer[]);
DROP FUNCTION IF EXISTS liveline_batch_admit_together(integer[], text[], jsonb[], text[], smallint[], tid[], integer[]);
DROP FUNCTION IF EXISTS liveline_batch_admit_one_by_one(integer[], integer[], text[], jsonb[], boolean);
DROP FUNCTION IF EXISTS liveline_batch_lock_cap_rows(text[], text[], jsonb[], integer[], integer[]);
DROP FUNCTION IF EXISTS liveline_batch_lock_activities(text[], text[], integer[]);
DROP FUNCTION IF EXISTS liveline_batch_update_projections(integer[], tid[], jsonb[]);
