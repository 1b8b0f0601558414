//! The service's surfaces other than tools, as the adapters call them: bearer resolution, and
//! the MCP resources, prompts and completions over documents (each asking the same check as
//! the `read` tool, in the documents area).

use std::collections::BTreeMap;

use super::{CompletionRef, PromptListing, RenderedPrompt, Resolved, ResourcePage, Service};
use crate::caller::Caller;
use crate::error::Result;

impl Service {
    /// Resolves an `Authorization` header value into a caller (reference 3.1).
    pub async fn resolve_bearer(&self, authorization: Option<&str>) -> Result<Resolved> {
        self.agents().resolve_bearer(authorization).await
    }

    /// Stamps a minted agent's `last_seen` after its call was answered (best effort).
    pub async fn touch_last_seen(&self, caller: &Caller) -> Result<()> {
        self.agents().touch_last_seen(caller).await
    }

    /// The one check of the document surfaces: as `read` would be asked.
    pub fn check_read(&self, caller: &Caller, namespace: Option<&str>) -> Result<()> {
        self.documents().check_read(caller, namespace)
    }

    /// `resources/list`.
    pub async fn list_resources(
        &self,
        caller: &Caller,
        cursor: Option<&str>,
    ) -> Result<ResourcePage> {
        self.documents().list_resources(caller, cursor).await
    }

    /// `caller` as it stands now, for a caller resolved earlier and kept (a resource
    /// subscription's, re-checked before each read): a minted agent with its current scopes,
    /// none once it is revoked; a run credential's caller while its driver is live and still
    /// holds the job; anyone else as they are.
    pub async fn refresh_caller(&self, caller: &Caller) -> Result<Option<Caller>> {
        self.agents().refresh(caller).await
    }

    /// `resources/read`: a document, or an agent's checkmark
    /// (`capsid://<ns>/agents/<agent>/checkmark`), read as the `checkmarks` tool's `get` through
    /// the registry, so the same check refuses it as the tool.
    pub async fn read_resource(&self, caller: &Caller, uri: &str) -> Result<String> {
        match parse_checkmark_uri(uri) {
            Some((namespace, agent)) => {
                let args = serde_json::json!({
                    "action": "get", "namespace": namespace, "agent": agent,
                });
                let answer = self
                    .call_tool(caller, "checkmarks", args, &super::NoConfirmer)
                    .await?;
                Ok(super::pretty(&answer))
            }
            None => self.documents().read_resource(caller, uri).await,
        }
    }

    /// `resources/templates/list`: documents for a caller that may read any, and checkmarks
    /// for one that sees the `checkmarks` tool.
    pub fn resource_templates(&self, caller: &Caller) -> Vec<&'static str> {
        let mut templates = self.documents().resource_templates(caller);
        if super::registry::spec("checkmarks")
            .is_some_and(|spec| crate::tools::visible_to(caller, spec))
        {
            templates.push(CHECKMARK_TEMPLATE);
        }
        templates
    }

    /// `completion/complete`.
    pub async fn complete(
        &self,
        caller: &Caller,
        reference: CompletionRef<'_>,
        argument: &str,
        value: &str,
        namespace: Option<&str>,
    ) -> Result<Vec<String>> {
        self.documents()
            .complete(caller, reference, argument, value, namespace)
            .await
    }

    /// `prompts/list`.
    pub async fn list_prompts(&self, caller: &Caller) -> Result<Vec<PromptListing>> {
        self.documents().list_prompts(caller).await
    }

    /// `prompts/get`.
    pub async fn get_prompt(
        &self,
        caller: &Caller,
        name: &str,
        args: &BTreeMap<String, String>,
    ) -> Result<RenderedPrompt> {
        self.documents().get_prompt(caller, name, args).await
    }
}

/// The resource template of an agent's checkmark in a namespace (JSON, as `checkmarks get`
/// answers it).
pub const CHECKMARK_TEMPLATE: &str = "capsid://{namespace}/agents/{agent}/checkmark";

/// The namespace and agent of a checkmark's URI (`capsid://<ns>/agents/<agent>/checkmark`).
pub fn parse_checkmark_uri(uri: &str) -> Option<(&str, &str)> {
    let (namespace, path) = super::documents::parse_resource_uri(uri)?;
    let agent = path.strip_prefix("agents/")?.strip_suffix("/checkmark")?;
    (!agent.is_empty() && !agent.contains('/')).then_some((namespace, agent))
}

/// The MIME type of what `resources/read` answers for `uri`.
pub fn resource_mime(uri: &str) -> &'static str {
    if parse_checkmark_uri(uri).is_some() {
        "application/json"
    } else {
        "text/markdown"
    }
}
