-- Review verdicts (SPEC 8): a verdict counts for a review_required job only when a minted
-- agent other than the job's holder posted it through manage_pr action comment, so Capsid
-- records it here with the pull request's head at that moment (a newer head invalidates it).
-- The outcome row of a reviewed job names the approving agent. Same tables, columns and
-- meaning as the Postgres migration of the same number.

CREATE TABLE review_verdicts (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    repo        TEXT NOT NULL,
    number      INTEGER NOT NULL,
    namespace   TEXT NOT NULL,
    reviewer    TEXT NOT NULL,
    verdict     TEXT NOT NULL,
    said        TEXT NOT NULL,
    head_sha    TEXT NOT NULL,
    comment_url TEXT NOT NULL,
    created_at  TEXT NOT NULL
);
CREATE INDEX review_verdicts_pull ON review_verdicts (repo, number, id DESC);

ALTER TABLE job_outcomes ADD COLUMN reviewed_by TEXT;
