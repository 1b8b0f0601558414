//! Capsid's JSON-RPC layer in front of rmcp's Streamable HTTP service, on every MCP route.
//!
//! rmcp answers a body that is not JSON, or JSON that is not a JSON-RPC message, with HTTP 415
//! ("fail to deserialize request body"), which tells the user their `Content-Type` is wrong
//! when it is not. JSON-RPC 2.0 says: parse error `-32700`, invalid request `-32600`. So a
//! `POST` whose `Content-Type` is JSON is read here first (within the transport's body bound):
//! a body rmcp would refuse gets HTTP 400 with the JSON-RPC error and a sentence saying what
//! is wrong; anything rmcp accepts goes on to it unchanged. Other methods and media types
//! pass straight through (rmcp's 405/406/415 are right for them).
//!
//! On the way it names the request for the one log line per request: the JSON-RPC method and,
//! for `tools/call`, the tool (fields of the request span, see `middleware::request_log`), and
//! the handler's verdict on a tool call (`outcome`), which the handler leaves in an
//! [`Outcome`] slot in the request's extensions.
//!
//! [`unknown_method`] is the handler's answer to a method rmcp did not recognise: "method not
//! found: `<m>`", or, for a method MCP defines whose params did not parse, `-32602` naming why.
//!
//! A `subscriptions/listen` request of the 2026-07-28 lifecycle is admitted here, before rmcp
//! sees it ([`JsonRpcGuard::with_listen`]): rmcp acknowledges a listen before its handler runs,
//! asking the handler only for the filter to accept, without the request, so the check of
//! what the caller may watch, and its refusal, come first. An admitted stream goes on to rmcp
//! with its ticket in the request's extensions; a refused one is answered here with the
//! JSON-RPC error, as rmcp answers a 2026-07-28 request's errors (HTTP 200, `-32602` for a
//! resource the caller may not read or that does not exist, `-32600` for a bound).

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use axum::body::{Body, Bytes};
use axum::extract::Request;
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use capsid_core::caller::Caller;
use capsid_core::error::Error;
// `logging/setLevel` is deprecated by SEP-2577, but Capsid serves it (SPEC section 5).
#[allow(deprecated)]
use rmcp::model::{
    CallToolRequestParams, ClientJsonRpcMessage, ClientRequest, CompleteRequestParams,
    CustomRequest, ErrorCode, GetMeta, GetPromptRequestParams, InitializeRequestParams,
    PaginatedRequestParams, ProtocolVersion, ReadResourceRequestParams, SetLevelRequestParams,
    SubscriptionFilter,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer};
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use crate::recheck::Recheck;
use crate::subscriptions::{Admitted, Refused, Subscriptions};
use crate::unavailable::StoreFault;

/// The largest request body an MCP route reads (the transport's own bound is the same).
pub const MAX_MCP_BODY: usize = 2 * 1024 * 1024;

/// The JSON-RPC code of an `initialize` refused at a session bound (the implementation-defined
/// server-error range).
pub const SESSION_LIMIT: ErrorCode = ErrorCode(-32000);

/// Left in a request's extensions when its caller may open no more sessions: an `initialize`
/// is then answered HTTP 429 with this sentence as the JSON-RPC error (any other request
/// goes on, and opens nothing).
#[derive(Clone, Debug)]
pub(crate) struct SessionRefused(pub(crate) String);

/// What a JSON-RPC request looks like, for the error messages.
const EXAMPLE: &str = r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#;

/// Client-given names in the log are cut to this many characters.
const LOGGED_NAME_MAX: usize = 64;

/// The MCP service `S` behind Capsid's JSON-RPC checks (see the module docs).
#[derive(Clone, Debug)]
pub struct JsonRpcGuard<S> {
    inner: S,
    /// Where `subscriptions/listen` streams are admitted, when the route serves them.
    listen: Option<Arc<Subscriptions>>,
}

impl<S> JsonRpcGuard<S> {
    /// Guards `inner`, an rmcp `StreamableHttpService`.
    pub fn new(inner: S) -> JsonRpcGuard<S> {
        JsonRpcGuard {
            inner,
            listen: None,
        }
    }

    /// Admits each 2026-07-28 `subscriptions/listen` request into `subscriptions` before
    /// `inner` acknowledges it (the handler must serve listen from the same
    /// `subscriptions`: [`crate::CapsidMcp::with_subscriptions`]).
    pub fn with_listen(mut self, subscriptions: Arc<Subscriptions>) -> JsonRpcGuard<S> {
        self.listen = Some(subscriptions);
        self
    }
}

