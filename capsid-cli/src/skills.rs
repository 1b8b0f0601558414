//! `capsid skills list [--status S] [--namespace NS]` and `capsid skills show <id>`: the
//! skills and one skill's evidence, through `improve_run` (actions `skills` and `skill`) as
//! the CLI's admin caller, over the database the CLI holds.

use std::process::ExitCode;

use anyhow::Result;
use clap::Subcommand;
use serde_json::{Value, json};

use crate::admin::{call_improve, finish};
use crate::config::GlobalArgs;

/// `capsid skills`.
#[derive(Debug, Subcommand)]
pub enum SkillsCommand {
    /// The skills, newest first: id, status, version, wins/losses, title.
    List {
        /// Only this status (candidate, live or retired).
        #[arg(long)]
        status: Option<String>,
        /// Only skills from or offerable to this namespace.
        #[arg(long)]
        namespace: Option<String>,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// One skill with its evaluations, edit proposals and failure notes.
    Show {
        /// The skill's id.
        id: String,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
}

fn line(s: &Value) -> String {
    format!(
        "{}  {}  v{}  {}/{}  {}",
        s["id"].as_str().unwrap_or(""),
        s["status"].as_str().unwrap_or(""),
        s["version"],
        s["wins"],
        s["losses"],
        s["title"].as_str().unwrap_or("")
    )
}

fn count(v: &Value, key: &str) -> usize {
    v[key].as_array().map_or(0, Vec::len)
}

/// Runs `capsid skills`.
pub async fn run(global: &GlobalArgs, cmd: SkillsCommand) -> Result<ExitCode> {
    let (args, json_out, show) = match cmd {
        SkillsCommand::List {
            status,
            namespace,
            json,
        } => {
            let mut args = json!({"action": "skills"});
            if let Some(s) = status {
                args["status"] = json!(s);
            }
            if let Some(n) = namespace {
                args["namespace"] = json!(n);
            }
            (args, json, false)
        }
        SkillsCommand::Show { id, json } => (json!({"action": "skill", "skill": id}), json, true),
    };
    let answer = match call_improve(global, args).await? {
        Ok(v) => v,
        Err(message) => {
            eprintln!("refused: {message}");
            return Ok(ExitCode::from(2));
        }
    };
    Ok(finish(answer, json_out, |v| {
        if show {
            let s = &v["skill"];
            let mut out = vec![
                line(s),
                format!("trigger: {}", s["trigger"].as_str().unwrap_or("(none)")),
                format!(
                    "evaluations: {}, edits: {}, failure notes: {}",
                    count(v, "evaluations"),
                    count(v, "edits"),
                    count(v, "failures")
                ),
            ];
            for f in v["failures"].as_array().into_iter().flatten() {
                out.push(format!(
                    "  {} {}: {}",
                    f["source_kind"].as_str().unwrap_or(""),
                    f["source_id"].as_str().unwrap_or(""),
                    f["note"].as_str().unwrap_or("")
                ));
            }
            out.join("\n")
        } else {
            let rows: Vec<String> = v["skills"]
                .as_array()
                .into_iter()
                .flatten()
                .map(line)
                .collect();
            if rows.is_empty() {
                "no skills".to_owned()
            } else {
                rows.join("\n")
            }
        }
    }))
}
