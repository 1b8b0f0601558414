//! The workspace's end-to-end suite in one test binary (one link of the whole server, not one
//! per file): each module was its own binary. `oauth` and `github_adapter` stay binaries of
//! their own, since each installs the process's one global log subscriber to read what the
//! server logged.

mod backup_tables;
mod blobs_s3;
mod conformance;
mod durability;
mod e2e_autonomy;
mod e2e_backup;
mod e2e_checkmarks;
mod e2e_connections;
mod e2e_improve_night;
mod e2e_improve_score;
mod e2e_intake;
mod e2e_jobs;
mod e2e_memory;
mod e2e_replicas;
mod e2e_sessions;
mod e2e_skills_eval;
mod e2e_subscriptions;
mod e2e_typed_answers;
mod e2e_webhook;
mod first_hour;
mod improve_task;
mod model_adapter;
mod operations;
mod plans;
mod release;
