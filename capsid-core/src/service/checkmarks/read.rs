//! `checkmarks` list, get, log and feed: one namespace's checkmarks (one query), one agent's
//! checkmark, its log newest first in pages, and the `global` entries of every namespace.
//! Arguments are checked before anything is read.

use schemars::JsonSchema;
use serde::Serialize;

use super::args::{CheckmarksAction, CheckmarksArgs};
use super::{CheckmarksCx, required};
use crate::caller::Caller;
use crate::checkmarks::view::{CheckmarkJson, EntryView, ResumeView, checkmark_view, entry_view};
use crate::checkmarks::{LIST_ROWS_MAX, LOG_ROWS_DEFAULT, LOG_ROWS_MAX, cursor};
use crate::error::{Error, Result};
use crate::ports::LogEntryRow;
use crate::service::require_namespace;

/// The page size asked for, checked.
fn page_limit(action: &str, limit: Option<u32>) -> Result<usize> {
    match limit {
        None => Ok(LOG_ROWS_DEFAULT),
        Some(n) if (1..=LOG_ROWS_MAX as u32).contains(&n) => Ok(n as usize),
        Some(n) => Err(Error::Invalid(format!(
            "checkmarks {action}: limit must be 1 to {LOG_ROWS_MAX}; got {n}"
        ))),
    }
}

/// The entry id the page starts below, from the caller's cursor.
fn page_start(action: &str, a: &CheckmarksArgs) -> Result<Option<i64>> {
    a.cursor
        .as_ref()
        .map(|c| cursor::decode(c.as_str()))
        .transpose()
        .map_err(|e| Error::Invalid(format!("checkmarks {action}: {e}")))
}

/// One page of entries (fetched with one extra row to know whether another page follows).
/// One page of log entries, newest first.
#[derive(Debug, Serialize, JsonSchema)]
pub struct EntryPage {
    /// Entries returned.
    pub count: usize,
    /// The page size.
    pub limit: usize,
    /// Whether older entries exist.
    pub truncated: bool,
    /// The cursor of the next page, or null.
    pub next_cursor: Option<String>,
    /// The entries.
    pub entries: Vec<EntryView>,
}

fn page(mut rows: Vec<LogEntryRow>, limit: usize) -> EntryPage {
    let truncated = rows.len() > limit;
    rows.truncate(limit);
    let next_cursor = truncated
        .then(|| rows.last().map(|e| cursor::encode(e.id)))
        .flatten();
    EntryPage {
        count: rows.len(),
        limit,
        truncated,
        next_cursor,
        entries: rows.iter().map(entry_view).collect(),
    }
}

/// `checkmarks list`: one namespace's checkmarks.
#[derive(Debug, Serialize, JsonSchema)]
pub struct CheckmarkList {
    /// The namespace.
    pub namespace: String,
    /// Checkmarks returned.
    pub count: usize,
    /// The bound.
    pub limit: usize,
    /// Whether more exist.
    pub truncated: bool,
    /// One per agent.
    pub agents: Vec<CheckmarkJson>,
    /// Live agents whose keys reach the namespace and that have never checkpointed there
    /// (minted, not yet heard from), by name.
    pub never_checkpointed: Vec<String>,
}

/// `checkmarks get`: one agent's checkmark.
#[derive(Debug, Serialize, JsonSchema)]
pub struct CheckmarkOne {
    /// The namespace.
    pub namespace: String,
    /// The agent.
    pub agent: String,
    /// Its checkmark.
    pub checkmark: CheckmarkJson,
}

/// `checkmarks log`: one agent's log, a page.
#[derive(Debug, Serialize, JsonSchema)]
pub struct AgentLog {
    /// The page.
    #[serde(flatten)]
    pub page: EntryPage,
    /// The namespace.
    pub namespace: String,
    /// The agent.
    pub agent: String,
}

/// `checkmarks feed`: the global entries, a page.
#[derive(Debug, Serialize, JsonSchema)]
pub struct GlobalFeed {
    /// The page.
    #[serde(flatten)]
    pub page: EntryPage,
    /// The namespace asked for, or null for every one.
    pub namespace: Option<String>,
    /// Always `global`.
    pub visibility: &'static str,
}

/// `checkmarks answer`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct AnswerGiven {
    /// Always `answer`.
    pub action: &'static str,
    /// Whether the agent is asked to resume with it.
    pub resumed: bool,
    /// The checkmark now.
    pub checkmark: CheckmarkJson,
    /// The entry answered.
    pub log_entry: EntryView,
}

/// `checkmarks resume`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ResumeAsked {
    /// Always `resume`.
    pub action: &'static str,
    /// The checkmark now.
    pub checkmark: CheckmarkJson,
    /// The pending resume.
    pub resume: Option<ResumeView>,
}

