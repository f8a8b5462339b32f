-- The transaction's next `p_count` positions; returns the first. A position is the transaction's
-- id shifted left 16 bits plus a counter that a transaction-local setting keeps
-- (`liveline.next_position`), so numbering events reads no index, whatever `events` is split
-- into. A subtransaction that rolls back gives its positions back with its events.
CREATE OR REPLACE FUNCTION liveline_take_positions(p_count integer) RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE
    v_first bigint := coalesce(nullif(current_setting('liveline.next_position', true), '')::bigint,
        pg_current_xact_id()::text::bigint << 16);
BEGIN
    PERFORM set_config('liveline.next_position', (v_first + p_count)::text, true);
    RETURN v_first;
END
$$;
GRANT EXECUTE ON ROUTINE liveline_take_positions TO liveline_service;
