//! `shared`: the small key-value store of standing facts every namespace reads. get and list
//! need only the read grant; set (last writer wins) and delete need `can_write_shared`, which
//! the one check asks before this handler runs. Each write is audited with its change; values
//! stay out of the audit log (only their length).

use serde_json::{Value, json};

use super::CheckmarksCx;
use super::args::{SharedAction, SharedArgs};
use crate::caller::Caller;
use crate::checkmarks::view::shared_json;
use crate::checkmarks::{AUDIT_SHARED_DELETE, AUDIT_SHARED_SET, LIST_ROWS_MAX};
use crate::error::{Error, Result};
use crate::ports::SharedEntry;
use crate::service::Area;

impl CheckmarksCx<'_> {
    pub(crate) async fn shared(&self, caller: &Caller, a: SharedArgs) -> Result<Value> {
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
                Ok(json!({
                    "count": rows.len(),
                    "limit": LIST_ROWS_MAX,
                    "truncated": truncated,
                    "entries": rows.iter().map(shared_json).collect::<Vec<_>>(),
                }))
            }
            SharedAction::Get => {
                let key = key()?;
                let entry = self.checkmarks.shared_entry(&key).await?.ok_or_else(|| {
                    Error::NotFound(format!("shared get: no shared context under {key}"))
                })?;
                Ok(json!({ "entry": shared_json(&entry) }))
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
                Ok(json!({
                    "action": "set",
                    "entry": shared_json(&entry),
                    "previous": previous.as_ref().map(|p| json!({"set_by": p.set_by, "updated_at": p.updated_at})),
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
                Ok(json!({ "action": "delete", "deleted": shared_json(&gone) }))
            }
        }
    }
}
