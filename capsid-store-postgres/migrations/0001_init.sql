-- Capsid schema, Postgres dialect. Same tables, columns and meaning as the SQLite migration of
-- the same number. Timestamps are fixed-width RFC 3339 UTC text ("2026-11-30T04:09:01.123Z")
-- supplied by the application's clock, so text order is time order.
--
-- Every TEXT column is COLLATE "C": SQLite compares text as bytes (BINARY), so ordering,
-- equality, keyset pages and path-prefix ranges behave the same here whatever the database's
-- default locale, and every index serves the comparisons the queries make.

CREATE TABLE documents (
    id          BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    namespace   TEXT COLLATE "C" NOT NULL,
    path        TEXT COLLATE "C" NOT NULL,
    title       TEXT COLLATE "C",
    body        TEXT COLLATE "C",
    type        TEXT COLLATE "C" NOT NULL DEFAULT 'note',
    status      TEXT COLLATE "C" NOT NULL DEFAULT 'published',
    tags        TEXT COLLATE "C",
    frontmatter TEXT COLLATE "C",
    publish_at  TEXT COLLATE "C",
    created_at  TEXT COLLATE "C" NOT NULL,
    updated_at  TEXT COLLATE "C" NOT NULL,
    UNIQUE (namespace, path)
);
CREATE INDEX documents_type ON documents (namespace, type, updated_at);

-- Full-text search: a generated tsvector over title (weight A) and body (weight B) with a GIN
-- index. The 'simple' configuration matches FTS5's default tokenizer (no stemming). Only the
-- first 600,000 characters of a body are indexed: a tsvector is limited to 1 MB.
ALTER TABLE documents ADD COLUMN search tsvector GENERATED ALWAYS AS (
    setweight(to_tsvector('simple', coalesce(title, '')), 'A') ||
    setweight(to_tsvector('simple', left(coalesce(body, ''), 600000)), 'B')
) STORED;
CREATE INDEX documents_search ON documents USING GIN (search);
-- Title words alone, so a search always ranks the documents whose title matches, however
-- many bodies match too (a search ranks a bounded set of candidates).
ALTER TABLE documents ADD COLUMN title_search tsvector GENERATED ALWAYS AS (
    to_tsvector('simple', coalesce(title, ''))
) STORED;
CREATE INDEX documents_title_search ON documents USING GIN (title_search);

CREATE TABLE namespaces (
    namespace  TEXT COLLATE "C" PRIMARY KEY,
    repos      TEXT COLLATE "C",
    created_at TEXT COLLATE "C" NOT NULL
);

-- Snapshots keep metadata (type, status, tags) as well as title and body.
CREATE TABLE document_versions (
    id          BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    document_id BIGINT NOT NULL,
    namespace   TEXT COLLATE "C" NOT NULL,
    path        TEXT COLLATE "C" NOT NULL,
    title       TEXT COLLATE "C",
    body        TEXT COLLATE "C",
    type        TEXT COLLATE "C",
    status      TEXT COLLATE "C",
    tags        TEXT COLLATE "C",
    snapshot_at TEXT COLLATE "C" NOT NULL
);
CREATE INDEX document_versions_doc ON document_versions (namespace, path, id DESC);
CREATE INDEX document_versions_snapshot ON document_versions (snapshot_at);

CREATE TABLE audit_log (
    id        BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    actor     TEXT COLLATE "C",
    action    TEXT COLLATE "C",
    namespace TEXT COLLATE "C",
    path      TEXT COLLATE "C",
    params    TEXT COLLATE "C",
    at        TEXT COLLATE "C" NOT NULL
);
CREATE INDEX audit_log_doc ON audit_log (namespace, path, id DESC);
CREATE INDEX audit_log_at ON audit_log (at);
CREATE INDEX audit_log_action_actor ON audit_log (action, actor);
CREATE INDEX audit_log_actor_recent ON audit_log (actor, id DESC);
CREATE INDEX audit_log_ns_recent ON audit_log (namespace, id DESC);

