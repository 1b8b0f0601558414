-- A job's role (issue 55), Postgres dialect. Same column and meaning as the SQLite migration
-- of the same number.

ALTER TABLE jobs ADD COLUMN role TEXT;
