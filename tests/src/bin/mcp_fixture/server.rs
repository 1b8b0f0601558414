//! The fixture's `ServerHandler`: capabilities, state shared by every handler instance (one
//! per request in stateless mode, one per session otherwise), and the routing of each MCP
//! method to the modules that answer it.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use rmcp::model::{
    CacheScope, CallToolRequestParams, CallToolResponse, CompleteRequestParams, CompleteResult,
    GetPromptRequestParams, GetPromptResponse, Implementation, ListPromptsResult,
    ListResourceTemplatesResult, ListResourcesResult, ListToolsResult, LoggingLevel,
    PaginatedRequestParams, ReadResourceRequestParams, ReadResourceResponse, RequestStateCodec,
    ServerCapabilities, ServerConfig, SetLevelRequestParams, SubscribeRequestParams,
    SubscriptionFilter, Tool, UnsubscribeRequestParams,
};
use rmcp::service::{RequestContext, SubscriptionContext, SubscriptionSink};
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler};

use crate::{catalog, input_required, tools};

/// How long clients may cache list and read results (SEP-2549 caching hints).
pub const CACHE_TTL_MS: u64 = 60_000;

/// The fixture handler; cheap to clone, every clone shares the same state.
#[derive(Clone)]
pub struct Fixture {
    shared: Arc<Shared>,
    /// The level last set with `logging/setLevel`, per session (per request when stateless).
    log_level: Arc<Mutex<LoggingLevel>>,
}

struct Shared {
    /// Seals and opens `requestState` (SEP-2322) with a key drawn at start-up.
    codec: RequestStateCodec,
    /// Open `subscriptions/listen` streams (2026-07-28), by a local key.
    listeners: Mutex<BTreeMap<u64, SubscriptionSink>>,
    next_listener: AtomicU64,
    /// URIs subscribed with the legacy `resources/subscribe`.
    subscribed: Mutex<BTreeSet<String>>,
}

impl Fixture {
    /// A fixture with fresh state and a fresh `requestState` key.
    pub fn new() -> Fixture {
        let key: [u8; 32] = rand::random();
        Fixture {
            shared: Arc::new(Shared {
                codec: RequestStateCodec::try_new(key.to_vec())
                    .expect("32 bytes is RequestStateCodec::MIN_KEY_LENGTH"),
                listeners: Mutex::new(BTreeMap::new()),
                next_listener: AtomicU64::new(0),
                subscribed: Mutex::new(BTreeSet::new()),
            }),
            log_level: Arc::new(Mutex::new(LoggingLevel::Debug)),
        }
    }

    /// The handler of a new session (or of one request, when stateless): the shared state,
    /// and its own log level.
    pub fn session(&self) -> Fixture {
        Fixture {
            shared: Arc::clone(&self.shared),
            log_level: Arc::new(Mutex::new(LoggingLevel::Debug)),
        }
    }

    /// The `requestState` codec.
    pub fn codec(&self) -> &RequestStateCodec {
        &self.shared.codec
    }

    /// Whether a log message at `level` passes the level set with `logging/setLevel`.
    pub fn logs_at(&self, level: LoggingLevel) -> bool {
        let threshold = *self.log_level.lock().unwrap_or_else(|e| e.into_inner());
        level as u8 >= threshold as u8
    }

    /// The open `subscriptions/listen` streams.
    pub fn listeners(&self) -> Vec<SubscriptionSink> {
        let listeners = self
            .shared
            .listeners
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        listeners.values().cloned().collect()
    }
}

impl ServerHandler for Fixture {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_tool_list_changed()
                .enable_prompts()
                .enable_prompts_list_changed()
                .enable_resources()
                .enable_resources_subscribe()
                .enable_logging()
                .enable_completions()
                .build(),
        )
        .with_server_info(Implementation::new(
            "capsid-mcp-fixture",
            env!("CARGO_PKG_VERSION"),
        ))
        .with_instructions("Conformance fixture on capsid's transport configuration")
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        tools::all().into_iter().find(|t| t.name == name)
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _cx: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        Ok(ListToolsResult::with_all_items(tools::all())
            .with_ttl_ms(CACHE_TTL_MS)
            .with_cache_scope(CacheScope::Public))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        cx: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        if request.name.starts_with(input_required::TOOL_PREFIX) {
            return input_required::call(self, request, &cx.meta);
        }
        tools::call(self, request, cx).await
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _cx: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, McpError> {
        Ok(ListResourcesResult::with_all_items(catalog::resources())
            .with_ttl_ms(CACHE_TTL_MS)
            .with_cache_scope(CacheScope::Public))
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        _cx: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, McpError> {
        Ok(
            ListResourceTemplatesResult::with_all_items(catalog::templates())
                .with_ttl_ms(CACHE_TTL_MS)
                .with_cache_scope(CacheScope::Public),
        )
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _cx: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, McpError> {
        let result = catalog::read(&request.uri)?;
        Ok(result
            .with_ttl_ms(CACHE_TTL_MS)
            .with_cache_scope(CacheScope::Public)
            .into())
    }

    async fn subscribe(
        &self,
        request: SubscribeRequestParams,
        _cx: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        let mut subscribed = self
            .shared
            .subscribed
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        subscribed.insert(request.uri);
        Ok(())
    }

    async fn unsubscribe(
        &self,
        request: UnsubscribeRequestParams,
        _cx: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        let mut subscribed = self
            .shared
            .subscribed
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        subscribed.remove(&request.uri);
        Ok(())
    }

    fn accepted_subscription_filter(
        &self,
        requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        Some(requested.supported_by(&self.get_info().capabilities))
    }

    async fn listen(&self, context: SubscriptionContext) -> Result<(), McpError> {
        let key = self.shared.next_listener.fetch_add(1, Ordering::Relaxed);
        let sink = context.sink().clone();
        self.shared
            .listeners
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(key, sink);
        context.cancelled().await;
        self.shared
            .listeners
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&key);
        Ok(())
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        _cx: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, McpError> {
        Ok(ListPromptsResult::with_all_items(catalog::prompts())
            .with_ttl_ms(CACHE_TTL_MS)
            .with_cache_scope(CacheScope::Public))
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        _cx: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, McpError> {
        if request.name == input_required::PROMPT {
            return Ok(input_required::prompt(request.input_responses.as_ref()));
        }
        Ok(catalog::prompt(&request.name, request.arguments.as_ref())?.into())
    }

    async fn complete(
        &self,
        request: CompleteRequestParams,
        _cx: RequestContext<RoleServer>,
    ) -> Result<CompleteResult, McpError> {
        catalog::complete(&request)
    }

    async fn set_level(
        &self,
        request: SetLevelRequestParams,
        _cx: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        *self.log_level.lock().unwrap_or_else(|e| e.into_inner()) = request.level;
        Ok(())
    }
}