CREATE TABLE document_links (
    id         BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    from_ns    TEXT COLLATE "C" NOT NULL,
    from_path  TEXT COLLATE "C" NOT NULL,
    type       TEXT COLLATE "C" NOT NULL,
    to_ns      TEXT COLLATE "C" NOT NULL,
    to_path    TEXT COLLATE "C" NOT NULL,
    created_at TEXT COLLATE "C" NOT NULL,
    UNIQUE (from_ns, from_path, type, to_ns, to_path)
);
CREATE INDEX document_links_from ON document_links (from_ns, from_path);
CREATE INDEX document_links_to ON document_links (to_ns, to_path);

CREATE TABLE improve_scores (
    id         BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    namespace  TEXT COLLATE "C" NOT NULL,
    metric     TEXT COLLATE "C" NOT NULL,
    value      DOUBLE PRECISION,
    run_id     TEXT COLLATE "C" NOT NULL,
    attempt_id TEXT COLLATE "C",
    ts         TEXT COLLATE "C" NOT NULL
);
CREATE INDEX improve_scores_run ON improve_scores (run_id, namespace, metric);
CREATE INDEX improve_scores_metric ON improve_scores (namespace, metric, ts);

CREATE TABLE improve_attempts (
    id             TEXT COLLATE "C" PRIMARY KEY,
    namespace      TEXT COLLATE "C" NOT NULL,
    run_id         TEXT COLLATE "C" NOT NULL,
    change_summary TEXT COLLATE "C",
    diff_ref       TEXT COLLATE "C",
    score_before   DOUBLE PRECISION,
    score_after    DOUBLE PRECISION,
    kept           BIGINT NOT NULL DEFAULT 0,
    reason         TEXT COLLATE "C",
    lineage_parent TEXT COLLATE "C",
    status         TEXT COLLATE "C" NOT NULL DEFAULT 'pending',
    branch         TEXT COLLATE "C",
    head_sha       TEXT COLLATE "C",
    base_sha       TEXT COLLATE "C",
    flagged        BIGINT NOT NULL DEFAULT 0,
    flag_reason    TEXT COLLATE "C",
    skill_id       TEXT COLLATE "C",
    anchors_json   TEXT COLLATE "C",
    secondary_json TEXT COLLATE "C",
    dispatched_at  TEXT COLLATE "C",
    ts             TEXT COLLATE "C" NOT NULL
);
CREATE INDEX improve_attempts_run ON improve_attempts (run_id, ts);
CREATE INDEX improve_attempts_ns ON improve_attempts (namespace, ts);
CREATE INDEX improve_attempts_lineage ON improve_attempts (lineage_parent);
CREATE INDEX improve_attempts_skill ON improve_attempts (skill_id);

CREATE TABLE improve_runs (
    id                  TEXT COLLATE "C" PRIMARY KEY,
    namespace           TEXT COLLATE "C" NOT NULL,
    mode                TEXT COLLATE "C" NOT NULL,
    started             TEXT COLLATE "C" NOT NULL,
    finished            TEXT COLLATE "C",
    attempts            BIGINT NOT NULL DEFAULT 0,
    kept                BIGINT NOT NULL DEFAULT 0,
    reverts             BIGINT NOT NULL DEFAULT 0,
    cost_usd            DOUBLE PRECISION NOT NULL DEFAULT 0,
    ci_minutes          DOUBLE PRECISION NOT NULL DEFAULT 0,
    status              TEXT COLLATE "C" NOT NULL DEFAULT 'opening',
    consecutive_reverts BIGINT NOT NULL DEFAULT 0,
    current_attempt     TEXT COLLATE "C",
    base_sha            TEXT COLLATE "C",
    pr_url              TEXT COLLATE "C",
    note                TEXT COLLATE "C",
    condition           TEXT COLLATE "C" NOT NULL DEFAULT 'full',
    advanced_at         TEXT COLLATE "C" NOT NULL
);
CREATE INDEX improve_runs_ns ON improve_runs (namespace, started);
CREATE INDEX improve_runs_status ON improve_runs (status, advanced_at);
CREATE INDEX improve_runs_started ON improve_runs (started);
CREATE UNIQUE INDEX improve_runs_one_active ON improve_runs (namespace) WHERE status NOT IN ('done', 'paused');

