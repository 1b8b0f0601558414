//! The metered model door (issue 49): the Anthropic Messages API (Claude Code) and the OpenAI
//! Responses API (Codex) served to one job's agent and forwarded to the real upstream. The agent holds only a per-job token that works here and
//! only while the proxy is open; the upstream credential stays in the supervisor. Every call is
//! reserved against the job's cap before it goes out ([`capsid_core::drive::ledger`]), its
//! usage is read from the upstream's own answer as it streams through (chunk by chunk, never
//! buffered whole), and it is priced and written to the job's ledger before the answer's end
//! is passed on. What the agent prints about its cost is never read here.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderName, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use capsid_core::drive::ledger::{Account, PriceTable, Reservation, Usage, Usd, tokens_in};
use futures::StreamExt;
use serde_json::{Value, json};

/// The largest request body the proxy reads; a larger one is refused and costs nothing.
pub const REQUEST_MAX: usize = 32 * 1024 * 1024;
/// How long the upstream may take to start answering.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(15);

/// How the proxy authenticates to the upstream.
#[derive(Clone)]
pub enum UpstreamAuth {
    /// An API key, sent as `x-api-key`.
    ApiKey(String),
    /// A bearer token, sent as `authorization: Bearer`.
    Bearer(String),
    /// The agent's own login (a subscription's OAuth token), passed through as the agent sent
    /// it: the calls are still metered and capped, but the agent holds its credential, so the
    /// door takes any caller (the owner chose this by configuring no upstream key).
    Agent,
}

impl std::fmt::Debug for UpstreamAuth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            UpstreamAuth::ApiKey(_) => "ApiKey(<redacted>)",
            UpstreamAuth::Bearer(_) => "Bearer(<redacted>)",
            UpstreamAuth::Agent => "Agent",
        })
    }
}

/// One proxy's settings: one job's.
#[derive(Clone, Debug)]
pub struct ProxyConfig {
    /// The upstream's base URL (`https://api.anthropic.com`, or a fake on loopback in tests).
    pub upstream: String,
    /// The upstream credential.
    pub auth: UpstreamAuth,
    /// The token the job's agent authenticates with (as `x-api-key` or a bearer token).
    pub token: String,
    /// The price table calls are priced with.
    pub prices: PriceTable,
    /// The job's cap (`None`: no cap).
    pub cap: Option<Usd>,
    /// What the job's ledger held when the run began (earlier sessions' calls): it counts
    /// against the cap, which is the job's, not one session's.
    pub spent_before: Usd,
}

/// How a call ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CallEnd {
    /// The upstream's answer ended normally.
    Completed,
    /// The upstream answered with an error status (passed on to the agent).
    UpstreamError(u16),
    /// The stream broke before its end; what was used until then is settled.
    Broken(String),
}

/// One model call, as the ledger keeps it.
#[derive(Clone, Debug, PartialEq)]
pub struct CallRecord {
    /// The door's id for the call (`call_` and 24 hex digits), which the ledger keeps it
    /// under once however often it is sent.
    pub call_id: String,
    /// The model the upstream answered with (else the one asked for).
    pub model: String,
    /// The session the call came from (Claude Code's `metadata.user_id`), when it says.
    pub session: Option<String>,
    /// The tokens the upstream reported.
    pub usage: Usage,
    /// What they cost at the table's price.
    pub cost: Usd,
    /// Whether the table lists the model (else it was priced at the highest rates).
    pub known_price: bool,
    /// The `max_tokens` the agent asked for, and the smaller one the call went out with when
    /// the rest of the cap could not pay for it.
    pub max_tokens_cut: Option<(u64, u64)>,
    /// When the call reached the proxy.
    pub started: SystemTime,
    /// When its answer ended.
    pub ended: SystemTime,
    /// How it ended.
    pub end: CallEnd,
}

/// A call the cap refused (the job then blocks with a budget gate).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CapHit {
    /// What the job's settled calls cost.
    pub spent: Usd,
    /// The job's cap.
    pub cap: Usd,
    /// The least the refused call could have cost.
    pub needs: Usd,
}

/// Where settled calls are written before the answer's end is passed on (the server's ledger;
/// an in-memory list in tests). An error is logged: the call is still counted here.
pub trait LedgerSink: Send + Sync {
    /// Records one settled call.
    fn record(&self, call: &CallRecord) -> futures::future::BoxFuture<'_, Result<(), String>>;
}

