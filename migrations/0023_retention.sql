-- Retention (#40): the other tables that grow with traffic are split by time like the log, and
-- every partition carries what its retirement needs: when it settled (nothing more can be
-- written to it), its archive, and when it was retired.
--
-- `deliveries` and `push_token_invalidations` are split by `recorded_at`, `rejections` by a new
-- `recorded_at`: each the database's clock when the row was written, so a row always has a
-- partition. As with `events`, the rows written before this migration stay where they are:
-- each table becomes the partition of every time before the end of the interval of its newest
-- row (`<table>_before_partitions`), and no row is rewritten.

ALTER TABLE log_partitions DROP CONSTRAINT log_partitions_parent_check;
ALTER TABLE log_partitions ADD CONSTRAINT log_partitions_parent_check
    CHECK (parent IN ('events', 'deliveries', 'push_token_invalidations', 'rejections'));
-- When nothing more could be written to the partition: for the log, when the server found all
-- of its activities dismissed, after its end (nothing can be appended to a dismissed activity);
-- for the others, the end of its time. It is retired `LIVELINE_RETENTION` after that.
ALTER TABLE log_partitions ADD COLUMN settled_at timestamptz;
-- The manifest of the partition's archive, once written and checked (NULL when none was made).
ALTER TABLE log_partitions ADD COLUMN archive jsonb;
-- When it was detached and dropped: it holds no rows any more.
ALTER TABLE log_partitions ADD COLUMN retired_at timestamptz;
GRANT UPDATE (settled_at, archive, retired_at) ON log_partitions TO liveline_service;

-- What retirement asks of the projection: whether a partition's activities are all dismissed
-- (few rows are not), and which rows go with it.
CREATE INDEX activities_stream_time ON activities (stream_recorded_at);
CREATE INDEX activities_undismissed_stream_time ON activities (stream_recorded_at) WHERE state <> 'dismissed';

ALTER TABLE rejections ADD COLUMN recorded_at timestamptz NOT NULL DEFAULT now();

-- Bytes per event: `events_type_occurred` (type, occurred_at) served no statement (the views
-- of events by minute group the whole table), yet every event paid for an entry in it.
DROP INDEX events_type_occurred;

ALTER TABLE rejections DROP CONSTRAINT rejections_app_id_fkey;

-- Splits each table below by its key (a column the database stamps): the table becomes the
-- partition of every time before the end of its newest row's interval, under a new partitioned
-- table of the same name, columns, defaults, checks, indexes (their definitions on the new table,
-- listed with it), append-only trigger (if it has one) and grants. Its `id` identity becomes a
-- sequence that continues it.
DO $$
DECLARE
    v_split record;
    v_table text;
    v_key text;
    v_indexes text[];
    v_before text;
    v_bound timestamptz;
    v_newest timestamptz;
    v_next bigint;
    v_index record;
    v_view record;
    v_views jsonb;
    v_grant record;
    v_append_only boolean;
BEGIN
    FOR v_split IN SELECT * FROM (VALUES
        -- Without `deliveries_attempted` (attempted_at), which no statement used: the dashboards'
        -- views group whole tables by minute, which an index on the time does not serve.
        (1, 'deliveries', 'recorded_at', ARRAY[
            'CREATE INDEX deliveries_activity ON deliveries (app_id, activity_id, id)',
            'CREATE INDEX deliveries_position ON deliveries (position)'
        ]),
        (2, 'push_token_invalidations', 'recorded_at', ARRAY[
            'CREATE INDEX push_token_invalidations_activity ON push_token_invalidations (app_id, activity_id)'
        ]),
        -- Its key to `apps` is the partitioned table's, checked once as the old rows become a
        -- partition (the old table's is dropped above).
        (3, 'rejections', 'recorded_at', ARRAY[
            'CREATE INDEX rejections_app_code_time ON rejections (app_id, code, occurred_at)',
            'CREATE INDEX rejections_time ON rejections (occurred_at)',
            'ALTER TABLE rejections ADD CONSTRAINT rejections_app_id_fkey FOREIGN KEY (app_id) REFERENCES apps'
        ])
    ) AS t(n, table_name, key, indexes) ORDER BY n LOOP
        v_table := v_split.table_name;
        v_key := v_split.key;
        v_indexes := v_split.indexes;
        v_before := v_table || '_before_partitions';
        -- The old rows' partition ends with the interval of the newest of them, or where the current
        -- interval began when there are none (a new database): the next partitions start there.
        EXECUTE format('SELECT max(%I) FROM %I', v_key, v_table) INTO v_newest;
        SELECT CASE WHEN v_newest IS NULL THEN date_bin(partition_interval, now(), '2000-01-01 00:00:00+00')
                ELSE date_bin(partition_interval, v_newest, '2000-01-01 00:00:00+00') + partition_interval END
        INTO v_bound FROM log_partitioning;
        -- The views over the table follow it under its new name: their text is kept to make them
        -- again over the partitioned table.
        SELECT coalesce(jsonb_agg(jsonb_build_object('name', v.oid::regclass::text, 'definition', pg_get_viewdef(v.oid))
            ORDER BY v.oid), '[]')
        INTO v_views
        FROM (SELECT DISTINCT v.oid FROM pg_depend d
              JOIN pg_rewrite r ON r.oid = d.objid
              JOIN pg_class v ON v.oid = r.ev_class AND v.relkind = 'v'
              WHERE d.refobjid = v_table::regclass AND v.oid <> v_table::regclass) AS v;

        EXECUTE format('SELECT coalesce(max(id), 0) + 1 FROM %I', v_table) INTO v_next;
        EXECUTE format('ALTER TABLE %I RENAME TO %I', v_table, v_before);
        EXECUTE format('ALTER TABLE %I ALTER COLUMN id DROP IDENTITY', v_before);
        EXECUTE format('ALTER TABLE %I DROP CONSTRAINT %I', v_before, v_table || '_pkey');
        FOR v_index IN
            SELECT i.indexrelid::regclass::text AS name FROM pg_index i WHERE i.indrelid = v_before::regclass
        LOOP
            EXECUTE format('ALTER INDEX %I RENAME TO %I', v_index.name, replace(v_index.name, v_table, v_before));
        END LOOP;
        v_append_only := EXISTS (SELECT FROM pg_trigger WHERE tgrelid = v_before::regclass
            AND tgname = v_table || '_append_only');
        IF v_append_only THEN
            EXECUTE format('DROP TRIGGER %I ON %I', v_table || '_append_only', v_before);
        END IF;
        EXECUTE format('ALTER TABLE %I ADD CONSTRAINT %I CHECK (%I < %L)', v_before, v_before || '_bound', v_key, v_bound);

        EXECUTE format('CREATE TABLE %I (LIKE %I INCLUDING DEFAULTS INCLUDING CONSTRAINTS) PARTITION BY RANGE (%I)',
            v_table, v_before, v_key);
        EXECUTE format('ALTER TABLE %I DROP CONSTRAINT %I', v_table, v_before || '_bound');
        EXECUTE format('CREATE SEQUENCE %I OWNED BY %I.id START %s', v_table || '_id_seq', v_table, v_next);
        EXECUTE format('ALTER TABLE %I ALTER COLUMN id SET DEFAULT nextval(%L)', v_table, v_table || '_id_seq');
        EXECUTE format('ALTER TABLE %I ADD CONSTRAINT %I PRIMARY KEY (id, %I)', v_table, v_table || '_pkey', v_key);
        FOR v_index IN SELECT unnest(v_indexes) AS definition LOOP
            EXECUTE v_index.definition;
        END LOOP;
        IF v_append_only THEN
            EXECUTE format('CREATE TRIGGER %I BEFORE UPDATE OR DELETE ON %I FOR EACH ROW '
                'EXECUTE FUNCTION liveline_refuse_history_change()', v_table || '_append_only', v_table);
        END IF;
        EXECUTE format('ALTER TABLE %I ATTACH PARTITION %I FOR VALUES FROM (MINVALUE) TO (%L)', v_table, v_before, v_bound);
        -- The check spared the attach a scan; the partition's bound says the same from now on.
        EXECUTE format('ALTER TABLE %I DROP CONSTRAINT %I', v_before, v_before || '_bound');
        INSERT INTO log_partitions (table_name, parent, from_time, to_time, settled_at)
            VALUES (v_before, v_table, '-infinity', v_bound, v_bound);

        -- The roles keep what they had on the table.
        EXECUTE format('REVOKE ALL ON %I FROM PUBLIC', v_table);
        FOR v_grant IN
            SELECT grantee, privilege_type FROM information_schema.role_table_grants
            WHERE table_schema = 'public' AND table_name = v_before
              AND grantee IN ('liveline_service', 'liveline_dashboard')
        LOOP
            EXECUTE format('GRANT %s ON %I TO %I', v_grant.privilege_type, v_table, v_grant.grantee);
        END LOOP;
        EXECUTE format('GRANT USAGE ON SEQUENCE %I TO liveline_service', v_table || '_id_seq');
        FOR v_view IN SELECT * FROM jsonb_to_recordset(v_views) AS x(name text, definition text) LOOP
            EXECUTE format('CREATE OR REPLACE VIEW %s AS %s', v_view.name, v_view.definition);
        END LOOP;
    END LOOP;
END
$$;

-- The log's partitions made so far settle once their activities are all dismissed; the server
-- finds out. The others settle at their end.
UPDATE log_partitions SET settled_at = to_time WHERE parent <> 'events';

-- For dashboards: every partition, live or retired (whose size is NULL: its table is gone), with
-- its table, when it settled and was retired, and what its archive holds.
CREATE OR REPLACE VIEW log_partition_sizes AS
    SELECT table_name AS partition, from_time, to_time,
        pg_total_relation_size(to_regclass(quote_ident(table_name))) AS bytes,
        parent AS table_name, settled_at, retired_at,
        (archive ->> 'rows')::bigint AS archived_rows, (archive -> 'file' ->> 'bytes')::bigint AS archived_bytes
    FROM log_partitions;