CREATE TABLE improve_skills (
    id                    TEXT COLLATE "C" PRIMARY KEY,
    source_namespace      TEXT COLLATE "C" NOT NULL,
    title                 TEXT COLLATE "C" NOT NULL,
    body_ref              TEXT COLLATE "C" NOT NULL,
    wins                  BIGINT NOT NULL DEFAULT 0,
    losses                BIGINT NOT NULL DEFAULT 0,
    source_attempt        TEXT COLLATE "C",
    ts                    TEXT COLLATE "C" NOT NULL,
    version               BIGINT NOT NULL DEFAULT 1,
    status                TEXT COLLATE "C" NOT NULL DEFAULT 'candidate',
    retired_at            TEXT COLLATE "C",
    trigger_condition     TEXT COLLATE "C",
    namespaces            TEXT COLLATE "C",
    termination_test      TEXT COLLATE "C",
    composition_interface TEXT COLLATE "C",
    source_job            TEXT COLLATE "C"
);
CREATE INDEX improve_skills_source ON improve_skills (source_namespace, ts);
CREATE INDEX improve_skills_ts ON improve_skills (ts DESC);
CREATE INDEX improve_skills_status ON improve_skills (status, version);
CREATE INDEX improve_skills_source_attempt ON improve_skills (source_attempt);
CREATE INDEX improve_skills_source_job ON improve_skills (source_job);

-- Replay cache: scope = namespace or 'backup'.
CREATE TABLE improve_jti (
    scope   TEXT COLLATE "C" NOT NULL,
    jti     TEXT COLLATE "C" NOT NULL,
    seen_at TEXT COLLATE "C" NOT NULL,
    PRIMARY KEY (scope, jti)
);
CREATE INDEX improve_jti_seen ON improve_jti (seen_at);

CREATE TABLE jobs (
    id                TEXT COLLATE "C" PRIMARY KEY,
    namespace         TEXT COLLATE "C" NOT NULL,
    title             TEXT COLLATE "C" NOT NULL,
    body              TEXT COLLATE "C" NOT NULL,
    priority          BIGINT NOT NULL DEFAULT 0,
    status            TEXT COLLATE "C" NOT NULL DEFAULT 'queued',
    posted_by         TEXT COLLATE "C" NOT NULL,
    claimed_by        TEXT COLLATE "C",
    claimed_at        TEXT COLLATE "C",
    lease_expires     TEXT COLLATE "C",
    result_ref        TEXT COLLATE "C",
    result_summary    TEXT COLLATE "C",
    gate_required     BIGINT NOT NULL DEFAULT 0,
    created_at        TEXT COLLATE "C" NOT NULL,
    updated_at        TEXT COLLATE "C" NOT NULL,
    resumed_count     BIGINT NOT NULL DEFAULT 0,
    blocked_count     BIGINT NOT NULL DEFAULT 0,
    required_scopes   TEXT COLLATE "C",
    min_record        TEXT COLLATE "C",
    corrections_count BIGINT NOT NULL DEFAULT 0,
    review_required   BIGINT NOT NULL DEFAULT 0
);
CREATE UNIQUE INDEX jobs_open_title ON jobs (namespace, title) WHERE status IN ('queued', 'claimed');
-- Claim order is priority, age, then id, so the index hands out the best candidate unsorted.
CREATE INDEX jobs_claimable ON jobs (namespace, status, priority DESC, created_at, id);
CREATE INDEX jobs_lease ON jobs (status, lease_expires);
-- One claim per caller across all namespaces, enforced by the database itself.
CREATE UNIQUE INDEX jobs_one_claim ON jobs (claimed_by) WHERE status = 'claimed';
CREATE INDEX jobs_holder ON jobs (claimed_by, status);

CREATE TABLE agents (
    id         TEXT COLLATE "C" PRIMARY KEY,
    name       TEXT COLLATE "C" NOT NULL UNIQUE,
    kind       TEXT COLLATE "C" NOT NULL,
    key_hash   TEXT COLLATE "C" NOT NULL UNIQUE,
    scopes     TEXT COLLATE "C" NOT NULL,
    created_by TEXT COLLATE "C" NOT NULL,
    created_at TEXT COLLATE "C" NOT NULL,
    revoked_at TEXT COLLATE "C",
    last_seen  TEXT COLLATE "C"
);
CREATE INDEX agents_live ON agents (revoked_at) WHERE revoked_at IS NULL;

