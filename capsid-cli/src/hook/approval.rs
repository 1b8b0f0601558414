//! The standing approval a protected push or a merge needs, asked of the server: the hook
//! reads the worktree's head (`git rev-parse HEAD`) and calls `jobs` action `approval` over
//! `/ops/mcp` with the agent's key, so the server's one scope check applies and the server
//! decides whose verdict counts. Anything short of a clear "approved" (no server configured,
//! the server unreachable, a refusal, an unreadable head) denies: the hook fails closed.

use std::path::Path;

use serde_json::{Value, json};

use super::Recorder;
use crate::drive::mcp::Answer;
use crate::drive::proc::git;

/// What the server said about the worktree's head.
pub(super) enum Approval {
    /// Another agent's approval stands: who, for the record, and on which pull request.
    Stands(String, Option<u64>),
    /// None stands, or it could not be asked: why, for the agent.
    Missing(String),
}

/// Whether a different agent's approval stands for the head of `dir`.
pub(super) async fn standing(recorder: Option<&Recorder>, dir: &Path) -> Approval {
    let head = match git(dir, &["rev-parse", "HEAD"]).await {
        Ok(h) => h,
        Err(e) => {
            return Approval::Missing(format!(
                "Capsid could not read the head commit ({e:#}), so no approval can be matched to it and the hook fails closed."
            ));
        }
    };
    standing_for(recorder, &head).await
}

/// Why nothing could be asked without the server's settings.
const NO_SERVER: &str = "Capsid could not check for one: CAPSID_MCP_URL, CAPSID_RUN_CREDENTIAL (or CAPSID_KEY) and CAPSID_NAMESPACE must name the server, a credential and the namespace (the driver sets them), so the hook fails closed.";

/// Whether a different agent's approval stands for commit `head`.
pub(super) async fn standing_for(recorder: Option<&Recorder>, head: &str) -> Approval {
    let Some(r) = recorder else {
        return Approval::Missing(NO_SERVER.to_owned());
    };
    ask(
        r,
        json!({"action": "approval", "namespace": r.namespace, "head_sha": head}),
    )
    .await
}

/// Whether another agent's approval stands for pull request `number` of `repo` (`None`: the
/// namespace's primary repository) at the head GitHub reports for it now.
pub(super) async fn merge_standing(
    recorder: Option<&Recorder>,
    number: u64,
    repo: Option<&str>,
) -> Approval {
    let Some(r) = recorder else {
        return Approval::Missing(NO_SERVER.to_owned());
    };
    let mut args = json!({"action": "approval", "namespace": r.namespace, "pull_request": number});
    if let Some(repo) = repo {
        args["repo"] = json!(repo);
    }
    ask(r, args).await
}

/// `jobs` action `approval` with `args`; anything short of a clear "approved" is `Missing`.
async fn ask(r: &Recorder, args: Value) -> Approval {
    match r.mcp.call("jobs", args).await {
        Ok(Answer::Ok(v)) if v.get("approved").and_then(Value::as_bool) == Some(true) => {
            Approval::Stands(
                v["reason"].as_str().unwrap_or("approved").to_owned(),
                v["approval"]["number"].as_u64(),
            )
        }
        Ok(Answer::Ok(v)) => Approval::Missing(format!(
            "Capsid found none: {}",
            v["reason"].as_str().unwrap_or("the server did not say why")
        )),
        Ok(Answer::Refused(why)) => Approval::Missing(format!(
            "Capsid refused the approval check ({why}), so the hook fails closed."
        )),
        Err(e) => Approval::Missing(format!(
            "Capsid could not be asked whether an approval stands ({e:#}), so the hook fails closed."
        )),
    }
}

/// `owner/name` of `dir`'s `origin` when it is on GitHub (`https://github.com/o/r(.git)`,
/// `git@github.com:o/r(.git)`), else `None`.
pub(super) async fn origin_repo(dir: &Path) -> Option<String> {
    let url = git(dir, &["remote", "get-url", "origin"]).await.ok()?;
    let rest = url
        .strip_prefix("https://github.com/")
        .or_else(|| url.strip_prefix("http://github.com/"))
        .or_else(|| url.strip_prefix("git@github.com:"))
        .or_else(|| url.strip_prefix("ssh://git@github.com/"))?;
    let rest = rest.trim_end_matches('/').trim_end_matches(".git");
    let (owner, name) = rest.split_once('/')?;
    (!owner.is_empty() && !name.is_empty() && !name.contains('/'))
        .then(|| format!("{owner}/{name}"))
}
