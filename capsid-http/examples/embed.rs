//! Embedding Capsid in another axum application: the service on an embedded SQLite file,
//! mounted beside the application's own routes.
//!
//! ```text
//! cargo run -p capsid-http --example embed -- /tmp/embedded.db 127.0.0.1:9000
//! curl -s http://127.0.0.1:9000/hello
//! curl -s http://127.0.0.1:9000/health
//! ```
//!
//! The application owns the listener, the process and its own routes; Capsid brings its
//! router (`/ops/mcp`, `/health`, the console when an owner is configured, ...). Every tool
//! call still goes through `Service::call_tool`, the one enforcement point, whichever router
//! carries it. The example mints an agent key at start and prints it, so an MCP client can
//! call `/ops/mcp` with it at once.

use std::sync::Arc;

use anyhow::Context;
use axum::Router;
use axum::routing::get;
use capsid_core::caller::Caller;
use capsid_core::ports::Store;
use capsid_core::service::{NoConfirmer, Service, ServiceConfig};
use capsid_http::system::{OsEntropy, SystemClock};
use capsid_http::{AppState, BuildInfo, HttpConfig, ServeLimits};
use capsid_store_sqlite::SqliteStore;
use serde_json::json;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1);
    let db = args.next().unwrap_or_else(|| "embedded.db".to_owned());
    let listen = args.next().unwrap_or_else(|| "127.0.0.1:9000".to_owned());

    // The store: one SQLite file, migrated to the current schema.
    let store = SqliteStore::open(&format!("sqlite://{db}"))
        .await
        .with_context(|| format!("opening {db}"))?;
    store.migrate().await.context("migrating the store")?;
    let store: Arc<dyn Store> = Arc::new(store);

    // The service: the core's rules over the store, the system's clock and entropy. A real
    // deployment reads the signing secret from its own configuration (it seals job bodies
    // and policies); never hard-code one.
    let secret = std::env::var("CAPSID_SIGNING_SECRET").unwrap_or_else(|_| {
        let mut bytes = [0u8; 32];
        capsid_core::ids::Entropy::fill(&OsEntropy, &mut bytes);
        bytes.iter().map(|b| format!("{b:02x}")).collect()
    });
    let config = ServiceConfig {
        signing_secret: Some(secret),
        operator_keys: Vec::new(),
        ..Default::default()
    };
    let service = Service::new(store, Arc::new(SystemClock), Arc::new(OsEntropy), config);

    // An agent for the demo, minted through the same tool the CLI uses.
    let minted = service
        .call_tool(
            &Caller::cli("embed-example"),
            "agents",
            json!({"action": "mint", "name": "embedded-demo", "kind": "driver",
                   "namespaces": ["demo"], "grants": ["read", "write"]}),
            &NoConfirmer,
        )
        .await
        .context("minting the demo agent")?;
    if let Some(key) = minted["key"].as_str() {
        println!("agent key (shown once): {key}");
    }

    let listener = tokio::net::TcpListener::bind(&listen)
        .await
        .with_context(|| format!("binding {listen}"))?;
    let public_url = format!("http://{}", listener.local_addr()?);
    let http = HttpConfig {
        public_url: public_url.clone(),
        mcp_sessions: false,
        build: BuildInfo {
            sha: "embedded".into(),
            dirty: false,
            built_at: "embedded".into(),
            version: env!("CARGO_PKG_VERSION").into(),
        },
        oauth_missing: vec!["an owner login (this example configures none)".into()],
        owner: None,
        trusted_proxies: Vec::new(),
    };
    let capsid = capsid_http::router(AppState::new(service, http));

    // The host application's own routes, merged with Capsid's.
    let app = Router::new()
        .route(
            "/hello",
            get(|| async { "hello from the host application\n" }),
        )
        .merge(capsid);
    println!("serving on {public_url} (MCP at {public_url}/ops/mcp)");
    // Capsid's accept loop: header and body deadlines and a connection bound, for the host
    // application's routes too. `axum::serve` works as well, without those bounds.
    capsid_http::serve(listener, app, ServeLimits::default(), async {
        let _ = tokio::signal::ctrl_c().await;
    })
    .await;
    Ok(())
}