struct Shared {
    config: ProxyConfig,
    http: reqwest::Client,
    account: Mutex<Account>,
    calls: Mutex<Vec<CallRecord>>,
    cap_hits: Mutex<Vec<CapHit>>,
    refused: Mutex<u64>,
    open: AtomicBool,
    sink: Option<Arc<dyn LedgerSink>>,
}

/// One job's model door. Cloning shares it.
#[derive(Clone)]
pub struct ModelProxy {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for ModelProxy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ModelProxy")
            .field("upstream", &self.shared.config.upstream)
            .field("open", &self.shared.open.load(Ordering::SeqCst))
            .finish()
    }
}

/// Why a proxy could not be built.
#[derive(Debug, thiserror::Error)]
pub enum ProxyError {
    /// The upstream URL is not http(s).
    #[error("the model upstream must be an http(s) URL, got {0:?}")]
    BadUpstream(String),
    /// The token is empty.
    #[error("the job's model token is empty")]
    EmptyToken,
    /// The HTTP client did not build.
    #[error("building the model upstream's client: {0}")]
    Client(String),
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl ModelProxy {
    /// A proxy for one job, writing settled calls to `sink` when given.
    pub fn new(
        config: ProxyConfig,
        sink: Option<Arc<dyn LedgerSink>>,
    ) -> Result<ModelProxy, ProxyError> {
        let upstream = config.upstream.trim().trim_end_matches('/').to_owned();
        if !(upstream.starts_with("https://") || upstream.starts_with("http://")) {
            return Err(ProxyError::BadUpstream(upstream));
        }
        if config.token.trim().is_empty() && !matches!(config.auth, UpstreamAuth::Agent) {
            return Err(ProxyError::EmptyToken);
        }
        let _ = rustls::crypto::ring::default_provider().install_default();
        let http = reqwest::Client::builder()
            .connect_timeout(CONNECT_TIMEOUT)
            // A redirect could carry the credential to another host: none is followed.
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|e| ProxyError::Client(e.to_string()))?;
        let account = Account {
            cap: config.cap,
            spent: config.spent_before,
            ..Account::default()
        };
        Ok(ModelProxy {
            shared: Arc::new(Shared {
                config: ProxyConfig { upstream, ..config },
                http,
                account: Mutex::new(account),
                calls: Mutex::new(Vec::new()),
                cap_hits: Mutex::new(Vec::new()),
                refused: Mutex::new(0),
                open: AtomicBool::new(true),
                sink,
            }),
        })
    }

    /// The routes the agent reaches: `POST /v1/messages` and `POST /v1/responses` (metered)
    /// and `POST /v1/messages/count_tokens` (free, passed through).
    pub fn router(&self) -> Router {
        Router::new()
            .route("/v1/messages", post(messages))
            .route("/v1/responses", post(responses))
            .route("/v1/messages/count_tokens", post(count_tokens))
            .fallback(not_served)
            .with_state(self.clone())
    }

    /// Serves the proxy on `listener` until the task is dropped.
    pub async fn serve_tcp(self, listener: tokio::net::TcpListener) -> std::io::Result<()> {
        axum::serve(listener, self.router()).await
    }

    /// Serves the proxy on a Unix socket (the box's model door) until the task is dropped.
    pub async fn serve_unix(self, listener: tokio::net::UnixListener) -> std::io::Result<()> {
        axum::serve(listener, self.router()).await
    }

    /// What the job's settled calls cost.
    pub fn spent(&self) -> Usd {
        lock(&self.shared.account).spent
    }

    /// The job's account now.
    pub fn account(&self) -> Account {
        *lock(&self.shared.account)
    }

    /// Every settled call, in the order they ended.
    pub fn calls(&self) -> Vec<CallRecord> {
        lock(&self.shared.calls).clone()
    }

    /// The calls the cap refused.
    pub fn cap_hits(&self) -> Vec<CapHit> {
        lock(&self.shared.cap_hits).clone()
    }

    /// How many requests were refused for any reason (token, shape, cap, closed).
    pub fn refused(&self) -> u64 {
        *lock(&self.shared.refused)
    }

    /// Raises the job's cap (a person answered the budget gate).
    pub fn raise(&self, cap: Usd) {
        lock(&self.shared.account).raise(cap);
    }

