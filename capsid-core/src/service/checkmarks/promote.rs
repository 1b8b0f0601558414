//! `checkmarks promote`: a log entry written for its namespace turns `global` later, when its
//! owner or an agent trusted with the shared feed (`can_write_shared`, asked by the one check
//! before this runs) decides it matters beyond its namespace. One keyed conditional update of
//! the entry (still `project`) with its audit row; the entry keeps its id, so the feed shows
//! it where it was written, newest first.

use schemars::JsonSchema;
use serde::Serialize;
use serde_json::json;

use super::args::CheckmarksArgs;
use super::{CheckmarksCx, required};
use crate::caller::Caller;
use crate::checkmarks::rules::promote;
use crate::checkmarks::view::{EntryView, entry_view};
use crate::checkmarks::{AUDIT_PROMOTED, audit_path};
use crate::error::{Error, Result};
use crate::service::{Area, require_namespace};

/// `checkmarks promote`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Promoted {
    /// Always `promote`.
    pub action: &'static str,
    /// The entry, now global.
    pub log_entry: EntryView,
}

impl CheckmarksCx<'_> {
    pub(crate) async fn promote(&self, caller: &Caller, a: &CheckmarksArgs) -> Result<Promoted> {
        let ns = required(
            "namespace",
            "promote",
            a.namespace.as_ref().map(|n| n.as_str()),
        )?;
        let id = a
            .entry_id
            .ok_or_else(|| Error::Invalid("checkmarks promote: entry_id is required".into()))?
            .0;
        require_namespace(self.namespaces, ns).await?;
        let entry = self.checkmarks.log_entry(ns, id).await?.ok_or_else(|| {
            Error::NotFound(format!(
                "checkmarks promote: entry_id {id} is no log entry of {ns}"
            ))
        })?;
        promote(id, entry.visibility)
            .map_err(|e| Error::Conflict(format!("checkmarks promote: {e}")))?;
        let audit = self.audit(
            caller,
            AUDIT_PROMOTED,
            Some(ns),
            Some(&audit_path(&entry.agent)),
            json!({"log_entry_id": id, "agent": entry.agent,
                   "from": entry.visibility.as_str(), "to": "global"}),
        );
        let promoted = self
            .checkmarks
            .promote_entry(ns, id, audit)
            .await?
            .ok_or_else(|| {
                Error::Conflict(format!(
                    "checkmarks promote: log entry {id} of {ns} changed meanwhile (somebody promoted it first); nothing was written"
                ))
            })?;
        Ok(Promoted {
            action: "promote",
            log_entry: entry_view(&promoted),
        })
    }
}
