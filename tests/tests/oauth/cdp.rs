//! A small client of Chromium's DevTools protocol for the console test: headless Chromium with
//! a debugging port on loopback, attached to its one page, evaluating expressions in it and
//! waiting (bounded) for the page to reach a state, so a real browser fills and submits the
//! console's forms with its own cookies, CSRF field and Origin.

use std::path::Path;
use std::time::Duration;

use futures::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream};

/// How long any one wait on the browser may take.
const PATIENCE: Duration = Duration::from_secs(60);

/// A headless Chromium showing one page.
pub(crate) struct Chrome {
    ws: WebSocketStream<MaybeTlsStream<TcpStream>>,
    next_id: u64,
    _child: tokio::process::Child,
    _profile: tempfile::TempDir,
}

async fn devtools_port(profile: &Path) -> u16 {
    let file = profile.join("DevToolsActivePort");
    let deadline = tokio::time::Instant::now() + PATIENCE;
    loop {
        if let Ok(text) = std::fs::read_to_string(&file)
            && let Some(port) = text.lines().next().and_then(|l| l.trim().parse().ok())
        {
            return port;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "Chromium wrote no DevToolsActivePort"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

impl Chrome {
    /// Starts `binary` headless on `url` with `args` and attaches to its page.
    pub(crate) async fn open(binary: &str, url: &str, args: &[String]) -> Chrome {
        let profile = tempfile::tempdir().expect("profile");
        let child = tokio::process::Command::new(binary)
            .args([
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-quic",
                "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--disable-dev-shm-usage",
                "--hide-scrollbars",
                "--remote-debugging-address=127.0.0.1",
                "--remote-debugging-port=0",
            ])
            .arg(format!("--user-data-dir={}", profile.path().display()))
            .args(args)
            .arg(url)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .expect("start chromium");
        let port = devtools_port(profile.path()).await;
        let deadline = tokio::time::Instant::now() + PATIENCE;
        let ws_url = loop {
            let targets: Value =
                match reqwest::get(format!("http://127.0.0.1:{port}/json/list")).await {
                    Ok(resp) => resp.json().await.unwrap_or(Value::Null),
                    Err(_) => Value::Null,
                };
            let page = targets
                .as_array()
                .into_iter()
                .flatten()
                .find(|t| t["type"] == "page")
                .and_then(|t| t["webSocketDebuggerUrl"].as_str())
                .map(str::to_owned);
            if let Some(u) = page {
                break u;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "Chromium shows no page"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        };
        let (ws, _) = tokio_tungstenite::connect_async(ws_url)
            .await
            .expect("attach to the page");
        Chrome {
            ws,
            next_id: 0,
            _child: child,
            _profile: profile,
        }
    }

    /// Calls `method`; its result, or the protocol's error.
    pub(crate) async fn call(&mut self, method: &str, params: Value) -> Result<Value, Value> {
        self.next_id += 1;
        let id = self.next_id;
        let msg = json!({"id": id, "method": method, "params": params}).to_string();
        self.ws
            .send(Message::text(msg))
            .await
            .expect("send to Chromium");
        loop {
            let frame = tokio::time::timeout(PATIENCE, self.ws.next())
                .await
                .expect("Chromium answers")
                .expect("the page stays attached")
                .expect("a frame");
            let Message::Text(text) = frame else { continue };
            let reply: Value = serde_json::from_str(text.as_str()).expect("JSON from Chromium");
            if reply["id"] != id {
                continue; // an event
            }
            return match reply.get("error") {
                Some(e) => Err(e.clone()),
                None => Ok(reply["result"].clone()),
            };
        }
    }

    /// Evaluates `expression` in the page; its value (`Err` while the page is navigating or
    /// when the expression threw).
    pub(crate) async fn eval(&mut self, expression: &str) -> Result<Value, Value> {
        let out = self
            .call(
                "Runtime.evaluate",
                json!({"expression": expression, "returnByValue": true}),
            )
            .await?;
        match out.get("exceptionDetails") {
            Some(e) => Err(e.clone()),
            None => Ok(out["result"]["value"].clone()),
        }
    }

    /// Waits until `condition` evaluates to `true` in the page.
    pub(crate) async fn wait_for(&mut self, condition: &str, what: &str) {
        let deadline = tokio::time::Instant::now() + PATIENCE;
        loop {
            if self.eval(condition).await == Ok(Value::Bool(true)) {
                return;
            }
            let shown = self
                .eval("document.title + ' ' + location.href")
                .await
                .unwrap_or_default();
            assert!(
                tokio::time::Instant::now() < deadline,
                "waited for {what}; the page shows {shown}"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// The page's visible text.
    pub(crate) async fn text(&mut self) -> String {
        self.eval("document.body.innerText")
            .await
            .ok()
            .and_then(|v| v.as_str().map(str::to_owned))
            .unwrap_or_default()
    }

    /// A PNG of the whole page.
    pub(crate) async fn screenshot(&mut self) -> Vec<u8> {
        use base64::Engine;
        let shot = self
            .call(
                "Page.captureScreenshot",
                json!({"format": "png", "captureBeyondViewport": true}),
            )
            .await
            .expect("a screenshot");
        base64::engine::general_purpose::STANDARD
            .decode(shot["data"].as_str().unwrap_or_default())
            .expect("base64 PNG")
    }
}