    /// Closes the door: the run ended, and every later call is refused.
    pub fn close(&self) {
        self.shared.open.store(false, Ordering::SeqCst);
    }
}

/// Which vendor's API a request speaks: it decides the paths, the fields read, how usage
/// arrives and the shape of every refusal (each CLI reads its own vendor's errors).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Wire {
    /// Anthropic's `POST /v1/messages` (Claude Code).
    Messages,
    /// OpenAI's `POST /v1/responses` (Codex).
    Responses,
}

/// Why the door refuses a call, which each wire spells its own way.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Refusal {
    /// The body is not a request this door takes.
    Invalid,
    /// The caller does not hold the job's token.
    Token,
    /// The run has ended.
    Closed,
    /// The body is over [`REQUEST_MAX`].
    TooLarge,
    /// The job's cap cannot pay for the call.
    Budget,
    /// The door does not serve that path.
    NotServed,
    /// The upstream could not be reached.
    Upstream,
}

impl Wire {
    /// The refusal as this vendor's API answers it: Anthropic's
    /// `{"type": "error", "error": {"type", "message"}}` or OpenAI's
    /// `{"error": {"message", "type", "param", "code"}}`. A spent budget is OpenAI's own
    /// `insufficient_quota` (429), which its clients take as final rather than retry.
    fn error(self, why: Refusal, status: StatusCode, message: &str) -> Response {
        let (status, body) = match self {
            Wire::Messages => {
                let kind = match why {
                    Refusal::Invalid | Refusal::Budget => "invalid_request_error",
                    Refusal::Token => "authentication_error",
                    Refusal::Closed => "permission_error",
                    Refusal::TooLarge => "request_too_large",
                    Refusal::NotServed => "not_found_error",
                    Refusal::Upstream => "api_error",
                };
                (
                    status,
                    json!({"type": "error", "error": {"type": kind, "message": message}}),
                )
            }
            Wire::Responses => {
                let (status, kind, code) = match why {
                    Refusal::Budget => (
                        StatusCode::TOO_MANY_REQUESTS,
                        "insufficient_quota",
                        Some("insufficient_quota"),
                    ),
                    Refusal::Token => (status, "invalid_request_error", Some("invalid_api_key")),
                    Refusal::Upstream => (status, "server_error", None),
                    Refusal::TooLarge => {
                        (status, "invalid_request_error", Some("request_too_large"))
                    }
                    Refusal::Invalid | Refusal::Closed | Refusal::NotServed => {
                        (status, "invalid_request_error", None)
                    }
                };
                (
                    status,
                    json!({"error": {"message": message, "type": kind, "param": null, "code": code}}),
                )
            }
        };
        (
            status,
            [(http::header::CONTENT_TYPE, "application/json")],
            body.to_string(),
        )
            .into_response()
    }

    /// The upstream path the call goes to.
    fn path(self) -> &'static str {
        match self {
            Wire::Messages => "/v1/messages",
            Wire::Responses => "/v1/responses",
        }
    }

    /// The request field that bounds the answer's length.
    fn max_field(self) -> &'static str {
        match self {
            Wire::Messages => "max_tokens",
            Wire::Responses => "max_output_tokens",
        }
    }
}

/// The output a Responses call may ask for when it names no `max_output_tokens`: the door
/// reserves that much and sends the call with the bound it reserved (Codex names none).
pub const RESPONSES_DEFAULT_MAX_OUTPUT: u64 = 32_768;

impl ModelProxy {
    fn refuse(&self, wire: Wire, why: Refusal, status: StatusCode, message: &str) -> Response {
        *lock(&self.shared.refused) += 1;
        wire.error(why, status, message)
    }

