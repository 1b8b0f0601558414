//! The admin console's core (reference 10.1): its sessions, its actions and the one
//! object the page renders. Every action runs the same function as the tool it stands for
//! (`improve_run`, `agents`, the jobs resume, `adminFailJob`, `checkmarks answer` and
//! `promote`, the `jobs` tool's `raise` and `post`, `register_namespace` and
//! `update_namespace`) as the
//! signed-in owner, and writes its own `console-<action>` audit row. Merging and minting are
//! not among them.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use super::OwnerService;
use super::local::SessionOwner;
use crate::caller::{Caller, Principal};
use crate::crypto::sha256_hex;
use crate::error::{Error, Result};
use crate::jobs::block::command_from_summary;
use crate::jobs::{JobStatus, job_doc_path};
use crate::oauth::OwnerSettings;
use crate::ports::{AuditFilter, JobFilter};
use crate::scope::Scopes;
use crate::service::args::parse_args;
use crate::service::{ImproveStatusArgs as StatusArgs, JobsArgs, NoConfirmer, ResumeTo};

/// The console's actions, and nothing else: no merge, no mint. The reference's six, then the
/// answer to an agent's open question (SPEC 8), then raising a job's cap (issue 49: the
/// budget gate is answerable from the console), dismissing a failed job, promoting a log
/// entry to the global feed, posting a job and registering a namespace with its runner
/// settings (issue 56).
pub const CONSOLE_ACTIONS: [&str; 12] = [
    "pause",
    "unpause",
    "mode",
    "resume_job",
    "fail_job",
    "revoke_agent",
    "answer",
    "raise_cap",
    "dismiss_job",
    "promote",
    "post_job",
    "register_namespace",
];

/// The runner settings the console's namespace form offers (only the filled ones are sent to
/// `update_namespace`), in the form's order.
pub const CONSOLE_RUNNER_FIELDS: [&str; 7] = [
    "root_dir",
    "test_command",
    "agent_command",
    "runtime",
    "protected_branches",
    "dispatch_limits",
    "deploy_command",
];

/// The setting that keeps a failed job off "Waiting on you" once the owner dismissed it (it
/// expires when the job would have left the list anyway).
pub fn dismissed_key(job_id: &str) -> String {
    format!("console:dismissed:{job_id}")
}

/// Audit rows the console shows.
pub const ACTIVITY_ROWS: usize = 50;
/// How many of the newest door records the console shows.
pub const DOOR_ROWS: usize = 30;

/// One click of the console.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ConsoleAction {
    /// Pause the improve loop of a namespace (or `all`).
    Pause {
        /// Namespace or `all`.
        namespace: String,
        /// Why.
        reason: Option<String>,
    },
    /// Unpause a namespace (or `all`).
    Unpause {
        /// Namespace or `all`.
        namespace: String,
    },
    /// Set the improve mode.
    Mode {
        /// `off`, `subscription` or `api`.
        value: String,
    },
    /// Send a blocked job back to its holder's queue.
    ResumeJob {
        /// The job.
        id: String,
        /// What the owner approved.
        reason: String,
    },
    /// Mark a job failed.
    FailJob {
        /// The job.
        id: String,
        /// Why.
        reason: String,
    },
    /// Revoke an agent's key.
    RevokeAgent {
        /// The agent.
        name: String,
    },
    /// Answer an agent's open question (and, with `resume`, resume it with the answer).
    Answer {
        /// The agent's namespace.
        namespace: String,
        /// The agent.
        agent: String,
        /// The answer.
        answer: String,
        /// Also resume the agent.
        resume: bool,
    },
    /// Raise a job's cap on what it may spend (a job blocked at its budget gate resumes).
    RaiseCap {
        /// The job.
        id: String,
        /// The new cap, in US dollars, as typed (checked to be a number above zero).
        usd: String,
    },
    /// Take a failed job off "Waiting on you" (the job and its record stay as they are).
    DismissJob {
        /// The job.
        id: String,
    },
    /// Promote a log entry of a namespace to global (`checkmarks promote`).
    Promote {
        /// The entry's namespace.
        namespace: String,
        /// The entry.
        entry_id: i64,
    },
    /// Post a job (`jobs` action `post`), as the owner.
    PostJob {
        /// The job's namespace.
        namespace: String,
        /// Its title.
        title: String,
        /// Its prompt.
        body: String,
        /// Its role, when named (the server checks it).
        role: Option<String>,
        /// Its priority as typed (a whole number), when given.
        priority: Option<i64>,
        /// Where it works (issue 51): the patterns typed, split on commas (none: the
        /// whole repository; the server checks each).
        paths: Vec<String>,
    },
    /// Register a namespace with its repository (`register_namespace`), then set the runner
    /// settings that were filled (`update_namespace`).
    RegisterNamespace {
        /// The new namespace.
        namespace: String,
        /// Its repository, `owner/name`.
        repo: String,
        /// The filled runner settings, in [`CONSOLE_RUNNER_FIELDS`] order.
        runner: Vec<(String, String)>,
    },
}

