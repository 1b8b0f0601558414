//! The admin commands: `migrate`, `agents`, `namespaces`, `policy`. They call the same core
//! functions as the MCP tools, as the CLI caller (`cli:<user>`), which is an admin because it
//! holds the database. Exit codes: 0 done, 2 refused (the answer says why), 1 failed.

use std::process::ExitCode;

use anyhow::Result;
use capsid_core::caller::Caller;
use capsid_core::service::{NoConfirmer, Service};
use clap::{Args, Subcommand};
use serde_json::{Value, json};

use crate::config::{self, GlobalArgs};

/// `capsid agents`.
#[derive(Debug, Subcommand)]
pub enum AgentsCommand {
    /// Mint a credential. Its key is printed once and stored nowhere.
    Mint(MintArgs),
    /// Every agent, revoked included.
    List(config::JsonFlag),
    /// Revoke an agent by name; its key stops working at once.
    Revoke(NameArgs),
    /// Change the named axes of a live agent (others are left as they are).
    UpdateScopes(ScopeArgs),
}

/// Scope axes given on the command line.
#[derive(Debug, Clone, Args)]
pub struct AxesArgs {
    /// Namespaces it may name, comma-separated; '*' for all.
    #[arg(long, value_delimiter = ',')]
    pub namespaces: Option<Vec<String>>,
    /// Repo selectors it may pass, comma-separated; '*' for all (default on mint).
    #[arg(long, value_delimiter = ',')]
    pub repos: Option<Vec<String>>,
    /// Tools it may call, comma-separated (tool or tool.action); '*' for all (default on mint).
    #[arg(long, value_delimiter = ',')]
    pub tools: Option<Vec<String>>,
    /// Grants: read, write or read,write (default on mint: read).
    #[arg(long, value_delimiter = ',')]
    pub grants: Option<Vec<String>>,
    /// A blast-radius flag to set, e.g. --flag can_merge or --flag can_merge=false. Repeatable.
    /// The flags: can_merge, can_direct_write, can_dispatch, can_write_workflows,
    /// can_touch_protected, money_paths, can_comment_pr, can_write_shared, can_backup, can_raise_budget.
    #[arg(long = "flag")]
    pub flags: Vec<String>,
}

/// `capsid agents mint`.
#[derive(Debug, Clone, Args)]
pub struct MintArgs {
    /// Unique name (never reused, even after revocation).
    #[arg(long)]
    pub name: String,
    /// session, driver, seat or cron.
    #[arg(long, default_value = "session")]
    pub kind: String,
    #[command(flatten)]
    pub axes: AxesArgs,
    /// Write the key to this file (created with mode 0600; an existing file is never
    /// replaced) instead of printing it.
    #[arg(long, value_name = "PATH")]
    pub key_file: Option<std::path::PathBuf>,
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
}

/// An agent by name.
#[derive(Debug, Clone, Args)]
pub struct NameArgs {
    /// The agent's name.
    #[arg(long)]
    pub name: String,
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
}

/// `capsid agents update-scopes`.
#[derive(Debug, Clone, Args)]
pub struct ScopeArgs {
    /// The agent's name.
    #[arg(long)]
    pub name: String,
    #[command(flatten)]
    pub axes: AxesArgs,
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
}

