//! The HTTP baseline `capsid-load` prints beside the server's figures: a trivial axum handler on
//! the same runtime that answers MCP's JSON-RPC (`initialize`, notifications, `tools/call`) with
//! fixed JSON and no work behind it, driven by the same rmcp client. Its rate is the transport's
//! ceiling on this machine: what the client, HTTP and JSON cost before Capsid does anything.

use axum::Json;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use serde_json::{Value, json};

async fn answer(Json(request): Json<Value>) -> Response {
    let Some(id) = request.get("id").cloned() else {
        // A notification: accepted, no body.
        return StatusCode::ACCEPTED.into_response();
    };
    let result = match request.get("method").and_then(Value::as_str) {
        Some("initialize") => json!({
            "protocolVersion": request
                .pointer("/params/protocolVersion")
                .cloned()
                .unwrap_or_else(|| json!("2025-11-25")),
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "baseline", "version": "0"},
        }),
        Some("tools/call") => json!({
            "content": [{"type": "text", "text": "{\"ok\":true}"}],
            "isError": false,
        }),
        _ => json!({}),
    };
    Json(json!({"jsonrpc": "2.0", "id": id, "result": result})).into_response()
}

/// A running baseline server.
pub struct BaselineServer {
    /// Its MCP URL (`http://127.0.0.1:<port>/ops/mcp`).
    pub url: String,
    task: tokio::task::JoinHandle<()>,
}

impl BaselineServer {
    /// Starts it on an ephemeral loopback port.
    pub async fn start() -> anyhow::Result<BaselineServer> {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let url = format!("http://{}/ops/mcp", listener.local_addr()?);
        let app = axum::Router::new().route("/ops/mcp", post(answer));
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Ok(BaselineServer { url, task })
    }

    /// Stops it.
    pub fn stop(self) {
        self.task.abort();
    }
}
