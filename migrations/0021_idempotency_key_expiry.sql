-- Idempotency keys expire: the server's log maintenance removes those older than the window
-- (24 hours by default), oldest first, in small batches; a retry after that is a new command.
CREATE INDEX idempotency_keys_created_at ON idempotency_keys (created_at);
