//! `capsid checkmarks`: a person answering a paused agent from the admin's seat, as the
//! console and `POST /api/projects/{ns}/agents/{name}/answer` do (the same tool, the same
//! scope check, the same audit row).

use std::process::ExitCode;

use anyhow::Result;
use clap::Subcommand;
use serde_json::json;

use crate::admin::{call, finish, service, tool_refusal};
use crate::config::GlobalArgs;

/// `capsid checkmarks`.
#[derive(Debug, Subcommand)]
pub enum CheckmarksCommand {
    /// Answer an agent's open question (its latest checkmark entry), once; with --resume the
    /// agent's driver resumes the same session with the answer on its next run.
    Answer {
        /// The namespace.
        #[arg(long, env = "CAPSID_NAMESPACE")]
        namespace: String,
        /// The agent that asked (a driver's name: `demo-driver`).
        #[arg(long)]
        agent: String,
        /// The answer, as the agent will read it.
        answer: String,
        /// Ask the agent's driver to resume the job with the answer.
        #[arg(long)]
        resume: bool,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
}

/// Runs `capsid checkmarks`.
pub async fn run(global: &GlobalArgs, cmd: CheckmarksCommand) -> Result<ExitCode> {
    let CheckmarksCommand::Answer {
        namespace,
        agent,
        answer,
        resume,
        json,
    } = cmd;
    let service = service(global).await?;
    let args = json!({"action": "answer", "namespace": namespace, "agent": agent,
                      "answer": answer, "resume": resume});
    let out = match call(&service, "checkmarks", args).await? {
        Ok(v) => v,
        Err(m) => return Ok(tool_refusal(m)),
    };
    Ok(finish(out, json, |v| {
        let question = v["log_entry"]["question"]
            .as_str()
            .unwrap_or("its question");
        if resume {
            format!(
                "answered {agent}'s question ({question}); its driver resumes the job with the answer on its next run"
            )
        } else {
            format!("answered {agent}'s question ({question})")
        }
    }))
}
