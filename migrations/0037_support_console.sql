-- The support console (#58). A person signs in with the admin key or an app's key; the key
-- becomes a session, of which the database keeps only the SHA-256 of its random token (as it
-- keeps API keys), who it is for, its CSRF token and when it expires. An app's session names its
-- key and ends when the key is revoked (or deleted); the admin's names the digest of the admin key
-- it was opened with, so that a new admin key ends the old key's sessions. Expired rows are
-- deleted as new sessions open.
CREATE TABLE console_sessions (
    session_sha256 bytea PRIMARY KEY CHECK (length(session_sha256) = 32),
    app_id liveline_id,
    key_id uuid REFERENCES api_keys (key_id) ON DELETE CASCADE,
    admin_key_sha256 bytea CHECK (length(admin_key_sha256) = 32),
    csrf_token text NOT NULL CHECK (length(csrf_token) BETWEEN 32 AND 128),
    created_at timestamptz NOT NULL DEFAULT now(),
    expires_at timestamptz NOT NULL,
    CHECK ((app_id IS NULL) = (key_id IS NULL)),
    CHECK ((key_id IS NULL) <> (admin_key_sha256 IS NULL)),
    CHECK (expires_at > created_at)
);
CREATE INDEX console_sessions_expiry ON console_sessions (expires_at);
GRANT SELECT, INSERT, DELETE ON console_sessions TO liveline_service;

-- Content shown in the console is masked (its keys shown, its values not); an admin who reveals
-- an activity's content leaves a line in the audit trail of administrative changes.
ALTER TABLE admin_changes DROP CONSTRAINT admin_changes_action_check;
ALTER TABLE admin_changes ADD CONSTRAINT admin_changes_action_check CHECK (action IN (
    'app.created', 'app.updated', 'key.issued', 'key.revoked', 'limits.updated', 'apns.set', 'apns.removed',
    'channel.created', 'channel.deleted', 'content.revealed'
));
