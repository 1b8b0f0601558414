//! The MCP server handler: tools listed from the core's table for the caller, every call
//! through the core's one enforcement point, resources and prompts over documents,
//! completions for the resource template, `logging/setLevel`, and change notifications both
//! ways MCP has them (`resources/subscribe` for handshake clients on a session,
//! `subscriptions/listen` for 2026-07-28 clients; see `subscriptions`). A method rmcp does not
//! recognise is answered by `jsonrpc::unknown_method` ("method not found: `<m>`").
//!
//! The authenticated [`Caller`] is put into the request's extensions by the auth middleware;
//! rmcp hands each request's HTTP parts to the handler, so the caller is read per request
//! even inside a session.

// The logging capability (and `logging/setLevel`) is deprecated by SEP-2577 but SPEC section 5
// requires it: clients of the 2025-11-25 revision still send it.
#![allow(deprecated)]

use std::collections::BTreeMap;
use std::sync::Arc;

use capsid_core::caller::Caller;
use capsid_core::error::Error;
use capsid_core::service::metrics::{checkpoint_namespace, outcome_label, tool_label};
use capsid_core::service::{
    CHECKMARK_TEMPLATE, CONFIRM_WAIT_MS, CompletionRef, Confirmer, Consent, Service, ToolListing,
    output_schema, pretty, resource_mime, unknown_arguments,
};
use rmcp::model::{
    CacheScope, CallToolRequestParams, CallToolResponse, CallToolResult, CompleteRequestParams,
    CompleteResult, CompletionInfo, ContentBlock, CustomRequest, CustomResult,
    GetPromptRequestParams, GetPromptResponse, GetPromptResult, Implementation,
    InitializeRequestParams, InitializeResult, ListPromptsResult, ListResourceTemplatesResult,
    ListResourcesResult, ListToolsResult, PaginatedRequestParams, ProgressNotificationParam,
    Prompt, PromptArgument, PromptMessage, ReadResourceRequestParams, ReadResourceResponse,
    ReadResourceResult, Reference, Resource, ResourceContents, ResourceTemplate, Role,
    ServerCapabilities, ServerConfig, SetLevelRequestParams, SubscribeRequestParams,
    SubscriptionFilter, Tool, ToolAnnotations, UnsubscribeRequestParams,
};
use rmcp::service::{RequestContext, SubscriptionContext};
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler};
use serde_json::Value;

use crate::jsonrpc::Outcome;

/// The MCP face of one [`Service`].
#[derive(Clone)]
pub struct CapsidMcp {
    service: Service,
    metrics: Option<Arc<crate::Metrics>>,
    /// What clients watch: listen streams, and what sessions subscribe to.
    subscriptions: Option<Arc<crate::subscriptions::Subscriptions>>,
    /// Whether handshake clients get sessions (`--mcp-sessions`), which `resources/subscribe`
    /// and `tools/list_changed` need: a stateless handshake request has nothing to be told on.
    sessions: bool,
}

impl std::fmt::Debug for CapsidMcp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CapsidMcp").finish_non_exhaustive()
    }
}

impl CapsidMcp {
    /// A handler over `service`.
    pub fn new(service: Service) -> CapsidMcp {
        CapsidMcp {
            service,
            metrics: None,
            subscriptions: None,
            sessions: false,
        }
    }

    /// Serves `subscriptions/listen` to 2026-07-28 clients, kept in `subscriptions` (shared by
    /// every request of the server), which admits each stream before rmcp sees it
    /// ([`crate::JsonRpcGuard::with_listen`]).
    pub fn with_subscriptions(
        mut self,
        subscriptions: Arc<crate::subscriptions::Subscriptions>,
    ) -> CapsidMcp {
        self.subscriptions = Some(subscriptions);
        self
    }

    /// Also offers `resources/subscribe` and `notifications/tools/list_changed` to handshake
    /// clients: the server gives them sessions (`--mcp-sessions`).
    pub fn with_sessions(mut self) -> CapsidMcp {
        self.sessions = true;
        self
    }

    /// Counts every tool call (tool, outcome, latency) into `metrics`.
    pub fn with_metrics(mut self, metrics: Arc<crate::Metrics>) -> CapsidMcp {
        self.metrics = Some(metrics);
        self
    }
}