impl<S> tower::Service<Request> for JsonRpcGuard<S>
where
    S: tower::Service<Request, Error = Infallible> + Clone + Send + 'static,
    S::Response: IntoResponse,
    S::Future: Send + 'static,
{
    type Response = Response;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Response, Infallible>> + Send + 'static>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: Request) -> Self::Future {
        // The clone that was polled ready serves this request; a fresh clone waits for the next.
        let clone = self.inner.clone();
        let inner = std::mem::replace(&mut self.inner, clone);
        let listen = self.listen.clone();
        Box::pin(async move { Ok(guarded(inner, listen, req).await) })
    }
}

async fn guarded<S>(mut inner: S, listen: Option<Arc<Subscriptions>>, req: Request) -> Response
where
    S: tower::Service<Request, Error = Infallible>,
    S::Response: IntoResponse,
{
    if req.method() != Method::POST || !is_json(req.headers()) {
        return match inner.call(req).await {
            Ok(resp) => resp.into_response(),
            Err(never) => match never {},
        };
    }
    let (mut parts, body) = req.into_parts();
    let bytes = match axum::body::to_bytes(body, MAX_MCP_BODY).await {
        Ok(bytes) => bytes,
        Err(e) => return unreadable(&e),
    };
    let message = match serde_json::from_slice::<ClientJsonRpcMessage>(&bytes) {
        Ok(message) => message,
        Err(e) => return diagnose(&bytes, &e).into_response(),
    };
    name_request(&message);
    if let Some(SessionRefused(why)) = parts.extensions.get::<SessionRefused>()
        && let ClientJsonRpcMessage::Request(request) = &message
        && matches!(request.request, ClientRequest::InitializeRequest(_))
    {
        return Rejection {
            status: StatusCode::TOO_MANY_REQUESTS,
            code: SESSION_LIMIT,
            message: why.clone(),
            id: serde_json::to_value(&request.id).unwrap_or(Value::Null),
            data: None,
        }
        .into_response();
    }
    if let Some(subscriptions) = &listen
        && let ClientJsonRpcMessage::Request(request) = &message
        && let ClientRequest::SubscriptionsListenRequest(asked) = &request.request
        && of_the_listen_era(&request.request)
    {
        let id = serde_json::to_value(&request.id).unwrap_or(Value::Null);
        match admit_listen(subscriptions, &parts, &asked.params.notifications, id).await {
            Ok(admitted) => {
                parts.extensions.insert(admitted);
            }
            Err(refused) => return refused.into_response(),
        }
    }
    let outcome = Outcome::default();
    parts.extensions.insert(outcome.clone());
    let resp = match inner
        .call(Request::from_parts(parts, Body::from(bytes)))
        .await
    {
        Ok(resp) => resp.into_response(),
        Err(never) => match never {},
    };
    if let Some(verdict) = outcome.get() {
        tracing::Span::current().record("outcome", verdict);
    }
    resp
}

/// Whether a listen request is of the 2026-07-28 lifecycle, the only one rmcp serves it on (a
/// handshake session's listen is answered "method not found" by rmcp, unadmitted).
fn of_the_listen_era(request: &ClientRequest) -> bool {
    // rmcp keeps a request's `_meta` beside its params, not in them.
    request
        .get_meta()
        .protocol_version()
        .is_some_and(|v| v.as_str() >= ProtocolVersion::V_2026_07_28.as_str())
}

