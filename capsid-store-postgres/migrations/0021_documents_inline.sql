-- A document row keeps its body and search vector inline up to a full page (8,160 bytes)
-- instead of moving them to the TOAST table once the row passes 2 KB. 0020's `STORAGE MAIN`
-- was not enough: a row with a body of a few KB still passed 2 KB after compression, so its
-- vector went out of line and every candidate a search ranked cost a TOAST index lookup and
-- chunk reads, twice. Inline, a common word over 100,000 documents ranks its 4,000
-- candidates in about 20 ms instead of 30 (docs/perf/2026-12-05.md), and a write stores one
-- row instead of a row plus TOAST chunks and their index entries. Larger rows still go out of
-- line. Rows written earlier keep their layout until rewritten; `VACUUM FULL documents`
-- rewrites them all (it locks the table while it runs).
ALTER TABLE documents SET (toast_tuple_target = 8160);
