-- Review verdicts (SPEC 8), Postgres dialect: a verdict counts for a review_required job only
-- when a minted agent other than the job's holder posted it through manage_pr action comment,
-- so Capsid records it here with the pull request's head at that moment (a newer head
-- invalidates it). The outcome row of a reviewed job names the approving agent. Same tables,
-- columns and meaning as the SQLite migration of the same number.

CREATE TABLE review_verdicts (
    id          BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    repo        TEXT COLLATE "C" NOT NULL,
    number      BIGINT NOT NULL,
    namespace   TEXT COLLATE "C" NOT NULL,
    reviewer    TEXT COLLATE "C" NOT NULL,
    verdict     TEXT COLLATE "C" NOT NULL,
    said        TEXT COLLATE "C" NOT NULL,
    head_sha    TEXT COLLATE "C" NOT NULL,
    comment_url TEXT COLLATE "C" NOT NULL,
    created_at  TEXT COLLATE "C" NOT NULL
);
CREATE INDEX review_verdicts_pull ON review_verdicts (repo, number, id DESC);

ALTER TABLE job_outcomes ADD COLUMN reviewed_by TEXT COLLATE "C";
