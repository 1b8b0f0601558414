//! `capsid skills list [--status S] [--namespace NS]` and `capsid skills show <id>`: the
//! skills and one skill's evidence, through `improve_run` (actions `skills` and `skill`) as
//! the CLI's admin caller, over the database the CLI holds; `capsid skills export <ns>` and
//! `capsid skills import <ns>`: the namespace's skills' repository copy (actions
//! `export_skills` and `import_skills`), through the GitHub App the environment configures.

use std::process::ExitCode;

use anyhow::Result;
use clap::Subcommand;
use serde_json::{Value, json};

use crate::admin::{call, finish, service};
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
    /// Write the namespace's live skills to its repository as skills/<id>/SKILL.md, through a
    /// pull request (nothing is committed when the repository already holds them).
    Export {
        /// The namespace.
        namespace: String,
        /// Say what would be committed; write nothing.
        #[arg(long)]
        dry_run: bool,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Read the repository's skills/*/SKILL.md back: each copy that differs from its skill
    /// becomes a candidate (never live).
    Import {
        /// The namespace.
        namespace: String,
        /// Say what would be read back; write nothing.
        #[arg(long)]
        dry_run: bool,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
}

/// What one `skills` call prints.
#[derive(Clone, Copy)]
enum Shown {
    List,
    One,
    Exported,
    ReadBack,
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
    let (args, json_out, shown) = match cmd {
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
            (args, json, Shown::List)
        }
        SkillsCommand::Show { id, json } => {
            (json!({"action": "skill", "skill": id}), json, Shown::One)
        }
        SkillsCommand::Export {
            namespace,
            dry_run,
            json,
        } => (
            json!({"action": "export_skills", "namespace": namespace, "dry_run": dry_run}),
            json,
            Shown::Exported,
        ),
        SkillsCommand::Import {
            namespace,
            dry_run,
            json,
        } => (
            json!({"action": "import_skills", "namespace": namespace, "dry_run": dry_run}),
            json,
            Shown::ReadBack,
        ),
    };
    let mut service = service(global).await?;
    if matches!(shown, Shown::Exported | Shown::ReadBack)
        && let Some(app) = crate::config::github_app()?
    {
        service = service.with_repo_host(std::sync::Arc::new(app));
    }
    let answer = match call(&service, "improve_run", args).await? {
        Ok(v) => v,
        Err(message) => {
            eprintln!("refused: {message}");
            return Ok(ExitCode::from(2));
        }
    };
    Ok(finish(answer, json_out, |v| match shown {
        Shown::Exported => {
            let mut out = vec![v["note"].as_str().unwrap_or("").to_owned()];
            for f in v["committed"].as_array().into_iter().flatten() {
                out.push(format!("  committed {}", f.as_str().unwrap_or("")));
            }
            out.join("\n")
        }
        Shown::ReadBack => {
            let mut out = Vec::new();
            for c in v["candidates"].as_array().into_iter().flatten() {
                out.push(format!(
                    "candidate {} from {}",
                    c["skill"].as_str().unwrap_or("(dry run)"),
                    c["file"].as_str().unwrap_or("")
                ));
            }
            for c in v["already"].as_array().into_iter().flatten() {
                out.push(format!(
                    "already read back as {}: {}",
                    c["skill"].as_str().unwrap_or("?"),
                    c["file"].as_str().unwrap_or("")
                ));
            }
            for f in v["unchanged"].as_array().into_iter().flatten() {
                out.push(format!("unchanged {}", f.as_str().unwrap_or("")));
            }
            if out.is_empty() {
                "no skill copies in the repository".to_owned()
            } else {
                out.join("\n")
            }
        }
        Shown::One => {
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
        }
        Shown::List => {
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
