-- Sealed archives (#59, docs/decisions/0040): an archive's personal columns are written in their
-- redacted form, and the originals beside them sealed under a key of the row's activity; an
-- erasure destroys the keys, and no archive byte changes.
--
-- A device's reference stands for its id in archives (`erased:<reference>`, as an erasure of the
-- device writes it in the live log), so that its activities still share one name there. An
-- erasure of the device takes its reference and deletes the row: the id is kept nowhere.
CREATE TABLE device_references (
    app_id liveline_id NOT NULL,
    device_id liveline_id NOT NULL,
    reference uuid NOT NULL DEFAULT gen_random_uuid() UNIQUE,
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (app_id, device_id)
);

-- The keys archives are sealed under, one per activity id (its streams share it), each with its
-- device's reference. An erased key keeps its row, without the key (a tombstone): a reader tells
-- a sealed value that was erased from one sealed under a key this database never made.
CREATE TABLE archive_keys (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    app_id liveline_id NOT NULL,
    activity_id liveline_id NOT NULL,
    device_reference uuid NOT NULL,
    key bytea CHECK (octet_length(key) = 32),
    created_at timestamptz NOT NULL DEFAULT now(),
    erased_at timestamptz,
    CHECK ((key IS NULL) = (erased_at IS NOT NULL))
);
-- An activity has one live key; its keys, erased ones too, are found by its id (an audit); a
-- device's live keys by its reference (an erasure).
CREATE UNIQUE INDEX archive_keys_live ON archive_keys (app_id, activity_id) WHERE key IS NOT NULL;
CREATE INDEX archive_keys_of_activity ON archive_keys (app_id, activity_id);
CREATE INDEX archive_keys_of_device ON archive_keys (app_id, device_reference) WHERE key IS NOT NULL;

-- Only the server reads keys and references; dashboards read the archives' redacted columns.
GRANT SELECT, INSERT, UPDATE, DELETE ON device_references, archive_keys TO liveline_service;
