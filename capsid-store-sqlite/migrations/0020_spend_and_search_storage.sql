-- A claim reads its namespace's spend this month (the budget check): the costed outcomes of
-- the namespace since the month began. The spend index holds only costed outcomes, and their
-- cost, so that sum reads the index alone and an outcome without a cost (most of them)
-- writes no entry. (The Postgres migration of the same number also keeps search vectors
-- in their rows; SQLite has no TOAST.)
DROP INDEX job_outcomes_spend;
CREATE INDEX job_outcomes_spend ON job_outcomes (namespace, recorded_at, cost_usd)
    WHERE cost_usd IS NOT NULL;
