-- Bytes per update (#40): a delivery names its event by position and no longer copies it. The
-- activity and version are the event's (`events` at that position); an activity's deliveries
-- are found through its events, whose stream key already finds them, rather than through an
-- index of their own that every push paid for (about 52 of the 295 bytes a delivery took with
-- its indexes). The app stays, for the dashboards' counts per app.
--
-- One key now serves what two indexes did: (position, id) finds an event's deliveries in the
-- order they were written, and identifies each (with `recorded_at`, the partitions' key).
--
-- Catalog changes only, but the new key is built over the rows already written.

DROP INDEX deliveries_activity;
ALTER TABLE deliveries DROP COLUMN activity_id, DROP COLUMN version;
ALTER TABLE deliveries DROP CONSTRAINT deliveries_pkey;
ALTER TABLE deliveries ADD PRIMARY KEY (position, id, recorded_at);
DROP INDEX deliveries_position;
-- The old rows' partition kept its index on `attempted_at` when 0023 split the table; no
-- statement uses it.
DROP INDEX deliveries_before_partitions_attempted;
