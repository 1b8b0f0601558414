-- Capsid schema, SQLite dialect. Same tables, columns and meaning as the Postgres migration of
-- the same number. Timestamps are fixed-width RFC 3339 UTC text ("2026-11-30T04:09:01.123Z")
-- supplied by the application's clock, so text order is time order.

CREATE TABLE documents (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    namespace   TEXT NOT NULL,
    path        TEXT NOT NULL,
    title       TEXT,
    body        TEXT,
    type        TEXT NOT NULL DEFAULT 'note',
    status      TEXT NOT NULL DEFAULT 'published',
    tags        TEXT,
    frontmatter TEXT,
    publish_at  TEXT,
    created_at  TEXT NOT NULL,
    updated_at  TEXT NOT NULL,
    -- SQLite only (like Postgres's `search` column): the namespace and type as one index token
    -- each, so a filtered full-text search narrows inside the FTS index. Never read or written.
    fts_keys    TEXT GENERATED ALWAYS AS ('n' || hex(namespace) || ' t' || hex(type)) VIRTUAL,
    UNIQUE (namespace, path)
);
CREATE INDEX documents_type ON documents (namespace, type, updated_at);

-- External-content FTS5 index over title and body (plus the filter keys, which carry no weight
-- in the ranking), kept in step by triggers.
CREATE VIRTUAL TABLE documents_fts USING fts5 (title, body, fts_keys, content = 'documents', content_rowid = 'id');
INSERT INTO documents_fts (documents_fts, rank) VALUES ('rank', 'bm25(1.0, 1.0, 0.0)');
CREATE TRIGGER documents_ai AFTER INSERT ON documents BEGIN
    INSERT INTO documents_fts (rowid, title, body, fts_keys) VALUES (new.id, new.title, new.body, new.fts_keys);
END;
CREATE TRIGGER documents_ad AFTER DELETE ON documents BEGIN
    INSERT INTO documents_fts (documents_fts, rowid, title, body, fts_keys) VALUES ('delete', old.id, old.title, old.body, old.fts_keys);
END;
CREATE TRIGGER documents_au AFTER UPDATE OF namespace, type, title, body ON documents BEGIN
    INSERT INTO documents_fts (documents_fts, rowid, title, body, fts_keys) VALUES ('delete', old.id, old.title, old.body, old.fts_keys);
    INSERT INTO documents_fts (rowid, title, body, fts_keys) VALUES (new.id, new.title, new.body, new.fts_keys);
END;

CREATE TABLE namespaces (
    namespace  TEXT PRIMARY KEY,
    repos      TEXT,
    created_at TEXT NOT NULL
);

-- Snapshots keep metadata (type, status, tags) as well as title and body.
CREATE TABLE document_versions (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    document_id INTEGER NOT NULL,
    namespace   TEXT NOT NULL,
    path        TEXT NOT NULL,
    title       TEXT,
    body        TEXT,
    type        TEXT,
    status      TEXT,
    tags        TEXT,
    snapshot_at TEXT NOT NULL
);
CREATE INDEX document_versions_doc ON document_versions (namespace, path, id DESC);
CREATE INDEX document_versions_snapshot ON document_versions (snapshot_at);

CREATE TABLE audit_log (
    id        INTEGER PRIMARY KEY AUTOINCREMENT,
    actor     TEXT,
    action    TEXT,
    namespace TEXT,
    path      TEXT,
    params    TEXT,
    at        TEXT NOT NULL
);
CREATE INDEX audit_log_doc ON audit_log (namespace, path, id DESC);
CREATE INDEX audit_log_at ON audit_log (at);
CREATE INDEX audit_log_action_actor ON audit_log (action, actor);
CREATE INDEX audit_log_actor_recent ON audit_log (actor, id DESC);
CREATE INDEX audit_log_ns_recent ON audit_log (namespace, id DESC);

CREATE TABLE document_links (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    from_ns    TEXT NOT NULL,
    from_path  TEXT NOT NULL,
    type       TEXT NOT NULL,
    to_ns      TEXT NOT NULL,
    to_path    TEXT NOT NULL,
    created_at TEXT NOT NULL,
    UNIQUE (from_ns, from_path, type, to_ns, to_path)
);
CREATE INDEX document_links_from ON document_links (from_ns, from_path);
CREATE INDEX document_links_to ON document_links (to_ns, to_path);

CREATE TABLE improve_scores (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    namespace  TEXT NOT NULL,
    metric     TEXT NOT NULL,
    value      REAL,
    run_id     TEXT NOT NULL,
    attempt_id TEXT,
    ts         TEXT NOT NULL
);
CREATE INDEX improve_scores_run ON improve_scores (run_id, namespace, metric);
CREATE INDEX improve_scores_metric ON improve_scores (namespace, metric, ts);

CREATE TABLE improve_attempts (
    id             TEXT PRIMARY KEY,
    namespace      TEXT NOT NULL,
    run_id         TEXT NOT NULL,
    change_summary TEXT,
    diff_ref       TEXT,
    score_before   REAL,
    score_after    REAL,
    kept           INTEGER NOT NULL DEFAULT 0,
    reason         TEXT,
    lineage_parent TEXT,
    status         TEXT NOT NULL DEFAULT 'pending',
    branch         TEXT,
    head_sha       TEXT,
    base_sha       TEXT,
    flagged        INTEGER NOT NULL DEFAULT 0,
    flag_reason    TEXT,
    skill_id       TEXT,
    anchors_json   TEXT,
    secondary_json TEXT,
    dispatched_at  TEXT,
    ts             TEXT NOT NULL
);
CREATE INDEX improve_attempts_run ON improve_attempts (run_id, ts);
CREATE INDEX improve_attempts_ns ON improve_attempts (namespace, ts);
CREATE INDEX improve_attempts_lineage ON improve_attempts (lineage_parent);
CREATE INDEX improve_attempts_skill ON improve_attempts (skill_id);

CREATE TABLE improve_runs (
    id                  TEXT PRIMARY KEY,
    namespace           TEXT NOT NULL,
    mode                TEXT NOT NULL,
    started             TEXT NOT NULL,
    finished            TEXT,
    attempts            INTEGER NOT NULL DEFAULT 0,
    kept                INTEGER NOT NULL DEFAULT 0,
    reverts             INTEGER NOT NULL DEFAULT 0,
    cost_usd            REAL NOT NULL DEFAULT 0,
    ci_minutes          REAL NOT NULL DEFAULT 0,
    status              TEXT NOT NULL DEFAULT 'opening',
    consecutive_reverts INTEGER NOT NULL DEFAULT 0,
    current_attempt     TEXT,
    base_sha            TEXT,
    pr_url              TEXT,
    note                TEXT,
    condition           TEXT NOT NULL DEFAULT 'full',
    advanced_at         TEXT NOT NULL
);
CREATE INDEX improve_runs_ns ON improve_runs (namespace, started);
CREATE INDEX improve_runs_status ON improve_runs (status, advanced_at);
CREATE INDEX improve_runs_started ON improve_runs (started);
CREATE UNIQUE INDEX improve_runs_one_active ON improve_runs (namespace) WHERE status NOT IN ('done', 'paused');

CREATE TABLE improve_skills (
    id                    TEXT PRIMARY KEY,
    source_namespace      TEXT NOT NULL,
    title                 TEXT NOT NULL,
    body_ref              TEXT NOT NULL,
    wins                  INTEGER NOT NULL DEFAULT 0,
    losses                INTEGER NOT NULL DEFAULT 0,
    source_attempt        TEXT,
    ts                    TEXT NOT NULL,
    version               INTEGER NOT NULL DEFAULT 1,
    status                TEXT NOT NULL DEFAULT 'candidate',
    retired_at            TEXT,
    trigger_condition     TEXT,
    namespaces            TEXT,
    termination_test      TEXT,
    composition_interface TEXT,
    source_job            TEXT
);
CREATE INDEX improve_skills_source ON improve_skills (source_namespace, ts);
CREATE INDEX improve_skills_ts ON improve_skills (ts DESC);
CREATE INDEX improve_skills_status ON improve_skills (status, version);
CREATE INDEX improve_skills_source_attempt ON improve_skills (source_attempt);
CREATE INDEX improve_skills_source_job ON improve_skills (source_job);

-- Replay cache: scope = namespace or 'backup'.
CREATE TABLE improve_jti (
    scope   TEXT NOT NULL,
    jti     TEXT NOT NULL,
    seen_at TEXT NOT NULL,
    PRIMARY KEY (scope, jti)
);
CREATE INDEX improve_jti_seen ON improve_jti (seen_at);

CREATE TABLE jobs (
    id                TEXT PRIMARY KEY,
    namespace         TEXT NOT NULL,
    title             TEXT NOT NULL,
    body              TEXT NOT NULL,
    priority          INTEGER NOT NULL DEFAULT 0,
    status            TEXT NOT NULL DEFAULT 'queued',
    posted_by         TEXT NOT NULL,
    claimed_by        TEXT,
    claimed_at        TEXT,
    lease_expires     TEXT,
    result_ref        TEXT,
    result_summary    TEXT,
    gate_required     INTEGER NOT NULL DEFAULT 0,
    created_at        TEXT NOT NULL,
    updated_at        TEXT NOT NULL,
    resumed_count     INTEGER NOT NULL DEFAULT 0,
    blocked_count     INTEGER NOT NULL DEFAULT 0,
    required_scopes   TEXT,
    min_record        TEXT,
    corrections_count INTEGER NOT NULL DEFAULT 0,
    review_required   INTEGER NOT NULL DEFAULT 0
);
CREATE UNIQUE INDEX jobs_open_title ON jobs (namespace, title) WHERE status IN ('queued', 'claimed');
CREATE INDEX jobs_claimable ON jobs (namespace, status, priority DESC, created_at, id);
CREATE INDEX jobs_lease ON jobs (status, lease_expires);
-- One claim per caller across all namespaces, enforced by the database itself.
CREATE UNIQUE INDEX jobs_one_claim ON jobs (claimed_by) WHERE status = 'claimed';
CREATE INDEX jobs_holder ON jobs (claimed_by, status);

CREATE TABLE agents (
    id         TEXT PRIMARY KEY,
    name       TEXT NOT NULL UNIQUE,
    kind       TEXT NOT NULL,
    key_hash   TEXT NOT NULL UNIQUE,
    scopes     TEXT NOT NULL,
    created_by TEXT NOT NULL,
    created_at TEXT NOT NULL,
    revoked_at TEXT,
    last_seen  TEXT
);
CREATE INDEX agents_live ON agents (revoked_at) WHERE revoked_at IS NULL;

CREATE TABLE job_outcomes (
    job_id            TEXT PRIMARY KEY,
    agent             TEXT NOT NULL,
    namespace         TEXT NOT NULL,
    prs_opened        INTEGER,
    prs_merged        INTEGER,
    commits           INTEGER,
    files_changed     INTEGER,
    tests_added       INTEGER,
    ci_green          INTEGER,
    blocked_count     INTEGER NOT NULL,
    resumed_count     INTEGER NOT NULL,
    duration_minutes  INTEGER,
    result_kind       TEXT NOT NULL,
    verified          TEXT NOT NULL,
    recorded_at       TEXT NOT NULL,
    skill_ids_offered TEXT,
    skill_ids_used    TEXT
);
CREATE INDEX job_outcomes_agent ON job_outcomes (agent, namespace);

CREATE TABLE skill_evaluations (
    id                INTEGER PRIMARY KEY AUTOINCREMENT,
    skill             TEXT NOT NULL,
    version           INTEGER NOT NULL,
    namespace         TEXT NOT NULL,
    probe_set_version TEXT NOT NULL,
    delta             REAL NOT NULL,
    runs              INTEGER NOT NULL,
    verdict           TEXT NOT NULL,
    evaluated_at      TEXT NOT NULL
);
CREATE INDEX skill_evaluations_skill ON skill_evaluations (skill, version, evaluated_at DESC);

CREATE TABLE skill_edits (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    skill        TEXT NOT NULL,
    from_version INTEGER NOT NULL,
    to_version   INTEGER NOT NULL,
    ops          TEXT NOT NULL,
    accepted     INTEGER NOT NULL,
    reason       TEXT NOT NULL,
    evaluated_at TEXT NOT NULL
);
CREATE INDEX skill_edits_skill ON skill_edits (skill, accepted, evaluated_at DESC);

CREATE TABLE skill_failures (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    skill       TEXT NOT NULL,
    namespace   TEXT NOT NULL,
    source_kind TEXT NOT NULL,
    source_id   TEXT NOT NULL,
    note        TEXT NOT NULL,
    created_at  TEXT NOT NULL
);
CREATE INDEX skill_failures_skill ON skill_failures (skill, created_at DESC);

CREATE TABLE job_outcome_prs (
    job_id            TEXT NOT NULL,
    pr_url            TEXT NOT NULL,
    merged            INTEGER,
    merge_verified_at TEXT,
    recorded_at       TEXT NOT NULL,
    PRIMARY KEY (job_id, pr_url)
);
CREATE INDEX job_outcome_prs_url ON job_outcome_prs (pr_url);
CREATE INDEX job_outcome_prs_merged ON job_outcome_prs (merged, merge_verified_at);

-- Replaces the Worker's KV: values with an optional expiry, changed by compare-and-set.
CREATE TABLE settings (
    key        TEXT PRIMARY KEY,
    value      TEXT NOT NULL,
    expires_at TEXT
);

-- One row per periodic task: which replica leads it, until when.
CREATE TABLE leader_leases (
    name       TEXT PRIMARY KEY,
    holder     TEXT NOT NULL,
    expires_at TEXT NOT NULL
);
