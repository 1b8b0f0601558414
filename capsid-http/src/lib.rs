//! `capsid-http`: the axum router that carries Capsid over HTTP.
//!
//! It maps wire types to core calls and core errors to responses, and decides nothing:
//! every tool call goes to [`capsid_core::service::Service::call_tool`], the one enforcement
//! point. Routes: `POST /ops/mcp` (bearer keys: minted agents, then operator keys),
//! `/mcp` (the owner's OAuth route, the same MCP handler behind an OAuth bearer check), the
//! authorization server (`oauth`), the admin console (`console`), the Handler API under
//! `/api/` (`api`: checkmarks, the log and the shared context for curl, bearer keys as on
//! `/ops/mcp`), `POST /ops/backup` (`backup`), `POST /csp-report`, `GET /health`,
//! `GET /metrics` (`metrics`).

// Handlers return `Result<_, Response>` so a refusal is the ready response, carried once up
// the stack on an error path; boxing it would only add an allocation there.
#![allow(clippy::result_large_err)]

mod api;
mod auth;
mod backup;
mod client_addr;
mod console;
mod cookies;
mod csp;
mod github;
mod health;
mod html;
mod improve;
mod jsonrpc;
mod listen;
mod mcp;
mod metrics;
mod middleware;
mod oauth;
mod owner;
mod recheck;
mod sessions;
mod subscriptions;
pub mod system;
mod unavailable;
mod webhook;

use std::sync::Arc;

use axum::Router;
use axum::routing::get;
use capsid_core::owner::OwnerService;
use capsid_core::service::Service;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};

pub use health::{BuildInfo, STORE_PROBE_TIMEOUT, health_report, health_report_within};
pub use ipnet::IpNet;
pub use jsonrpc::{JsonRpcGuard, MAX_MCP_BODY};
pub use listen::{ServeLimits, serve};
pub use mcp::CapsidMcp;
pub use metrics::{Metrics, TOOL_LATENCY_BUCKETS};
pub use owner::{Owner, OwnerConfig};
pub use sessions::{SessionLimits, SessionOwners, SessionRefusal};
pub use subscriptions::MAX_PER_CALLER as MAX_SUBSCRIPTIONS_PER_CALLER;
pub use subscriptions::{MAX_STREAMS_PER_CALLER, Subscriptions};
pub use unavailable::RETRY_AFTER_SECONDS;
pub use webhook::{WebhookNotifier, install_tls_provider};

/// How the HTTP surface is configured.
#[derive(Clone, Debug)]
pub struct HttpConfig {
    /// The public base URL, e.g. `https://capsid.example.com` or `http://127.0.0.1:8787`.
    pub public_url: String,
    /// Serve MCP with `Mcp-Session-Id` sessions (needed for elicitation on 2025-11-25
    /// clients); off by default: stateless JSON responses.
    pub mcp_sessions: bool,
    /// Build provenance for `/health`.
    pub build: BuildInfo,
    /// What `/mcp` (the owner's OAuth route) still needs, when it is not configured.
    pub oauth_missing: Vec<String>,
    /// The owner's GitHub login; `None` turns `/mcp`, the console and the OAuth endpoints off
    /// (503 naming `oauth_missing`).
    pub owner: Option<OwnerConfig>,
    /// Reverse proxies whose `X-Forwarded-For` names the client (`CAPSID_TRUSTED_PROXIES`);
    /// empty: the socket peer is the client.
    pub trusted_proxies: Vec<IpNet>,
}

/// Shared state of every route.
#[derive(Clone)]
pub struct AppState {
    /// The core.
    pub service: Service,
    /// The owner's surfaces (OAuth and the console) over the same store.
    pub owner_service: OwnerService,
    /// The configuration.
    pub config: Arc<HttpConfig>,
    /// Which caller owns each MCP session, within the session bounds.
    pub sessions: SessionOwners,
    /// When each agent's `last_seen` was last stamped.
    pub last_seen: auth::LastSeen,
    /// The owner's login, when configured.
    pub owner: Option<Arc<Owner>>,
    /// The process's figures for `/metrics`.
    pub metrics: Arc<Metrics>,
    /// How long each store probe of `/health` may take.
    pub store_probe_timeout: std::time::Duration,
    /// What clients watch (listen streams, sessions' subscriptions), shared by both MCP
    /// routes; [`Subscriptions::close`] ends the streams when the server shuts down.
    pub subscriptions: Arc<Subscriptions>,
}

impl AppState {
    /// State for `service` under `config`.
    pub fn new(service: Service, config: HttpConfig) -> AppState {
        let owner = config.owner.clone().and_then(|o| {
            Owner::new(o, &config.public_url)
                .map_err(|e| tracing::error!(error = %e, "the owner's login is off"))
                .ok()
                .map(Arc::new)
        });
        AppState {
            owner_service: OwnerService::new(service.clone()),
            subscriptions: Subscriptions::new(service.clone()),
            service,
            metrics: Arc::new(Metrics::new(&config.build)),
            config: Arc::new(config),
            sessions: SessionOwners::default(),
            last_seen: auth::LastSeen::default(),
            owner,
            store_probe_timeout: health::STORE_PROBE_TIMEOUT,
        }
    }
}