fn field(form: &BTreeMap<String, String>, name: &str, max: usize) -> Result<String> {
    let v = form.get(name).map(|v| v.trim()).unwrap_or("");
    if v.is_empty() {
        return Err(Error::Invalid(format!("console: {name} is required")));
    }
    if v.chars().count() > max || v.chars().any(char::is_control) {
        return Err(Error::Invalid(format!(
            "console: {name} must be at most {max} printable characters"
        )));
    }
    Ok(v.to_owned())
}

/// A free-text field that may span lines (an answer): trimmed, required, at most `max`
/// characters, no control characters but line breaks and tabs (CRLF read as LF).
fn text_field(form: &BTreeMap<String, String>, name: &str, max: usize) -> Result<String> {
    let v = form
        .get(name)
        .map(|v| v.replace("\r\n", "\n"))
        .unwrap_or_default();
    let v = v.trim();
    if v.is_empty() {
        return Err(Error::Invalid(format!("console: {name} is required")));
    }
    let allowed = |c: char| !c.is_control() || c == '\n' || c == '\t';
    if v.chars().count() > max || !v.chars().all(allowed) {
        return Err(Error::Invalid(format!(
            "console: {name} must be at most {max} characters, without control characters"
        )));
    }
    Ok(v.to_owned())
}

/// A field the form may leave empty: `None` when it is, else checked as [`field`] is.
fn optional(form: &BTreeMap<String, String>, name: &str, max: usize) -> Result<Option<String>> {
    if form.get(name).is_none_or(|v| v.trim().is_empty()) {
        return Ok(None);
    }
    field(form, name, max).map(Some)
}

/// A log entry's id as the form sends it: a whole number from 1.
fn entry_id(form: &BTreeMap<String, String>) -> Result<i64> {
    let raw = field(form, "entry_id", 20)?;
    raw.parse::<i64>()
        .ok()
        .filter(|id| *id >= 1)
        .ok_or_else(|| {
            Error::Invalid(format!(
                "console: entry_id must be a log entry's id, a whole number from 1, not {raw:?}"
            ))
        })
}

/// A cap as typed in the console, checked by the core's own rule for caps.
fn usd_cap(usd: &str) -> Result<f64> {
    let dollars = usd.parse::<f64>().map_err(|_| {
        Error::Invalid(format!(
            "console: usd must be a number of US dollars above zero, not {usd:?}"
        ))
    })?;
    crate::jobs::budget::parse_job_cap(dollars)
        .map(|cap| cap.dollars())
        .map_err(|e| Error::Invalid(format!("console: usd: {e}")))
}

impl ConsoleAction {
    /// The action a submitted form names; an unknown one is refused, listing them.
    pub fn from_form(form: &BTreeMap<String, String>) -> Result<ConsoleAction> {
        let action = form.get("action").map(String::as_str).unwrap_or("");
        Ok(match action {
            "pause" => ConsoleAction::Pause {
                namespace: field(form, "namespace", 64)?,
                reason: field(form, "reason", 64).ok(),
            },
            "unpause" => ConsoleAction::Unpause {
                namespace: field(form, "namespace", 64)?,
            },
            "mode" => ConsoleAction::Mode {
                value: field(form, "value", 16)?,
            },
            "resume_job" => ConsoleAction::ResumeJob {
                id: field(form, "id", 64)?,
                reason: field(form, "reason", 1024)?,
            },
            "fail_job" => ConsoleAction::FailJob {
                id: field(form, "id", 64)?,
                reason: field(form, "reason", 1024)?,
            },
            "revoke_agent" => ConsoleAction::RevokeAgent {
                name: field(form, "name", 64)?,
            },
            "raise_cap" => {
                let usd = field(form, "usd", 16)?;
                usd_cap(&usd)?;
                ConsoleAction::RaiseCap {
                    id: field(form, "id", 64)?,
                    usd,
                }
            }
            "dismiss_job" => ConsoleAction::DismissJob {
                id: field(form, "id", 64)?,
            },
            "promote" => ConsoleAction::Promote {
                namespace: field(form, "namespace", 64)?,
                entry_id: entry_id(form)?,
            },
            "post_job" => ConsoleAction::PostJob {
                namespace: field(form, "namespace", 64)?,
                title: field(form, "title", crate::docs::bounds::TITLE)?,
                body: text_field(form, "body", crate::docs::bounds::BODY)?,
                role: optional(form, "role", 32)?,
                priority: optional(form, "priority", 20)?
                    .map(|p| {
                        p.parse::<i64>().map_err(|_| {
                            Error::Invalid(format!(
                                "console: priority must be a whole number (higher first), not {p:?}"
                            ))
                        })
                    })
                    .transpose()?,
                paths: optional(form, "paths", 4096)?
                    .map(|text| {
                        text.split(',')
                            .map(str::trim)
                            .filter(|p| !p.is_empty())
                            .map(str::to_owned)
                            .collect()
                    })
                    .unwrap_or_default(),
            },
            "register_namespace" => {
                let mut runner = Vec::new();
                for name in CONSOLE_RUNNER_FIELDS {
                    if let Some(v) = optional(form, name, crate::drive::runner::RUNNER_FIELD_MAX)? {
                        runner.push((name.to_owned(), v));
                    }
                }
                ConsoleAction::RegisterNamespace {
                    namespace: field(form, "namespace", 64)?,
                    repo: field(form, "repo", 140)?,
                    runner,
                }
            }
            "answer" => ConsoleAction::Answer {
                namespace: field(form, "namespace", 64)?,
                agent: field(form, "agent", 64)?,
                answer: text_field(form, "answer", crate::checkmarks::ANSWER_MAX)?,
                resume: form.get("resume").map(String::as_str) == Some("yes"),
            },
            other => {
                return Err(Error::Invalid(format!(
                    "unknown console action {other:?}: the console does exactly {}",
                    CONSOLE_ACTIONS.join(", ")
                )));
            }
        })
    }

