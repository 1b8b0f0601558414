-- Job caps (issue 49): what one run of a job may spend on its model, in micro-dollars. NULL:
-- the server's default applies (CAPSID_JOB_MAX_COST_USD), or none. A claim reserves the cap
-- against the namespace's month; the claimed jobs of a namespace are read by status.

ALTER TABLE jobs ADD COLUMN max_cost_micros INTEGER;
