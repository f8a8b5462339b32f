-- Bytes per update (#40): a push to an activity's push token names the event that registered
-- the token (`token_position`, that `activity.push_token_changed` in `events`) rather than
-- copying its 64 hexadecimal digits into every row (8 bytes instead of 65). `device_token`
-- keeps the tokens no event holds: a push-to-start's, and every push's recorded before this
-- migration. The token of a row is `coalesce(device_token, lower(t.data ->> 'pushToken'))`
-- with `events t` at `token_position`.
--
-- A column without a default: a change of the catalog only, whatever the table holds.

ALTER TABLE deliveries ADD COLUMN token_position bigint;
