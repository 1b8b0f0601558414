//! Operations, end to end over HTTP: `/metrics` read by a Prometheus text parser (the agents'
//! figures and the Grafana dashboard over them included), and the faults a server survives
//! (Postgres restarted under load, an exhausted pool, a full SQLite database, corrupt
//! settings) without a 500, answering 503 with `Retry-After` meanwhile.

mod agent_metrics;
mod faults;
mod metrics;
mod pg_restart;

use std::collections::HashMap;

use capsid_tests::e2e_cases;

/// A GET with an optional bearer key and `Accept`: (status, lower-cased headers, body).
pub(crate) async fn http_get(
    url: &str,
    key: Option<&str>,
    accept: Option<&str>,
) -> (u16, HashMap<String, String>, String) {
    let mut req = reqwest::Client::new().get(url);
    if let Some(k) = key {
        req = req.bearer_auth(k);
    }
    if let Some(a) = accept {
        req = req.header("accept", a);
    }
    let resp = req
        .send()
        .await
        .unwrap_or_else(|e| panic!("GET {url}: {e}"));
    let status = resp.status().as_u16();
    let headers = resp
        .headers()
        .iter()
        .map(|(k, v)| (k.as_str().to_owned(), v.to_str().unwrap_or("").to_owned()))
        .collect();
    let body = resp.text().await.unwrap_or_default();
    (status, headers, body)
}

/// A stateless `tools/call` POST: (status, lower-cased headers, the JSON body or its text).
pub(crate) async fn tool_call(
    url: &str,
    key: &str,
    tool: &str,
    args: serde_json::Value,
) -> (u16, HashMap<String, String>, serde_json::Value) {
    let body = serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                                  "params": {"name": tool, "arguments": args}});
    let resp = reqwest::Client::new()
        .post(url)
        .bearer_auth(key)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2025-11-25")
        .body(body.to_string())
        .send()
        .await;
    let resp = match resp {
        Ok(r) => r,
        Err(e) => return (0, HashMap::new(), serde_json::Value::String(e.to_string())),
    };
    let status = resp.status().as_u16();
    let headers = resp
        .headers()
        .iter()
        .map(|(k, v)| (k.as_str().to_owned(), v.to_str().unwrap_or("").to_owned()))
        .collect();
    let text = resp.text().await.unwrap_or_default();
    let value = serde_json::from_str(&text).unwrap_or(serde_json::Value::String(text));
    (status, headers, value)
}

use agent_metrics::{
    metrics_count_agents_questions_checkpoints_and_runs,
    the_agents_dashboard_queries_only_served_metrics,
};
use faults::corrupt_settings_fail_closed;
use metrics::metrics_need_a_read_key_and_serve_every_family;

e2e_cases!(capsid_tests::server::ServerOptions::default();
    metrics_need_a_read_key_and_serve_every_family,
    metrics_count_agents_questions_checkpoints_and_runs,
    the_agents_dashboard_queries_only_served_metrics,
    corrupt_settings_fail_closed,
);
