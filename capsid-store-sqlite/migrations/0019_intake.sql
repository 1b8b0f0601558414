-- Work from the issue tracker (issue 37): one row per issue the intake took in, keyed on the
-- repository and the issue's number, with the job id chosen before the job is posted (unique),
-- so concurrent ticks and replicas post one job per issue. The body's digest notices an edit
-- after posting (the job keeps its signed text); commented_at and closed_at record the two
-- comments and the loop's end. Same tables, columns and meaning as the Postgres migration of
-- the same number.

CREATE TABLE intake_issues (
    repo         TEXT NOT NULL,
    number       INTEGER NOT NULL,
    issue_id     INTEGER NOT NULL,
    namespace    TEXT NOT NULL,
    job_id       TEXT NOT NULL,
    body_sha256  TEXT NOT NULL,
    noted_sha256 TEXT NOT NULL,
    commented_at TEXT,
    closed_at    TEXT,
    outcome      TEXT,
    created_at   TEXT NOT NULL,
    updated_at   TEXT NOT NULL,
    PRIMARY KEY (repo, number)
);
CREATE UNIQUE INDEX intake_issues_job ON intake_issues (job_id);
CREATE INDEX intake_issues_open ON intake_issues (created_at) WHERE closed_at IS NULL;
