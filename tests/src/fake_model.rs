//! A fake Anthropic Messages API for the real `capsid-model` adapter: a small axum app on a
//! loopback port that checks the `x-api-key` header against its key (a wrong or missing key
//! is 401 in the API's error shape), answers `POST /v1/messages` from a queue of scripted
//! replies and `GET /v1/models` with one model, and records every request it received.
//! Nothing reaches the internet.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use axum::body::{Body, Bytes};
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use capsid_core::ports::ModelUsage;
use futures::StreamExt as _;
use serde_json::{Value, json};
use tokio::sync::{oneshot, watch};

/// One request the fake received.
#[derive(Clone, Debug)]
pub struct ModelCall {
    /// `POST`, ...
    pub method: String,
    /// `/v1/messages`, ...
    pub path: String,
    /// Header names (lower case) and values, in arrival order.
    pub headers: Vec<(String, String)>,
    /// The body as JSON (`Value::Null` when it was not JSON).
    pub body: Value,
}

impl ModelCall {
    /// The value of header `name` (lower case), if sent.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// A scripted answer.
enum Scripted {
    Text {
        text: String,
        usage: ModelUsage,
    },
    Status {
        status: u16,
        headers: Vec<(String, String)>,
        body: Value,
    },
    Oversized {
        bytes: usize,
        declared: bool,
    },
    Hang,
}

#[derive(Default)]
struct State {
    queue: VecDeque<Scripted>,
    calls: Vec<ModelCall>,
}

struct Shared {
    key: String,
    state: Mutex<State>,
    streamed: AtomicUsize,
    closing: watch::Receiver<bool>,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// A running fake model API.
pub struct FakeModel {
    /// `http://127.0.0.1:<port>`, passed as the adapter's base URL.
    pub url: String,
    shared: Arc<Shared>,
    stop: Option<oneshot::Sender<()>>,
    closing: watch::Sender<bool>,
}

/// The API's error body: `{"type":"error","error":{"type":kind,"message":message}}`.
pub fn error_json(kind: &str, message: &str) -> Value {
    json!({"type": "error", "error": {"type": kind, "message": message}})
}

impl FakeModel {
    /// Starts the fake on a free loopback port, accepting `key` as the only API key.
    pub async fn start(key: &str) -> FakeModel {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind the fake model API");
        let url = format!(
            "http://127.0.0.1:{}",
            listener.local_addr().expect("address").port()
        );
        let (closing, closing_rx) = watch::channel(false);
        let shared = Arc::new(Shared {
            key: key.to_owned(),
            state: Mutex::new(State::default()),
            streamed: AtomicUsize::new(0),
            closing: closing_rx,
        });
        let app = axum::Router::new()
            .fallback(handle)
            .with_state(shared.clone());
        let (stop, stopped) = oneshot::channel::<()>();
        tokio::spawn(async move {
            let _ = axum::serve(listener, app)
                .with_graceful_shutdown(async {
                    let _ = stopped.await;
                })
                .await;
        });
        FakeModel {
            url,
            shared,
            stop: Some(stop),
            closing,
        }
    }

    fn push(&self, reply: Scripted) {
        self.shared.lock().queue.push_back(reply);
    }

    /// The next completion answers `text` with `usage` (the model named as asked).
    pub fn push_text(&self, text: &str, usage: ModelUsage) {
        self.push(Scripted::Text {
            text: text.to_owned(),
            usage,
        });
    }

    /// The next completion answers `status` with `error_json` as its body.
    pub fn push_status(&self, status: u16, error_json: Value) {
        self.push_status_with(status, &[], error_json);
    }

    /// As [`FakeModel::push_status`], with extra response headers (`retry-after`, ...).
    pub fn push_status_with(&self, status: u16, headers: &[(&str, &str)], body: Value) {
        self.push(Scripted::Status {
            status,
            headers: headers
                .iter()
                .map(|(n, v)| ((*n).to_owned(), (*v).to_owned()))
                .collect(),
            body,
        });
    }

    /// The next completion answers 200 with a body of `bytes` bytes: with its length
    /// declared up front (`declared`), or streamed in 64 KiB chunks with none.
    pub fn push_oversized(&self, bytes: usize, declared: bool) {
        self.push(Scripted::Oversized { bytes, declared });
    }

    /// The next completion never answers (until the fake stops).
    pub fn push_hang(&self) {
        self.push(Scripted::Hang);
    }

    /// Every request received so far, oldest first (refused ones included).
    pub fn requests(&self) -> Vec<ModelCall> {
        self.shared.lock().calls.clone()
    }

