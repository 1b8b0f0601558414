-- Checkmarks, the log and the shared context (SPEC 8, the sister design 3.1 and 3.4), SQLite
-- dialect. Same tables, columns and meaning as the Postgres migration of the same number.
-- Timestamps are fixed-width RFC 3339 UTC text from the application's clock. Which statuses
-- exist and which changes are legal is the core's; the tables only hold the result.

-- The append-only log: insert-only, but for the one answer backfill (and a CI verdict).
CREATE TABLE log_entries (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    namespace     TEXT NOT NULL,
    agent         TEXT NOT NULL,
    created_at    TEXT NOT NULL,
    session_id    TEXT,
    status        TEXT NOT NULL,
    summary       TEXT,
    decisions     TEXT,
    question      TEXT,
    answer        TEXT,
    answered_by   TEXT,
    answered_at   TEXT,
    visibility    TEXT NOT NULL DEFAULT 'project',
    push_sha      TEXT,
    ci_status     TEXT NOT NULL DEFAULT 'not_applicable',
    ci_checked_at TEXT,
    job_id        TEXT,
    cost_usd      REAL,
    turns         INTEGER
);
CREATE INDEX log_entries_agent ON log_entries (namespace, agent, id DESC);
CREATE INDEX log_entries_global ON log_entries (visibility, id DESC);
CREATE INDEX log_entries_global_ns ON log_entries (namespace, visibility, id DESC);
-- The CI poller's work list: pushed entries whose verdict is still pending.
CREATE INDEX log_entries_ci_pending ON log_entries (ci_status, id) WHERE ci_status = 'pending';

-- One current-state record per (namespace, agent), overwritten by every checkpoint.
CREATE TABLE checkmarks (
    id                  INTEGER PRIMARY KEY AUTOINCREMENT,
    namespace           TEXT NOT NULL,
    agent               TEXT NOT NULL,
    checkpoint_at       TEXT NOT NULL,
    status              TEXT NOT NULL,
    where_it_stopped    TEXT,
    next_steps          TEXT NOT NULL DEFAULT '[]',
    open_question       TEXT,
    log_entry_id        INTEGER NOT NULL REFERENCES log_entries (id),
    tests_status        TEXT NOT NULL DEFAULT 'unknown',
    tested_at           TEXT,
    build_status        TEXT NOT NULL DEFAULT 'unknown',
    built_at            TEXT,
    job_id              TEXT,
    resume_requested_at TEXT,
    resume_requested_by TEXT,
    UNIQUE (namespace, agent)
);

-- Standing facts every namespace reads; writes need can_write_shared (checked by the core).
CREATE TABLE shared_context (
    key        TEXT PRIMARY KEY,
    value      TEXT NOT NULL,
    set_by     TEXT NOT NULL,
    updated_at TEXT NOT NULL
);
