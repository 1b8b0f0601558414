-- Runner settings per namespace and bounded agent-initiated dispatch (issue 14), Postgres
-- dialect. Same columns and meaning as the SQLite migration of the same number.

-- The namespace's runner settings for agent hosts, as the core's JSON
-- ({root_dir, test_command, build_command, agent_command, credential_ref}); never a secret.
ALTER TABLE namespaces ADD COLUMN runner TEXT COLLATE "C";

-- A job posted by the holder of another: its parent, who asked, and how deep the chain is.
ALTER TABLE jobs ADD COLUMN parent_id TEXT COLLATE "C";
ALTER TABLE jobs ADD COLUMN requested_by TEXT COLLATE "C";
ALTER TABLE jobs ADD COLUMN depth BIGINT NOT NULL DEFAULT 0;
-- The children of a job, counted at every dispatch.
CREATE INDEX jobs_parent ON jobs (parent_id) WHERE parent_id IS NOT NULL;