    /// The action's name.
    pub fn name(&self) -> &'static str {
        match self {
            ConsoleAction::Pause { .. } => "pause",
            ConsoleAction::Unpause { .. } => "unpause",
            ConsoleAction::Mode { .. } => "mode",
            ConsoleAction::ResumeJob { .. } => "resume_job",
            ConsoleAction::FailJob { .. } => "fail_job",
            ConsoleAction::RevokeAgent { .. } => "revoke_agent",
            ConsoleAction::Answer { .. } => "answer",
            ConsoleAction::RaiseCap { .. } => "raise_cap",
            ConsoleAction::DismissJob { .. } => "dismiss_job",
            ConsoleAction::Promote { .. } => "promote",
            ConsoleAction::PostJob { .. } => "post_job",
            ConsoleAction::RegisterNamespace { .. } => "register_namespace",
        }
    }

    /// The form fields that re-post this action (the confirmation page sends them again).
    pub fn fields(&self) -> Vec<(&'static str, String)> {
        let mut out = vec![("action", self.name().to_owned())];
        match self {
            ConsoleAction::Pause { namespace, reason } => {
                out.push(("namespace", namespace.clone()));
                if let Some(r) = reason {
                    out.push(("reason", r.clone()));
                }
            }
            ConsoleAction::Unpause { namespace } => out.push(("namespace", namespace.clone())),
            ConsoleAction::Mode { value } => out.push(("value", value.clone())),
            ConsoleAction::ResumeJob { id, reason } | ConsoleAction::FailJob { id, reason } => {
                out.push(("id", id.clone()));
                out.push(("reason", reason.clone()));
            }
            ConsoleAction::RevokeAgent { name } => out.push(("name", name.clone())),
            ConsoleAction::DismissJob { id } => out.push(("id", id.clone())),
            ConsoleAction::Promote {
                namespace,
                entry_id,
            } => {
                out.push(("namespace", namespace.clone()));
                out.push(("entry_id", entry_id.to_string()));
            }
            ConsoleAction::RaiseCap { id, usd } => {
                out.push(("id", id.clone()));
                out.push(("usd", usd.clone()));
            }
            ConsoleAction::PostJob {
                namespace,
                title,
                body,
                role,
                priority,
                paths,
            } => {
                out.push(("namespace", namespace.clone()));
                if !paths.is_empty() {
                    out.push(("paths", paths.join(", ")));
                }
                out.push(("title", title.clone()));
                out.push(("body", body.clone()));
                if let Some(r) = role {
                    out.push(("role", r.clone()));
                }
                if let Some(p) = priority {
                    out.push(("priority", p.to_string()));
                }
            }
            ConsoleAction::RegisterNamespace {
                namespace,
                repo,
                runner,
            } => {
                out.push(("namespace", namespace.clone()));
                out.push(("repo", repo.clone()));
                for (k, v) in runner {
                    if let Some(name) = CONSOLE_RUNNER_FIELDS.iter().find(|n| **n == k.as_str()) {
                        out.push((name, v.clone()));
                    }
                }
            }
            ConsoleAction::Answer {
                namespace,
                agent,
                answer,
                resume,
            } => {
                out.push(("namespace", namespace.clone()));
                out.push(("agent", agent.clone()));
                out.push(("answer", answer.clone()));
                out.push(("resume", if *resume { "yes" } else { "no" }.to_owned()));
            }
        }
        out
    }

    /// What the click's `console-<action>` audit row records: its fields, but an answer's
    /// length rather than its text.
    pub(super) fn audit_params(&self) -> Value {
        let mut params: serde_json::Map<String, Value> = self
            .fields()
            .into_iter()
            .map(|(k, v)| (k.to_owned(), json!(v)))
            .collect();
        if let ConsoleAction::Answer { answer, .. } = self {
            params.remove("answer");
            params.insert("answer_chars".into(), json!(answer.chars().count()));
        }
        if let ConsoleAction::PostJob { body, .. } = self {
            params.remove("body");
            params.insert("body_chars".into(), json!(body.chars().count()));
        }
        Value::Object(params)
    }

    /// What the click will do, in words, for the confirmation page.
    pub fn effect(&self) -> String {
        match self {
            ConsoleAction::Pause { namespace, reason } => format!(
                "Pause the improve loop of {namespace}{}. Nothing new starts there until it is unpaused.",
                reason
                    .as_ref()
                    .map_or(String::new(), |r| format!(" (reason: {r})"))
            ),
            ConsoleAction::Unpause { namespace } => {
                format!("Unpause the improve loop of {namespace}.")
            }
            ConsoleAction::Mode { value } => format!("Set the improve mode to {value}."),
            ConsoleAction::ResumeJob { id, reason } => format!(
                "Resume blocked job {id}: it goes back to the queue (holder and lease cleared) for its driver to claim again. Recorded approval: {reason}"
            ),
            ConsoleAction::FailJob { id, reason } => format!(
                "Mark job {id} failed. It cannot be claimed or resumed afterwards. Reason: {reason}"
            ),
            ConsoleAction::RevokeAgent { name } => format!(
                "Revoke agent {name}: its key stops working at once, and the name is never reused."
            ),
            ConsoleAction::DismissJob { id } => format!(
                "Take failed job {id} off \"Waiting on you\". The job, its record and its audit rows stay as they are."
            ),
            ConsoleAction::Promote {
                namespace,
                entry_id,
            } => format!(
                "Promote log entry {entry_id} of {namespace} to global: every namespace's feed (and GET /api/shared/log) shows it from now on. There is no way back to project-only."
            ),
            ConsoleAction::RaiseCap { id, usd } => format!(
                "Raise the cap of job {id} to ${usd}: what its model calls may cost in all. A job blocked at its budget gate is answered and resumed: its driver goes on with the same session."
            ),
            ConsoleAction::PostJob {
                namespace,
                title,
                body,
                role,
                priority,
                paths,
            } => format!(
                "Post a job to {namespace}: \"{title}\"{}{}{}. Its prompt ({} characters) is signed by the server, and the namespace's driver claims it on its next run. Prompt: {body}",
                role.as_ref()
                    .map_or(String::new(), |r| format!(" with the role {r}")),
                priority.map_or(String::new(), |p| format!(", priority {p}")),
                if paths.is_empty() {
                    String::from(", on the whole repository (it runs alone)")
                } else {
                    format!(", on {}", paths.join(", "))
                },
                body.chars().count(),
            ),
            ConsoleAction::RegisterNamespace {
                namespace,
                repo,
                runner,
            } => format!(
                "Register the namespace {namespace} mapped to the repository {repo}{}. Its driver is minted separately (capsid agents mint).",
                if runner.is_empty() {
                    String::from(", with no runner settings")
                } else {
                    format!(
                        ", with the runner settings {}",
                        runner
                            .iter()
                            .map(|(k, v)| format!("{k} = {v}"))
                            .collect::<Vec<_>>()
                            .join("; ")
                    )
                }
            ),
            ConsoleAction::Answer {
                namespace,
                agent,
                answer,
                resume,
            } => format!(
                "Answer the open question of {agent} in {namespace} with: \"{answer}\". {}",
                if *resume {
                    "Then mark it to be resumed with the answer: its checkmark turns to working, and its driver resumes the session."
                } else {
                    "It stays paused until somebody resumes it."
                }
            ),
        }
    }
}

