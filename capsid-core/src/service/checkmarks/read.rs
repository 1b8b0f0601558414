//! `checkmarks` list, get, log and feed: one namespace's checkmarks (one query), one agent's
//! checkmark, its log newest first in pages, and the `global` entries of every namespace.
//! Arguments are checked before anything is read.

use serde_json::{Value, json};

use super::args::{CheckmarksAction, CheckmarksArgs};
use super::{CheckmarksCx, required};
use crate::caller::Caller;
use crate::checkmarks::view::{checkmark_json, entry_json};
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
fn page(mut rows: Vec<LogEntryRow>, limit: usize) -> Value {
    let truncated = rows.len() > limit;
    rows.truncate(limit);
    let next_cursor = truncated
        .then(|| rows.last().map(|e| cursor::encode(e.id)))
        .flatten();
    json!({
        "count": rows.len(),
        "limit": limit,
        "truncated": truncated,
        "next_cursor": next_cursor,
        "entries": rows.iter().map(entry_json).collect::<Vec<_>>(),
    })
}

impl CheckmarksCx<'_> {
    pub(crate) async fn checkmarks(&self, caller: &Caller, a: CheckmarksArgs) -> Result<Value> {
        match a.action {
            CheckmarksAction::List => self.list(&a).await,
            CheckmarksAction::Get => self.get(&a).await,
            CheckmarksAction::Log => self.log(&a).await,
            CheckmarksAction::Feed => self.feed(&a).await,
            CheckmarksAction::Answer => self.answer(caller, &a).await,
            CheckmarksAction::Resume => self.resume(caller, &a).await,
        }
    }

    async fn list(&self, a: &CheckmarksArgs) -> Result<Value> {
        let ns = required(
            "namespace",
            "list",
            a.namespace.as_ref().map(|n| n.as_str()),
        )?;
        require_namespace(self.namespaces, ns).await?;
        let mut rows = self.checkmarks.checkmarks(ns, LIST_ROWS_MAX + 1).await?;
        let truncated = rows.len() > LIST_ROWS_MAX;
        rows.truncate(LIST_ROWS_MAX);
        Ok(json!({
            "namespace": ns,
            "count": rows.len(),
            "limit": LIST_ROWS_MAX,
            "truncated": truncated,
            "agents": rows.iter().map(checkmark_json).collect::<Vec<_>>(),
        }))
    }

    async fn get(&self, a: &CheckmarksArgs) -> Result<Value> {
        let ns = required("namespace", "get", a.namespace.as_ref().map(|n| n.as_str()))?;
        let agent = required("agent", "get", a.agent.as_ref().map(|n| n.as_str()))?;
        require_namespace(self.namespaces, ns).await?;
        let view = self
            .checkmarks
            .checkmark(ns, agent)
            .await?
            .ok_or_else(|| no_checkmark(ns, agent))?;
        Ok(json!({ "namespace": ns, "agent": agent, "checkmark": checkmark_json(&view) }))
    }

    async fn log(&self, a: &CheckmarksArgs) -> Result<Value> {
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
        let mut out = page(rows, limit);
        out["namespace"] = json!(ns);
        out["agent"] = json!(agent);
        Ok(out)
    }

    async fn feed(&self, a: &CheckmarksArgs) -> Result<Value> {
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
        let mut out = page(rows, limit);
        out["namespace"] = json!(ns);
        out["visibility"] = json!("global");
        Ok(out)
    }
}

/// The refusal for an agent with no checkmark in a namespace.
pub(super) fn no_checkmark(namespace: &str, agent: &str) -> Error {
    Error::NotFound(format!(
        "agent {agent} has no checkmark in {namespace} yet (it records one with the checkpoint tool)"
    ))
}
