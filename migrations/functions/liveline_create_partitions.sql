-- Creates the partitions of one table split by time (`events`, `deliveries`,
-- `push_token_invalidations` or `rejections`: the parents in `log_partitions`) from the end of its
-- newest one to `partitions_ahead` intervals past now (`log_partitioning`), each one
-- `partition_interval` long and aligned to it (a gap since the newest, when the server was away,
-- becomes one partition of its own, so the partitions always follow one another). Returns how
-- many it created. A partition of a table other than the log settles at its end: nothing is
-- written to it after.
--
-- A partition is made as a table of its own and then attached, which locks the table only
-- against other changes of its shape, never against appends or reads. The server creates each
-- table's in a transaction of its own (`EventStore.createPartitions`), so that each transaction is
-- short and each attach makes the sessions plan again only the statements on its table. It
-- runs with its owner's rights (the role that migrated the database), so that the server may
-- call it.
CREATE OR REPLACE FUNCTION liveline_create_partitions(p_parent text) RETURNS integer
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp AS $$
DECLARE
    v_settings log_partitioning;
    v_from timestamptz;
    v_to timestamptz;
    v_until timestamptz;
    v_name text;
    v_created integer := 0;
BEGIN
    -- One creator of a table's partitions at a time; the others find them made.
    PERFORM pg_advisory_xact_lock(hashtextextended('liveline_create_partitions ' || p_parent, 0));
    SELECT max(to_time) INTO v_from FROM log_partitions WHERE parent = p_parent;
    IF v_from IS NULL THEN
        RAISE EXCEPTION 'liveline_create_partitions: % is not a table split by time', p_parent
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    SELECT * INTO v_settings FROM log_partitioning;
    v_until := now() + v_settings.partitions_ahead * v_settings.partition_interval;
    WHILE v_from < v_until LOOP
        v_to := date_bin(v_settings.partition_interval, greatest(v_from, now()), '2000-01-01 00:00:00+00')
            + v_settings.partition_interval;
        IF v_from < v_to - v_settings.partition_interval THEN
            v_to := v_to - v_settings.partition_interval;
        END IF;
        v_name := p_parent || '_' || to_char(v_from AT TIME ZONE 'UTC', 'YYYYMMDD_HH24MI');
        EXECUTE format('CREATE TABLE %I (LIKE %I INCLUDING DEFAULTS INCLUDING CONSTRAINTS)', v_name, p_parent);
        EXECUTE format('ALTER TABLE %I ATTACH PARTITION %I FOR VALUES FROM (%L) TO (%L)',
            p_parent, v_name, v_from, v_to);
        INSERT INTO log_partitions (table_name, parent, from_time, to_time, settled_at)
            VALUES (v_name, p_parent, v_from, v_to, CASE WHEN p_parent <> 'events' THEN v_to END);
        v_created := v_created + 1;
        v_from := v_to;
    END LOOP;
    RETURN v_created;
END
$$;
REVOKE ALL ON FUNCTION liveline_create_partitions FROM PUBLIC;
GRANT EXECUTE ON ROUTINE liveline_create_partitions TO liveline_service;