    /// Whether the request carries the job's token (`x-api-key` or a bearer token), compared
    /// in constant time.
    fn authorized(&self, headers: &HeaderMap) -> bool {
        use subtle::ConstantTimeEq;
        if matches!(self.shared.config.auth, UpstreamAuth::Agent) {
            return true;
        }
        let want = self.shared.config.token.as_bytes();
        let key = headers.get("x-api-key").map(HeaderValue::as_bytes);
        let bearer = headers
            .get(http::header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "))
            .map(str::as_bytes);
        [key, bearer]
            .into_iter()
            .flatten()
            .any(|got| bool::from(got.ct_eq(want)))
    }

    /// The input tokens of a Messages request as the upstream counts them
    /// (`/v1/messages/count_tokens`, which costs nothing), or `None` when it does not answer.
    async fn count_input(&self, headers: &HeaderMap, doc: &Value) -> Option<u64> {
        let mut ask = serde_json::Map::new();
        for key in [
            "model",
            "messages",
            "system",
            "tools",
            "tool_choice",
            "thinking",
        ] {
            if let Some(v) = doc.get(key) {
                ask.insert(key.to_owned(), v.clone());
            }
        }
        let resp = self
            .shared
            .http
            .post(format!(
                "{}/v1/messages/count_tokens",
                self.shared.config.upstream
            ))
            .headers(upstream_headers(headers, &self.shared.config.auth))
            .json(&Value::Object(ask))
            .timeout(CONNECT_TIMEOUT)
            .send()
            .await
            .ok()?;
        if !resp.status().is_success() {
            return None;
        }
        let v: Value = resp.json().await.ok()?;
        v["input_tokens"].as_u64()
    }

    /// Sends `body` to the upstream's `path` (with the agent's query string and the API's own
    /// headers, under the upstream credential).
    async fn forward(
        &self,
        path: &str,
        query: &str,
        headers: &HeaderMap,
        body: Bytes,
    ) -> reqwest::Result<reqwest::Response> {
        let url = with_query(&format!("{}{path}", self.shared.config.upstream), query);
        self.shared
            .http
            .post(url)
            .headers(upstream_headers(headers, &self.shared.config.auth))
            .body(body)
            .send()
            .await
    }

    /// The checks every request passes before anything is read or forwarded: the refusal to
    /// answer with, when one fails.
    fn admit(&self, wire: Wire, headers: &HeaderMap) -> Option<Response> {
        if !self.shared.open.load(Ordering::SeqCst) {
            return Some(self.refuse(
                wire,
                Refusal::Closed,
                StatusCode::FORBIDDEN,
                "capsid: this job's run has ended; its model door is closed",
            ));
        }
        if !self.authorized(headers) {
            return Some(self.refuse(
                wire,
                Refusal::Token,
                StatusCode::UNAUTHORIZED,
                "capsid: this door takes only the job's own model token",
            ));
        }
        None
    }
}

async fn not_served(req: Request) -> Response {
    let wire = if req.uri().path().starts_with("/v1/responses") {
        Wire::Responses
    } else {
        Wire::Messages
    };
    wire.error(
        Refusal::NotServed,
        StatusCode::NOT_FOUND,
        &format!(
            "capsid's model door serves POST /v1/messages, /v1/messages/count_tokens and /v1/responses, not {} {}",
            req.method(),
            req.uri().path()
        ),
    )
}

/// Reads the request body, bounded.
async fn read_body(
    proxy: &ModelProxy,
    wire: Wire,
    req: Request,
) -> Result<(HeaderMap, String, Bytes), Box<Response>> {
    let (parts, body) = req.into_parts();
    let query = parts.uri.query().map(str::to_owned).unwrap_or_default();
    match axum::body::to_bytes(body, REQUEST_MAX).await {
        Ok(b) => Ok((parts.headers, query, b)),
        Err(_) => Err(Box::new(proxy.refuse(
            wire,
            Refusal::TooLarge,
            StatusCode::PAYLOAD_TOO_LARGE,
            &format!("capsid: a model request may be at most {REQUEST_MAX} bytes"),
        ))),
    }
}

/// The headers passed upstream: the APIs' own (`anthropic-version`, `anthropic-beta`,
/// `openai-*`, Codex's `originator`, session and `x-codex-*` headers, the content type), never the agent's
/// credential or hop-by-hop headers.
fn upstream_headers(incoming: &HeaderMap, auth: &UpstreamAuth) -> HeaderMap {
    let mut out = HeaderMap::new();
    for (name, value) in incoming {
        let n = name.as_str();
        if n.starts_with("anthropic-")
            || n.starts_with("openai-")
            || n == "content-type"
            || n == "user-agent"
            || n == "originator"
            || n == "session_id"
            || n == "session-id"
            || n == "thread-id"
            || n == "conversation_id"
            || n.starts_with("x-codex-")
            || n.starts_with("x-stainless-")
        {
            out.append(name.clone(), value.clone());
        }
    }
    let (name, value) = match auth {
        UpstreamAuth::ApiKey(k) => (HeaderName::from_static("x-api-key"), k.clone()),
        UpstreamAuth::Bearer(t) => (http::header::AUTHORIZATION, format!("Bearer {t}")),
        UpstreamAuth::Agent => {
            for name in [
                http::header::AUTHORIZATION,
                HeaderName::from_static("x-api-key"),
            ] {
                if let Some(v) = incoming.get(&name) {
                    out.insert(name, v.clone());
                }
            }
            return out;
        }
    };
    if let Ok(mut v) = HeaderValue::from_str(&value) {
        v.set_sensitive(true);
        out.insert(name, v);
    }
    out
}

/// The headers passed back to the agent: the upstream's, less hop-by-hop ones.
fn downstream_headers(upstream: &reqwest::header::HeaderMap) -> HeaderMap {
    let mut out = HeaderMap::new();
    for (name, value) in upstream {
        let n = name.as_str();
        if matches!(
            n,
            "content-length"
                | "transfer-encoding"
                | "connection"
                | "keep-alive"
                | "content-encoding"
        ) {
            continue;
        }
        out.append(name.clone(), value.clone());
    }
    out
}

async fn count_tokens(State(proxy): State<ModelProxy>, req: Request) -> Response {
    if let Some(r) = proxy.admit(Wire::Messages, req.headers()) {
        return r;
    }
    let (headers, query, body) = match read_body(&proxy, Wire::Messages, req).await {
        Ok(x) => x,
        Err(r) => return *r,
    };
    match proxy
        .forward("/v1/messages/count_tokens", &query, &headers, body)
        .await
    {
        Ok(resp) => {
            let status =
                StatusCode::from_u16(resp.status().as_u16()).unwrap_or(StatusCode::BAD_GATEWAY);
            let h = downstream_headers(resp.headers());
            let mut out = Response::new(Body::from_stream(resp.bytes_stream()));
            *out.status_mut() = status;
            *out.headers_mut() = h;
            out
        }
        Err(e) => upstream_unreachable(Wire::Messages, &e),
    }
}

fn with_query(url: &str, query: &str) -> String {
    if query.is_empty() {
        url.to_owned()
    } else {
        format!("{url}?{query}")
    }
}

fn upstream_unreachable(wire: Wire, e: &reqwest::Error) -> Response {
    tracing::warn!(error = %e, "the model upstream could not be reached");
    wire.error(
        Refusal::Upstream,
        StatusCode::BAD_GATEWAY,
        "capsid: the model upstream could not be reached",
    )
}

/// The session a request names: Claude Code's `metadata.user_id` is a JSON text whose
/// `session_id` it carries (older versions: `..._session_<id>`); Codex sends a `session-id`
/// header (`session_id` before 0.171) and the same id as `prompt_cache_key`.
fn session_of(wire: Wire, headers: &HeaderMap, body: &Value) -> Option<String> {
    if wire == Wire::Responses {
        // Codex names its session in a header and as the prompt cache key.
        return headers
            .get("session-id")
            .or_else(|| headers.get("session_id"))
            .or_else(|| headers.get("conversation_id"))
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
            .or_else(|| body["prompt_cache_key"].as_str().map(str::to_owned));
    }
    let user = body["metadata"]["user_id"].as_str()?;
    if let Ok(v) = serde_json::from_str::<Value>(user)
        && let Some(s) = v["session_id"].as_str()
    {
        return Some(s.to_owned());
    }
    user.rsplit_once("_session_").map(|(_, s)| s.to_owned())
}

async fn messages(State(proxy): State<ModelProxy>, req: Request) -> Response {
    metered_call(proxy, Wire::Messages, req).await
}

async fn responses(State(proxy): State<ModelProxy>, req: Request) -> Response {
    metered_call(proxy, Wire::Responses, req).await
}

/// One metered call of either wire: admitted, read (bounded), reserved against the cap (the
/// call that does not fit is refused before the upstream sees it), sent with the output bound
/// the reservation pays for, and passed back chunk by chunk while its usage is read.
async fn metered_call(proxy: ModelProxy, wire: Wire, req: Request) -> Response {
    let started = SystemTime::now();
    if let Some(r) = proxy.admit(wire, req.headers()) {
        return r;
    }
    let (headers, query, body) = match read_body(&proxy, wire, req).await {
        Ok(x) => x,
        Err(r) => return *r,
    };
    let invalid =
        |message: &str| proxy.refuse(wire, Refusal::Invalid, StatusCode::BAD_REQUEST, message);
    let mut doc: Value = match serde_json::from_slice(&body) {
        Ok(v @ Value::Object(_)) => v,
        _ => return invalid("capsid: a model request's body must be a JSON object"),
    };
    let Some(model) = doc["model"].as_str().map(str::to_owned) else {
        return invalid("capsid: model: a model request must name its model");
    };
    let field = wire.max_field();
    let asked = match (wire, doc.get(field)) {
        (_, Some(v)) => match v.as_u64().filter(|n| *n > 0) {
            Some(n) => n,
            None => {
                return invalid(&format!(
                    "capsid: {field}: must be a positive integer (how many tokens the answer may have)"
                ));
            }
        },
        (Wire::Messages, None) => {
            return invalid(
                "capsid: max_tokens: a model request must say how many tokens it may answer with (a positive integer)",
            );
        }
        (Wire::Responses, None) => RESPONSES_DEFAULT_MAX_OUTPUT,
    };
    let named = doc.get(field).is_some();
    let priced = proxy.shared.config.prices.price(&model);
    let estimate = tokens_in(body.len() as u64);
    let mut reservation = lock(&proxy.shared.account).reserve(&priced.price, estimate, asked);
    if wire == Wire::Messages && matches!(reservation, Reservation::Refuse { .. }) {
        // Near the cap the estimate is not good enough: the upstream counts the input.
        if let Some(counted) = proxy.count_input(&headers, &doc).await {
            reservation = lock(&proxy.shared.account).reserve(&priced.price, counted, asked);
        }
    }
    let (max_tokens, held) = match reservation {
        Reservation::Forward { max_tokens, held } => (max_tokens, held),
        Reservation::Refuse { needs, .. } => {
            let account = proxy.account();
            let cap = account.cap.unwrap_or(Usd::ZERO);
            lock(&proxy.shared.cap_hits).push(CapHit {
                spent: account.spent,
                cap,
                needs,
            });
            return proxy.refuse(
                wire,
                Refusal::Budget,
                StatusCode::BAD_REQUEST,
                &format!(
                    "capsid: this job's model budget is spent: {} of {} used, and this call needs up to {}. The job now waits for a person to raise its cap.",
                    account.spent, cap, needs
                ),
            );
        }
    };
    let thinking = doc["thinking"]["budget_tokens"].as_u64();
    let body = if max_tokens < asked || !named {
        if wire == Wire::Messages && thinking.is_some_and(|b| b >= max_tokens) {
            lock(&proxy.shared.account).settle(held, Usd::ZERO);
            return invalid(&format!(
                "capsid: this job's model budget has room for {max_tokens} output tokens, fewer than the call's thinking budget; the job now waits for a person to raise its cap"
            ));
        }
        // The call goes out bounded by what was reserved for it.
        doc[field] = json!(max_tokens);
        Bytes::from(doc.to_string())
    } else {
        body
    };
    let call = Call {
        proxy: proxy.clone(),
        id: call_id(),
        model,
        session: session_of(wire, &headers, &doc),
        known_price: priced.known,
        max_tokens_cut: (max_tokens < asked).then_some((asked, max_tokens)),
        held,
        started,
        settled: false,
    };
    let resp = match proxy.forward(wire.path(), &query, &headers, body).await {
        Ok(r) => r,
        Err(e) => {
            call.settle_now(Usage::default(), CallEnd::Broken(e.to_string()))
                .await;
            return upstream_unreachable(wire, &e);
        }
    };
    let status = resp.status().as_u16();
    let out_headers = downstream_headers(resp.headers());
    let streamed = resp
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|t| t.starts_with("text/event-stream"));
    let meter = Meter {
        wire,
        sse: streamed,
        line: Vec::new(),
        json: Vec::new(),
        usage: Usage::default(),
        model: None,
    };
    let end = if status < 400 {
        CallEnd::Completed
    } else {
        CallEnd::UpstreamError(status)
    };
    let stream = metered(resp.bytes_stream(), meter, call, end);
    let mut out = Response::new(Body::from_stream(stream));
    *out.status_mut() = StatusCode::from_u16(status).unwrap_or(StatusCode::BAD_GATEWAY);
    *out.headers_mut() = out_headers;
    out
}

