-- The job ledger (issue 49): one row per model call the driver's model door forwarded for a
-- job, priced by the door from the upstream's own usage, written before the call's answer
-- ends. A namespace's month of spend is the sum of its rows; a job's cost is the sum of its
-- own. `call_id` is the door's id for the call, so a driver that sends a call twice (once as
-- it settles, again when the run closes) records it once.
--
-- `priced`: 'table' (the model is in the price table), 'highest' (it is not: priced at the
-- table's highest rates), 'reported' (no door counted it: the cost a finished job's evidence
-- reported, kept so the budget still sees it). `ended`: 'completed', 'upstream_error',
-- 'broken' or 'reported'.
CREATE TABLE job_calls (
    call_id            TEXT PRIMARY KEY,
    job_id             TEXT NOT NULL,
    namespace          TEXT NOT NULL,
    agent              TEXT NOT NULL,
    session            TEXT,
    model              TEXT NOT NULL,
    input_tokens       INTEGER NOT NULL,
    output_tokens      INTEGER NOT NULL,
    cache_write_tokens INTEGER NOT NULL,
    cache_read_tokens  INTEGER NOT NULL,
    cost_micros        INTEGER NOT NULL,
    priced             TEXT NOT NULL,
    ended              TEXT NOT NULL,
    started_at         TEXT NOT NULL,
    ended_at           TEXT NOT NULL,
    recorded_at        TEXT NOT NULL
);
CREATE INDEX job_calls_job ON job_calls (job_id);
-- The month's spend of a namespace reads this index alone.
CREATE INDEX job_calls_spend ON job_calls (namespace, recorded_at, cost_micros);

-- What finished jobs reported before the ledger existed stays spent this month.
INSERT INTO job_calls (call_id, job_id, namespace, agent, session, model, input_tokens,
    output_tokens, cache_write_tokens, cache_read_tokens, cost_micros, priced, ended,
    started_at, ended_at, recorded_at)
SELECT 'reported_' || job_id, job_id, namespace, agent, NULL, 'reported', 0, 0, 0, 0,
    CAST(ROUND(cost_usd * 1000000) AS INTEGER), 'reported', 'reported',
    recorded_at, recorded_at, recorded_at
FROM job_outcomes WHERE cost_usd IS NOT NULL AND cost_usd >= 0;
