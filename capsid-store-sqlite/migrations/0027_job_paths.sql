-- Where a job works and what its claim holds (issue 51), SQLite dialect.
--
-- paths: a JSON array of glob patterns relative to the repository root, signed with the job's
-- body (capsid-job-terms:v1); NULL: the job names none.
-- leased: what the job's claim leased, written in the claim's own statement: its paths, or
-- ["**"] (the whole repository) for a driver's claim of a job without paths; NULL: nothing
-- (a claim by an agent outside a driver of a job without paths). A lease is live while the
-- job is blocked, or claimed with its lease not run out.

ALTER TABLE jobs ADD COLUMN paths TEXT;
ALTER TABLE jobs ADD COLUMN leased TEXT;
