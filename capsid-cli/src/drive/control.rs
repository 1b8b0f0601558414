//! `capsid drive ps` and `capsid drive stop`: the runs of a namespace, and a person ending one.
//! Stopping a job fails it on the server (with the driver's key, which holds it); the driver
//! running it sees within seconds that its job is no longer claimed and ends the agent (a
//! boxed agent with its whole box), as it does when the job is failed from the console.

use std::process::ExitCode;

use anyhow::Result;
use clap::Args;
use serde::Deserialize;
use serde_json::json;

use super::mcp::{Answer, Mcp};
use super::{EXIT_ERROR, EXIT_REFUSED, load_keys};

/// What both commands need: the server, the namespace and the driver's key.
#[derive(Debug, Clone, Args)]
pub struct ControlArgs {
    /// The server.
    #[arg(long, env = "CAPSID_URL", default_value = "http://127.0.0.1:8787")]
    pub url: String,
    /// The namespace.
    #[arg(long, env = "CAPSID_NAMESPACE")]
    pub namespace: String,
    /// The driver's key file (default ~/.capsid/agent-<namespace>-driver.key; CAPSID_KEY wins).
    #[arg(long)]
    pub key_file: Option<std::path::PathBuf>,
}

/// `capsid drive stop`.
#[derive(Debug, Clone, Args)]
pub struct StopArgs {
    /// The job to stop.
    pub job: String,
    /// Why (recorded as the job's failure).
    #[arg(long, default_value = "stopped by a person")]
    pub reason: String,
    #[command(flatten)]
    pub on: ControlArgs,
}

fn client(on: &ControlArgs) -> std::result::Result<Mcp, String> {
    let files: Vec<std::path::PathBuf> = on.key_file.iter().cloned().collect();
    let keys = load_keys(&files, &on.namespace)?;
    Mcp::new(&on.url, &keys[0]).map_err(|e| format!("{e:#}"))
}

/// Fails `job` with the reason: its driver ends the agent within seconds.
pub async fn stop(args: StopArgs) -> Result<ExitCode> {
    let mcp = match client(&args.on) {
        Ok(m) => m,
        Err(why) => {
            eprintln!("capsid drive stop: refused: {why}");
            return Ok(ExitCode::from(EXIT_REFUSED));
        }
    };
    let reason = format!("{} (capsid drive stop)", args.reason.trim());
    match mcp
        .call(
            "jobs",
            json!({"action": "fail", "id": args.job, "namespace": args.on.namespace, "reason": reason}),
        )
        .await?
    {
        Answer::Ok(_) => {
            println!(
                "{} failed: {reason}; its driver stops the agent within seconds",
                args.job
            );
            Ok(ExitCode::SUCCESS)
        }
        Answer::Refused(why) => {
            eprintln!("capsid drive stop: {}: {why}", args.job);
            Ok(ExitCode::from(EXIT_ERROR))
        }
    }
}

/// A claimed job as `jobs list` answers it (the fields `ps` shows).
#[derive(Debug, Deserialize)]
struct Running {
    id: String,
    title: String,
    claimed_by: Option<String>,
    claimed_at: Option<String>,
    max_cost_usd: Option<f64>,
}

/// What a job's ledger holds so far, as `jobs get` answers it.
#[derive(Debug, Default, Deserialize)]
struct SpentSoFar {
    cost_usd: f64,
    calls: u64,
}

#[derive(Debug, Deserialize)]
struct Listed {
    jobs: Vec<Running>,
}

#[derive(Debug, Deserialize)]
struct Got {
    spend: Option<SpentSoFar>,
}

/// Lists the namespace's claimed jobs: who holds each, since when, what its ledger holds so
/// far (of its own cap, when it has one), and its title.
pub async fn ps(on: ControlArgs) -> Result<ExitCode> {
    let mcp = match client(&on) {
        Ok(m) => m,
        Err(why) => {
            eprintln!("capsid drive ps: refused: {why}");
            return Ok(ExitCode::from(EXIT_REFUSED));
        }
    };
    let list: Listed = serde_json::from_value(
        mcp.ok(
            "jobs",
            json!({"action": "list", "namespace": on.namespace, "status": "claimed"}),
        )
        .await?,
    )?;
    if list.jobs.is_empty() {
        println!("no job of {} is running", on.namespace);
        return Ok(ExitCode::SUCCESS);
    }
    println!(
        "{:<18} {:<24} {:<26} {:<22} TITLE",
        "JOB", "HELD BY", "CLAIMED", "SPENT (CALLS)"
    );
    for j in list.jobs {
        let got: Got = serde_json::from_value(
            mcp.ok(
                "jobs",
                json!({"action": "get", "id": j.id, "namespace": on.namespace}),
            )
            .await?,
        )?;
        let spent = got.spend.unwrap_or_default();
        let of = j
            .max_cost_usd
            .map_or_else(String::new, |cap| format!(" of ${cap:.2}"));
        println!(
            "{:<18} {:<24} {:<26} {:<22} {}",
            j.id,
            j.claimed_by.unwrap_or_default(),
            j.claimed_at.unwrap_or_default(),
            format!("${:.4}{of} ({})", spent.cost_usd, spent.calls),
            j.title
        );
    }
    Ok(ExitCode::SUCCESS)
}