/// A fresh call id: `call_` and 24 random hex digits.
fn call_id() -> String {
    let mut bytes = [0u8; 12];
    rand::fill(&mut bytes[..]);
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    format!("call_{hex}")
}

/// One call in flight: settled exactly once, when its answer ends or breaks (or, if the agent
/// hangs up first, when it is dropped).
struct Call {
    proxy: ModelProxy,
    id: String,
    model: String,
    session: Option<String>,
    known_price: bool,
    max_tokens_cut: Option<(u64, u64)>,
    held: Usd,
    started: SystemTime,
    settled: bool,
}

impl Call {
    /// Prices `usage`, releases the hold, counts the cost, and records the call (to the sink
    /// first, then in memory).
    fn record(&mut self, usage: Usage, model: Option<String>, end: CallEnd) -> CallRecord {
        self.settled = true;
        let model = model.unwrap_or_else(|| self.model.clone());
        let priced = self.proxy.shared.config.prices.price(&model);
        let cost = priced.price.cost(&usage);
        lock(&self.proxy.shared.account).settle(self.held, cost);
        let record = CallRecord {
            call_id: self.id.clone(),
            known_price: priced.known && self.known_price,
            model,
            session: self.session.clone(),
            usage,
            cost,
            max_tokens_cut: self.max_tokens_cut,
            started: self.started,
            ended: SystemTime::now(),
            end,
        };
        lock(&self.proxy.shared.calls).push(record.clone());
        record
    }