/// Whether `caller` may use the console: the owner, signed in with GitHub or through a link
/// of `capsid console login` (the command line's admin).
pub(super) fn require_owner(caller: &Caller) -> Result<()> {
    match caller.principal {
        Principal::Admin { .. } | Principal::Cli { .. } => Ok(()),
        _ => Err(Error::Forbidden(
            "the console is the owner's: sign in with GitHub or `capsid console login`".into(),
        )),
    }
}

/// A domain refusal (`{ok:false, refusal}`) as an error the console shows as 400.
fn refused(out: Value) -> Result<Value> {
    if out["ok"] == false {
        return Err(Error::Conflict(
            out["refusal"].as_str().unwrap_or("refused").to_owned(),
        ));
    }
    Ok(out)
}

impl OwnerService {
    /// The owner behind a console session token, re-checking the owner every time: a GitHub
    /// session must still be the configured owner's (`settings`; none when GitHub sign-in is
    /// off), a local session (`capsid console login`) is the command line's admin.
    pub async fn console_caller(
        &self,
        settings: Option<&OwnerSettings>,
        token: &str,
    ) -> Result<Option<Caller>> {
        let Some(row) = self
            .oauth
            .console_session(&sha256_hex(token), self.now())
            .await?
        else {
            return Ok(None);
        };
        Ok(SessionOwner::of_row(&row).caller(settings))
    }

    /// Ends the session `token`, or every console session when `all`. Returns how many ended.
    pub async fn console_end(&self, token: &str, all: bool) -> Result<u64> {
        let now = self.now();
        if all {
            return Ok(self.oauth.end_console_sessions(now).await?);
        }
        Ok(u64::from(
            self.oauth
                .end_console_session(&sha256_hex(token), now)
                .await?,
        ))
    }

    /// Revokes every MCP client's grant (its access and refresh tokens, and the remembered
    /// approvals, so each client asks for consent again), as the owner from the console;
    /// audited as `console-revoke_grants` naming the person. How many live grants ended.
    pub async fn console_revoke_grants(&self, caller: &Caller) -> Result<u64> {
        require_owner(caller)?;
        let audit = |revoked: u64| {
            self.audit(
                caller,
                "console-revoke_grants",
                None,
                None,
                json!({"grants_revoked": revoked}),
            )
        };
        let revoked = self.oauth.revoke_all_grants(self.now(), &audit).await?;
        Ok(revoked)
    }

