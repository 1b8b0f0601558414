//! The driver's and the hooks' way to the server: one JSON-RPC `tools/call` per POST to
//! `/ops/mcp` with the agent's bearer key (stateless, so nothing is kept between calls).

use anyhow::{Context, Result, bail};
use serde_json::{Value, json};

/// A client of one server with one key.
#[derive(Clone)]
pub struct Mcp {
    http: reqwest::Client,
    url: String,
    key: String,
}

impl std::fmt::Debug for Mcp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The key never reaches a log line.
        f.debug_struct("Mcp").field("url", &self.url).finish()
    }
}

/// What a tool answered.
#[derive(Debug)]
pub enum Answer {
    /// `ok: true` (or a tool without `ok`): the result.
    Ok(Value),
    /// `ok: false`: the refusal text.
    Refused(String),
}

/// The MCP endpoint of a server URL (`http://host:port` or one already ending in `/ops/mcp`).
pub fn mcp_url(base: &str) -> String {
    let base = base.trim().trim_end_matches('/');
    if base.ends_with("/ops/mcp") {
        base.to_owned()
    } else {
        format!("{base}/ops/mcp")
    }
}

/// The server's base URL (for `/api` links) from either spelling.
pub fn base_url(url: &str) -> String {
    let url = url.trim().trim_end_matches('/');
    url.strip_suffix("/ops/mcp").unwrap_or(url).to_owned()
}

impl Mcp {
    /// A client of `url` with `key`.
    pub fn new(url: &str, key: &str) -> Result<Mcp> {
        let http = reqwest::Client::builder()
            .timeout(std::time::Duration::from_secs(60))
            .build()
            .context("building the HTTP client")?;
        Ok(Mcp {
            http,
            url: mcp_url(url),
            key: key.trim().to_owned(),
        })
    }

    /// Calls `tool` with `args`: the tool's JSON answer, a refusal, or an error for a tool
    /// error, an HTTP error or an unreachable server.
    pub async fn call(&self, tool: &str, args: Value) -> Result<Answer> {
        let body = json!({
            "jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": { "name": tool, "arguments": args },
        });
        let resp = self
            .http
            .post(&self.url)
            .bearer_auth(&self.key)
            .header("accept", "application/json, text/event-stream")
            .json(&body)
            .send()
            .await
            .with_context(|| format!("reaching {}", self.url))?;
        let status = resp.status();
        let text = resp.text().await.context("reading the server's answer")?;
        if !status.is_success() {
            bail!(
                "{} answered HTTP {status} to {tool}: {}",
                self.url,
                text.chars().take(300).collect::<String>()
            );
        }
        // A JSON body, or server-sent events whose data line holds it.
        let json_text = if text.trim_start().starts_with('{') {
            text
        } else {
            text.lines()
                .filter_map(|l| l.strip_prefix("data:"))
                .map(str::trim)
                .find(|l| l.starts_with('{'))
                .map(str::to_owned)
                .with_context(|| format!("{tool}: the server's answer is not JSON"))?
        };
        let rpc: Value = serde_json::from_str(&json_text)
            .with_context(|| format!("{tool}: the server's answer is not JSON"))?;
        if let Some(err) = rpc.get("error") {
            bail!(
                "{tool}: {}",
                err["message"].as_str().unwrap_or("JSON-RPC error")
            );
        }
        let result = &rpc["result"];
        let content = result["content"][0]["text"].as_str().unwrap_or("");
        if result["isError"].as_bool() == Some(true) {
            bail!("{tool}: {content}");
        }
        let value: Value = serde_json::from_str(content).unwrap_or_else(|_| json!(content));
        if value.get("ok").and_then(Value::as_bool) == Some(false) {
            let why = value["refusal"].as_str().unwrap_or("refused").to_owned();
            return Ok(Answer::Refused(why));
        }
        Ok(Answer::Ok(value))
    }

    /// Calls `tool` and treats a refusal as an error.
    pub async fn ok(&self, tool: &str, args: Value) -> Result<Value> {
        match self.call(tool, args).await? {
            Answer::Ok(v) => Ok(v),
            Answer::Refused(why) => bail!("{tool} refused: {why}"),
        }
    }
}
