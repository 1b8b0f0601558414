-- A claim reads its namespace's spend this month (the budget check): the costed outcomes of
-- the namespace since the month began. The spend index holds only costed outcomes, and their
-- cost, so that sum reads the index alone and an outcome without a cost (most of them)
-- writes no entry (it was 0.25 ms of each claim's 1.5 ms in the database with 2,000 outcomes).
DROP INDEX job_outcomes_spend;
CREATE INDEX job_outcomes_spend ON job_outcomes (namespace, recorded_at) INCLUDE (cost_usd)
    WHERE cost_usd IS NOT NULL;

-- A document's search vector stays in its row (compressed when the row is large) instead of
-- moving to the TOAST table: ranking reads the vector of every candidate, and an
-- out-of-line value cost a TOAST index lookup and chunk reads each time it was read (twice
-- per candidate: the match, then ts_rank). On 100,000 documents a common word's search fell
-- from about 45 ms to 26 ms (docs/perf/2026-12-05.md). Rows written before this migration
-- keep their storage until they are rewritten; `VACUUM FULL documents` rewrites them all.
ALTER TABLE documents ALTER COLUMN search SET STORAGE MAIN;