impl AppState {
    /// The same state with `limits` on MCP sessions (default: [`SessionLimits::default`]).
    /// Call it before [`router`]: the routes share the map's session manager.
    pub fn with_session_limits(mut self, limits: SessionLimits) -> AppState {
        self.sessions = SessionOwners::new(limits);
        self
    }

    /// The same state with each store probe of `/health` bounded by `timeout` (default:
    /// [`STORE_PROBE_TIMEOUT`]).
    pub fn with_store_probe_timeout(mut self, timeout: std::time::Duration) -> AppState {
        self.store_probe_timeout = timeout;
        self
    }
}

impl std::fmt::Debug for AppState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AppState")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

/// The `Host` (authority) and `Origin` a public URL allows.
pub fn host_and_origin(public_url: &str) -> (Vec<String>, Vec<String>) {
    let url = public_url.trim_end_matches('/');
    let (scheme, rest) = url.split_once("://").unwrap_or(("http", url));
    let authority = rest.split('/').next().unwrap_or(rest).to_owned();
    let host_only = authority
        .rsplit_once(':')
        .map_or(authority.clone(), |(h, _)| h.to_owned());
    let mut hosts = vec![authority.clone()];
    let default_port = if scheme == "https" { ":443" } else { ":80" };
    if !authority.contains(':') {
        hosts.push(format!("{authority}{default_port}"));
    }
    // A loopback listener is also reachable under its other loopback names.
    if matches!(host_only.as_str(), "127.0.0.1" | "localhost" | "[::1]") {
        let port = authority.rsplit_once(':').map(|(_, p)| p.to_owned());
        for alias in ["127.0.0.1", "localhost", "[::1]"] {
            hosts.push(match &port {
                Some(p) => format!("{alias}:{p}"),
                None => alias.to_owned(),
            });
        }
    }
    let origins = hosts.iter().map(|h| format!("{scheme}://{h}")).collect();
    (hosts, origins)
}

/// The rmcp transport configuration every MCP route uses: stateless JSON responses by
/// default (sessions when asked for), Host and Origin allowlists from the public URL, and a
/// bounded request body.
pub fn transport_config(public_url: &str, sessions: bool) -> StreamableHttpServerConfig {
    let (hosts, origins) = host_and_origin(public_url);
    StreamableHttpServerConfig::default()
        .with_legacy_session_mode(sessions)
        .with_json_response(!sessions)
        .with_allowed_hosts(hosts)
        .with_allowed_origins(origins)
        .with_max_request_body_bytes(MAX_MCP_BODY)
}

/// The MCP handler every MCP route serves, on the one transport configuration, behind
/// Capsid's JSON-RPC checks, which admit `subscriptions/listen` streams into the server's
/// [`Subscriptions`] before rmcp acknowledges them.
fn mcp_service(
    state: &AppState,
) -> JsonRpcGuard<StreamableHttpService<CapsidMcp, LocalSessionManager>> {
    let sessions = state.config.mcp_sessions;
    let config = transport_config(&state.config.public_url, sessions);
    let service = state.service.clone();
    let metrics = state.metrics.clone();
    let subscriptions = state.subscriptions.clone();
    let handler_subscriptions = subscriptions.clone();
    JsonRpcGuard::new(StreamableHttpService::new(
        move || {
            let mcp = CapsidMcp::new(service.clone())
                .with_metrics(metrics.clone())
                .with_subscriptions(handler_subscriptions.clone());
            Ok(if sessions { mcp.with_sessions() } else { mcp })
        },
        state.sessions.transport(),
        config,
    ))
    .with_listen(subscriptions)
}

/// The whole router.
pub fn router(state: AppState) -> Router {
    let ops = Router::new()
        .nest_service("/ops/mcp", mcp_service(&state))
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            auth::bearer_caller,
        ));
    let owner_mcp = if state.owner.is_some() {
        Router::new()
            .nest_service("/mcp", mcp_service(&state))
            .layer(axum::middleware::from_fn_with_state(
                state.clone(),
                oauth::oauth_caller,
            ))
    } else {
        Router::new().route("/mcp", axum::routing::any(auth::oauth_route_unconfigured))
    };
    Router::new()
        .route("/health", get(health::health))
        .route("/metrics", get(metrics::metrics))
        .route("/csp-report", axum::routing::post(csp::csp_report))
        .merge(owner_mcp)
        .merge(oauth::routes())
        .merge(console::routes())
        .merge(backup::routes())
        .merge(improve::routes())
        .nest("/api", api::routes(&state))
        .merge(ops)
        .fallback(middleware::not_found)
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            metrics::count_request,
        ))
        .layer(axum::middleware::from_fn(middleware::security_headers))
        .layer(axum::middleware::from_fn(middleware::request_log))
        .with_state(state)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn allowlists_follow_the_public_url() {
        let (hosts, origins) = host_and_origin("https://capsid.example.com/");
        assert_eq!(hosts, vec!["capsid.example.com", "capsid.example.com:443"]);
        assert_eq!(origins[0], "https://capsid.example.com");
        let (hosts, _) = host_and_origin("http://127.0.0.1:8787");
        assert!(
            hosts.contains(&"localhost:8787".to_owned())
                && hosts.contains(&"127.0.0.1:8787".to_owned())
        );
        assert!(!hosts.iter().any(|h| h.contains("evil")));
    }
}
