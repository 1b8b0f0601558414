//! The command-line tests in one binary: each module runs the real `capsid` binary (and, for
//! `drive`, the real Claude Code) as a user would.

mod autonomy;
mod backup;
mod backup_pull;
mod console_live;
mod console_login;
mod container;
mod drive;
mod drive_schedule;
mod drive_task;
mod first_week;
mod git_gate;
mod hook_protocol;
mod improve_pin;
mod improve_workflows;
mod listen;
mod model_api;
mod names;
mod rehearsal;
mod replicas;
mod request_log;
mod serve;
mod service_install;
mod skills_cli;
mod store_outage;
