-- The two text indexes also hold each document's namespace, so a search within one namespace
-- finds its candidates in one index scan: GIN walks the namespace's posting list and skips
-- ahead in the word's, instead of building the word's whole bitmap and intersecting it with
-- the namespace's. For a word in 88,000 of 100,000 documents, searched in a namespace of
-- 5,400, the bitmap alone took 15 ms and the whole statement 28; with the namespace in the
-- index, 12 (docs/perf/2026-12-05.md, fourth round). A search without a namespace uses the same
-- indexes as before: a GIN index on several columns answers a condition on any of them.
--
-- A namespace in a GIN index needs the `btree_gin` extension (in PostgreSQL's contrib, trusted
-- since PostgreSQL 13: a database owner may create it). Where it cannot be created, the
-- indexes stay as they were and searches answer the same, only slower within a namespace; the
-- warning says why, and `capsid doctor` names what to run to add it later. Either way the
-- index names stay, and so do the plans that name them.
DO $migration$
BEGIN
    BEGIN
        CREATE EXTENSION IF NOT EXISTS btree_gin;
    EXCEPTION WHEN OTHERS THEN
        RAISE WARNING 'capsid: btree_gin could not be created (%); the document text indexes keep one column', SQLERRM;
        RETURN;
    END;
    DROP INDEX documents_search;
    CREATE INDEX documents_search ON documents USING GIN (namespace, search);
    DROP INDEX documents_title_search;
    CREATE INDEX documents_title_search ON documents USING GIN (namespace, title_search);
END
$migration$;