    /// Runs one console action as the owner: the tool's own function, then the
    /// `console-<action>` audit row. A domain refusal is a `Conflict` naming it.
    pub async fn console_act(&self, caller: &Caller, action: &ConsoleAction) -> Result<Value> {
        require_owner(caller)?;
        let (out, namespace, path) = match action {
            ConsoleAction::Pause { namespace, reason } => {
                let mut args = json!({"action": "pause", "namespace": namespace});
                if let Some(r) = reason {
                    args["reason"] = json!(r);
                }
                let out = self
                    .tools
                    .call_tool(caller, "improve_run", args, &NoConfirmer)
                    .await?;
                (out, Some(namespace.clone()), None)
            }
            ConsoleAction::Unpause { namespace } => {
                let args = json!({"action": "unpause", "namespace": namespace});
                let out = self
                    .tools
                    .call_tool(caller, "improve_run", args, &NoConfirmer)
                    .await?;
                (out, Some(namespace.clone()), None)
            }
            ConsoleAction::Mode { value } => {
                let args = json!({"action": "mode", "value": value});
                (
                    self.tools
                        .call_tool(caller, "improve_run", args, &NoConfirmer)
                        .await?,
                    None,
                    None,
                )
            }
            ConsoleAction::ResumeJob { id, reason } => {
                let args: JobsArgs = parse_args(
                    "jobs",
                    json!({"action": "resume", "id": id, "reason": reason}),
                )?;
                let out = self
                    .tools
                    .jobs()
                    .resume_to(caller, args, ResumeTo::Queue)
                    .await?;
                let out = crate::service::to_json(out)?;
                let ns = out["job"]["namespace"].as_str().map(str::to_owned);
                (out, ns, Some(job_doc_path(id)))
            }
            ConsoleAction::FailJob { id, reason } => {
                let out = self.tools.jobs().admin_fail_job(caller, id, reason).await?;
                let out = crate::service::to_json(out)?;
                let ns = out["job"]["namespace"].as_str().map(str::to_owned);
                (out, ns, Some(job_doc_path(id)))
            }
            ConsoleAction::RevokeAgent { name } => {
                let args = json!({"action": "revoke", "name": name});
                let out = self
                    .tools
                    .call_tool(caller, "agents", args, &NoConfirmer)
                    .await?;
                (out, Some("agents".to_owned()), Some(name.clone()))
            }
            ConsoleAction::DismissJob { id } => {
                let Some(job) = self.jobs.job(id).await? else {
                    return Err(Error::NotFound(format!("no job {id}")));
                };
                if job.status != crate::jobs::JobStatus::Failed {
                    return Err(Error::Conflict(format!(
                        "job {id} is {}, not failed: only a failed job is dismissed",
                        job.status.as_str()
                    )));
                }
                let now = self.now();
                let until = job
                    .updated_at
                    .plus_millis(super::attention::FAILED_SHOWN_MS)
                    .max(now.plus_millis(crate::time::MINUTE_MS));
                let change = crate::ports::SettingChange {
                    expires_at: Some(until),
                    ..crate::ports::SettingChange::put(dismissed_key(id), "1")
                };
                let audit = self.audit(
                    caller,
                    "console-dismiss_job",
                    Some(&job.namespace),
                    Some(&job_doc_path(id)),
                    action.audit_params(),
                );
                // The setting and its audit row in one unit.
                self.tools
                    .store()
                    .change_settings(&[change], audit, now)
                    .await?;
                return Ok(json!({"ok": true, "action": "dismiss_job", "id": id}));
            }
            ConsoleAction::RaiseCap { id, usd } => {
                let Some(job) = self.jobs.job(id).await? else {
                    return Err(Error::NotFound(format!("no job {id}")));
                };
                let dollars = usd_cap(usd)?;
                let args = json!({"action": "raise", "id": id, "namespace": job.namespace,
                                  "max_cost_usd": dollars});
                let out = self
                    .tools
                    .call_tool(caller, "jobs", args, &NoConfirmer)
                    .await?;
                (out, Some(job.namespace.clone()), Some(job_doc_path(id)))
            }
            ConsoleAction::Promote {
                namespace,
                entry_id,
            } => {
                let args = json!({"action": "promote", "namespace": namespace,
                                  "entry_id": entry_id});
                let out = self
                    .tools
                    .call_tool(caller, "checkmarks", args, &NoConfirmer)
                    .await?;
                let path = out["log_entry"]["agent"]
                    .as_str()
                    .map(crate::checkmarks::audit_path);
                (out, Some(namespace.clone()), path)
            }
            ConsoleAction::PostJob {
                namespace,
                title,
                body,
                role,
                priority,
                paths,
            } => {
                let mut args = json!({"action": "post", "namespace": namespace,
                                      "title": title, "body": body});
                if !paths.is_empty() {
                    args["paths"] = json!(paths);
                }
                if let Some(r) = role {
                    args["role"] = json!(r);
                }
                if let Some(p) = priority {
                    args["priority"] = json!(p);
                }
                let out = self
                    .tools
                    .call_tool(caller, "jobs", args, &NoConfirmer)
                    .await?;
                let path = out["job"]["id"].as_str().map(job_doc_path);
                (out, Some(namespace.clone()), path)
            }
            ConsoleAction::RegisterNamespace {
                namespace,
                repo,
                runner,
            } => {
                // The runner settings are checked by the rule `update_namespace` applies before
                // anything is registered, so a refused setting leaves no half-made namespace.
                let settings: serde_json::Map<String, Value> =
                    runner.iter().map(|(k, v)| (k.clone(), json!(v))).collect();
                let patch: crate::drive::runner::RunnerPatch =
                    serde_json::from_value(Value::Object(settings.clone()))
                        .map_err(|e| Error::Invalid(format!("update_namespace: {e}")))?;
                crate::drive::runner::RunnerSettings::default()
                    .apply(&patch)
                    .map_err(|e| Error::Invalid(format!("update_namespace: {e}")))?;
                let args = json!({"namespace": namespace, "repo": repo});
                let mut out = self
                    .tools
                    .call_tool(caller, "register_namespace", args, &NoConfirmer)
                    .await?;
                if !settings.is_empty() {
                    let mut args = Value::Object(settings);
                    args["namespace"] = json!(namespace);
                    let runner = self
                        .tools
                        .call_tool(caller, "update_namespace", args, &NoConfirmer)
                        .await?;
                    out["runner"] = runner["runner"].clone();
                }
                (out, Some(namespace.clone()), None)
            }
            ConsoleAction::Answer {
                namespace,
                agent,
                answer,
                resume,
            } => {
                let args = json!({"action": "answer", "namespace": namespace, "agent": agent,
                                  "answer": answer, "resume": resume});
                let out = self
                    .tools
                    .call_tool(caller, "checkmarks", args, &NoConfirmer)
                    .await?;
                (
                    out,
                    Some(namespace.clone()),
                    Some(crate::checkmarks::audit_path(agent)),
                )
            }
        };
        let out = refused(out)?;
        self.audit_log
            .append_audit(self.audit(
                caller,
                &format!("console-{}", action.name()),
                namespace.as_deref(),
                path.as_deref(),
                action.audit_params(),
            ))
            .await?;
        Ok(out)
    }

