//! `shared`: the small key-value store of standing facts every namespace reads. get and list
//! need only the read grant; set (last writer wins) and delete need `can_write_shared`, which
//! the one check asks before this handler runs. Each write is audited with its change; values
//! stay out of the audit log (only their length).

use serde_json::json;

use super::CheckmarksCx;
use super::args::{SharedAction, SharedArgs};
use crate::caller::Caller;
use crate::checkmarks::view::{SharedView, shared_view};
use crate::checkmarks::{AUDIT_SHARED_DELETE, AUDIT_SHARED_SET, LIST_ROWS_MAX};
use crate::error::{Error, Result};
use crate::ports::SharedEntry;
use crate::service::Area;
use crate::time::Timestamp;

/// `shared list`.
#[derive(Debug, serde::Serialize, schemars::JsonSchema)]
pub struct SharedList {
    /// Entries returned.
    pub count: usize,
    /// The bound.
    pub limit: usize,
    /// Whether more exist.
    pub truncated: bool,
    /// The entries.
    pub entries: Vec<SharedView>,
}

/// `shared get`.
#[derive(Debug, serde::Serialize, schemars::JsonSchema)]
pub struct SharedGot {
    /// The entry.
    pub entry: SharedView,
}

/// Who set an overwritten entry, and when.
#[derive(Debug, serde::Serialize, schemars::JsonSchema)]
pub struct SharedPrevious {
    /// Who set it.
    pub set_by: String,
    /// When.
    pub updated_at: Timestamp,
}

/// `shared set`.
#[derive(Debug, serde::Serialize, schemars::JsonSchema)]
pub struct SharedSet {
    /// Always `set`.
    pub action: &'static str,
    /// The entry now.
    pub entry: SharedView,
    /// What it overwrote, or null.
    pub previous: Option<SharedPrevious>,
}

/// `shared delete`.
#[derive(Debug, serde::Serialize, schemars::JsonSchema)]
pub struct SharedDeleted {
    /// Always `delete`.
    pub action: &'static str,
    /// The entry removed.
    pub deleted: SharedView,
}

/// The `shared` answer, one per action.
#[derive(Debug, serde::Serialize, schemars::JsonSchema)]
#[serde(untagged)]
pub enum SharedAnswer {
    /// `list`.
    List(SharedList),
    /// `get`.
    Got(SharedGot),
    /// `set`.
    Set(SharedSet),
    /// `delete`.
    Deleted(SharedDeleted),
}

impl CheckmarksCx<'_> {
    pub(crate) async fn shared(&self, caller: &Caller, a: SharedArgs) -> Result<SharedAnswer> {
        let act = a.action.name();
        let key = || {
            a.key
                .as_ref()
                .map(|k| k.as_str().to_owned())
                .ok_or_else(|| Error::Invalid(format!("shared {act}: key is required")))
        };
        match a.action {
            SharedAction::List => {
                let mut rows = self.checkmarks.shared_entries(LIST_ROWS_MAX + 1).await?;
                let truncated = rows.len() > LIST_ROWS_MAX;
                rows.truncate(LIST_ROWS_MAX);
                Ok(SharedAnswer::List(SharedList {
                    count: rows.len(),
                    limit: LIST_ROWS_MAX,
                    truncated,
                    entries: rows.iter().map(shared_view).collect(),
                }))
            }
            SharedAction::Get => {
                let key = key()?;
                let entry = self.checkmarks.shared_entry(&key).await?.ok_or_else(|| {
                    Error::NotFound(format!("shared get: no shared context under {key}"))
                })?;
                Ok(SharedAnswer::Got(SharedGot {
                    entry: shared_view(&entry),
                }))
            }
            SharedAction::Set => {
                let key = key()?;
                let value = a
                    .value
                    .as_ref()
                    .map(|v| v.as_str().to_owned())
                    .ok_or_else(|| Error::Invalid("shared set: value is required".into()))?;
                let entry = SharedEntry {
                    key: key.clone(),
                    value,
                    set_by: caller.actor(),
                    updated_at: self.now(),
                };
                let audit = self.audit(
                    caller,
                    AUDIT_SHARED_SET,
                    None,
                    Some(&key),
                    json!({ "key": key, "value_chars": entry.value.chars().count() }),
                );
                let previous = self.checkmarks.set_shared(entry.clone(), audit).await?;
                Ok(SharedAnswer::Set(SharedSet {
                    action: "set",
                    entry: shared_view(&entry),
                    previous: previous.map(|p| SharedPrevious {
                        set_by: p.set_by,
                        updated_at: p.updated_at,
                    }),
                }))
            }
            SharedAction::Delete => {
                let key = key()?;
                let audit = self.audit(
                    caller,
                    AUDIT_SHARED_DELETE,
                    None,
                    Some(&key),
                    json!({ "key": key }),
                );
                let gone = self
                    .checkmarks
                    .delete_shared(&key, audit)
                    .await?
                    .ok_or_else(|| {
                        Error::NotFound(format!("shared delete: no shared context under {key}"))
                    })?;
                Ok(SharedAnswer::Deleted(SharedDeleted {
                    action: "delete",
                    deleted: shared_view(&gone),
                }))
            }
        }
    }
}
