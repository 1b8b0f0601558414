-- Budgets (issue 37): what each finished job cost, as its driver measured it, and a monthly
-- budget per namespace. The month's spend of a namespace is the sum of its outcomes' costs
-- recorded since the month began (UTC); NULL cost is a job that reported none.

ALTER TABLE job_outcomes ADD COLUMN cost_usd REAL;
ALTER TABLE job_outcomes ADD COLUMN turns INTEGER;
ALTER TABLE job_outcomes ADD COLUMN duration_ms INTEGER;
CREATE INDEX job_outcomes_spend ON job_outcomes (namespace, recorded_at);

-- NULL: the server's default applies (CAPSID_MONTHLY_BUDGET_USD), or none.
ALTER TABLE namespaces ADD COLUMN monthly_budget_usd REAL;