    /// Adds to each namespace row of the improve report what the console shows beside it:
    /// its stored runner settings and its driver's last contact (the newest `last_seen` of a
    /// live driver agent whose namespaces hold it; null when none ever called).
    async fn namespace_rows(&self, improve: &mut Value, agents: &[Value]) -> Result<()> {
        let stored = self.tools.store().namespaces().await?;
        let Some(rows) = improve["namespaces"].as_array_mut() else {
            return Ok(());
        };
        for row in rows {
            let name = row["namespace"].as_str().unwrap_or_default().to_owned();
            let runner = stored
                .iter()
                .find(|r| r.namespace == name)
                .map(|r| crate::drive::runner::RunnerSettings::stored(r.runner.as_deref()))
                .unwrap_or_default();
            let last = agents
                .iter()
                .filter(|a| a["kind"] == "driver" && a["revoked_at"].is_null())
                .filter(|a| match &a["namespaces"] {
                    Value::String(s) => s == "*" || *s == name,
                    Value::Array(list) => list.iter().any(|n| n == "*" || *n == name.as_str()),
                    _ => false,
                })
                .filter_map(|a| a["last_seen"].as_str())
                .filter_map(crate::time::Timestamp::parse)
                .max();
            row["runner"] = serde_json::to_value(&runner).unwrap_or(Value::Null);
            row["driver_last_contact"] = last.map_or(Value::Null, |t| json!(t.to_string()));
        }
        Ok(())
    }

