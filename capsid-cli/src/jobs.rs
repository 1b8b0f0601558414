//! `capsid jobs`: the work queue from the admin's seat: one namespace's jobs, the portfolio
//! of every namespace's queue and which needs a driver (`list --all`), and raising a job's cap.

use std::process::ExitCode;

use anyhow::Result;
use clap::Subcommand;
use serde_json::{Value, json};

use crate::admin::{call, finish, service, tool_refusal};
use crate::config::GlobalArgs;

/// A job's paths as text: `` `src/api/**`, `docs/api.md` ``.
fn lease_text(paths: &[Value]) -> String {
    paths
        .iter()
        .map(|p| format!("`{}`", p.as_str().unwrap_or("")))
        .collect::<Vec<_>>()
        .join(", ")
}

/// `capsid jobs get` as text: the job, its ledger and its doors, one line each.
fn job_text(v: &Value) -> String {
    let j = &v["job"];
    let s = |x: &Value| x.as_str().unwrap_or("").to_owned();
    let mut out = vec![format!(
        "{}  {}  {}  (namespace {})",
        s(&j["id"]),
        s(&j["status"]),
        s(&j["title"]),
        s(&j["namespace"])
    )];
    if let Some(h) = j["claimed_by"].as_str() {
        out.push(format!("held by {h}"));
    }
    if let Some(rt) = j["runtime"].as_str() {
        out.push(format!("runtime: {rt}"));
    }
    if let Some(role) = j["role"].as_str() {
        out.push(format!("role: {role}"));
    }
    match (j["paths"].as_array(), j["status"].as_str()) {
        (Some(p), _) => out.push(format!("paths: {}", lease_text(p))),
        (None, Some("queued")) => {
            out.push("paths: none (a driver's claim leases the whole repository)".to_owned())
        }
        (None, _) => {}
    }
    if let Some(w) = j["waiting_on"].as_str() {
        out.push(w.to_owned());
    }
    if let Some(r) = j["result_summary"].as_str() {
        out.push(format!("summary: {r}"));
    }
    let spend = &v["spend"];
    out.push(format!(
        "spent ${:.4} over {} model call(s)",
        spend["cost_usd"].as_f64().unwrap_or(0.0),
        spend["calls"].as_u64().unwrap_or(0)
    ));
    let doors = v["doors"].as_array().cloned().unwrap_or_default();
    if doors.is_empty() {
        out.push("doors: none recorded (the job ran unboxed, or has not run)".to_owned());
    } else {
        out.push(format!("doors ({}):", doors.len()));
        for d in &doors {
            let target = match d["port"].as_u64() {
                Some(0) | None => s(&d["host"]),
                Some(p) => format!("{}:{p}", s(&d["host"])),
            };
            let mut line = format!(
                "  {:<7} {:<32} {:<8} {} B up, {} B down, {} to {}",
                s(&d["door"]),
                target,
                s(&d["decision"]),
                d["bytes_up"].as_u64().unwrap_or(0),
                d["bytes_down"].as_u64().unwrap_or(0),
                s(&d["started_at"]),
                s(&d["ended_at"])
            );
            if let Some(why) = d["detail"].as_str() {
                line.push_str(&format!(" ({why})"));
            }
            out.push(line);
        }
    }
    out.join("\n")
}

/// `capsid jobs`.
/// What `capsid jobs approve` and `reject` name: a pull request's head, as the reviewer saw it.
#[derive(Debug, clap::Args)]
pub struct VerdictArgs {
    /// The namespace whose repository holds the pull request.
    #[arg(long)]
    namespace: String,
    /// The pull request's number.
    #[arg(long = "pr", value_name = "NUMBER")]
    pull_request: u64,
    /// The full head commit sha you reviewed; refused if the pull request's head moved since.
    #[arg(long = "head", value_name = "SHA")]
    head_sha: String,
    /// The repository (`owner/name`, one the namespace maps; default its primary).
    #[arg(long)]
    repo: Option<String>,
    /// What you found (kept with the verdict).
    #[arg(long)]
    note: Option<String>,
    /// Print JSON instead of text.
    #[arg(long)]
    json: bool,
}

