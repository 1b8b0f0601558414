//! `capsid improve roster add|remove|list` (the namespaces autonomy and the loop may touch),
//! `capsid improve cadence <task> [<minutes>]` (a periodic task's cadence) and
//! `capsid improve pin <ns>` (pins the Anchors checksum of `<ns>/improve/scores.md`), through
//! `improve_run` (audited), as the CLI's admin caller; `capsid improve workflows` and
//! `capsid improve key <ns>` (the scorer's workflows and their key, `workflows.rs`).

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use clap::Subcommand;
use serde_json::json;

use crate::admin::{call_improve, finish};
use crate::config::GlobalArgs;

/// `capsid improve`.
#[derive(Debug, Subcommand)]
pub enum ImproveCommand {
    /// The roster: which namespaces autonomy (auto-merge, the watcher) and the loop may touch.
    #[command(subcommand)]
    Roster(RosterCommand),
    /// A periodic task's cadence in minutes: shown, or set when minutes are given.
    Cadence {
        /// The task (sweep, ci-poll, backup, rehearsal, auto-merge, watcher, improve, intake,
        /// scouts).
        task: String,
        /// The new cadence, in whole minutes.
        minutes: Option<String>,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Pin the Anchors checksum of a namespace's improve/scores.md (prints the checksum).
    Pin {
        /// The namespace.
        namespace: String,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Write the loop's workflows (improve-score.yml, improve-probe.yml) into a repository's
    /// .github/workflows/, keeping each one's own job; with --check, write nothing and exit 1
    /// naming each file that differs from what this Capsid ships.
    Workflows {
        /// The repository's folder.
        #[arg(long, default_value = ".")]
        repo: PathBuf,
        /// Compare only: exit 0 when both match, 1 naming each file that differs or is missing.
        #[arg(long)]
        check: bool,
    },
    /// Print a namespace's score key: the secret CAPSID_IMPROVE_KEY its repository's workflows
    /// sign reports with (it opens that namespace only).
    Key {
        /// The namespace.
        namespace: String,
    },
}

/// `capsid improve roster`.
#[derive(Debug, Subcommand)]
pub enum RosterCommand {
    /// Put a registered namespace on the roster.
    Add {
        /// The namespace.
        namespace: String,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Take a namespace off the roster.
    Remove {
        /// The namespace.
        namespace: String,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// The roster.
    List {
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
}

/// Runs `capsid improve`.
pub async fn run(global: &GlobalArgs, cmd: ImproveCommand) -> Result<ExitCode> {
    let cmd = match cmd {
        ImproveCommand::Roster(cmd) => cmd,
        ImproveCommand::Cadence {
            task,
            minutes,
            json,
        } => return cadence(global, &task, minutes.as_deref(), json).await,
        ImproveCommand::Pin { namespace, json } => return pin(global, &namespace, json).await,
        ImproveCommand::Workflows { repo, check } => return crate::workflows::run(&repo, check),
        ImproveCommand::Key { namespace } => return crate::workflows::key(global, &namespace),
    };
    let (args, json_out) = match &cmd {
        RosterCommand::Add { namespace, json } => (
            json!({"action": "roster", "op": "add", "namespace": namespace}),
            *json,
        ),
        RosterCommand::Remove { namespace, json } => (
            json!({"action": "roster", "op": "remove", "namespace": namespace}),
            *json,
        ),
        RosterCommand::List { json } => (json!({"action": "roster", "op": "list"}), *json),
    };
    let answer = match call_improve(global, args).await? {
        Ok(v) => v,
        Err(message) => {
            eprintln!("refused: {message}");
            return Ok(ExitCode::from(2));
        }
    };
    Ok(finish(answer, json_out, |v| {
        let list: Vec<&str> = v["roster"]
            .as_array()
            .map(|a| a.iter().filter_map(|n| n.as_str()).collect())
            .unwrap_or_default();
        if list.is_empty() {
            "the roster is empty".to_owned()
        } else {
            list.join("\n")
        }
    }))
}

async fn cadence(
    global: &GlobalArgs,
    task: &str,
    minutes: Option<&str>,
    json_out: bool,
) -> Result<ExitCode> {
    let mut args = json!({"action": "cadence", "task": task});
    if let Some(m) = minutes {
        args["value"] = json!(m);
    }
    let answer = match call_improve(global, args).await? {
        Ok(v) => v,
        Err(message) => {
            eprintln!("refused: {message}");
            return Ok(ExitCode::from(2));
        }
    };
    Ok(finish(answer, json_out, |v| {
        format!(
            "{}: every {} minutes (default {}, at least {})",
            v["task"].as_str().unwrap_or(task),
            v["cadence_minutes"],
            v["default_minutes"],
            v["floor_minutes"]
        )
    }))
}

async fn pin(global: &GlobalArgs, namespace: &str, json_out: bool) -> Result<ExitCode> {
    let args = json!({"action": "pin", "namespace": namespace});
    let answer = match call_improve(global, args).await? {
        Ok(v) => v,
        Err(message) => {
            eprintln!("refused: {message}");
            return Ok(ExitCode::from(2));
        }
    };
    Ok(finish(answer, json_out, |v| {
        let mut out = format!(
            "pinned {namespace}: {} (previous: {})",
            v["checksum"].as_str().unwrap_or(""),
            v["previous"].as_str().unwrap_or("none")
        );
        if let Some(note) = v["note"].as_str() {
            out.push('\n');
            out.push_str(note);
        }
        out
    }))
}
