//! A small client of Chromium's DevTools protocol for the console tests: headless Chromium with
//! a debugging port on loopback, attached to its page (and to more tabs of the same browser,
//! sharing its cookies), evaluating expressions in it, emulating a viewport and a colour
//! scheme, and waiting (bounded) for the page to reach a state, so a real browser fills and
//! submits the console's forms with its own cookies, CSRF field and Origin.

use std::path::{Path, PathBuf};
use std::time::Duration;

use futures::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream};

/// How long any one wait on the browser may take.
const PATIENCE: Duration = Duration::from_secs(60);

/// The Chromium binary: `CAPSID_CHROMIUM`, else the first of chromium, chromium-browser and
/// google-chrome on the PATH.
pub fn chromium() -> String {
    if let Ok(p) = std::env::var("CAPSID_CHROMIUM") {
        return p;
    }
    for name in ["chromium", "chromium-browser", "google-chrome"] {
        for dir in std::env::var("PATH").unwrap_or_default().split(':') {
            let p = Path::new(dir).join(name);
            if p.is_file() {
                return p.display().to_string();
            }
        }
    }
    panic!(
        "headless Chromium is required (apt-get install -y chromium; scripts/test.sh installs it)"
    );
}

/// Where the console tests keep their screenshots: `<target>/console-screenshots`.
pub fn artifacts() -> PathBuf {
    let target = std::env::var("CARGO_TARGET_DIR").map_or_else(
        |_| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target"),
        PathBuf::from,
    );
    let dir = target.join("console-screenshots");
    std::fs::create_dir_all(&dir).expect("artifact folder");
    dir
}

/// One page (tab) of the browser, attached over its own socket.
pub struct Page {
    ws: WebSocketStream<MaybeTlsStream<TcpStream>>,
    next_id: u64,
}

/// A headless Chromium showing one page (and any tabs opened with [`Chrome::open_tab`]).
pub struct Chrome {
    page: Page,
    port: u16,
    _child: tokio::process::Child,
    _profile: tempfile::TempDir,
}

impl std::ops::Deref for Chrome {
    type Target = Page;
    fn deref(&self) -> &Page {
        &self.page
    }
}

impl std::ops::DerefMut for Chrome {
    fn deref_mut(&mut self) -> &mut Page {
        &mut self.page
    }
}

async fn attach(ws_url: &str) -> Page {
    let (ws, _) = tokio_tungstenite::connect_async(ws_url)
        .await
        .expect("attach to the page");
    Page { ws, next_id: 0 }
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
    pub async fn open(binary: &str, url: &str, args: &[String]) -> Chrome {
        capsid_http::install_tls_provider();
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
        Chrome {
            page: attach(&ws_url).await,
            port,
            _child: child,
            _profile: profile,
        }
    }

    /// Opens `url` in a new tab of the same browser (the same cookies) and attaches to it.
    pub async fn open_tab(&self, url: &str) -> Page {
        let target: Value = reqwest::Client::new()
            .put(format!("http://127.0.0.1:{}/json/new?{url}", self.port))
            .send()
            .await
            .expect("a new tab")
            .json()
            .await
            .expect("the tab's description");
        let ws_url = target["webSocketDebuggerUrl"]
            .as_str()
            .expect("the tab's debugger URL");
        attach(ws_url).await
    }
}

impl Page {
    /// Calls `method`; its result, or the protocol's error.
    pub async fn call(&mut self, method: &str, params: Value) -> Result<Value, Value> {
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
    pub async fn eval(&mut self, expression: &str) -> Result<Value, Value> {
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
    pub async fn wait_for(&mut self, condition: &str, what: &str) {
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
    pub async fn text(&mut self) -> String {
        self.eval("document.body.innerText")
            .await
            .ok()
            .and_then(|v| v.as_str().map(str::to_owned))
            .unwrap_or_default()
    }

    /// A PNG of the whole page.
    pub async fn screenshot(&mut self) -> Vec<u8> {
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

    /// Emulates a `width` × `height` viewport.
    pub async fn viewport(&mut self, width: u32, height: u32) {
        self.call(
            "Emulation.setDeviceMetricsOverride",
            json!({"width": width, "height": height, "deviceScaleFactor": 1, "mobile": false}),
        )
        .await
        .expect("a viewport");
    }

    /// Emulates `prefers-color-scheme: <scheme>` (`light` or `dark`).
    pub async fn color_scheme(&mut self, scheme: &str) {
        self.call(
            "Emulation.setEmulatedMedia",
            json!({"features": [{"name": "prefers-color-scheme", "value": scheme}]}),
        )
        .await
        .expect("a colour scheme");
    }

    /// Navigates to `url`.
    pub async fn navigate(&mut self, url: &str) {
        self.call("Page.navigate", json!({"url": url}))
            .await
            .expect("navigate");
    }
}