/// The `Mcp-Session-Id` the request came with (every request after `initialize` in a session).
fn session_of(ctx: &RequestContext<RoleServer>) -> Option<String> {
    ctx.extensions
        .get::<http::request::Parts>()
        .and_then(|parts| parts.headers.get("mcp-session-id"))
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned)
}

/// The caller the auth middleware resolved for this request.
fn caller_of(ctx: &RequestContext<RoleServer>) -> Result<Caller, McpError> {
    ctx.extensions
        .get::<http::request::Parts>()
        .and_then(|parts| parts.extensions.get::<Caller>())
        .cloned()
        .ok_or_else(|| McpError::internal_error("no authenticated caller on this request", None))
}

/// The credential the request was authenticated with, to re-check the caller of a watch that
/// outlives it (both MCP routes put one in).
fn recheck_of(ctx: &RequestContext<RoleServer>) -> Option<crate::recheck::Recheck> {
    ctx.extensions
        .get::<http::request::Parts>()
        .and_then(|parts| parts.extensions.get::<crate::recheck::Recheck>())
        .cloned()
}

fn tool_of(listing: &ToolListing) -> Tool {
    let a = listing.annotations;
    let tool = Tool::new(
        listing.spec.name,
        listing.spec.description,
        listing.input_schema.clone(),
    );
    let tool = tool.with_raw_output_schema(listing.output_schema.schema.clone());
    tool.with_title(listing.spec.title()).with_annotations(
        ToolAnnotations::with_title(listing.spec.title())
            .read_only(a.read_only)
            .destructive(a.destructive)
            .idempotent(a.idempotent)
            .open_world(a.open_world),
    )
}

/// A core error as the tool result the caller reads (`isError: true`). Internal failures
/// say only that they happened; the detail goes to the log.
fn tool_error(tool: &str, e: &Error) -> CallToolResult {
    let text = match e {
        Error::Internal(detail) => {
            tracing::error!(tool, error = %detail, "tool failed inside capsid");
            "internal error: the call failed inside Capsid and changed nothing it could not roll back; the server log has the detail (search for this request's x-request-id)".to_owned()
        }
        other => other.to_string(),
    };
    CallToolResult::error(vec![ContentBlock::text(text)])
}

fn protocol_error(e: Error) -> McpError {
    match e {
        Error::Invalid(m) | Error::NotFound(m) => McpError::invalid_params(m, None),
        Error::Denied(r) => McpError::invalid_params(r.to_string(), None),
        Error::Internal(detail) => {
            tracing::error!(error = %detail, "request failed inside capsid");
            McpError::internal_error("internal error; see the server log", None)
        }
        other => McpError::invalid_request(other.to_string(), None),
    }
}

/// A core error on a non-tool request: a store outage is noted for the 503, then mapped.
fn failed(ctx: &RequestContext<RoleServer>, e: Error) -> McpError {
    crate::unavailable::note_in(&ctx.extensions, &e);
    protocol_error(e)
}

/// Asks the human through an MCP elicitation, when the client declared it can.
struct Elicitor<'a> {
    ctx: &'a RequestContext<RoleServer>,
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Confirm {
    /// Confirm the change.
    confirm: bool,
}
rmcp::elicit_safe!(Confirm);

/// How long the human has to answer, as the core says ([`CONFIRM_WAIT_MS`]).
fn confirm_wait() -> std::time::Duration {
    std::time::Duration::from_millis(u64::try_from(CONFIRM_WAIT_MS).unwrap_or(u64::MAX))
}