    /// Scripted replies not yet used.
    pub fn pending(&self) -> usize {
        self.shared.lock().queue.len()
    }

    /// Bytes of streamed oversized bodies produced so far (a client that stops reading
    /// leaves this short of the body's size).
    pub fn streamed_bytes(&self) -> usize {
        self.shared.streamed.load(Ordering::SeqCst)
    }
}

impl Drop for FakeModel {
    fn drop(&mut self) {
        let _ = self.closing.send(true);
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

fn api_error(status: StatusCode, kind: &str, message: &str) -> Response {
    (status, axum::Json(error_json(kind, message))).into_response()
}

async fn handle(
    axum::extract::State(shared): axum::extract::State<Arc<Shared>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let call = ModelCall {
        method: method.to_string(),
        path: uri.path().to_owned(),
        headers: headers
            .iter()
            .map(|(n, v)| {
                (
                    n.as_str().to_owned(),
                    String::from_utf8_lossy(v.as_bytes()).into_owned(),
                )
            })
            .collect(),
        body: serde_json::from_slice(&body).unwrap_or(Value::Null),
    };
    let key_ok = call.header("x-api-key") == Some(shared.key.as_str());
    let version = call.header("anthropic-version").map(str::to_owned);
    let model = call.body["model"].as_str().unwrap_or("").to_owned();
    let routed = method == Method::POST && uri.path() == "/v1/messages";
    let listing = method == Method::GET && uri.path() == "/v1/models";
    shared.lock().calls.push(call);
    if !routed && !listing {
        return api_error(StatusCode::NOT_FOUND, "not_found_error", "Not found");
    }
    if !key_ok {
        return api_error(
            StatusCode::UNAUTHORIZED,
            "authentication_error",
            "invalid x-api-key",
        );
    }
    if version.is_none() {
        return api_error(
            StatusCode::BAD_REQUEST,
            "invalid_request_error",
            "anthropic-version: header is required",
        );
    }
    if listing {
        return axum::Json(json!({
            "data": [{"type": "model", "id": "claude-haiku-4-5", "display_name": "Claude Haiku 4.5",
                      "created_at": "2025-10-01T00:00:00Z"}],
            "has_more": false, "first_id": "claude-haiku-4-5", "last_id": "claude-haiku-4-5",
        }))
        .into_response();
    }
    let next = shared.lock().queue.pop_front();
    match next {
        None => api_error(
            StatusCode::INTERNAL_SERVER_ERROR,
            "api_error",
            "the fake has no scripted reply left",
        ),
        Some(Scripted::Text { text, usage }) => {
            let id = format!("msg_fake_{}", shared.lock().calls.len());
            axum::Json(json!({
                "id": id, "type": "message", "role": "assistant", "model": model,
                "content": [{"type": "text", "text": text}],
                "stop_reason": "end_turn", "stop_sequence": null,
                "usage": {"input_tokens": usage.input_tokens, "output_tokens": usage.output_tokens},
            }))
            .into_response()
        }
        Some(Scripted::Status {
            status,
            headers,
            body,
        }) => {
            let code = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
            let mut response = (code, axum::Json(body)).into_response();
            for (name, value) in headers {
                if let (Ok(n), Ok(v)) = (
                    axum::http::HeaderName::try_from(name),
                    axum::http::HeaderValue::try_from(value),
                ) {
                    response.headers_mut().insert(n, v);
                }
            }
            response
        }
        Some(Scripted::Oversized { bytes, declared }) => oversized(&shared, bytes, declared),
        Some(Scripted::Hang) => {
            let mut closing = shared.closing.clone();
            let _ = closing.wait_for(|c| *c).await;
            api_error(
                StatusCode::SERVICE_UNAVAILABLE,
                "api_error",
                "the fake stopped",
            )
        }
    }
}

fn oversized(shared: &Arc<Shared>, bytes: usize, declared: bool) -> Response {
    const CHUNK: usize = 64 * 1024;
    if declared {
        return ([("content-type", "application/json")], vec![b' '; bytes]).into_response();
    }
    let counter = shared.clone();
    let chunks = bytes.div_ceil(CHUNK);
    let stream = futures::stream::iter(0..chunks).map(move |i| {
        let len = CHUNK.min(bytes - i * CHUNK);
        counter.streamed.fetch_add(len, Ordering::SeqCst);
        Ok::<_, std::io::Error>(Bytes::from(vec![b' '; len]))
    });
    (
        [("content-type", "application/json")],
        Body::from_stream(stream),
    )
        .into_response()
}