    async fn settle(&mut self, usage: Usage, model: Option<String>, end: CallEnd) {
        let record = self.record(usage, model, end);
        if let Some(sink) = &self.proxy.shared.sink
            && let Err(e) = sink.record(&record).await
        {
            tracing::warn!(error = %e, "a model call's ledger row could not be written");
        }
    }

    async fn settle_now(mut self, usage: Usage, end: CallEnd) {
        self.settle(usage, None, end).await;
    }
}

impl Drop for Call {
    fn drop(&mut self) {
        if !self.settled {
            // The agent hung up mid-answer: the upstream may go on charging for what it had
            // begun, so the whole hold is counted (never less than was used).
            let held = self.held;
            self.settled = true;
            lock(&self.proxy.shared.account).settle(held, held);
            lock(&self.proxy.shared.calls).push(CallRecord {
                call_id: self.id.clone(),
                model: self.model.clone(),
                session: self.session.clone(),
                usage: Usage::default(),
                cost: held,
                known_price: self.known_price,
                max_tokens_cut: self.max_tokens_cut,
                started: self.started,
                ended: SystemTime::now(),
                end: CallEnd::Broken(
                    "the agent hung up before the answer ended; its whole hold is counted"
                        .to_owned(),
                ),
            });
        }
    }
}