/// Admits a listen stream for the caller the auth middleware resolved, or the JSON-RPC error
/// that refuses request `id`. A store outage is left for the route's 503, as a tool call's is.
async fn admit_listen(
    subscriptions: &Arc<Subscriptions>,
    parts: &axum::http::request::Parts,
    filter: &SubscriptionFilter,
    id: Value,
) -> Result<Admitted, Rejection> {
    let refusal = |code: ErrorCode, message: String, data: Option<Value>| Rejection {
        status: StatusCode::OK,
        code,
        message,
        id: id.clone(),
        data,
    };
    let (Some(caller), Some(recheck)) = (
        parts.extensions.get::<Caller>(),
        parts.extensions.get::<Recheck>(),
    ) else {
        return Err(refusal(
            ErrorCode::INTERNAL_ERROR,
            "no authenticated caller on this request to admit its stream for".to_owned(),
            None,
        ));
    };
    let refused = match subscriptions.admit(caller, recheck.clone(), filter).await {
        Ok(admitted) => return Ok(admitted),
        Err(refused) => refused,
    };
    let said = refused.explain(&caller.actor());
    Err(match refused {
        Refused::Read {
            uri,
            error: Error::NotFound(_),
        } => refusal(ErrorCode::INVALID_PARAMS, said, Some(json!({"uri": uri}))),
        Refused::Read {
            error: Error::Internal(detail),
            ..
        } => {
            tracing::error!(error = %detail, "admitting a listen stream failed inside capsid");
            refusal(
                ErrorCode::INTERNAL_ERROR,
                "internal error; see the server log".to_owned(),
                None,
            )
        }
        Refused::Read {
            error: error @ Error::StoreUnavailable(_),
            ..
        } => {
            if let Some(fault) = parts.extensions.get::<StoreFault>() {
                fault.note(&error);
            }
            refusal(ErrorCode::INTERNAL_ERROR, said, None)
        }
        Refused::Read { .. } => refusal(ErrorCode::INVALID_PARAMS, said, None),
        Refused::TooMany
        | Refused::TooManyForCaller
        | Refused::TooManyStreams
        | Refused::Closing => refusal(ErrorCode::INVALID_REQUEST, said, None),
    })
}

/// Whether the request says its body is JSON (what rmcp's own media-type check accepts).
fn is_json(headers: &axum::http::HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| {
            v.split(';')
                .next()
                .unwrap_or_default()
                .trim()
                .eq_ignore_ascii_case("application/json")
        })
}

/// Records the JSON-RPC method (and the tool of a `tools/call`) on the request's log span.
fn name_request(message: &ClientJsonRpcMessage) {
    let span = tracing::Span::current();
    match message {
        ClientJsonRpcMessage::Request(req) => {
            span.record("rpc", loggable(req.request.method()).as_str());
            if let ClientRequest::CallToolRequest(call) = &req.request {
                span.record("tool", loggable(&call.params.name).as_str());
            }
        }
        ClientJsonRpcMessage::Notification(n) => {
            // Notifications are rare and small; their method is read back off the wire form.
            let value = serde_json::to_value(&n.notification).unwrap_or_default();
            let method = value.get("method").and_then(Value::as_str).unwrap_or("");
            span.record("rpc", loggable(method).as_str());
        }
        ClientJsonRpcMessage::Response(_) => {
            span.record("rpc", "(response)");
        }
        ClientJsonRpcMessage::Error(_) => {
            span.record("rpc", "(error)");
        }
    }
}

/// A client-given name as it may appear in a log line: no control characters, bounded.
fn loggable(name: &str) -> String {
    name.chars()
        .filter(|c| !c.is_control())
        .take(LOGGED_NAME_MAX)
        .collect()
}

/// A JSON-RPC error answered here, before rmcp: the HTTP status, the code, the sentence and
/// the request's id when one could be read.
#[derive(Debug)]
struct Rejection {
    status: StatusCode,
    code: ErrorCode,
    message: String,
    id: Value,
    /// The error's `data`, when it has one.
    data: Option<Value>,
}

impl IntoResponse for Rejection {
    fn into_response(self) -> Response {
        tracing::Span::current().record("outcome", "rejected");
        tracing::debug!(code = self.code.0, message = %self.message, "request refused before rmcp");
        let mut error = json!({"code": self.code.0, "message": self.message});
        if let Some(data) = self.data {
            error["data"] = data;
        }
        let body = json!({"jsonrpc": "2.0", "id": self.id, "error": error});
        let mut resp = (self.status, axum::Json(body)).into_response();
        resp.headers_mut().insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        resp
    }
}

fn parse_error(message: String) -> Rejection {
    Rejection {
        status: StatusCode::BAD_REQUEST,
        code: ErrorCode::PARSE_ERROR,
        message,
        id: Value::Null,
        data: None,
    }
}

fn invalid_request(why: &str, id: Value) -> Rejection {
    Rejection {
        status: StatusCode::BAD_REQUEST,
        code: ErrorCode::INVALID_REQUEST,
        message: format!("invalid request: {why}; a JSON-RPC 2.0 request looks like {EXAMPLE}"),
        id,
        data: None,
    }
}

