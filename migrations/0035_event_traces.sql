-- The trace contexts of sampled requests (#58): a row per event a sampled request appended, in
-- the statement that appends it, with the request's W3C `traceparent` (and `tracestate`), so that
-- the event's pushes join the request's trace however long after and by whichever worker they go.
-- An unsampled request, and every request while tracing is off, writes nothing here: no byte of
-- the log changes. Split by the events' `recorded_at` like `deliveries`, retired and archived
-- with it: its rows from before the next partition go to the first one, made here (empty).
CREATE TABLE event_traces (
    position bigint NOT NULL,
    recorded_at timestamptz NOT NULL,
    traceparent text NOT NULL CHECK (traceparent ~ '^[0-9a-f]{2}-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$'),
    tracestate text CHECK (length(tracestate) <= 512),
    PRIMARY KEY (position, recorded_at)
) PARTITION BY RANGE (recorded_at);
CREATE TRIGGER event_traces_append_only BEFORE UPDATE OR DELETE ON event_traces
    FOR EACH ROW EXECUTE FUNCTION liveline_refuse_history_change();

ALTER TABLE log_partitions DROP CONSTRAINT log_partitions_parent_check;
ALTER TABLE log_partitions ADD CONSTRAINT log_partitions_parent_check CHECK (parent IN (
    'events', 'deliveries', 'push_token_invalidations', 'rejections', 'reload_deliveries', 'event_traces'));
DO $$
DECLARE
    v_bound timestamptz;
BEGIN
    SELECT date_bin(partition_interval, now(), '2000-01-01 00:00:00+00') INTO v_bound FROM log_partitioning;
    EXECUTE format('CREATE TABLE event_traces_before_partitions PARTITION OF event_traces '
        'FOR VALUES FROM (MINVALUE) TO (%L)', v_bound);
    INSERT INTO log_partitions (table_name, parent, from_time, to_time, settled_at)
        VALUES ('event_traces_before_partitions', 'event_traces', '-infinity', v_bound, v_bound);
END
$$;

GRANT SELECT, INSERT ON event_traces TO liveline_service;
GRANT SELECT ON event_traces TO liveline_dashboard;
