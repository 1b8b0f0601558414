//! `capsid improve roster add|remove|list`: the namespaces autonomy and the loop may touch,
//! through `improve_run` action `roster` (audited), as the CLI's admin caller.

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
    let ImproveCommand::Roster(cmd) = cmd;
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
