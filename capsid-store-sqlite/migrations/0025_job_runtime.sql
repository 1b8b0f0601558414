-- A job's runtime (issue 50): the agent CLI it asks to run it (`claude-code`, `codex`). NULL:
-- the driver's runtime, else its namespace's. A driver that cannot run the named one leaves
-- the job queued.

ALTER TABLE jobs ADD COLUMN runtime TEXT;
