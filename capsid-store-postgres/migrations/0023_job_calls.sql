-- The job ledger (issue 49), Postgres dialect. Same table, columns and meaning as the SQLite
-- migration of the same number: one row per model call the driver's model door forwarded.

CREATE TABLE job_calls (
    call_id            TEXT COLLATE "C" PRIMARY KEY,
    job_id             TEXT COLLATE "C" NOT NULL,
    namespace          TEXT COLLATE "C" NOT NULL,
    agent              TEXT COLLATE "C" NOT NULL,
    session            TEXT COLLATE "C",
    model              TEXT COLLATE "C" NOT NULL,
    input_tokens       BIGINT NOT NULL,
    output_tokens      BIGINT NOT NULL,
    cache_write_tokens BIGINT NOT NULL,
    cache_read_tokens  BIGINT NOT NULL,
    cost_micros        BIGINT NOT NULL,
    priced             TEXT COLLATE "C" NOT NULL,
    ended              TEXT COLLATE "C" NOT NULL,
    started_at         TEXT COLLATE "C" NOT NULL,
    ended_at           TEXT COLLATE "C" NOT NULL,
    recorded_at        TEXT COLLATE "C" NOT NULL
);
CREATE INDEX job_calls_job ON job_calls (job_id);
CREATE INDEX job_calls_spend ON job_calls (namespace, recorded_at, cost_micros);

INSERT INTO job_calls (call_id, job_id, namespace, agent, session, model, input_tokens,
    output_tokens, cache_write_tokens, cache_read_tokens, cost_micros, priced, ended,
    started_at, ended_at, recorded_at)
SELECT 'reported_' || job_id, job_id, namespace, agent, NULL, 'reported', 0, 0, 0, 0,
    CAST(ROUND(cost_usd * 1000000) AS BIGINT), 'reported', 'reported',
    recorded_at, recorded_at, recorded_at
FROM job_outcomes WHERE cost_usd IS NOT NULL AND cost_usd >= 0;
