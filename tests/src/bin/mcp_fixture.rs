//! The MCP conformance fixture: the tools, resources and prompts that the official
//! `@modelcontextprotocol/conformance` server scenarios expect, served on capsid's own
//! transport configuration (`capsid_http::transport_config`) so that the suite measures that
//! configuration. `scripts/mcp-conformance.sh` builds, starts and drives it.
//!
//! Usage: `mcp_fixture [--port N] [--sessions]`. It listens on 127.0.0.1 (`--port 0` picks a
//! free port), prints `LISTENING <port>` on stdout once it accepts connections, and serves MCP
//! at `/mcp`: stateless JSON responses by default, `Mcp-Session-Id` sessions with
//! `--sessions`, exactly as capsid serves them.
//!
//! With `--oauth-redirect <uri>` it serves instead the real capsid router (over a throwaway
//! SQLite store) with its authorization server, the owner signing in through a fake GitHub
//! that sends the browser straight back, and one public client registered with `<uri>`; it
//! prints `LISTENING <port>` and `CLIENT_ID <id>`. The suite's `authorization` scenarios run
//! against it.

// Sampling, logging and legacy resource subscriptions are deprecated by SEP-2577, but the
// 2025-11-25 scenarios exercise them.
#![allow(deprecated)]

#[path = "mcp_fixture/catalog.rs"]
mod catalog;
#[path = "mcp_fixture/client_requests.rs"]
mod client_requests;
#[path = "mcp_fixture/input_required.rs"]
mod input_required;
#[path = "mcp_fixture/server.rs"]
mod server;
#[path = "mcp_fixture/tools.rs"]
mod tools;

use std::io::Write;

use axum::serve::ListenerExt;
use clap::Parser;
use rmcp::transport::streamable_http_server::StreamableHttpService;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;

/// Command line of the fixture.
#[derive(Debug, Parser)]
#[command(about = "MCP conformance fixture on capsid's transport configuration")]
struct Args {
    /// Port to listen on, on 127.0.0.1; 0 picks a free one.
    #[arg(long, default_value_t = 0)]
    port: u16,
    /// Serve with `Mcp-Session-Id` sessions (capsid's session mode) instead of stateless
    /// JSON responses.
    #[arg(long)]
    sessions: bool,
    /// Serve capsid's authorization server instead, with a client registered for this
    /// redirect URI.
    #[arg(long)]
    oauth_redirect: Option<String>,
}

/// The authorization server mode.
async fn serve_oauth(redirect: &str) -> anyhow::Result<()> {
    use std::sync::Arc;

    let github = capsid_tests::fake_github_login::FakeGitHub::start("octo", 1).await;
    let dir = tempfile::tempdir()?;
    let url = format!("sqlite://{}", dir.path().join("capsid.db").display());
    let store = capsid_store_sqlite::SqliteStore::open(&url)
        .await
        .map_err(|e| anyhow::anyhow!("open the store: {e}"))?;
    store
        .migrate()
        .await
        .map_err(|e| anyhow::anyhow!("migrate the store: {e}"))?;
    let gh = github.clone();
    let server = capsid_tests::server::TestServer::start_with_owner(
        Arc::new(store),
        capsid_tests::server::ServerOptions::default(),
        move |_| Some(gh.owner_config("octo")),
    )
    .await;
    let client = capsid_core::owner::OwnerService::new(server.service.clone())
        .oauth_register(
            "conformance",
            &serde_json::json!({"client_name": "MCP conformance suite", "redirect_uris": [redirect]}),
        )
        .await
        .map_err(|e| anyhow::anyhow!("register the client: {}", e.description))?;
    let port = server.url.rsplit(':').next().unwrap_or_default().to_owned();
    let mut stdout = std::io::stdout().lock();
    writeln!(
        stdout,
        "CLIENT_ID {}",
        client["client_id"].as_str().unwrap_or_default()
    )?;
    writeln!(stdout, "LISTENING {port}")?;
    stdout.flush()?;
    drop(stdout);
    std::future::pending::<()>().await;
    Ok(())
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    if let Some(redirect) = &args.oauth_redirect {
        return serve_oauth(redirect).await;
    }
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", args.port)).await?;
    let port = listener.local_addr()?.port();
    // As capsid serves (SPEC section 5): no Nagle delay on small JSON-RPC frames.
    let listener = listener.tap_io(|tcp| {
        let _ = tcp.set_nodelay(true);
    });
    let config = capsid_http::transport_config(&format!("http://127.0.0.1:{port}"), args.sessions);
    let fixture = server::Fixture::new();
    let mcp = StreamableHttpService::new(
        move || Ok(fixture.session()),
        LocalSessionManager::default().into(),
        config,
    );
    // Behind capsid's own JSON-RPC layer, as capsid serves it.
    let app = axum::Router::new().nest_service("/mcp", capsid_http::JsonRpcGuard::new(mcp));
    let mut stdout = std::io::stdout().lock();
    writeln!(stdout, "LISTENING {port}")?;
    stdout.flush()?;
    drop(stdout);
    axum::serve(listener, app).await?;
    Ok(())
}