/// A body that could not be read: too long (413), or broken off.
fn unreadable(e: &axum::Error) -> Response {
    let too_long =
        std::error::Error::source(e).is_some_and(|s| s.is::<http_body_util::LengthLimitError>());
    if too_long {
        return Rejection {
            status: StatusCode::PAYLOAD_TOO_LARGE,
            code: ErrorCode::INVALID_REQUEST,
            message: format!(
                "invalid request: the body is longer than {MAX_MCP_BODY} bytes, the most an MCP request may carry here"
            ),
            id: Value::Null,
            data: None,
        }
        .into_response();
    }
    parse_error(format!(
        "parse error: the request body could not be read ({e})"
    ))
    .into_response()
}

/// Why `bytes` is not a message rmcp accepts, as the JSON-RPC error that says so.
fn diagnose(bytes: &Bytes, rmcp_said: &serde_json::Error) -> Rejection {
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return parse_error(format!(
            "parse error: the request body is empty; send one JSON-RPC 2.0 message such as {EXAMPLE}"
        ));
    }
    let value: Value = match serde_json::from_slice(bytes) {
        Ok(value) => value,
        Err(e) => {
            return parse_error(format!(
                "parse error: the request body is not JSON ({e}); send one JSON-RPC 2.0 message such as {EXAMPLE}"
            ));
        }
    };
    let id = value
        .get("id")
        .filter(|id| id.is_string() || id.is_number())
        .cloned()
        .unwrap_or(Value::Null);
    let Value::Object(fields) = &value else {
        let why = match &value {
            Value::Array(_) => {
                "the body is a JSON array (a JSON-RPC batch), which MCP does not accept: send one message per request".to_owned()
            }
            other => format!(
                "the body is {}, not a JSON object",
                json_type(other)
            ),
        };
        return invalid_request(&why, id);
    };
    let why = match fields.get("jsonrpc") {
        None => "the message has no \"jsonrpc\": \"2.0\" member".to_owned(),
        Some(Value::String(v)) if v == "2.0" => match (fields.get("method"), fields.get("id")) {
            (Some(Value::String(_)), Some(id)) if !(id.is_string() || id.is_number()) => {
                "\"id\" must be a string or a number".to_owned()
            }
            (Some(Value::String(_)), _) => {
                format!("the message does not read as MCP ({rmcp_said})")
            }
            (Some(_), _) => "\"method\" must be a string".to_owned(),
            (None, _) if fields.contains_key("result") || fields.contains_key("error") => {
                format!("the response does not read as JSON-RPC ({rmcp_said})")
            }
            (None, _) => "the message has no \"method\"".to_owned(),
        },
        Some(other) => format!("\"jsonrpc\" must be \"2.0\", not {other}"),
    };
    invalid_request(&why, id)
}

/// "a string", "a number", ... for messages.
fn json_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// The handler's verdict on a request, for its log line: set by the MCP handler, read by
/// [`JsonRpcGuard`] once the response is ready (in session mode a streamed answer may not
/// have one yet).
#[derive(Clone, Debug, Default)]
pub(crate) struct Outcome(Arc<Mutex<Option<&'static str>>>);

impl Outcome {
    fn get(&self) -> Option<&'static str> {
        self.0.lock().ok().and_then(|v| *v)
    }

    /// Leaves `verdict` for the request `ctx` belongs to.
    pub(crate) fn note(ctx: &RequestContext<RoleServer>, verdict: &'static str) {
        let slot = ctx
            .extensions
            .get::<http::request::Parts>()
            .and_then(|parts| parts.extensions.get::<Outcome>());
        if let Some(Outcome(slot)) = slot
            && let Ok(mut v) = slot.lock()
        {
            *v = Some(verdict);
        }
    }
}

/// The answer to a request rmcp did not recognise. rmcp hands over both methods it does not
/// know and methods it knows whose params did not parse; the first are "method not found:
/// <m>" (`-32601`), the second `-32602` with serde's account of the params.
pub(crate) fn unknown_method(request: &CustomRequest) -> McpError {
    let method = loggable(&request.method);
    match params_error(&request.method, request.params.as_ref()) {
        Some(why) => McpError::invalid_params(format!("invalid params for {method}: {why}"), None),
        None => McpError::new(
            ErrorCode::METHOD_NOT_FOUND,
            format!("method not found: {method}"),
            None,
        ),
    }
}

