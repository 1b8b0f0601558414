-- A job's runtime (issue 50), Postgres dialect. Same column and meaning as the SQLite
-- migration of the same number: the agent CLI the job asks to run it.

ALTER TABLE jobs ADD COLUMN runtime TEXT;