    /// The object the console page renders (and `/console.json` answers), but for the
    /// server's health, which the HTTP adapter adds: the improve report, every agent with its
    /// grants, held flags and record, the open jobs, and the latest activity.
    pub async fn console_view(&self, caller: &Caller, filter: AuditFilter) -> Result<Value> {
        require_owner(caller)?;
        let improve = self
            .tools
            .improve()
            .improve_status(
                caller,
                StatusArgs {
                    namespace: None,
                    task_path: None,
                },
                &NoConfirmer,
            )
            .await?;
        let rows = self.agents.agents().await?;
        let mut agents = Vec::new();
        for inv in self
            .tools
            .improve()
            .agent_inventory(&crate::scope::Axis::All)
            .await?
        {
            let name = inv["name"].as_str().unwrap_or_default();
            let scopes = rows
                .iter()
                .find(|r| r.name == name)
                .map(|r| Scopes::parse(Some(&r.scopes)))
                .unwrap_or_else(Scopes::none);
            let scope_json = scopes.to_json();
            let held: Vec<Value> = scope_json["flags"]
                .as_object()
                .map(|m| {
                    m.iter()
                        .filter(|(_, v)| **v == true)
                        .map(|(k, _)| json!(k))
                        .collect()
                })
                .unwrap_or_default();
            let r = &inv["record"];
            agents.push(json!({
                "name": name, "kind": inv["kind"], "namespaces": inv["namespaces"],
                "grants": scope_json["grants"], "flags": held,
                "last_seen": inv["last_seen"], "revoked_at": inv["revoked_at"],
                "jobs_completed": r["jobs_done"], "jobs_failed": r["jobs_failed"],
                "jobs_blocked": r["jobs_blocked"], "prs_opened": r["prs_opened"],
                "prs_merged": r["prs_merged"], "attempts_kept": r["attempts_kept"],
                "attempts_reverted": r["attempts_reverted"], "record": r,
            }));
        }
        let mut improve = improve;
        self.namespace_rows(&mut improve, &agents).await?;
        let spend: BTreeMap<String, crate::drive::ledger::Usd> =
            self.jobs.open_job_spend().await?.into_iter().collect();
        let mut jobs = Vec::new();
        // Each namespace's default cap, read once (a job without its own runs under it).
        let mut default_caps: BTreeMap<String, Option<crate::drive::ledger::Usd>> = BTreeMap::new();
        let jobs_cx = self.tools.jobs();
        for status in [JobStatus::Blocked, JobStatus::Claimed, JobStatus::Queued] {
            let filter = JobFilter {
                namespace: None,
                status: Some(status),
            };
            let mut rows = self.jobs.jobs(&filter, 50).await?;
            // What a queued job waits on (issue 51), as `jobs list` says it.
            jobs_cx.say_what_waits(&mut rows).await?;
            for j in rows {
                let cap = match j.max_cost_usd {
                    Some(own) => Some(own),
                    None => match default_caps.get(&j.namespace) {
                        Some(cap) => *cap,
                        None => {
                            let cap = jobs_cx.default_cap(&j.namespace).await?;
                            default_caps.insert(j.namespace.clone(), cap);
                            cap
                        }
                    },
                };
                jobs.push(json!({
                    "id": j.id, "namespace": j.namespace, "title": j.title, "status": j.status.as_str(),
                    // Where it works and what its claim holds (issue 51).
                    "paths": j.paths, "leased": j.leased, "lease_wait": j.waiting_on,
                    "claimed_by": j.claimed_by, "lease_expires": j.lease_expires,
                    "waiting_on": j.result_summary.as_deref().and_then(command_from_summary),
                    "updated_at": j.updated_at,
                    // The ledger so far (a running job's grows with each call) and its cap.
                    "spent_usd": spend.get(&j.id).copied().unwrap_or_default(),
                    "max_cost_usd": cap,
                }));
            }
        }
        // What the boxes' doors saw lately: every host refused or reached, each connection.
        let doors: Vec<Value> = self
            .jobs
            .recent_doors(DOOR_ROWS)
            .await?
            .into_iter()
            .map(|(job, d)| json!({"job_id": job, "door": d.door, "host": d.host, "port": d.port, "decision": d.decision, "bytes_up": d.bytes_up, "bytes_down": d.bytes_down, "started_at": d.started_at, "ended_at": d.ended_at, "detail": d.detail}))
            .collect();
        let activity: Vec<Value> = self
            .audit_log
            .recent_audit(&filter, ACTIVITY_ROWS)
            .await?
            .into_iter()
            .map(|a| json!({"at": a.at, "actor": a.actor, "action": a.action, "namespace": a.namespace, "path": a.path}))
            .collect();
        Ok(json!({
            "generated": self.now().to_string(),
            "viewer": caller.actor(),
            "improve": improve,
            "agents": agents,
            "jobs": jobs,
            "doors": doors,
            "activity": activity,
            "activity_filter": {"namespace": filter.namespace, "actor": filter.actor},
            "actions": CONSOLE_ACTIONS,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn form(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[test]
    fn exactly_twelve_actions_and_no_merge_or_mint() {
        assert_eq!(CONSOLE_ACTIONS.len(), 12);
        for absent in ["merge", "mint", "merge_pr", "mint_agent", "manage_pr", ""] {
            let e = ConsoleAction::from_form(&form(&[("action", absent)])).unwrap_err();
            let text = e.to_string();
            assert!(
                text.contains(
                    "pause, unpause, mode, resume_job, fail_job, revoke_agent, answer, raise_cap"
                ),
                "{text}"
            );
        }
        assert!(
            !CONSOLE_ACTIONS
                .iter()
                .any(|a| a.contains("merge") || a.contains("mint"))
        );
    }

    #[test]
    fn actions_parse_bounded_and_round_trip_their_fields() {
        let a = ConsoleAction::from_form(&form(&[
            ("action", "resume_job"),
            ("id", "job_0123456789ab"),
            ("reason", "pushed"),
            ("csrf", "x"),
        ]))
        .unwrap();
        assert_eq!(
            a,
            ConsoleAction::ResumeJob {
                id: "job_0123456789ab".into(),
                reason: "pushed".into()
            }
        );
        let again: BTreeMap<String, String> = a
            .fields()
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v))
            .collect();
        assert_eq!(ConsoleAction::from_form(&again).unwrap(), a);
        assert!(a.effect().contains("back to the queue"));
        assert!(
            ConsoleAction::from_form(&form(&[("action", "fail_job"), ("id", "j")])).is_err(),
            "a reason is required"
        );
        assert!(
            ConsoleAction::from_form(&form(&[
                ("action", "revoke_agent"),
                ("name", &"n".repeat(65))
            ]))
            .is_err()
        );
        assert!(
            ConsoleAction::from_form(&form(&[("action", "mode"), ("value", "of\u{0}f")])).is_err()
        );
    }

    #[test]
    fn a_raise_names_a_job_and_dollars_above_zero() {
        let a = ConsoleAction::from_form(&form(&[
            ("action", "raise_cap"),
            ("id", "job_0123456789ab"),
            ("usd", "2.5"),
        ]))
        .unwrap();
        assert_eq!(
            a,
            ConsoleAction::RaiseCap {
                id: "job_0123456789ab".into(),
                usd: "2.5".into()
            }
        );
        let again: BTreeMap<String, String> = a
            .fields()
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v))
            .collect();
        assert_eq!(ConsoleAction::from_form(&again).unwrap(), a);
        assert!(a.effect().contains("$2.5") && a.effect().contains("same session"));
        for bad in ["0", "-1", "lots", "NaN", "inf", ""] {
            let e = ConsoleAction::from_form(&form(&[
                ("action", "raise_cap"),
                ("id", "job_0123456789ab"),
                ("usd", bad),
            ]))
            .expect_err(bad)
            .to_string();
            assert!(e.contains("usd"), "{bad}: {e}");
        }
        assert!(
            ConsoleAction::from_form(&form(&[("action", "raise_cap"), ("usd", "3")])).is_err(),
            "a job is required"
        );
    }

    #[test]
    fn a_post_and_a_registration_send_only_what_was_filled() {
        let a = ConsoleAction::from_form(&form(&[
            ("action", "post_job"),
            ("namespace", "alpha"),
            ("title", "Ship it"),
            ("body", "Line one\r\nline two"),
            ("role", ""),
            ("priority", " "),
        ]))
        .unwrap();
        assert_eq!(
            a,
            ConsoleAction::PostJob {
                namespace: "alpha".into(),
                title: "Ship it".into(),
                body: "Line one\nline two".into(),
                role: None,
                priority: None,
                paths: vec![],
            }
        );
        let again: BTreeMap<String, String> = a
            .fields()
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v))
            .collect();
        assert_eq!(ConsoleAction::from_form(&again).unwrap(), a);
        assert_eq!(a.audit_params()["body_chars"], 17);
        assert!(
            a.audit_params().get("body").is_none(),
            "the prompt is not audited"
        );
        let e = ConsoleAction::from_form(&form(&[
            ("action", "post_job"),
            ("namespace", "alpha"),
            ("title", "t"),
            ("body", "b"),
            ("priority", "high"),
        ]))
        .unwrap_err()
        .to_string();
        assert!(e.contains("priority"), "{e}");
        // Paths (issue 51): split on commas, sent as the list typed.
        let on = ConsoleAction::from_form(&form(&[
            ("action", "post_job"),
            ("namespace", "alpha"),
            ("title", "t"),
            ("body", "b"),
            ("paths", " src/api/**, docs/api.md,tests/**,"),
        ]))
        .unwrap();
        let ConsoleAction::PostJob { paths, .. } = &on else {
            panic!("{on:?}")
        };
        assert_eq!(paths, &["src/api/**", "docs/api.md", "tests/**"]);
        assert!(
            on.effect().contains("on src/api/**, docs/api.md, tests/**"),
            "{}",
            on.effect()
        );
        let again: BTreeMap<String, String> = on
            .fields()
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v))
            .collect();
        assert_eq!(ConsoleAction::from_form(&again).unwrap(), on);
        assert!(
            a.effect().contains("on the whole repository"),
            "{}",
            a.effect()
        );
        let r = ConsoleAction::from_form(&form(&[
            ("action", "register_namespace"),
            ("namespace", "gamma"),
            ("repo", "octo/gamma"),
            ("test_command", "cargo test"),
            ("root_dir", ""),
            ("build_command", "not on the form"),
        ]))
        .unwrap();
        assert_eq!(
            r,
            ConsoleAction::RegisterNamespace {
                namespace: "gamma".into(),
                repo: "octo/gamma".into(),
                runner: vec![("test_command".into(), "cargo test".into())],
            }
        );
        let again: BTreeMap<String, String> = r
            .fields()
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v))
            .collect();
        assert_eq!(ConsoleAction::from_form(&again).unwrap(), r);
        assert!(r.effect().contains("test_command = cargo test"));
    }

    #[test]
    fn only_the_signed_in_owner_uses_the_console() {
        assert!(require_owner(&Caller::admin("octo")).is_ok());
        assert!(require_owner(&Caller::cli("ops")).is_ok());
        assert!(require_owner(&Caller::improve_loop()).is_err());
        assert!(require_owner(&Caller::operator_key(crate::scope::Grant::Write, "ab")).is_err());
    }
}