CREATE TABLE job_outcomes (
    job_id            TEXT COLLATE "C" PRIMARY KEY,
    agent             TEXT COLLATE "C" NOT NULL,
    namespace         TEXT COLLATE "C" NOT NULL,
    prs_opened        BIGINT,
    prs_merged        BIGINT,
    commits           BIGINT,
    files_changed     BIGINT,
    tests_added       BIGINT,
    ci_green          BIGINT,
    blocked_count     BIGINT NOT NULL,
    resumed_count     BIGINT NOT NULL,
    duration_minutes  BIGINT,
    result_kind       TEXT COLLATE "C" NOT NULL,
    verified          TEXT COLLATE "C" NOT NULL,
    recorded_at       TEXT COLLATE "C" NOT NULL,
    skill_ids_offered TEXT COLLATE "C",
    skill_ids_used    TEXT COLLATE "C"
);
CREATE INDEX job_outcomes_agent ON job_outcomes (agent, namespace);

CREATE TABLE skill_evaluations (
    id                BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    skill             TEXT COLLATE "C" NOT NULL,
    version           BIGINT NOT NULL,
    namespace         TEXT COLLATE "C" NOT NULL,
    probe_set_version TEXT COLLATE "C" NOT NULL,
    delta             DOUBLE PRECISION NOT NULL,
    runs              BIGINT NOT NULL,
    verdict           TEXT COLLATE "C" NOT NULL,
    evaluated_at      TEXT COLLATE "C" NOT NULL
);
CREATE INDEX skill_evaluations_skill ON skill_evaluations (skill, version, evaluated_at DESC);

CREATE TABLE skill_edits (
    id           BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    skill        TEXT COLLATE "C" NOT NULL,
    from_version BIGINT NOT NULL,
    to_version   BIGINT NOT NULL,
    ops          TEXT COLLATE "C" NOT NULL,
    accepted     BIGINT NOT NULL,
    reason       TEXT COLLATE "C" NOT NULL,
    evaluated_at TEXT COLLATE "C" NOT NULL
);
CREATE INDEX skill_edits_skill ON skill_edits (skill, accepted, evaluated_at DESC);

CREATE TABLE skill_failures (
    id          BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    skill       TEXT COLLATE "C" NOT NULL,
    namespace   TEXT COLLATE "C" NOT NULL,
    source_kind TEXT COLLATE "C" NOT NULL,
    source_id   TEXT COLLATE "C" NOT NULL,
    note        TEXT COLLATE "C" NOT NULL,
    created_at  TEXT COLLATE "C" NOT NULL
);
CREATE INDEX skill_failures_skill ON skill_failures (skill, created_at DESC);

CREATE TABLE job_outcome_prs (
    job_id            TEXT COLLATE "C" NOT NULL,
    pr_url            TEXT COLLATE "C" NOT NULL,
    merged            BIGINT,
    merge_verified_at TEXT COLLATE "C",
    recorded_at       TEXT COLLATE "C" NOT NULL,
    PRIMARY KEY (job_id, pr_url)
);
CREATE INDEX job_outcome_prs_url ON job_outcome_prs (pr_url);
CREATE INDEX job_outcome_prs_merged ON job_outcome_prs (merged, merge_verified_at);

-- Replaces the Worker's KV: values with an optional expiry, changed by compare-and-set.
CREATE TABLE settings (
    key        TEXT COLLATE "C" PRIMARY KEY,
    value      TEXT COLLATE "C" NOT NULL,
    expires_at TEXT COLLATE "C"
);

-- One row per periodic task: which replica leads it, until when.
CREATE TABLE leader_leases (
    name       TEXT COLLATE "C" PRIMARY KEY,
    holder     TEXT COLLATE "C" NOT NULL,
    expires_at TEXT COLLATE "C" NOT NULL
);
