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

    /// `resources/read`.
    pub async fn read_resource(&self, caller: &Caller, uri: &str) -> Result<String> {
        self.documents().read_resource(caller, uri).await
    }

    /// `resources/templates/list`.
    pub fn resource_templates(&self, caller: &Caller) -> Vec<&'static str> {
        self.documents().resource_templates(caller)
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