#[derive(Debug, Subcommand)]
pub enum JobsCommand {
    /// Approve a pull request's current head as this server's operator (a person): a merge of
    /// exactly that head by a driven run counts it. Reads the head from GitHub through the
    /// server's GitHub App (the same CAPSID_GITHUB_APP_* settings as `serve`).
    Approve(VerdictArgs),
    /// Ask for changes on a pull request's current head: no approval by you of that head stands.
    Reject(VerdictArgs),
    /// Post a job (signed by the server): a driver of its namespace claims it. Prints its id.
    Post {
        /// The namespace the job belongs to.
        #[arg(long)]
        namespace: String,
        /// A short title (unique among the namespace's open jobs).
        #[arg(long)]
        title: String,
        /// What the agent is asked to do (the prompt it starts from).
        #[arg(long)]
        body: String,
        /// The job's role: scout, planner, junior, senior or deploy, or one the namespace's
        /// signed role documents define (`capsid jobs roles` lists them). A role that ships no
        /// code (a scout, a senior) has its pushes refused and is done when it ships nothing;
        /// any other job that ships nothing fails. Default: none, a change is asked for.
        #[arg(long)]
        role: Option<String>,
        /// The agent CLI to run it: claude-code or codex (default: the driver's).
        #[arg(long)]
        runtime: Option<String>,
        /// The job's cap on what one run may spend on its model, in US dollars (default: its
        /// role's, else the namespace's, else the server's).
        #[arg(long)]
        max_cost_usd: Option<f64>,
        /// Higher runs first.
        #[arg(long)]
        priority: Option<i64>,
        /// Where the job works: a glob relative to the repository root (`src/api/**`,
        /// `docs/api.md`); repeat for more. A claim leases them for the job's life, so jobs on
        /// disjoint paths run side by side and one that overlaps a live lease waits. Without
        /// any, the job leases the whole repository and runs alone.
        #[arg(long = "path", value_name = "GLOB")]
        paths: Vec<String>,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// The roles a namespace's jobs may name: each one's ships, reviews, model, cap and
    /// dispatch count (the built-in five as its signed documents tune them, then its owner's),
    /// and any role document that defines nothing, with why.
    Roles {
        /// The namespace whose roles to list.
        #[arg(long)]
        namespace: String,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// The queue: one namespace's jobs (--namespace), or the whole portfolio (--all): each
    /// namespace's queued, claimed and blocked jobs, its drivers, and which need one.
    List {
        /// The namespace whose jobs to list (newest first).
        #[arg(long, conflicts_with = "all", required_unless_present = "all")]
        namespace: Option<String>,
        /// Every namespace's queue in one table, and which have work but no driver.
        #[arg(long)]
        all: bool,
        /// Only the jobs whose lease covers this path (relative to the repository root; a job
        /// without paths covers every path).
        #[arg(long, value_name = "PATH", conflicts_with = "all")]
        path: Option<String>,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// One job: its status, holder, summary, what its ledger holds and what its box's doors
    /// reached and were refused.
    Get {
        /// The job (`job_` + 12 hex).
        id: String,
        /// Print JSON instead of text (the `jobs` tool's `get` answer).
        #[arg(long)]
        json: bool,
    },
    /// Raise a job's cap on what one run may spend on its model (above its current cap). A
    /// job blocked at its budget gate is answered and resumed: the next `capsid drive` goes
    /// on with the same session under the new cap.
    Raise {
        /// The job (`job_` + 12 hex).
        id: String,
        /// The new cap, in US dollars.
        #[arg(long)]
        usd: f64,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
}

/// One namespace's line of the portfolio.
#[derive(Debug, PartialEq)]
struct PortfolioRow {
    namespace: String,
    queued: u64,
    claimed: u64,
    blocked: u64,
    /// The live drivers whose scopes reach the namespace.
    drivers: Vec<String>,
    /// Work is waiting (queued or blocked) and no live driver can take it.
    needs_driver: bool,
}

impl PortfolioRow {
    fn to_json(&self) -> Value {
        json!({
            "namespace": self.namespace,
            "queued": self.queued,
            "claimed": self.claimed,
            "blocked": self.blocked,
            "drivers": self.drivers,
            "needs_driver": self.needs_driver,
        })
    }
}

/// Whether an agent's scopes reach `ns`: the core's own parse of the stored scopes
/// (fail-closed) and its namespace axis, not a second reading of the JSON here.
fn reaches(scopes: &Value, ns: &str) -> bool {
    capsid_core::scope::Scopes::parse(Some(&scopes.to_string()))
        .namespaces
        .allows(ns)
}

/// The portfolio from `improve_status` (each namespace's queue) and `agents list`.
fn portfolio(status: &Value, agents: &Value) -> Vec<PortfolioRow> {
    let live_drivers: Vec<&Value> = agents["agents"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter(|a| a["kind"] == "driver" && a["revoked_at"].is_null())
                .collect()
        })
        .unwrap_or_default();
    status["namespaces"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default()
        .iter()
        .map(|n| {
            let ns = n["namespace"].as_str().unwrap_or("").to_owned();
            let count = |k: &str| n["jobs"][k].as_u64().unwrap_or(0);
            let drivers: Vec<String> = live_drivers
                .iter()
                .filter(|a| reaches(&a["scopes"], &ns))
                .filter_map(|a| a["name"].as_str().map(str::to_owned))
                .collect();
            let (queued, claimed, blocked) = (count("queued"), count("claimed"), count("blocked"));
            PortfolioRow {
                needs_driver: queued + blocked > 0 && drivers.is_empty(),
                namespace: ns,
                queued,
                claimed,
                blocked,
                drivers,
            }
        })
        .collect()
}

/// `capsid jobs`.
pub async fn run(global: &GlobalArgs, cmd: JobsCommand) -> Result<ExitCode> {
    let mut service = service(global).await?;
    if matches!(cmd, JobsCommand::Approve(_) | JobsCommand::Reject(_))
        && let Some(app) = crate::config::github_app()?
    {
        service = service.with_repo_host(std::sync::Arc::new(app));
    }
    let (id, usd, json) = match cmd {
        JobsCommand::Approve(v) => return verdict(&service, "approve", v).await,
        JobsCommand::Reject(v) => return verdict(&service, "reject", v).await,
        JobsCommand::Raise { id, usd, json } => (id, usd, json),
        JobsCommand::Post {
            namespace,
            title,
            body,
            role,
            runtime,
            max_cost_usd,
            priority,
            paths,
            json,
        } => {
            let mut args =
                json!({"action": "post", "namespace": namespace, "title": title, "body": body});
            if !paths.is_empty() {
                args["paths"] = json!(paths);
            }
            for (k, v) in [("role", role), ("runtime", runtime)] {
                if let Some(v) = v {
                    args[k] = json!(v);
                }
            }
            if let Some(usd) = max_cost_usd {
                args["max_cost_usd"] = json!(usd);
            }
            if let Some(p) = priority {
                args["priority"] = json!(p);
            }
            let answer = match call(&service, "jobs", args).await? {
                Ok(v) => v,
                Err(m) => return Ok(tool_refusal(m)),
            };
            return Ok(finish(answer, json, |v| {
                let j = &v["job"];
                let mut line = format!(
                    "posted {} to {}",
                    j["id"].as_str().unwrap_or(""),
                    j["namespace"].as_str().unwrap_or("")
                );
                if let Some(role) = j["role"].as_str() {
                    line.push_str(&format!(" as a {role}"));
                }
                if let Some(cap) = j["max_cost_usd"].as_f64() {
                    line.push_str(&format!(", capped at ${cap:.2} a run"));
                }
                match j["paths"].as_array() {
                    Some(p) => line.push_str(&format!(", on {}", lease_text(p))),
                    None => line.push_str(", leasing the whole repository"),
                }
                line
            }));
        }
        JobsCommand::Roles { namespace, json } => {
            let args = json!({"action": "roles", "namespace": namespace});
            let answer = match call(&service, "jobs", args).await? {
                Ok(v) => v,
                Err(m) => return Ok(tool_refusal(m)),
            };
            return Ok(finish(answer, json, roles_text));
        }
        JobsCommand::Get { id, json } => {
            let answer = match call(&service, "jobs", json!({"action": "get", "id": id})).await? {
                Ok(v) => v,
                Err(m) => return Ok(tool_refusal(m)),
            };
            return Ok(finish(answer, json, job_text));
        }
        JobsCommand::List {
            namespace: Some(ns),
            path,
            json,
            ..
        } => {
            let mut args = json!({"action": "list", "namespace": ns});
            if let Some(p) = &path {
                args["path"] = json!(p);
            }
            let answer = match call(&service, "jobs", args).await? {
                Ok(v) => v,
                Err(m) => return Ok(tool_refusal(m)),
            };
            return Ok(finish(answer, json, |v| {
                let rows = v["jobs"].as_array().cloned().unwrap_or_default();
                if rows.is_empty() {
                    return format!("no jobs in {ns}");
                }
                rows.iter()
                    .map(|j| {
                        format!(
                            "{}  {:<8} {}{}{}  on {}{}",
                            j["id"].as_str().unwrap_or(""),
                            j["status"].as_str().unwrap_or(""),
                            j["title"].as_str().unwrap_or(""),
                            j["role"]
                                .as_str()
                                .map(|r| format!("  [{r}]"))
                                .unwrap_or_default(),
                            j["claimed_by"]
                                .as_str()
                                .map(|h| format!("  (held by {h})"))
                                .unwrap_or_default(),
                            j["paths"]
                                .as_array()
                                .map_or("the whole repository".to_owned(), |p| lease_text(p)),
                            j["waiting_on"]
                                .as_str()
                                .map(|w| format!("  ({w})"))
                                .unwrap_or_default()
                        )
                    })
                    .collect::<Vec<_>>()
                    .join("\n")
            }));
        }
        JobsCommand::List { json, .. } => {
            let status = match call(&service, "improve_status", json!({})).await? {
                Ok(v) => v,
                Err(m) => return Ok(tool_refusal(m)),
            };
            let agents = match call(&service, "agents", json!({"action": "list"})).await? {
                Ok(v) => v,
                Err(m) => return Ok(tool_refusal(m)),
            };
            let rows = portfolio(&status, &agents);
            if json {
                println!(
                    "{}",
                    serde_json::to_string_pretty(
                        &json!({"namespaces": rows.iter().map(PortfolioRow::to_json).collect::<Vec<_>>()})
                    )?
                );
            } else if rows.is_empty() {
                println!("no namespaces (capsid namespaces register <ns> --repo owner/name)");
            } else {
                for r in &rows {
                    println!(
                        "{:<24} queued {:<4} claimed {:<4} blocked {:<4} {}",
                        r.namespace,
                        r.queued,
                        r.claimed,
                        r.blocked,
                        if r.needs_driver {
                            "NEEDS A DRIVER (capsid agents mint --kind driver ...)".to_owned()
                        } else if r.drivers.is_empty() {
                            "no driver".to_owned()
                        } else {
                            format!("drivers: {}", r.drivers.join(", "))
                        }
                    );
                }
            }
            return Ok(ExitCode::SUCCESS);
        }
    };
    let found = match call(&service, "jobs", json!({"action": "get", "id": id})).await? {
        Ok(v) => v,
        Err(m) => return Ok(tool_refusal(m)),
    };
    let Some(namespace) = found["job"]["namespace"].as_str() else {
        return Ok(finish(found, json, |_| String::new()));
    };
    let args = json!({"action": "raise", "id": id, "namespace": namespace, "max_cost_usd": usd});
    let answer = match call(&service, "jobs", args).await? {
        Ok(v) => v,
        Err(m) => return Ok(tool_refusal(m)),
    };
    Ok(finish(answer, json, |v| {
        let cap = v["max_cost_usd"].as_f64().unwrap_or(usd);
        match v["resumed"].as_bool() {
            Some(true) => format!(
                "raised {id} to ${cap:.2}; it was blocked at its budget: its driver resumes the same session on its next run"
            ),
            Some(false) => format!(
                "raised {id} to ${cap:.2}; it is blocked, but not on an open budget question (answer it from the console or `capsid drive` resumes nothing)"
            ),
            None => format!("raised {id} to ${cap:.2}"),
        }
    }))
}

/// `capsid jobs approve|reject`: the verdict, as the `jobs` tool records it.
async fn verdict(
    service: &capsid_core::service::Service,
    action: &str,
    v: VerdictArgs,
) -> Result<ExitCode> {
    let mut args = json!({"action": action, "namespace": v.namespace, "pull_request": v.pull_request, "head_sha": v.head_sha});
    if let Some(r) = v.repo {
        args["repo"] = json!(r);
    }
    if let Some(n) = v.note {
        args["body"] = json!(n);
    }
    let answer = match call(service, "jobs", args).await? {
        Ok(v) => v,
        Err(m) => return Ok(tool_refusal(m)),
    };
    Ok(finish(answer, v.json, |a| {
        a["note"].as_str().unwrap_or_default().to_owned()
    }))
}

/// `jobs roles` as text: one line per role, then the documents that define nothing.
fn roles_text(v: &serde_json::Value) -> String {
    let mut lines = Vec::new();
    for r in v["roles"].as_array().into_iter().flatten() {
        let cap = r["max_cost_micros"].as_u64().unwrap_or(0) as f64 / 1_000_000.0;
        lines.push(format!(
            "{:<14} ships {:<8} {}cap ${cap:.2}, dispatches {}{}{}",
            r["name"].as_str().unwrap_or(""),
            r["ships"].as_str().unwrap_or(""),
            if r["reviews"] == true {
                "reviews, "
            } else {
                ""
            },
            r["dispatches"].as_i64().unwrap_or(0),
            r["model"]
                .as_str()
                .map_or(String::new(), |m| format!(", model {m}")),
            if r["built_in"] == true {
                ""
            } else {
                " (the owner's)"
            },
        ));
    }
    for why in v["inert"].as_array().into_iter().flatten() {
        lines.push(format!("defines nothing: {}", why.as_str().unwrap_or("")));
    }
    lines.join("\n")
}

#[cfg(test)]
mod tests {
    use super::job_text;
    use serde_json::json;

    #[test]
    fn a_jobs_text_names_its_ledger_and_each_door() {
        let v = json!({
            "job": {"id": "job_0123456789ab", "status": "done", "title": "Boxed", "namespace": "demo",
                    "claimed_by": "agent:d", "result_summary": "Shipped."},
            "spend": {"cost_usd": 0.25, "calls": 3},
            "doors": [
                {"door": "egress", "host": "example.com", "port": 443, "decision": "refused",
                 "bytes_up": 0, "bytes_down": 0, "started_at": "t1", "ended_at": "t2",
                 "detail": "not allowed"},
                {"door": "model", "host": "capsid", "port": 0, "decision": "reached",
                 "bytes_up": 10, "bytes_down": 20, "started_at": "t3", "ended_at": "t4"},
            ],
        });
        let text = job_text(&v);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "job_0123456789ab  done  Boxed  (namespace demo)");
        assert_eq!(lines[1], "held by agent:d");
        assert_eq!(lines[2], "summary: Shipped.");
        assert_eq!(lines[3], "spent $0.2500 over 3 model call(s)");
        assert_eq!(lines[4], "doors (2):");
        assert!(
            lines[5].contains("example.com:443") && lines[5].ends_with("t1 to t2 (not allowed)"),
            "{text}"
        );
        assert!(
            lines[6].contains("capsid ") && !lines[6].contains("capsid:0"),
            "{text}"
        );
        let on = job_text(
            &json!({"job": {"id": "j", "status": "queued", "paths": ["src/api/**"],
            "waiting_on": "waiting on job k ('Api') for `src/api/**`"}, "spend": {}, "doors": []}),
        );
        assert!(
            on.contains("\npaths: `src/api/**`\nwaiting on job k ('Api') for `src/api/**`\n"),
            "{on}"
        );
        let bare =
            job_text(&json!({"job": {"id": "j", "status": "queued"}, "spend": {}, "doors": []}));
        assert!(
            bare.contains("\npaths: none (a driver's claim leases the whole repository)\n"),
            "{bare}"
        );
        assert!(
            bare.ends_with("doors: none recorded (the job ran unboxed, or has not run)"),
            "{bare}"
        );
    }
}