/// Reads usage from the answer as it passes: server-sent events line by line, or a whole JSON
/// answer (bounded) when the call was not streamed.
struct Meter {
    wire: Wire,
    sse: bool,
    line: Vec<u8>,
    json: Vec<u8>,
    usage: Usage,
    model: Option<String>,
}

/// The most of an unstreamed answer kept for reading its usage.
const JSON_MAX: usize = 4 * 1024 * 1024;
/// The longest event line kept; a longer one is skipped (it is content, not usage).
const LINE_MAX: usize = 1024 * 1024;

impl Meter {
    /// Feeds a chunk; true when it holds the answer's last event (`message_stop`,
    /// `response.completed`).
    fn feed(&mut self, chunk: &[u8]) -> bool {
        if !self.sse {
            if self.json.len() + chunk.len() <= JSON_MAX {
                self.json.extend_from_slice(chunk);
            }
            return false;
        }
        let mut stop = false;
        for &b in chunk {
            if b == b'\n' {
                let line = std::mem::take(&mut self.line);
                stop |= self.event_line(&line);
            } else if self.line.len() < LINE_MAX {
                self.line.push(b);
            }
        }
        stop
    }

    fn event_line(&mut self, line: &[u8]) -> bool {
        let Some(data) = line.strip_prefix(b"data:") else {
            return false;
        };
        let Ok(v) = serde_json::from_slice::<Value>(data) else {
            return false;
        };
        if self.wire == Wire::Responses {
            return self.responses_event(&v);
        }
        match v["type"].as_str() {
            Some("message_start") => {
                let m = &v["message"];
                if let Some(model) = m["model"].as_str() {
                    self.model = Some(model.to_owned());
                }
                self.absorb(&m["usage"]);
                false
            }
            Some("message_delta") => {
                self.absorb(&v["usage"]);
                false
            }
            Some("message_stop") => true,
            _ => false,
        }
    }

