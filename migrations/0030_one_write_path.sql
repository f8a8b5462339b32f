-- A lone command and a batch now take one set of steps: admission, freeing a closing's stripes,
-- the projection rows and the tail that writes events and idempotency keys. The steps both take
-- lose their `liveline_batch_` prefix, and `liveline_append` returns a refusal as a batch does
-- (a row with `refusal` and `refusal_detail`) instead of raising it: its result changed, so it
-- goes too. Their current definitions follow. (On a database being created, the function
-- definitions come after the migrations: they do not exist yet.)
DROP FUNCTION IF EXISTS liveline_append(text, text, integer, jsonb, text[], jsonb[], text[], timestamptz[], integer, text,
    bytea, jsonb);
DROP FUNCTION IF EXISTS liveline_batch_lock_cap_rows(integer[], integer[], text[], jsonb[], smallint[], smallint[]);
DROP FUNCTION IF EXISTS liveline_batch_free_stripes(integer[], text[], jsonb[], smallint[], smallint[]);
DROP FUNCTION IF EXISTS liveline_batch_insert_openings(integer[], smallint[], smallint[], jsonb[]);
DROP FUNCTION IF EXISTS liveline_batch_update_projections(integer[], tid[], jsonb[], integer[]);
