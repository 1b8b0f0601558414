-- Budgets (issue 37), Postgres dialect. Same columns and meaning as the SQLite migration of
-- the same number: each finished job's measured cost, and a monthly budget per namespace.

ALTER TABLE job_outcomes ADD COLUMN cost_usd DOUBLE PRECISION;
ALTER TABLE job_outcomes ADD COLUMN turns BIGINT;
ALTER TABLE job_outcomes ADD COLUMN duration_ms BIGINT;
CREATE INDEX job_outcomes_spend ON job_outcomes (namespace, recorded_at);

ALTER TABLE namespaces ADD COLUMN monthly_budget_usd DOUBLE PRECISION;
