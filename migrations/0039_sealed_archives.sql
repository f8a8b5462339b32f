-- Sealed archives (#59, docs/decisions/0040): an archive's personal columns are written in their
-- redacted form, and the originals beside them sealed under a key of the row's activity, derived
-- from a key tree and its device's key; an erasure punctures the tree or destroys the device's
-- key, and no archive byte changes.
--
-- A device's reference stands for its id in archives (`erased:<reference>`, as an erasure of the
-- device writes it in the live log), so that its activities still share one name there, and its
-- key is part of the keys its activities' values are sealed under. An erasure of the device
-- keeps the row without its id and key (a tombstone): the reference then names no one, and
-- `verify` knows what was sealed under it erased.
CREATE TABLE device_references (
    reference uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    app_id liveline_id NOT NULL,
    device_id liveline_id,
    key bytea DEFAULT sha256(uuid_send(gen_random_uuid()) || uuid_send(gen_random_uuid()))
        CHECK (octet_length(key) = 32),
    created_at timestamptz NOT NULL DEFAULT now(),
    erased_at timestamptz,
    CHECK ((device_id IS NULL) = (erased_at IS NOT NULL) AND (key IS NULL) = (erased_at IS NOT NULL)),
    UNIQUE (app_id, device_id)
);

-- The nodes of the key tree archived activities' keys derive from (`ArchiveKeyTree`): each covers
-- the leaves from `start` on, 2^(48 − level) of them, and none overlaps another. The first copy
-- makes the root; an erasure of an activity replaces the node that covers its leaf with the
-- nodes beside the leaf's path. Nothing is kept per archived activity.
CREATE TABLE archive_key_nodes (
    start bigint PRIMARY KEY CHECK (start >= 0 AND start < 281474976710656),
    level smallint NOT NULL CHECK (level BETWEEN 0 AND 48),
    key bytea NOT NULL CHECK (octet_length(key) = 32),
    CHECK (start % (281474976710656 >> level) = 0)
);

-- The device of each activity whose projection row a retirement removed, for as long as the
-- tables retired on their own time (deliveries, refusals, dead tokens) may still hold its rows:
-- their archives seal them under the device's key, and an erasure of the device finds them.
-- Removed once those tables' partitions of that time are retired too.
CREATE TABLE retired_activities (
    app_id liveline_id NOT NULL,
    activity_id liveline_id NOT NULL,
    device_id liveline_id NOT NULL,
    retired_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (app_id, activity_id, device_id)
);
CREATE INDEX retired_activities_of_device ON retired_activities (app_id, device_id);
CREATE INDEX retired_activities_by_time ON retired_activities (retired_at);

-- Only the server reads keys and references; dashboards read the archives' redacted columns.
GRANT SELECT, INSERT, UPDATE, DELETE ON device_references, archive_key_nodes, retired_activities TO liveline_service;
