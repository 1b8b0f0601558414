-- A claim reads its namespace's spend this month (the budget check): the costed outcomes of
-- the namespace since the month began. The spend index holds only costed outcomes, and their
-- cost, so that sum reads the index alone and an outcome without a cost (most of them)
-- writes no entry (it was 0.25 ms of each claim's 1.5 ms in the database with 2,000 outcomes).
DROP INDEX job_outcomes_spend;
CREATE INDEX job_outcomes_spend ON job_outcomes (namespace, recorded_at) INCLUDE (cost_usd)
    WHERE cost_usd IS NOT NULL;

-- Documents' text, search vectors and snapshots are compressed with lz4 instead of pglz where
-- the server supports it (built --with-lz4, as Debian's and the official images are). pglz
-- compression of the body and its tsvector was the largest single cost of a document write,
-- and decompressing each candidate's tsvector (twice) the largest of a search's ranking
-- (docs/perf/2026-12-05.md). Only values written from now on are compressed with lz4; older
-- ones stay readable as they are. SQLite stores text uncompressed.
DO $$
BEGIN
    IF EXISTS (
        SELECT 1 FROM pg_settings
        WHERE name = 'default_toast_compression' AND 'lz4' = ANY (enumvals)
    ) THEN
        ALTER TABLE documents
            ALTER COLUMN body SET COMPRESSION lz4,
            ALTER COLUMN search SET COMPRESSION lz4,
            ALTER COLUMN title_search SET COMPRESSION lz4,
            ALTER COLUMN frontmatter SET COMPRESSION lz4;
        ALTER TABLE document_versions ALTER COLUMN body SET COMPRESSION lz4;
    END IF;
END
$$;
