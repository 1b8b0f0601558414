-- The owner's login (OAuth 2.1 on /mcp, the admin console), SQLite dialect. Same tables,
-- columns and meaning as the Postgres migration of the same number. Codes, tokens, login
-- states and console sessions are kept only as SHA-256 hashes; timestamps are fixed-width
-- RFC 3339 UTC text from the application's clock.

CREATE TABLE oauth_clients (
    client_id    TEXT PRIMARY KEY,
    client_name  TEXT,
    redirect_uris TEXT NOT NULL,
    secret_hash  TEXT,
    auth_method  TEXT NOT NULL,
    created_at   TEXT NOT NULL,
    expires_at   TEXT NOT NULL
);
CREATE INDEX oauth_clients_expiry ON oauth_clients (expires_at);

-- The owner's approval of a client, bound to its exact redirect set by the tag.
CREATE TABLE oauth_approvals (
    tag         TEXT PRIMARY KEY,
    client_id   TEXT NOT NULL,
    approved_at TEXT NOT NULL,
    expires_at  TEXT NOT NULL
);
CREATE INDEX oauth_approvals_expiry ON oauth_approvals (expires_at);

-- GitHub login round trips in flight (authorize or console), keyed by sha256(state).
CREATE TABLE oauth_login_states (
    state_hash TEXT PRIMARY KEY,
    purpose    TEXT NOT NULL,
    payload    TEXT NOT NULL,
    created_at TEXT NOT NULL,
    expires_at TEXT NOT NULL
);
CREATE INDEX oauth_login_states_expiry ON oauth_login_states (expires_at);

CREATE TABLE oauth_codes (
    code_hash      TEXT PRIMARY KEY,
    client_id      TEXT NOT NULL,
    redirect_uri   TEXT NOT NULL,
    code_challenge TEXT NOT NULL,
    resource       TEXT NOT NULL,
    scope          TEXT NOT NULL,
    login          TEXT NOT NULL,
    user_id        INTEGER NOT NULL,
    created_at     TEXT NOT NULL,
    expires_at     TEXT NOT NULL,
    used_at        TEXT
);
CREATE INDEX oauth_codes_expiry ON oauth_codes (expires_at);

-- One login's family of tokens for one client and audience.
CREATE TABLE oauth_grants (
    grant_id   TEXT PRIMARY KEY,
    client_id  TEXT NOT NULL,
    login      TEXT NOT NULL,
    user_id    INTEGER NOT NULL,
    resource   TEXT NOT NULL,
    scope      TEXT NOT NULL,
    code_hash  TEXT,
    created_at TEXT NOT NULL,
    expires_at TEXT NOT NULL,
    revoked_at TEXT
);
CREATE INDEX oauth_grants_code ON oauth_grants (code_hash);
CREATE INDEX oauth_grants_expiry ON oauth_grants (expires_at);

CREATE TABLE oauth_tokens (
    token_hash TEXT PRIMARY KEY,
    grant_id   TEXT NOT NULL REFERENCES oauth_grants (grant_id) ON DELETE CASCADE,
    kind       TEXT NOT NULL CHECK (kind IN ('access', 'refresh')),
    created_at TEXT NOT NULL,
    expires_at TEXT NOT NULL,
    used_at    TEXT,
    revoked_at TEXT
);
CREATE INDEX oauth_tokens_grant ON oauth_tokens (grant_id);

CREATE TABLE console_sessions (
    session_hash TEXT PRIMARY KEY,
    login        TEXT NOT NULL,
    user_id      INTEGER NOT NULL,
    created_at   TEXT NOT NULL,
    expires_at   TEXT NOT NULL,
    ended_at     TEXT
);
CREATE INDEX console_sessions_expiry ON console_sessions (expires_at);

-- Fixed-window rate-limit counters (registrations, CSP reports) per client address.
CREATE TABLE rate_counters (
    key        TEXT PRIMARY KEY,
    count      INTEGER NOT NULL,
    expires_at TEXT NOT NULL
);
CREATE INDEX rate_counters_expiry ON rate_counters (expires_at);