    /// A Responses event: the model from `response.created`; the usage, and the answer's end,
    /// from `response.completed` (or a `response.failed` or `response.incomplete`, which
    /// state what was used too).
    fn responses_event(&mut self, v: &Value) -> bool {
        let response = &v["response"];
        if let Some(model) = response["model"].as_str() {
            self.model = Some(model.to_owned());
        }
        match v["type"].as_str() {
            Some("response.completed" | "response.failed" | "response.incomplete") => {
                self.absorb_responses(&response["usage"]);
                true
            }
            _ => false,
        }
    }

    /// Takes a Responses usage object: its `input_tokens` include the cached ones
    /// (`input_tokens_details.cached_tokens`, priced as cache reads), and its `output_tokens`
    /// the reasoning ones (`output_tokens_details.reasoning_tokens`, priced as output).
    fn absorb_responses(&mut self, u: &Value) {
        let Some(input) = u["input_tokens"].as_u64() else {
            return;
        };
        let cached = u["input_tokens_details"]["cached_tokens"]
            .as_u64()
            .unwrap_or(0)
            .min(input);
        self.usage.input_tokens = input - cached;
        self.usage.cache_read_tokens = cached;
        self.usage.cache_write_tokens = 0;
        self.usage.output_tokens = u["output_tokens"].as_u64().unwrap_or(0);
    }

    /// Takes the counts a usage object states (a `message_delta`'s are running totals, so a
    /// stated count replaces the earlier one).
    fn absorb(&mut self, u: &Value) {
        let take = |key: &str, slot: &mut u64| {
            if let Some(n) = u[key].as_u64() {
                *slot = n;
            }
        };
        take("input_tokens", &mut self.usage.input_tokens);
        take("output_tokens", &mut self.usage.output_tokens);
        take(
            "cache_creation_input_tokens",
            &mut self.usage.cache_write_tokens,
        );
        take("cache_read_input_tokens", &mut self.usage.cache_read_tokens);
    }

    /// The usage of an unstreamed answer, read at its end.
    fn finish(&mut self) {
        if !self.sse
            && let Ok(v) = serde_json::from_slice::<Value>(&self.json)
        {
            if let Some(model) = v["model"].as_str() {
                self.model = Some(model.to_owned());
            }
            match self.wire {
                Wire::Messages => self.absorb(&v["usage"]),
                Wire::Responses => self.absorb_responses(&v["usage"]),
            }
        }
        if self.sse && !self.line.is_empty() {
            let line = std::mem::take(&mut self.line);
            self.event_line(&line);
        }
    }
}

/// The upstream's answer passed on chunk by chunk; the call is settled (and its ledger row
/// written) before the chunk with its last event is passed on, or when the stream ends or
/// breaks.
fn metered(
    upstream: impl futures::Stream<Item = reqwest::Result<Bytes>> + Send + 'static,
    meter: Meter,
    call: Call,
    end: CallEnd,
) -> impl futures::Stream<Item = Result<Bytes, std::io::Error>> + Send + 'static {
    struct St<S> {
        upstream: std::pin::Pin<Box<S>>,
        meter: Meter,
        call: Option<Call>,
        end: CallEnd,
    }
    let st = St {
        upstream: Box::pin(upstream),
        meter,
        call: Some(call),
        end,
    };
    futures::stream::unfold(st, |mut st| async move {
        match st.upstream.next().await {
            Some(Ok(chunk)) => {
                if st.meter.feed(&chunk)
                    && let Some(mut call) = st.call.take()
                {
                    call.settle(st.meter.usage, st.meter.model.clone(), st.end.clone())
                        .await;
                }
                Some((Ok(chunk), st))
            }
            Some(Err(e)) => {
                if let Some(mut call) = st.call.take() {
                    st.meter.finish();
                    call.settle(
                        st.meter.usage,
                        st.meter.model.clone(),
                        CallEnd::Broken(e.to_string()),
                    )
                    .await;
                }
                Some((Err(std::io::Error::other(e)), st))
            }
            None => {
                if let Some(mut call) = st.call.take() {
                    st.meter.finish();
                    call.settle(st.meter.usage, st.meter.model.clone(), st.end.clone())
                        .await;
                }
                None
            }
        }
    })
}