#[async_trait::async_trait]
impl Confirmer for Elicitor<'_> {
    async fn confirm(&self, message: &str) -> Consent {
        let declared = self
            .ctx
            .peer
            .peer_info()
            .is_some_and(|info| info.capabilities.elicitation.is_some());
        if !declared {
            return Consent::Unsupported;
        }
        let asked = self
            .ctx
            .peer
            .elicit_with_timeout::<Confirm>(message, Some(confirm_wait()))
            .await;
        match asked {
            Ok(Some(Confirm { confirm: true })) => Consent::Accepted,
            Ok(_) => Consent::Declined,
            Err(
                rmcp::service::ElicitationError::UserDeclined
                | rmcp::service::ElicitationError::UserCancelled,
            ) => Consent::Declined,
            Err(_) => Consent::Unsupported,
        }
    }

    async fn progress(&self, done: u64, total: Option<u64>, message: &str) {
        let Some(token) = self.ctx.meta.get_progress_token() else {
            return;
        };
        let mut note = ProgressNotificationParam::new(token, done as f64);
        note.total = total.map(|t| t as f64);
        note.message = Some(message.to_owned());
        // A client gone away is not the call's failure: the answer still comes.
        if let Err(e) = self.ctx.peer.notify_progress(note).await {
            tracing::debug!(error = %e, "progress notification not sent");
        }
    }

    fn cancelled(&self) -> bool {
        self.ctx.ct.is_cancelled()
    }
}

impl ServerHandler for CapsidMcp {
    fn get_info(&self) -> ServerConfig {
        let builder = ServerCapabilities::builder()
            .enable_tools()
            .enable_resources()
            .enable_prompts()
            .enable_logging()
            .enable_completions();
        // What rmcp intersects a listen filter with, and what `server/discover` offers;
        // `initialize` takes them back when handshake clients get no session.
        let capabilities = if self.subscriptions.is_some() {
            builder
                .enable_tool_list_changed()
                .enable_resources_subscribe()
                .build()
        } else {
            builder.build()
        };
        ServerConfig::new(capabilities)
            .with_server_info(Implementation::new("capsid", env!("CARGO_PKG_VERSION")))
            .with_instructions(
                "Capsid: typed, versioned, audited project memory, a signed work queue and scoped repo access. \
                 Start a session with brief(namespace). Documents live at capsid://{namespace}/{path}.",
            )
    }

    async fn initialize(
        &self,
        request: InitializeRequestParams,
        ctx: RequestContext<RoleServer>,
    ) -> Result<InitializeResult, McpError> {
        ctx.peer.set_peer_info(request.clone());
        let mut info = self.negotiate_initialize(&request)?;
        if !self.sessions {
            // A handshake client without a session could subscribe to nothing it is told of.
            if let Some(resources) = info.capabilities.resources.as_mut() {
                resources.subscribe = None;
            }
            if let Some(tools) = info.capabilities.tools.as_mut() {
                tools.list_changed = None;
            }
        }
        Ok(info)
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        let caller = caller_of(&ctx)?;
        let listings = self.service.tools_for(&caller);
        if let (Some(subs), Some(session), Some(recheck)) =
            (&self.subscriptions, session_of(&ctx), recheck_of(&ctx))
        {
            let names = listings.iter().map(|t| t.spec.name).collect();
            subs.listed_tools(&session, recheck, ctx.peer.clone(), names);
        }
        let tools = listings.iter().map(tool_of).collect();
        // What a caller sees depends on its scopes: never cache it for anyone else.
        Ok(ListToolsResult::with_all_items(tools).with_cache_scope(CacheScope::Private))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let caller = caller_of(&ctx)?;
        let args = request.arguments.map(Value::Object).unwrap_or(Value::Null);
        let ignored = unknown_arguments(&request.name, &args);
        if !ignored.is_empty() {
            // Dropped as the reference drops them, but never unseen: a misspelt filter shows.
            tracing::warn!(
                tool = %request.name,
                actor = %caller.actor(),
                ignored = ?ignored,
                "arguments the tool does not take were ignored"
            );
        }
        let confirmer = Elicitor { ctx: &ctx };
        let started = std::time::Instant::now();
        let answer = self
            .service
            .call_tool(&caller, &request.name, args, &confirmer)
            .await;
        if let Some(m) = &self.metrics {
            m.record_tool_call(
                tool_label(&request.name),
                outcome_label(&answer),
                started.elapsed().as_secs_f64(),
            );
            if let Some(namespace) = checkpoint_namespace(&request.name, &answer) {
                m.record_checkpoint(namespace);
            }
        }
        let result = match answer {
            Ok(value) => {
                Outcome::note(&ctx, "ok");
                // The text item is the reference's pretty JSON, for every client; a typed
                // tool's answer also goes as structuredContent, shaped as its outputSchema.
                let mut result = CallToolResult::success(vec![ContentBlock::text(pretty(&value))]);
                result.structured_content =
                    output_schema(&request.name).map(|output| output.into_structured(value));
                result
            }
            Err(e) => {
                Outcome::note(&ctx, "refused");
                tracing::debug!(tool = %request.name, refusal = %e, "tool refused");
                crate::unavailable::note_in(&ctx.extensions, &e);
                tool_error(&request.name, &e)
            }
        };
        Ok(result.into())
    }