/// `capsid namespaces`.
#[derive(Debug, Subcommand)]
pub enum NamespacesCommand {
    /// Register a namespace with its repository (create-only).
    Register {
        /// The namespace.
        namespace: String,
        /// Its repository, owner/name.
        #[arg(long)]
        repo: Option<String>,
        /// The repository's label (default primary).
        #[arg(long)]
        label: Option<String>,
        /// Several repositories as JSON: [{"repo":"owner/name","label":"primary"}, ...].
        #[arg(long)]
        repos: Option<String>,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Every namespace with its repositories.
    List(config::JsonFlag),
    /// Replace a namespace's repositories (exactly one labelled primary), or set its runner
    /// settings for agent hosts (each given field; "" clears one).
    Update {
        /// The namespace.
        namespace: String,
        /// What changes (boxed: the enum's other commands stay small).
        #[command(flatten)]
        change: Box<UpdateFlags>,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
}

/// `capsid namespaces update`'s changes: the repositories, the runner settings, the budget.
#[derive(Debug, clap::Args)]
pub struct UpdateFlags {
    /// JSON: [{"repo":"owner/name","label":"primary"}, ...].
    #[arg(long)]
    repos: Option<String>,
    /// Runner: the project's root folder on agent hosts.
    #[arg(long)]
    root_dir: Option<String>,
    /// Runner: the test command (default on hosts: the project's `mise run test`).
    #[arg(long)]
    test_command: Option<String>,
    /// Runner: the build check run before a push.
    #[arg(long)]
    build_command: Option<String>,
    /// Runner: the agent command.
    #[arg(long)]
    agent_command: Option<String>,
    /// Runner: where the credential is, env:NAME, file:/path or cmd:command (never the secret).
    #[arg(long)]
    credential_ref: Option<String>,
    /// The namespace's monthly budget for agent sessions in US dollars (0 stops every
    /// claim), or "none" for the server's default (CAPSID_MONTHLY_BUDGET_USD). A claim in
    /// a namespace whose finished jobs cost that much this month (UTC) is refused.
    #[arg(long, value_name = "DOLLARS|none")]
    monthly_budget_usd: Option<String>,
    /// Runner: the cap of this namespace's jobs posted without their own
    /// --max-cost-usd, in US dollars, or "none" for the server's default
    /// (CAPSID_JOB_MAX_COST_USD). A claim reserves it against the month's budget, and
    /// the driver's model door stops the run there.
    #[arg(long, value_name = "DOLLARS|none")]
    job_max_cost_usd: Option<String>,
    /// Runner: the agent CLI for this namespace's jobs that name none, `claude-code` or
    /// `codex` ("" for the default, Claude Code); `capsid drive --runtime` overrides it.
    #[arg(long, value_name = "claude-code|codex")]
    runtime: Option<String>,
    /// Runner: the migration tools the gate policy's additive_migration recognises here,
    /// comma separated: d1 (wrangler d1 execute --file, the default), psql (psql -f
    /// <file>), sqlx (sqlx migrate run, every file of its folder checked).
    #[arg(long, value_name = "TOOLS")]
    migration_tools: Option<String>,
    /// Runner: the branches a push or merge reaches only with an approval, comma separated
    /// (the remote's default branch always is one; unset: main, master and the default;
    /// "" clears). The git gateway and the hooks read it.
    #[arg(long, value_name = "BRANCHES")]
    protected_branches: Option<String>,
    /// Dispatch bounds: depth=N (how deep a chain of dispatched jobs may go), children=N
    /// (how many children a job without a role may post), <role>=N (how many a job of that
    /// role may), comma separated (unset: depth 3, children 5, each role's own count:
    /// scout 1, planner 3, junior 3, senior 1, deploy 0; "" clears).
    #[arg(long, value_name = "LIMITS")]
    dispatch_limits: Option<String>,
    /// Runner: the command a deploy job's driver runs after its run merged through the gate
    /// (e.g. "mise run deploy"), in the project's own checkout on the agent host, with
    /// CAPSID_DEPLOY_REPO, CAPSID_DEPLOY_PR and CAPSID_DEPLOY_SHA set; unset: the merge is the
    /// deploy; "" clears.
    #[arg(long, value_name = "COMMAND")]
    deploy_command: Option<String>,
}

/// `--monthly-budget-usd` (or `--job-max-cost-usd`) as the tool takes it: a number when it reads as one, else the
/// text (the tool names what it accepts).
fn budget_arg(given: Option<&String>) -> Value {
    match given.map(|t| t.trim()) {
        None => Value::Null,
        Some(t) => t
            .parse::<f64>()
            .ok()
            .and_then(serde_json::Number::from_f64)
            .map_or_else(|| Value::from(t), Value::Number),
    }
}

/// `capsid policy`.
#[derive(Debug, Subcommand)]
pub enum PolicyCommand {
    /// Sign the stored body of a policy document in namespace capsid (e.g. policy/gates.md).
    Sign {
        /// The document's path under policy/.
        path: String,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
}

fn cli_caller() -> Caller {
    Caller::cli(std::env::var("USER").unwrap_or_else(|_| "operator".into()))
}

fn flags_object(flags: &[String]) -> Result<Value> {
    let mut map = serde_json::Map::new();
    for f in flags {
        let (name, on) = match f.split_once('=') {
            Some((n, v)) => match v {
                "true" | "1" | "yes" => (n, true),
                "false" | "0" | "no" => (n, false),
                other => anyhow::bail!(
                    "--flag {f}: {other:?} is not true or false (write --flag {n} or --flag {n}=false)"
                ),
            },
            None => (f.as_str(), true),
        };
        if capsid_core::scope::Flag::parse(name).is_none() {
            let known: Vec<&str> = capsid_core::scope::Flag::ALL
                .iter()
                .map(|f| f.name())
                .collect();
            anyhow::bail!(
                "--flag {name}: no such flag; the flags are {}",
                known.join(", ")
            );
        }
        map.insert(name.to_owned(), Value::Bool(on));
    }
    Ok(Value::Object(map))
}

fn axes_json(axes: &AxesArgs) -> Result<Value> {
    let mut v = json!({});
    for (key, value) in [
        ("namespaces", &axes.namespaces),
        ("repos", &axes.repos),
        ("tools", &axes.tools),
        ("grants", &axes.grants),
    ] {
        if let Some(list) = value {
            v[key] = json!(list.iter().map(|s| s.trim()).collect::<Vec<_>>());
        }
    }
    if !axes.flags.is_empty() {
        v["flags"] = flags_object(&axes.flags)?;
    }
    Ok(v)
}

pub(crate) async fn service(global: &GlobalArgs) -> Result<Service> {
    let store = config::open_existing_store(global).await?;
    Ok(config::service(
        store,
        config::existing_signing_secret(global).ok().flatten(),
        None,
    ))
}

/// Prints an answer and turns it into an exit code: refusals (`ok: false`) exit 2.
pub(crate) fn finish(
    answer: Value,
    json_out: bool,
    text: impl FnOnce(&Value) -> String,
) -> ExitCode {
    let refused = answer.get("ok") == Some(&Value::Bool(false));
    if json_out {
        println!(
            "{}",
            serde_json::to_string_pretty(&answer).unwrap_or_default()
        );
    } else if refused {
        eprintln!(
            "refused: {}",
            answer["refusal"].as_str().unwrap_or("(no reason given)")
        );
    } else {
        println!("{}", text(&answer));
    }
    if refused {
        ExitCode::from(2)
    } else {
        ExitCode::SUCCESS
    }
}

pub(crate) async fn call(
    service: &Service,
    tool: &str,
    args: Value,
) -> Result<std::result::Result<Value, String>> {
    match service
        .call_tool(&cli_caller(), tool, args, &NoConfirmer)
        .await
    {
        Ok(v) => Ok(Ok(v)),
        Err(capsid_core::error::Error::Internal(m)) => anyhow::bail!("{tool} failed: {m}"),
        Err(e) => Ok(Err(e.to_string())),
    }
}

pub(crate) fn tool_refusal(message: String) -> ExitCode {
    eprintln!("refused: {message}");
    ExitCode::from(2)
}

/// `capsid migrate`.
pub async fn migrate(global: &GlobalArgs, json_out: bool) -> Result<ExitCode> {
    let (_, version) = config::open_store(global, true).await?;
    if !global.is_postgres() {
        // The embedded store's folder keeps its signing secret beside it, as `serve` would
        // generate it: the admin commands that sign or seal (backup, tick) then find it.
        config::signing_secret(global)?;
    }
    if json_out {
        println!(
            "{}",
            json!({"database": global.database_display(), "schema_version": version})
        );
    } else {
        println!(
            "{}: schema {}",
            global.database_display(),
            version.unwrap_or_else(|| "(none)".into())
        );
    }
    Ok(ExitCode::SUCCESS)
}

fn agent_line(a: &Value) -> String {
    format!(
        "{:<24} {:<8} {} scopes {}{}",
        a["name"].as_str().unwrap_or(""),
        a["kind"].as_str().unwrap_or(""),
        a["fingerprint"].as_str().unwrap_or(""),
        a["scopes"],
        a["revoked_at"]
            .as_str()
            .map(|r| format!(" (revoked {r})"))
            .unwrap_or_default()
    )
}

/// `capsid agents ...`.
pub async fn agents(global: &GlobalArgs, cmd: AgentsCommand) -> Result<ExitCode> {
    let service = service(global).await?;
    let (args, json_out) = match &cmd {
        AgentsCommand::Mint(m) => {
            let mut a = match axes_json(&m.axes) {
                Ok(a) => a,
                Err(e) => return Ok(tool_refusal(format!("{e:#}"))),
            };
            a["action"] = json!("mint");
            a["name"] = json!(m.name);
            a["kind"] = json!(m.kind);
            (a, m.json)
        }
        AgentsCommand::List(j) => (json!({"action": "list"}), j.json),
        AgentsCommand::Revoke(n) => (json!({"action": "revoke", "name": n.name}), n.json),
        AgentsCommand::UpdateScopes(s) => {
            let mut a = match axes_json(&s.axes) {
                Ok(a) => a,
                Err(e) => return Ok(tool_refusal(format!("{e:#}"))),
            };
            a["action"] = json!("update_scopes");
            a["name"] = json!(s.name);
            (a, s.json)
        }
    };
    let key_file = match &cmd {
        AgentsCommand::Mint(m) => m.key_file.as_deref(),
        _ => None,
    };
    if let Some(path) = key_file {
        // Checked before minting, so a key is never minted that cannot be kept.
        if path.exists() {
            return Ok(tool_refusal(format!(
                "--key-file {}: the file exists; it is never replaced (revoke the old agent, move the file away, or choose another path)",
                path.display()
            )));
        }
        let parent = path
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(std::path::Path::new("."));
        if !parent.is_dir() {
            return Ok(tool_refusal(format!(
                "--key-file {}: no folder {}",
                path.display(),
                parent.display()
            )));
        }
    }
    let mut answer = match call(&service, "agents", args).await? {
        Ok(v) => v,
        Err(m) => return Ok(tool_refusal(m)),
    };
    if let (Some(path), Some(key)) = (key_file, answer["key"].as_str().map(str::to_owned)) {
        if let Err(e) = config::write_private(path, &format!("{key}\n")) {
            // The key cannot be kept: the agent it opens is revoked at once.
            let name = answer["agent"]["name"]
                .as_str()
                .unwrap_or_default()
                .to_owned();
            let _ = call(
                &service,
                "agents",
                json!({"action": "revoke", "name": name}),
            )
            .await;
            anyhow::bail!(
                "writing the key to {}: {e:#}; the agent {name} was revoked",
                path.display()
            );
        }
        if let Some(map) = answer.as_object_mut() {
            map.remove("key");
            map.insert("key_file".into(), json!(path.display().to_string()));
        }
    }
    Ok(finish(answer, json_out, |v| match &cmd {
        AgentsCommand::Mint(m) if m.key_file.is_some() => format!(
            "minted {}\n\n  key written to {} (mode 0600)\n\nThe key is stored nowhere else (only its sha256, fingerprint {}).\nGive it to the agent as `Authorization: Bearer <key>` on /ops/mcp.",
            agent_line(&v["agent"]),
            v["key_file"].as_str().unwrap_or(""),
            v["agent"]["fingerprint"].as_str().unwrap_or("")
        ),
        AgentsCommand::Mint(_) => format!(
            "minted {}\n\n  key: {}\n\nThe key is shown once and stored nowhere (only its sha256, fingerprint {}).\nGive it to the agent as `Authorization: Bearer <key>` on /ops/mcp.",
            agent_line(&v["agent"]),
            v["key"].as_str().unwrap_or(""),
            v["agent"]["fingerprint"].as_str().unwrap_or("")
        ),
        AgentsCommand::List(_) => {
            let list = v["agents"].as_array().cloned().unwrap_or_default();
            if list.is_empty() {
                "no agents".into()
            } else {
                list.iter().map(agent_line).collect::<Vec<_>>().join("\n")
            }
        }
        AgentsCommand::Revoke(_) => format!("revoked {}", agent_line(&v["agent"])),
        AgentsCommand::UpdateScopes(_) => format!("updated {}", agent_line(&v["agent"])),
    }))
}

/// `capsid namespaces ...`.
pub async fn namespaces(global: &GlobalArgs, cmd: NamespacesCommand) -> Result<ExitCode> {
    let service = service(global).await?;
    let (tool, args, json_out) = match &cmd {
        NamespacesCommand::Register {
            namespace,
            repo,
            label,
            repos,
            json,
        } => (
            "register_namespace",
            json!({"namespace": namespace, "repo": repo, "label": label, "repos": repos}),
            *json,
        ),
        NamespacesCommand::List(j) => ("namespaces", json!({}), j.json),
        NamespacesCommand::Update {
            namespace,
            change,
            json,
        } => (
            "update_namespace",
            json!({
                "namespace": namespace, "repos": change.repos, "root_dir": change.root_dir,
                "test_command": change.test_command, "build_command": change.build_command,
                "agent_command": change.agent_command, "credential_ref": change.credential_ref,
                "monthly_budget_usd": budget_arg(change.monthly_budget_usd.as_ref()),
                "job_max_cost_usd": budget_arg(change.job_max_cost_usd.as_ref()),
                "runtime": change.runtime,
                "migration_tools": change.migration_tools,
                "protected_branches": change.protected_branches,
                "dispatch_limits": change.dispatch_limits,
                "deploy_command": change.deploy_command,
            }),
            *json,
        ),
    };
    let args = strip_nulls(args);
    let answer = match call(&service, tool, args).await? {
        Ok(v) => v,
        Err(m) => return Ok(tool_refusal(m)),
    };
    Ok(finish(answer, json_out, |v| match &cmd {
        NamespacesCommand::List(_) => {
            let list = v.as_array().cloned().unwrap_or_default();
            if list.is_empty() {
                "no namespaces".into()
            } else {
                list.iter()
                    .map(|n| {
                        format!(
                            "{:<24} repos {}  unconsolidated {}{}",
                            n["namespace"].as_str().unwrap_or(""),
                            n["repos"].as_str().unwrap_or("[]"),
                            n["unconsolidated"],
                            n["monthly_budget_usd"]
                                .as_f64()
                                .map_or(String::new(), |b| format!("  budget ${b:.2}/month"))
                        )
                    })
                    .collect::<Vec<_>>()
                    .join("\n")
            }
        }
        _ => format!(
            "{} {}: {}",
            v["action"].as_str().unwrap_or("done"),
            v["namespace"].as_str().unwrap_or(""),
            if v["runner"].is_object() {
                v["runner"].to_string()
            } else if v.get("monthly_budget_usd").is_some() {
                match v["monthly_budget_usd"].as_f64() {
                    Some(b) => format!("monthly budget ${b:.2}"),
                    None => "monthly budget cleared (the server's default applies)".into(),
                }
            } else {
                v["repos"].to_string()
            }
        ),
    }))
}

fn strip_nulls(v: Value) -> Value {
    match v {
        Value::Object(map) => {
            Value::Object(map.into_iter().filter(|(_, v)| !v.is_null()).collect())
        }
        other => other,
    }
}

/// `improve_run` with `args` as the CLI's admin caller: the answer, or the refusal's message.
pub(crate) async fn call_improve(
    global: &GlobalArgs,
    args: Value,
) -> Result<std::result::Result<Value, String>> {
    call(&service(global).await?, "improve_run", args).await
}

/// `capsid policy sign`.
pub async fn policy(global: &GlobalArgs, cmd: PolicyCommand) -> Result<ExitCode> {
    let service = service(global).await?;
    let PolicyCommand::Sign { path, json } = cmd;
    let args = serde_json::json!({"action": "sign_policy", "namespace": "capsid", "path": path});
    let answer = match service
        .call_tool(&cli_caller(), "improve_run", args, &NoConfirmer)
        .await
    {
        Ok(v) => v,
        Err(capsid_core::error::Error::Internal(m)) => anyhow::bail!("signing failed: {m}"),
        Err(e) => return Ok(tool_refusal(e.to_string())),
    };
    Ok(finish(answer, json, |v| {
        format!(
            "signed capsid/{} ({} bytes, signature {})",
            path,
            v["bytes"],
            v["signature"].as_str().unwrap_or("")
        )
    }))
}
