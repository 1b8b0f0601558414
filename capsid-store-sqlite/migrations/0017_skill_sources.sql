-- Skill abstraction (issue 17): the verifier's verdict on a finished job, and at most one
-- skill per source attempt and per source job, so the same idea is never abstracted twice
-- from the same source (a retired skill keeps its source spent).

-- `verified-success`, `verified-failure`, `improvised` or `environment-failure`, as the
-- completing call reported it; NULL when it reported none.
ALTER TABLE job_outcomes ADD COLUMN skill_verdict TEXT;
CREATE INDEX job_outcomes_skill_verdict ON job_outcomes (skill_verdict, recorded_at);

CREATE UNIQUE INDEX improve_skills_one_per_attempt ON improve_skills (source_attempt) WHERE source_attempt IS NOT NULL;
CREATE UNIQUE INDEX improve_skills_one_per_job ON improve_skills (source_job) WHERE source_job IS NOT NULL;
