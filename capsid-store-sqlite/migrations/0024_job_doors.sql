-- The box's doors on the job's record (issue 48): one row per connection a boxed agent (or
-- the driver's test box) made through one of the supervisor's doors, and one per host it
-- asked the egress door for, refused or reached. Written by the driver that holds the job
-- (never the run credential the agent holds); `record_id` is the driver's id for the record,
-- so a record sent twice is kept once.
--
-- `door`: 'model', 'git', 'mcp' or 'egress'. `decision`: 'reached', 'refused' or 'failed'.
-- `port` is 0 and `host` 'capsid' for a service in the driver's own process.
CREATE TABLE job_doors (
    job_id      TEXT NOT NULL,
    record_id   TEXT NOT NULL,
    namespace   TEXT NOT NULL,
    agent       TEXT NOT NULL,
    door        TEXT NOT NULL,
    host        TEXT NOT NULL,
    port        INTEGER NOT NULL,
    decision    TEXT NOT NULL,
    bytes_up    INTEGER NOT NULL,
    bytes_down  INTEGER NOT NULL,
    started_at  TEXT NOT NULL,
    ended_at    TEXT NOT NULL,
    detail      TEXT,
    recorded_at TEXT NOT NULL,
    PRIMARY KEY (job_id, record_id)
);
-- The console's newest records.
CREATE INDEX job_doors_recent ON job_doors (recorded_at);
