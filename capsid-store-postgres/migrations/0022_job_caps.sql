-- Job caps (issue 49), Postgres dialect. Same column and meaning as the SQLite migration of
-- the same number: what one run of a job may spend on its model, in micro-dollars.

ALTER TABLE jobs ADD COLUMN max_cost_micros BIGINT;
