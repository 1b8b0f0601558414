//! The console's read-only view of a namespace's documents: the listing and one document,
//! each through the tool it stands for (`list`, `read`), so the one enforcement point runs
//! the same scope check and there is no second path to the data.

use serde_json::{Value, json};

use super::OwnerService;
use super::console::require_owner;
use crate::caller::Caller;
use crate::error::{Error, Result};
use crate::service::NoConfirmer;

impl OwnerService {
    /// The documents of `namespace` as the `list` tool answers them for `caller`. A namespace
    /// that is neither registered nor holds a document is `NotFound`.
    pub async fn console_documents(&self, caller: &Caller, namespace: &str) -> Result<Value> {
        require_owner(caller)?;
        let out = self
            .tools
            .call_tool(
                caller,
                "list",
                json!({"namespace": namespace}),
                &NoConfirmer,
            )
            .await?;
        let empty = out["documents"].as_array().is_none_or(Vec::is_empty);
        if empty {
            let registered = self
                .tools
                .call_tool(caller, "namespaces", json!({}), &NoConfirmer)
                .await?;
            let known = registered
                .as_array()
                .into_iter()
                .flatten()
                .any(|r| r["namespace"] == namespace);
            if !known {
                return Err(Error::NotFound(format!(
                    "no namespace {namespace} is registered, and it holds no documents"
                )));
            }
        }
        Ok(out)
    }

    /// The document `namespace`/`path` as the `read` tool answers it for `caller`.
    pub async fn console_document(
        &self,
        caller: &Caller,
        namespace: &str,
        path: &str,
    ) -> Result<Value> {
        require_owner(caller)?;
        self.tools
            .call_tool(
                caller,
                "read",
                json!({"namespace": namespace, "path": path}),
                &NoConfirmer,
            )
            .await
    }
}
