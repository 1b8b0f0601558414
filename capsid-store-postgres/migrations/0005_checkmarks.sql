-- Checkmarks, the log and the shared context (SPEC 8, the sister design 3.1 and 3.4),
-- Postgres dialect. Same tables, columns and meaning as the SQLite migration of the same
-- number. Timestamps are fixed-width RFC 3339 UTC text from the application's clock. Which
-- statuses exist and which changes are legal is the core's; the tables only hold the result.

-- The append-only log: insert-only, but for the one answer backfill (and a CI verdict).
CREATE TABLE log_entries (
    id            BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    namespace     TEXT COLLATE "C" NOT NULL,
    agent         TEXT COLLATE "C" NOT NULL,
    created_at    TEXT COLLATE "C" NOT NULL,
    session_id    TEXT COLLATE "C",
    status        TEXT COLLATE "C" NOT NULL,
    summary       TEXT COLLATE "C",
    decisions     TEXT COLLATE "C",
    question      TEXT COLLATE "C",
    answer        TEXT COLLATE "C",
    answered_by   TEXT COLLATE "C",
    answered_at   TEXT COLLATE "C",
    visibility    TEXT COLLATE "C" NOT NULL DEFAULT 'project',
    push_sha      TEXT COLLATE "C",
    ci_status     TEXT COLLATE "C" NOT NULL DEFAULT 'not_applicable',
    ci_checked_at TEXT COLLATE "C",
    job_id        TEXT COLLATE "C",
    cost_usd      DOUBLE PRECISION,
    turns         BIGINT
);
CREATE INDEX log_entries_agent ON log_entries (namespace, agent, id DESC);
CREATE INDEX log_entries_global ON log_entries (visibility, id DESC);
CREATE INDEX log_entries_global_ns ON log_entries (namespace, visibility, id DESC);
-- The CI poller's work list: pushed entries whose verdict is still pending.
CREATE INDEX log_entries_ci_pending ON log_entries (ci_status, id) WHERE ci_status = 'pending';

-- One current-state record per (namespace, agent), overwritten by every checkpoint.
CREATE TABLE checkmarks (
    id                  BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    namespace           TEXT COLLATE "C" NOT NULL,
    agent               TEXT COLLATE "C" NOT NULL,
    checkpoint_at       TEXT COLLATE "C" NOT NULL,
    status              TEXT COLLATE "C" NOT NULL,
    where_it_stopped    TEXT COLLATE "C",
    next_steps          TEXT COLLATE "C" NOT NULL DEFAULT '[]',
    open_question       TEXT COLLATE "C",
    log_entry_id        BIGINT NOT NULL REFERENCES log_entries (id),
    tests_status        TEXT COLLATE "C" NOT NULL DEFAULT 'unknown',
    tested_at           TEXT COLLATE "C",
    build_status        TEXT COLLATE "C" NOT NULL DEFAULT 'unknown',
    built_at            TEXT COLLATE "C",
    job_id              TEXT COLLATE "C",
    resume_requested_at TEXT COLLATE "C",
    resume_requested_by TEXT COLLATE "C",
    UNIQUE (namespace, agent)
);

-- Standing facts every namespace reads; writes need can_write_shared (checked by the core).
CREATE TABLE shared_context (
    key        TEXT COLLATE "C" PRIMARY KEY,
    value      TEXT COLLATE "C" NOT NULL,
    set_by     TEXT COLLATE "C" NOT NULL,
    updated_at TEXT COLLATE "C" NOT NULL
);