/// For a method Capsid serves, why `params` do not parse; `None` for any other method.
#[allow(deprecated)]
fn params_error(method: &str, params: Option<&Value>) -> Option<String> {
    fn why<T: DeserializeOwned>(params: Option<&Value>) -> String {
        let value = params.cloned().unwrap_or_else(|| json!({}));
        match serde_json::from_value::<T>(value) {
            Err(e) => e.to_string(),
            Ok(_) => "they do not match the method's schema".to_owned(),
        }
    }
    Some(match method {
        "initialize" => why::<InitializeRequestParams>(params),
        "tools/call" => why::<CallToolRequestParams>(params),
        "resources/read" => why::<ReadResourceRequestParams>(params),
        "prompts/get" => why::<GetPromptRequestParams>(params),
        "completion/complete" => why::<CompleteRequestParams>(params),
        "logging/setLevel" => why::<SetLevelRequestParams>(params),
        "tools/list" | "resources/list" | "resources/templates/list" | "prompts/list" => {
            why::<PaginatedRequestParams>(params)
        }
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rejection(body: &str) -> Rejection {
        let bytes = Bytes::from(body.to_owned());
        let err = serde_json::from_slice::<ClientJsonRpcMessage>(&bytes)
            .expect_err("rmcp refuses this body");
        diagnose(&bytes, &err)
    }

    #[test]
    fn bodies_rmcp_refuses_get_the_json_rpc_code_that_fits() {
        for (body, code, says) in [
            ("not json", -32700, "not JSON"),
            ("", -32700, "empty"),
            ("{\"jsonrpc\":\"2.0\",", -32700, "not JSON"),
            (
                "[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}]",
                -32600,
                "batch",
            ),
            ("\"tools/list\"", -32600, "a string, not a JSON object"),
            ("{\"a\":1}", -32600, "no \"jsonrpc\""),
            (
                "{\"jsonrpc\":\"1.0\",\"id\":1,\"method\":\"ping\"}",
                -32600,
                "must be \"2.0\"",
            ),
            ("{\"jsonrpc\":\"2.0\",\"id\":1}", -32600, "no \"method\""),
            (
                "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":7}",
                -32600,
                "\"method\" must be a string",
            ),
            (
                "{\"jsonrpc\":\"2.0\",\"id\":{},\"method\":\"ping\"}",
                -32600,
                "\"id\" must be",
            ),
        ] {
            let r = rejection(body);
            assert_eq!(r.code.0, code, "{body}: {}", r.message);
            assert_eq!(r.status, StatusCode::BAD_REQUEST, "{body}");
            assert!(r.message.contains(says), "{body}: {}", r.message);
        }
    }

    #[test]
    fn an_invalid_request_echoes_a_readable_id() {
        let r = rejection("{\"jsonrpc\":\"1.0\",\"id\":\"a7\",\"method\":\"ping\"}");
        assert_eq!(r.id, json!("a7"));
        let r = rejection("not json");
        assert_eq!(r.id, Value::Null);
    }

    #[test]
    fn only_a_listen_of_the_2026_lifecycle_is_admitted_here() {
        let mut request = ClientRequest::SubscriptionsListenRequest(
            rmcp::model::SubscriptionsListenRequest::new(
                rmcp::model::SubscriptionsListenRequestParams::new(SubscriptionFilter::default()),
            ),
        );
        assert!(!of_the_listen_era(&request), "no version: rmcp answers it");
        request
            .get_meta_mut()
            .set_protocol_version(ProtocolVersion::V_2025_11_25);
        assert!(!of_the_listen_era(&request), "a handshake session's listen");
        request
            .get_meta_mut()
            .set_protocol_version(ProtocolVersion::V_2026_07_28);
        assert!(of_the_listen_era(&request));
    }

    #[test]
    fn unknown_methods_are_named_and_known_ones_with_bad_params_say_why() {
        let e = unknown_method(&CustomRequest::new("tools/cal", None));
        assert_eq!(e.code, ErrorCode::METHOD_NOT_FOUND);
        assert_eq!(e.message, "method not found: tools/cal");
        let e = unknown_method(&CustomRequest::new("tools/call", Some(json!({}))));
        assert_eq!(e.code, ErrorCode::INVALID_PARAMS);
        assert!(
            e.message.starts_with("invalid params for tools/call: ") && e.message.contains("name"),
            "{}",
            e.message
        );
        let e = unknown_method(&CustomRequest::new("evil\nline", None));
        assert_eq!(e.message, "method not found: evilline");
    }
}
