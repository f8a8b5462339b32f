-- A step of `liveline_append_batch`: the transaction locks of a batch of more than one command or
-- rejection. Rows that do not exist yet cannot be locked: two batches that each create activities
-- or idempotency keys the other also creates would wait for each other's uncommitted inserts, in
-- whatever order each batch holds them. So such a batch first takes a transaction lock on each
-- activity it creates (a command that expects version 0) and each key it writes, sorted: two
-- batches that share one run one after the other. (A batch of one takes none: it waits for one
-- thing at a time.)
--
-- An activity that exists is locked by its row, never here: a transaction that holds rows already
-- (the deadline worker claims its activities first) would otherwise wait here for a batch that
-- holds this lock and waits for one of those rows, a cycle.
CREATE OR REPLACE FUNCTION liveline_batch_lock_keys(
    p_app_ids text[],
    p_activity_ids text[],
    p_expected_versions integer[],
    p_key_app_ids text[],
    p_keys text[]
) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_advisory_xact_lock(l.k) FROM (
        SELECT hashtextextended('activity ' || c.app_id || ' ' || c.activity_id, 0) AS k
            FROM unnest(p_app_ids, p_activity_ids, p_expected_versions) AS c(app_id, activity_id, version)
            WHERE c.version = 0
        UNION
        SELECT hashtextextended('key ' || c.app_id || ' ' || c.idempotency_key, 0)
            FROM unnest(p_key_app_ids, p_keys) AS c(app_id, idempotency_key)
            WHERE c.idempotency_key IS NOT NULL
        ORDER BY 1
    ) AS l;
END
$$;
GRANT EXECUTE ON ROUTINE liveline_batch_lock_keys TO liveline_service;
