-- The box's doors on the job's record (issue 48), Postgres dialect. Same table, columns and
-- meaning as the SQLite migration of the same number.

CREATE TABLE job_doors (
    job_id      TEXT COLLATE "C" NOT NULL,
    record_id   TEXT COLLATE "C" NOT NULL,
    namespace   TEXT COLLATE "C" NOT NULL,
    agent       TEXT COLLATE "C" NOT NULL,
    door        TEXT COLLATE "C" NOT NULL,
    host        TEXT COLLATE "C" NOT NULL,
    port        BIGINT NOT NULL,
    decision    TEXT COLLATE "C" NOT NULL,
    bytes_up    BIGINT NOT NULL,
    bytes_down  BIGINT NOT NULL,
    started_at  TEXT COLLATE "C" NOT NULL,
    ended_at    TEXT COLLATE "C" NOT NULL,
    detail      TEXT COLLATE "C",
    recorded_at TEXT COLLATE "C" NOT NULL,
    PRIMARY KEY (job_id, record_id)
);
CREATE INDEX job_doors_recent ON job_doors (recorded_at);
