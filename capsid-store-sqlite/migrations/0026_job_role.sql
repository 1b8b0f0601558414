-- A job's role (issue 55): scout, planner, junior, senior or deploy. Its signature covers it
-- with the body (capsid-job-terms:v1), so a row whose role was edited after post fails its
-- claim as an edited body does. NULL: no role, a change is asked for.

ALTER TABLE jobs ADD COLUMN role TEXT;
