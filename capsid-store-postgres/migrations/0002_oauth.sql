-- The owner's login (OAuth 2.1 on /mcp, the admin console), Postgres dialect. Same tables,
-- columns and meaning as the SQLite migration of the same number. Codes, tokens, login
-- states and console sessions are kept only as SHA-256 hashes; timestamps are fixed-width
-- RFC 3339 UTC text from the application's clock.

CREATE TABLE oauth_clients (
    client_id    TEXT COLLATE "C" PRIMARY KEY,
    client_name  TEXT COLLATE "C",
    redirect_uris TEXT COLLATE "C" NOT NULL,
    secret_hash  TEXT COLLATE "C",
    auth_method  TEXT COLLATE "C" NOT NULL,
    created_at   TEXT COLLATE "C" NOT NULL,
    expires_at   TEXT COLLATE "C" NOT NULL
);
CREATE INDEX oauth_clients_expiry ON oauth_clients (expires_at);

-- The owner's approval of a client, bound to its exact redirect set by the tag.
CREATE TABLE oauth_approvals (
    tag         TEXT COLLATE "C" PRIMARY KEY,
    client_id   TEXT COLLATE "C" NOT NULL,
    approved_at TEXT COLLATE "C" NOT NULL,
    expires_at  TEXT COLLATE "C" NOT NULL
);
CREATE INDEX oauth_approvals_expiry ON oauth_approvals (expires_at);

-- GitHub login round trips in flight (authorize or console), keyed by sha256(state).
CREATE TABLE oauth_login_states (
    state_hash TEXT COLLATE "C" PRIMARY KEY,
    purpose    TEXT COLLATE "C" NOT NULL,
    payload    TEXT COLLATE "C" NOT NULL,
    created_at TEXT COLLATE "C" NOT NULL,
    expires_at TEXT COLLATE "C" NOT NULL
);
CREATE INDEX oauth_login_states_expiry ON oauth_login_states (expires_at);

CREATE TABLE oauth_codes (
    code_hash      TEXT COLLATE "C" PRIMARY KEY,
    client_id      TEXT COLLATE "C" NOT NULL,
    redirect_uri   TEXT COLLATE "C" NOT NULL,
    code_challenge TEXT COLLATE "C" NOT NULL,
    resource       TEXT COLLATE "C" NOT NULL,
    scope          TEXT COLLATE "C" NOT NULL,
    login          TEXT COLLATE "C" NOT NULL,
    user_id        BIGINT NOT NULL,
    created_at     TEXT COLLATE "C" NOT NULL,
    expires_at     TEXT COLLATE "C" NOT NULL,
    used_at        TEXT COLLATE "C"
);
CREATE INDEX oauth_codes_expiry ON oauth_codes (expires_at);

-- One login's family of tokens for one client and audience.
CREATE TABLE oauth_grants (
    grant_id   TEXT COLLATE "C" PRIMARY KEY,
    client_id  TEXT COLLATE "C" NOT NULL,
    login      TEXT COLLATE "C" NOT NULL,
    user_id    BIGINT NOT NULL,
    resource   TEXT COLLATE "C" NOT NULL,
    scope      TEXT COLLATE "C" NOT NULL,
    code_hash  TEXT COLLATE "C",
    created_at TEXT COLLATE "C" NOT NULL,
    expires_at TEXT COLLATE "C" NOT NULL,
    revoked_at TEXT COLLATE "C"
);
CREATE INDEX oauth_grants_code ON oauth_grants (code_hash);
CREATE INDEX oauth_grants_expiry ON oauth_grants (expires_at);

CREATE TABLE oauth_tokens (
    token_hash TEXT COLLATE "C" PRIMARY KEY,
    grant_id   TEXT COLLATE "C" NOT NULL REFERENCES oauth_grants (grant_id) ON DELETE CASCADE,
    kind       TEXT COLLATE "C" NOT NULL CHECK (kind IN ('access', 'refresh')),
    created_at TEXT COLLATE "C" NOT NULL,
    expires_at TEXT COLLATE "C" NOT NULL,
    used_at    TEXT COLLATE "C",
    revoked_at TEXT COLLATE "C"
);
CREATE INDEX oauth_tokens_grant ON oauth_tokens (grant_id);

CREATE TABLE console_sessions (
    session_hash TEXT COLLATE "C" PRIMARY KEY,
    login        TEXT COLLATE "C" NOT NULL,
    user_id      BIGINT NOT NULL,
    created_at   TEXT COLLATE "C" NOT NULL,
    expires_at   TEXT COLLATE "C" NOT NULL,
    ended_at     TEXT COLLATE "C"
);
CREATE INDEX console_sessions_expiry ON console_sessions (expires_at);

-- Fixed-window rate-limit counters (registrations, CSP reports) per client address.
CREATE TABLE rate_counters (
    key        TEXT COLLATE "C" PRIMARY KEY,
    count      BIGINT NOT NULL,
    expires_at TEXT COLLATE "C" NOT NULL
);
CREATE INDEX rate_counters_expiry ON rate_counters (expires_at);