    async fn list_resources(
        &self,
        request: Option<PaginatedRequestParams>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, McpError> {
        let caller = caller_of(&ctx)?;
        let cursor = request.and_then(|r| r.cursor);
        let page = self
            .service
            .list_resources(&caller, cursor.as_deref())
            .await
            .map_err(|e| failed(&ctx, e))?;
        let resources = page
            .resources
            .into_iter()
            .map(|r| {
                let res = Resource::new(r.uri, r.name).with_mime_type("text/markdown");
                match r.title {
                    Some(t) => res.with_title(t),
                    None => res,
                }
            })
            .collect();
        let mut out =
            ListResourcesResult::with_all_items(resources).with_cache_scope(CacheScope::Private);
        out.next_cursor = page.next_cursor;
        Ok(out)
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, McpError> {
        let caller = caller_of(&ctx)?;
        let templates = self
            .service
            .resource_templates(&caller)
            .into_iter()
            .map(|uri| {
                if uri == CHECKMARK_TEMPLATE {
                    ResourceTemplate::new(uri, "checkmark")
                        .with_title("An agent's checkmark in a namespace")
                        .with_mime_type(resource_mime(uri))
                } else {
                    ResourceTemplate::new(uri, "document")
                        .with_title("A Capsid document")
                        .with_mime_type("text/markdown")
                }
            })
            .collect();
        Ok(ListResourceTemplatesResult::with_all_items(templates))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        ctx: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, McpError> {
        let caller = caller_of(&ctx)?;
        match self.service.read_resource(&caller, &request.uri).await {
            Ok(body) => Ok(ReadResourceResult::new(vec![
                ResourceContents::text(body, request.uri.clone())
                    .with_mime_type(resource_mime(&request.uri)),
            ])
            .into()),
            Err(Error::NotFound(m)) => Err(McpError::resource_not_found(
                m,
                Some(serde_json::json!({"uri": request.uri})),
            )),
            Err(e) => Err(failed(&ctx, e)),
        }
    }

    async fn subscribe(
        &self,
        request: SubscribeRequestParams,
        ctx: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        use crate::subscriptions::Refused;
        let caller = caller_of(&ctx)?;
        let (Some(subs), Some(session)) = (&self.subscriptions, session_of(&ctx)) else {
            return Err(McpError::invalid_request(
                "resources/subscribe needs a session: the server runs with --mcp-sessions and \
                 the request carries its Mcp-Session-Id",
                None,
            ));
        };
        let Some(recheck) = recheck_of(&ctx) else {
            return Err(McpError::internal_error(
                "no credential on this request to re-check its subscriber with",
                None,
            ));
        };
        match subs
            .subscribe(&session, &request.uri, &caller, recheck, ctx.peer.clone())
            .await
        {
            Ok(()) => Ok(()),
            Err(Refused::Read {
                error: Error::NotFound(m),
                ..
            }) => Err(McpError::resource_not_found(
                m,
                Some(serde_json::json!({"uri": request.uri})),
            )),
            Err(Refused::Read { error, .. }) => Err(failed(&ctx, error)),
            Err(refused) => Err(McpError::invalid_request(
                refused.explain(&caller.actor()),
                None,
            )),
        }
    }

    async fn unsubscribe(
        &self,
        request: UnsubscribeRequestParams,
        ctx: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        caller_of(&ctx)?;
        if let (Some(subs), Some(session)) = (&self.subscriptions, session_of(&ctx)) {
            subs.unsubscribe(&session, &request.uri);
        }
        Ok(())
    }

    fn accepted_subscription_filter(
        &self,
        requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        // Everything asked was admitted before rmcp saw the request (a refusal never reaches
        // here); rmcp keeps of it what the capabilities offer.
        self.subscriptions.as_ref().map(|_| requested.clone())
    }

    async fn listen(&self, context: SubscriptionContext) -> Result<(), McpError> {
        use crate::subscriptions::{Admitted, Ended};
        let admitted = context
            .request_context()
            .extensions
            .get::<http::request::Parts>()
            .and_then(|parts| parts.extensions.get::<Admitted>())
            .cloned();
        let (Some(subs), Some(admitted)) = (&self.subscriptions, admitted) else {
            return Err(McpError::internal_error(
                "this subscriptions/listen request was not admitted before it was acknowledged",
                None,
            ));
        };
        let Some(ended) = subs.open(&admitted, context.sink().clone()) else {
            return Err(McpError::invalid_request(
                "this listen stream was ended before it opened; listen again",
                None,
            ));
        };
        tokio::select! {
            // The client closed the stream: nothing more can reach it.
            () = context.cancelled() => Ok(()),
            why = ended => match why {
                Ok(Ended::Refused(why)) => Err(McpError::invalid_request(
                    format!("this listen stream ended: {why}; listen again to watch what may still be watched"),
                    None,
                )),
                Ok(Ended::Closing) | Err(_) => Ok(()),
            },
        }
        // `admitted` drops here, and the stream leaves its caller's bounds.
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, McpError> {
        let caller = caller_of(&ctx)?;
        let prompts = self
            .service
            .list_prompts(&caller)
            .await
            .map_err(|e| failed(&ctx, e))?
            .into_iter()
            .map(|p| {
                let args = p
                    .arguments
                    .into_iter()
                    .map(|a| PromptArgument::new(a.name).with_required(true))
                    .collect();
                Prompt::new(p.name, p.description, Some(args))
            })
            .collect();
        Ok(ListPromptsResult::with_all_items(prompts).with_cache_scope(CacheScope::Private))
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        ctx: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, McpError> {
        let caller = caller_of(&ctx)?;
        let args: BTreeMap<String, String> = request
            .arguments
            .unwrap_or_default()
            .into_iter()
            .map(|(k, v)| (k, v.as_str().map_or_else(|| v.to_string(), str::to_owned)))
            .collect();
        let prompt = self
            .service
            .get_prompt(&caller, &request.name, &args)
            .await
            .map_err(|e| failed(&ctx, e))?;
        // The body is a document any write-grant caller could have written: it is handed over
        // as an embedded resource, never as the operator's own words.
        let message = PromptMessage::new_resource(
            Role::User,
            prompt.uri,
            Some("text/markdown".into()),
            Some(prompt.text),
            None,
            None,
            None,
        );
        let mut result = GetPromptResult::new(vec![message]);
        if let Some(d) = prompt.description {
            result = result.with_description(d);
        }
        Ok(result.into())
    }

    async fn complete(
        &self,
        request: CompleteRequestParams,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CompleteResult, McpError> {
        let caller = caller_of(&ctx)?;
        let namespace = request
            .context
            .as_ref()
            .and_then(|c| c.arguments.as_ref())
            .and_then(|a| a.get("namespace"))
            .cloned();
        let reference = match &request.r#ref {
            Reference::Resource(r) => CompletionRef::Resource(&r.uri),
            Reference::Prompt(p) => CompletionRef::Prompt(&p.name),
            _ => return Ok(CompleteResult::new(CompletionInfo::default())),
        };
        let values = self
            .service
            .complete(
                &caller,
                reference,
                &request.argument.name,
                &request.argument.value,
                namespace.as_deref(),
            )
            .await
            .map_err(protocol_error)?;
        let info = CompletionInfo::with_all_values(values)
            .map_err(|e| McpError::internal_error(e, None))?;
        Ok(CompleteResult::new(info))
    }

    async fn on_custom_request(
        &self,
        request: CustomRequest,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CustomResult, McpError> {
        let error = crate::jsonrpc::unknown_method(&request);
        let verdict = if error.code == rmcp::model::ErrorCode::METHOD_NOT_FOUND {
            "unknown_method"
        } else {
            "invalid_params"
        };
        Outcome::note(&ctx, verdict);
        Err(error)
    }

    async fn set_level(
        &self,
        request: SetLevelRequestParams,
        _ctx: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        tracing::debug!(level = ?request.level, "client asked for a logging level");
        Ok(())
    }
}
