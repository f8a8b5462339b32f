-- Sampled requests' trace contexts are written by the append functions themselves (#58): two
-- more arguments of `liveline_append`, `liveline_append_batch` and `liveline_write_events` (NULL
-- for a command of an unsampled request; left out, as they default to NULL, when no command is
-- sampled, so that such a batch's call is the one it was). A batch that holds a sampled command then runs the same
-- statement, with the same plans, as any other, instead of a statement of its own around the
-- append. The functions are defined
-- again, with their new arguments, from `functions/`; their old signatures go first, so that no
-- call could reach them (a database made from the baseline has none yet).
DROP FUNCTION IF EXISTS liveline_append(text, text, integer, jsonb, text[], jsonb[], text[], timestamptz[], integer, text,
    bytea, jsonb);
DROP FUNCTION IF EXISTS liveline_append_batch(text[], text[], integer[], jsonb[], integer[], text[], jsonb[], text[],
    timestamptz[], integer[], text[], bytea[], jsonb[], text[], text[], text[], text[], jsonb[], timestamptz[], text[],
    bytea[], jsonb[]);
DROP FUNCTION IF EXISTS liveline_write_events(integer[], text[], text[], integer[], timestamptz[], integer[], text[], jsonb[],
    text[], timestamptz[], text[], bytea[], jsonb[]);
DROP FUNCTION IF EXISTS liveline_keep_traces(bigint[], timestamptz[], integer[], text[], text[]);