/// The `checkmarks` answer, one per action.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(untagged)]
#[allow(clippy::large_enum_variant)] // built once per call, then serialized
pub enum CheckmarksAnswer {
    /// `list`.
    List(CheckmarkList),
    /// `get`.
    One(CheckmarkOne),
    /// `log`.
    Log(AgentLog),
    /// `feed`.
    Feed(GlobalFeed),
    /// `answer`.
    Answered(AnswerGiven),
    /// `resume`.
    Resumed(ResumeAsked),
    /// `promote`.
    Promoted(super::promote::Promoted),
}

impl CheckmarksCx<'_> {
    pub(crate) async fn checkmarks(
        &self,
        caller: &Caller,
        a: CheckmarksArgs,
    ) -> Result<CheckmarksAnswer> {
        Ok(match a.action {
            CheckmarksAction::List => CheckmarksAnswer::List(self.list(&a).await?),
            CheckmarksAction::Get => CheckmarksAnswer::One(self.get(&a).await?),
            CheckmarksAction::Log => CheckmarksAnswer::Log(self.log(&a).await?),
            CheckmarksAction::Feed => CheckmarksAnswer::Feed(self.feed(&a).await?),
            CheckmarksAction::Answer => CheckmarksAnswer::Answered(self.answer(caller, &a).await?),
            CheckmarksAction::Resume => CheckmarksAnswer::Resumed(self.resume(caller, &a).await?),
            CheckmarksAction::Promote => {
                CheckmarksAnswer::Promoted(self.promote(caller, &a).await?)
            }
        })
    }

    async fn list(&self, a: &CheckmarksArgs) -> Result<CheckmarkList> {
        let ns = required(
            "namespace",
            "list",
            a.namespace.as_ref().map(|n| n.as_str()),
        )?;
        require_namespace(self.namespaces, ns).await?;
        let mut rows = self.checkmarks.checkmarks(ns, LIST_ROWS_MAX + 1).await?;
        let truncated = rows.len() > LIST_ROWS_MAX;
        rows.truncate(LIST_ROWS_MAX);
        let agents: Vec<CheckmarkJson> = rows.iter().map(checkmark_view).collect();
        // Only a whole list says who is missing from it.
        let never_checkpointed = if truncated {
            Vec::new()
        } else {
            self.agents
                .agents()
                .await?
                .into_iter()
                .filter(|a| a.revoked_at.is_none())
                .filter(|a| {
                    crate::scope::Scopes::parse(Some(&a.scopes))
                        .namespaces
                        .allows(ns)
                })
                .map(|a| a.name)
                .filter(|name| !agents.iter().any(|c| c.agent == *name))
                .take(LIST_ROWS_MAX)
                .collect()
        };
        Ok(CheckmarkList {
            namespace: ns.to_owned(),
            count: rows.len(),
            limit: LIST_ROWS_MAX,
            truncated,
            agents,
            never_checkpointed,
        })
    }

    async fn get(&self, a: &CheckmarksArgs) -> Result<CheckmarkOne> {
        let ns = required("namespace", "get", a.namespace.as_ref().map(|n| n.as_str()))?;
        let agent = required("agent", "get", a.agent.as_ref().map(|n| n.as_str()))?;
        require_namespace(self.namespaces, ns).await?;
        let view = self
            .checkmarks
            .checkmark(ns, agent)
            .await?
            .ok_or_else(|| no_checkmark(ns, agent))?;
        Ok(CheckmarkOne {
            namespace: ns.to_owned(),
            agent: agent.to_owned(),
            checkmark: checkmark_view(&view),
        })
    }

    async fn log(&self, a: &CheckmarksArgs) -> Result<AgentLog> {
        let ns = required("namespace", "log", a.namespace.as_ref().map(|n| n.as_str()))?;
        let agent = required("agent", "log", a.agent.as_ref().map(|n| n.as_str()))?;
        let limit = page_limit("log", a.limit)?;
        let before = page_start("log", a)?;
        require_namespace(self.namespaces, ns).await?;
        let rows = self
            .checkmarks
            .log_entries(ns, agent, before, limit + 1)
            .await?;
        if rows.is_empty() && before.is_none() {
            return Err(no_checkmark(ns, agent));
        }
        Ok(AgentLog {
            page: page(rows, limit),
            namespace: ns.to_owned(),
            agent: agent.to_owned(),
        })
    }

    async fn feed(&self, a: &CheckmarksArgs) -> Result<GlobalFeed> {
        let ns = a.namespace.as_ref().map(|n| n.as_str());
        let limit = page_limit("feed", a.limit)?;
        let before = page_start("feed", a)?;
        if let Some(ns) = ns {
            require_namespace(self.namespaces, ns).await?;
        }
        let rows = self
            .checkmarks
            .global_entries(ns, before, limit + 1)
            .await?;
        Ok(GlobalFeed {
            page: page(rows, limit),
            namespace: ns.map(str::to_owned),
            visibility: "global",
        })
    }
}

/// The refusal for an agent with no checkmark in a namespace.
pub(super) fn no_checkmark(namespace: &str, agent: &str) -> Error {
    Error::NotFound(format!(
        "agent {agent} has no checkmark in {namespace} yet (it records one with the checkpoint tool)"
    ))
}
