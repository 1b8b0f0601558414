//! The metered model door against a fake Messages API and a fake Responses API on loopback: the cost is the upstream's
//! reported usage priced by the table, whatever the agent says; the agent's token never goes
//! upstream and the upstream key never comes back; the cap refuses a call before it reaches the
//! upstream; answers pass through chunk by chunk.

use std::sync::{Arc, Mutex};

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use capsid_box::model_proxy::{
    CallEnd, CallRecord, LedgerSink, ModelProxy, ProxyConfig, UpstreamAuth,
};
use capsid_core::drive::ledger::{PriceTable, Usage, Usd, tokens_in, worst_case};
use serde_json::{Value, json};
use tokio::sync::Notify;

const KEY: &str = "sk-upstream-secret-key";
const TOKEN: &str = "capsid-job-token-1";

#[derive(Default)]
struct Upstream {
    requests: Mutex<Vec<(HeaderMap, Value)>>,
    /// The usage each answer reports: input, output, cache write, cache read.
    usage: Mutex<(u64, u64, u64, u64)>,
    /// An error status to answer with instead.
    fail: Mutex<Option<u16>>,
    /// When set, the answer's first event is sent, then the rest waits for this.
    gate: Mutex<Option<Arc<Notify>>>,
    /// Answer unstreamed (one JSON body).
    plain: Mutex<bool>,
    /// The bodies `count_tokens` was asked to count.
    counted: Mutex<Vec<Value>>,
}

async fn upstream_count(State(up): State<Arc<Upstream>>, body: Bytes) -> Response {
    let v: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    up.counted.lock().unwrap().push(v);
    let input = up.usage.lock().unwrap().0;
    (
        [("content-type", "application/json")],
        json!({"input_tokens": input}).to_string(),
    )
        .into_response()
}

fn events(model: &str, u: (u64, u64, u64, u64)) -> (String, String) {
    let start = format!(
        "event: message_start\ndata: {}\n\n",
        json!({"type": "message_start", "message": {"id": "msg_1", "type": "message", "role": "assistant", "model": model, "content": [], "usage": {"input_tokens": u.0, "output_tokens": 1, "cache_creation_input_tokens": u.2, "cache_read_input_tokens": u.3}}})
    );
    let rest = [
        json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
        json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Hello"}}),
        json!({"type": "content_block_stop", "index": 0}),
        json!({"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": u.1}}),
        json!({"type": "message_stop"}),
    ]
    .iter()
    .map(|e| format!("event: {}\ndata: {e}\n\n", e["type"].as_str().unwrap_or("")))
    .collect();
    (start, rest)
}

async fn upstream_messages(
    State(up): State<Arc<Upstream>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let v: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    up.requests.lock().unwrap().push((headers, v.clone()));
    if let Some(code) = *up.fail.lock().unwrap() {
        return (
            StatusCode::from_u16(code).unwrap(),
            [("content-type", "application/json")],
            json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}).to_string(),
        )
            .into_response();
    }
    let model = v["model"].as_str().unwrap_or("none").to_owned();
    let u = *up.usage.lock().unwrap();
    if *up.plain.lock().unwrap() {
        return (
            [("content-type", "application/json")],
            json!({"id": "msg_1", "type": "message", "model": model, "content": [{"type": "text", "text": "Hi"}], "usage": {"input_tokens": u.0, "output_tokens": u.1, "cache_creation_input_tokens": u.2, "cache_read_input_tokens": u.3}}).to_string(),
        )
            .into_response();
    }
    let (start, rest) = events(&model, u);
    let gate = up.gate.lock().unwrap().clone();
    let stream = futures::stream::unfold(0u8, move |step| {
        let (start, rest, gate) = (start.clone(), rest.clone(), gate.clone());
        async move {
            match step {
                0 => Some((Ok::<_, std::io::Error>(Bytes::from(start)), 1)),
                1 => {
                    if let Some(g) = gate {
                        g.notified().await;
                    }
                    Some((Ok(Bytes::from(rest)), 2))
                }
                _ => None,
            }
        }
    });
    Response::builder()
        .header("content-type", "text/event-stream")
        .header("request-id", "req_fake")
        .body(Body::from_stream(stream))
        .unwrap()
}

/// The fake Responses API: the answer's events, with the usage set for the test (input, output,
/// -, cached input), streamed.
async fn upstream_responses(
    State(up): State<Arc<Upstream>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let v: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    up.requests.lock().unwrap().push((headers, v.clone()));
    let model = v["model"].as_str().unwrap_or("none").to_owned();
    let u = *up.usage.lock().unwrap();
    let events = [
        json!({"type": "response.created", "response": {"id": "resp_1", "model": model, "status": "in_progress"}}),
        json!({"type": "response.output_item.done", "item": {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Hello"}]}}),
        json!({"type": "response.completed", "response": {"id": "resp_1", "model": model, "status": "completed",
            "usage": {"input_tokens": u.0 + u.3, "input_tokens_details": {"cached_tokens": u.3},
                      "output_tokens": u.1, "output_tokens_details": {"reasoning_tokens": u.1 / 2},
                      "total_tokens": u.0 + u.3 + u.1}}}),
    ];
    let text: String = events
        .iter()
        .map(|e| format!("event: {}\ndata: {e}\n\n", e["type"].as_str().unwrap_or("")))
        .collect();
    Response::builder()
        .header("content-type", "text/event-stream")
        .body(Body::from(text))
        .unwrap()
}

async fn serve(router: Router) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, router).await });
    format!("http://{addr}")
}

#[derive(Default)]
struct Rows(Mutex<Vec<CallRecord>>);

impl LedgerSink for Rows {
    fn record(&self, call: &CallRecord) -> futures::future::BoxFuture<'_, Result<(), String>> {
        self.0.lock().unwrap().push(call.clone());
        Box::pin(async { Ok(()) })
    }
}

struct World {
    up: Arc<Upstream>,
    proxy: ModelProxy,
    url: String,
    rows: Arc<Rows>,
    http: reqwest::Client,
}

async fn world(cap: Option<f64>) -> World {
    let up = Arc::new(Upstream::default());
    *up.usage.lock().unwrap() = (1_000, 200, 0, 0);
    let up_url = serve(
        Router::new()
            .route("/v1/messages", post(upstream_messages))
            .route("/v1/messages/count_tokens", post(upstream_count))
            .route("/v1/responses", post(upstream_responses))
            .with_state(up.clone()),
    )
    .await;
    let rows = Arc::new(Rows::default());
    let proxy = ModelProxy::new(
        ProxyConfig {
            spent_before: Default::default(),
            upstream: up_url,
            auth: UpstreamAuth::ApiKey(KEY.to_owned()),
            token: TOKEN.to_owned(),
            prices: PriceTable::default(),
            cap: cap.map(|c| Usd::from_dollars(c).unwrap()),
        },
        Some(rows.clone() as Arc<dyn LedgerSink>),
    )
    .unwrap();
    let url = serve(proxy.router()).await;
    World {
        up,
        proxy,
        url,
        rows,
        http: reqwest::Client::new(),
    }
}

fn request(model: &str, max_tokens: u64) -> Value {
    json!({
        "model": model,
        "max_tokens": max_tokens,
        "stream": true,
        "metadata": {"user_id": json!({"session_id": "sess-42", "device_id": "d"}).to_string()},
        "messages": [{"role": "user", "content": "hi"}],
    })
}

impl World {
    async fn call(&self, body: &Value) -> (u16, String) {
        let r = self
            .http
            .post(format!("{}/v1/messages?beta=true", self.url))
            .header("x-api-key", TOKEN)
            .header("anthropic-version", "2023-06-01")
            .json(body)
            .send()
            .await
            .unwrap();
        (r.status().as_u16(), r.text().await.unwrap())
    }

    /// A Responses call as Codex 0.171 makes it: its bearer token, its session headers.
    async fn respond(&self, body: &Value) -> (u16, Value, String) {
        let r = self
            .http
            .post(format!("{}/v1/responses", self.url))
            .bearer_auth(TOKEN)
            .header("session-id", "codex-sess-7")
            .header("thread-id", "codex-sess-7")
            .header("x-codex-window-id", "codex-sess-7:0")
            .header("originator", "codex_exec")
            .json(body)
            .send()
            .await
            .unwrap();
        let status = r.status().as_u16();
        let text = r.text().await.unwrap();
        (
            status,
            serde_json::from_str(&text).unwrap_or(Value::Null),
            text,
        )
    }

    fn upstream_calls(&self) -> usize {
        self.up.requests.lock().unwrap().len()
    }
}

fn sonnet_cost(u: Usage) -> Usd {
    PriceTable::default()
        .price("claude-sonnet-4-5")
        .price
        .cost(&u)
}

#[tokio::test]
async fn a_streamed_call_costs_its_reported_usage_at_the_tables_price() {
    let w = world(None).await;
    *w.up.usage.lock().unwrap() = (1_200, 350, 4_000, 9_000);
    let (status, text) = w.call(&request("claude-sonnet-4-5-20250929", 4_096)).await;
    assert_eq!(status, 200, "{text}");
    assert!(
        text.contains("message_stop") && text.contains("Hello"),
        "{text}"
    );
    let usage = Usage {
        input_tokens: 1_200,
        output_tokens: 350,
        cache_write_tokens: 4_000,
        cache_read_tokens: 9_000,
    };
    // 1,200 x 3 + 350 x 15 + 4,000 x 3.75 + 9,000 x 0.3 micro-dollars.
    assert_eq!(
        sonnet_cost(usage),
        Usd::from_micros(3_600 + 5_250 + 15_000 + 2_700)
    );
    assert_eq!(w.proxy.spent(), sonnet_cost(usage));
    let calls = w.proxy.calls();
    assert_eq!(calls.len(), 1);
    let c = &calls[0];
    assert_eq!(c.usage, usage);
    assert_eq!(c.model, "claude-sonnet-4-5-20250929");
    assert_eq!(c.session.as_deref(), Some("sess-42"));
    assert!(c.known_price);
    assert_eq!(c.end, CallEnd::Completed);
    assert_eq!(c.max_tokens_cut, None);
    assert_eq!(
        w.rows.0.lock().unwrap().clone(),
        calls,
        "the sink got the same row"
    );
    assert_eq!(w.proxy.account().held, Usd::ZERO);
    // The upstream got the real key and the API's headers, never the agent's token.
    let (headers, body) = w.up.requests.lock().unwrap()[0].clone();
    assert_eq!(headers["x-api-key"], KEY);
    assert_eq!(headers["anthropic-version"], "2023-06-01");
    assert!(headers.get("authorization").is_none());
    assert!(!format!("{headers:?}").contains(TOKEN));
    assert_eq!(body["max_tokens"], 4_096);
}

#[tokio::test]
async fn an_unstreamed_answer_is_metered_too_and_an_unknown_model_costs_the_dearest_rate() {
    let w = world(None).await;
    *w.up.plain.lock().unwrap() = true;
    let mut body = request("house-model-x", 100);
    body["stream"] = json!(false);
    let (status, text) = w.call(&body).await;
    assert_eq!(status, 200, "{text}");
    let c = &w.proxy.calls()[0];
    assert!(!c.known_price);
    let top = PriceTable::default().dearest();
    assert_eq!(
        c.cost,
        top.cost(&Usage {
            input_tokens: 1_000,
            output_tokens: 200,
            ..Usage::default()
        })
    );
    assert_eq!(c.cost, Usd::from_micros(15_000 + 15_000));
}

#[tokio::test]
async fn a_wrong_token_a_malformed_body_and_a_closed_door_are_refused_and_cost_nothing() {
    let w = world(Some(1.0)).await;
    let r = w
        .http
        .post(format!("{}/v1/messages", w.url))
        .header("x-api-key", "not-the-token")
        .json(&request("claude-sonnet-4-5", 10))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 401);
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["type"], "error");
    assert_eq!(v["error"]["type"], "authentication_error");
    // A bearer token is as good as x-api-key.
    let r = w
        .http
        .post(format!("{}/v1/messages", w.url))
        .bearer_auth(TOKEN)
        .body("{not json")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 400);
    let v: Value = r.json().await.unwrap();
    assert!(
        v["error"]["message"]
            .as_str()
            .unwrap()
            .contains("JSON object"),
        "{v}"
    );
    let (status, text) = w
        .call(&json!({"model": "claude-sonnet-4-5", "messages": []}))
        .await;
    assert_eq!(status, 400);
    assert!(text.contains("max_tokens"), "{text}");
    let (status, text) = w.call(&json!({"max_tokens": 5, "messages": []})).await;
    assert_eq!(status, 400);
    assert!(text.contains("model"), "{text}");
    let r = w
        .http
        .get(format!("{}/v1/models", w.url))
        .header("x-api-key", TOKEN)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 404);
    w.proxy.close();
    let (status, text) = w.call(&request("claude-sonnet-4-5", 10)).await;
    assert_eq!(status, 403, "{text}");
    assert!(text.contains("run has ended"), "{text}");
    assert_eq!(w.upstream_calls(), 0, "nothing reached the upstream");
    assert_eq!(w.proxy.spent(), Usd::ZERO);
    // Refused by the door: the token, the three bodies and the closed door (the unknown
    // route is answered 404 before any of it).
    assert_eq!(w.proxy.refused(), 5);
    assert!(w.proxy.calls().is_empty());
}

#[tokio::test]
async fn the_cap_refuses_the_call_that_would_pass_it_before_the_upstream_sees_it() {
    // Each call: 1,000 in + 200 out at sonnet = 6,000 micro-dollars settled.
    let w = world(Some(0.05)).await;
    let body = request("claude-sonnet-4-5", 1_000);
    let bytes = serde_json::to_vec(&body).unwrap().len() as u64;
    let mut ok = 0;
    let refusal = loop {
        let (status, text) = w.call(&body).await;
        if status != 200 {
            break (status, text);
        }
        ok += 1;
        assert!(ok < 100, "the cap never refused");
    };
    assert_eq!(refusal.0, 400);
    let v: Value = serde_json::from_str(&refusal.1).unwrap();
    assert_eq!(v["type"], "error");
    assert_eq!(v["error"]["type"], "invalid_request_error");
    let message = v["error"]["message"].as_str().unwrap();
    assert!(message.contains("of $0.0500 used"), "{message}");
    assert_eq!(
        w.upstream_calls(),
        ok,
        "the refused call never reached the upstream"
    );
    let spent = w.proxy.spent();
    assert_eq!(spent, Usd::from_micros(6_000 * ok as u64));
    assert!(spent <= Usd::from_micros(50_000));
    // The estimate did not fit, so the upstream counted the input (1,000 tokens); what was
    // left could not pay for it and the least output.
    assert_eq!(w.up.counted.lock().unwrap().len(), 1);
    let price = PriceTable::default().price("claude-sonnet-4-5").price;
    assert!(worst_case(&price, tokens_in(bytes), 1_000) > Usd::from_micros(50_000).minus(spent));
    let least = worst_case(&price, 1_000, 256);
    assert!(Usd::from_micros(50_000).minus(spent) < least);
    let hits = w.proxy.cap_hits();
    assert_eq!(hits.len(), 1);
    assert_eq!(hits[0].spent, spent);
    assert_eq!(hits[0].cap, Usd::from_micros(50_000));
    assert_eq!(hits[0].needs, least);
    // A person raises the cap: the next call goes out.
    w.proxy.raise(Usd::from_dollars(0.10).unwrap());
    let (status, _) = w.call(&body).await;
    assert_eq!(status, 200);
    assert_eq!(w.upstream_calls(), ok + 1);
}

#[tokio::test]
async fn a_call_near_the_cap_goes_out_with_the_max_tokens_the_rest_pays_for() {
    let w = world(Some(0.02)).await;
    let body = request("claude-sonnet-4-5", 32_000);
    let (status, text) = w.call(&body).await;
    assert_eq!(status, 200, "{text}");
    let sent = w.up.requests.lock().unwrap()[0].1["max_tokens"]
        .as_u64()
        .unwrap();
    assert!((256..32_000).contains(&sent), "{sent}");
    let bytes = serde_json::to_vec(&body).unwrap().len() as u64;
    let price = PriceTable::default().price("claude-sonnet-4-5").price;
    let input = tokens_in(bytes);
    assert!(worst_case(&price, input, sent) <= Usd::from_micros(20_000));
    assert!(worst_case(&price, input, sent + 1) > Usd::from_micros(20_000));
    assert_eq!(w.proxy.calls()[0].max_tokens_cut, Some((32_000, sent)));
}

#[tokio::test]
async fn an_upstream_error_passes_through_and_costs_what_it_reported() {
    let w = world(Some(1.0)).await;
    *w.up.fail.lock().unwrap() = Some(529);
    let (status, text) = w.call(&request("claude-sonnet-4-5", 100)).await;
    assert_eq!(status, 529);
    assert!(text.contains("overloaded_error"), "{text}");
    let c = &w.proxy.calls()[0];
    assert_eq!(c.end, CallEnd::UpstreamError(529));
    assert_eq!(c.cost, Usd::ZERO);
    assert_eq!(w.proxy.account().held, Usd::ZERO, "the hold is released");
}

#[tokio::test]
async fn the_first_event_is_passed_on_before_the_upstream_finishes() {
    let w = world(None).await;
    let gate = Arc::new(Notify::new());
    *w.up.gate.lock().unwrap() = Some(gate.clone());
    let mut r = w
        .http
        .post(format!("{}/v1/messages", w.url))
        .header("x-api-key", TOKEN)
        .json(&request("claude-sonnet-4-5", 100))
        .send()
        .await
        .unwrap();
    assert_eq!(r.headers()["request-id"], "req_fake");
    let first = r.chunk().await.unwrap().expect("a first chunk");
    assert!(String::from_utf8_lossy(&first).contains("message_start"));
    // Nothing is settled while the upstream holds the rest.
    assert!(w.proxy.calls().is_empty());
    assert!(w.proxy.account().held > Usd::ZERO);
    gate.notify_one();
    let mut rest = Vec::new();
    while let Some(c) = r.chunk().await.unwrap() {
        rest.extend_from_slice(&c);
    }
    assert!(String::from_utf8_lossy(&rest).contains("message_stop"));
    assert_eq!(w.proxy.calls().len(), 1);
    assert_eq!(w.rows.0.lock().unwrap().len(), 1);
}

#[tokio::test]
async fn near_the_cap_the_upstream_counts_the_input_instead_of_the_estimate() {
    // 40,000 bytes of prompt are estimated at 10,000 tokens (0.0375 at the cache-write rate),
    // more than the cap; the upstream counts 1,000, and the call goes out.
    let w = world(Some(0.03)).await;
    let mut body = request("claude-sonnet-4-5", 1_000);
    body["messages"][0]["content"] = json!("x".repeat(40_000));
    let (status, text) = w.call(&body).await;
    assert_eq!(status, 200, "{text}");
    let counted = w.up.counted.lock().unwrap().clone();
    assert_eq!(counted.len(), 1);
    assert_eq!(counted[0]["model"], "claude-sonnet-4-5");
    assert!(counted[0].get("max_tokens").is_none() && counted[0].get("stream").is_none());
    assert_eq!(counted[0]["messages"], body["messages"]);
    // Far from the cap nothing is counted: the estimate fits.
    let w = world(Some(10.0)).await;
    let (status, _) = w.call(&body).await;
    assert_eq!(status, 200);
    assert!(w.up.counted.lock().unwrap().is_empty());
}

fn responses_request(model: &str) -> Value {
    json!({
        "model": model,
        "stream": true,
        "instructions": "You are Codex.",
        "input": [{"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]}],
        "prompt_cache_key": "codex-cache-key",
    })
}

#[tokio::test]
async fn a_responses_call_costs_its_usage_with_cached_input_at_the_cached_rate() {
    let w = world(None).await;
    // 6,000 fresh and 4,000 cached input tokens, 2,000 output (half of them reasoning).
    *w.up.usage.lock().unwrap() = (6_000, 2_000, 0, 4_000);
    let (status, _, text) = w.respond(&responses_request("gpt-5")).await;
    assert_eq!(status, 200, "{text}");
    assert!(
        text.contains("response.completed") && text.contains("Hello"),
        "{text}"
    );
    let usage = Usage {
        input_tokens: 6_000,
        output_tokens: 2_000,
        cache_write_tokens: 0,
        cache_read_tokens: 4_000,
    };
    // gpt-5: $1.25 in, $0.125 cached, $10 out per million: 7,500 + 500 + 20,000 micro-dollars.
    assert_eq!(w.proxy.spent(), Usd::from_micros(7_500 + 500 + 20_000));
    let calls = w.proxy.calls();
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0].usage, usage);
    assert_eq!(calls[0].model, "gpt-5");
    assert_eq!(calls[0].session.as_deref(), Some("codex-sess-7"));
    assert!(calls[0].known_price);
    assert_eq!(calls[0].end, CallEnd::Completed);
    assert_eq!(w.rows.0.lock().unwrap().clone(), calls);
    // The upstream got the door's credential, the call bounded by what was reserved for it
    // (Codex names no bound), and Codex's own headers; never the agent's token.
    let (headers, body) = w.up.requests.lock().unwrap()[0].clone();
    assert_eq!(headers["x-api-key"], KEY);
    assert!(!format!("{headers:?}").contains(TOKEN));
    assert_eq!(headers["session-id"], "codex-sess-7");
    assert_eq!(headers["thread-id"], "codex-sess-7");
    assert_eq!(headers["x-codex-window-id"], "codex-sess-7:0");
    assert_eq!(headers["originator"], "codex_exec");
    assert_eq!(
        body["max_output_tokens"],
        json!(capsid_box::model_proxy::RESPONSES_DEFAULT_MAX_OUTPUT)
    );
    assert_eq!(body["input"], responses_request("gpt-5")["input"]);
}

#[tokio::test]
async fn a_responses_call_past_the_cap_is_refused_as_insufficient_quota_before_the_upstream() {
    // A cent: gpt-5 at its default bound of 32,768 output tokens needs about $0.33.
    let w = world(Some(0.01)).await;
    let (status, err, text) = w.respond(&responses_request("gpt-5")).await;
    // Near the cap the call goes out with the bound the rest pays for, not refused.
    assert_eq!(status, 200, "{text}");
    let sent = w.up.requests.lock().unwrap()[0].1["max_output_tokens"]
        .as_u64()
        .unwrap();
    assert!(
        sent < capsid_box::model_proxy::RESPONSES_DEFAULT_MAX_OUTPUT,
        "{sent}"
    );
    assert!(err.is_null());
    // The first call's usage (1,000 in, 200 out: $0.00325) leaves too little for the next.
    *w.up.usage.lock().unwrap() = (1_000, 200, 0, 0);
    let mut spent = w.proxy.spent();
    let mut refused = None;
    for _ in 0..8 {
        let (status, err, _) = w.respond(&responses_request("gpt-5")).await;
        if status != 200 {
            refused = Some((status, err));
            break;
        }
        assert!(w.proxy.spent() > spent);
        spent = w.proxy.spent();
    }
    let (status, err) = refused.expect("the cap never refused a call");
    assert_eq!(status, 429, "{err}");
    assert_eq!(err["error"]["type"], "insufficient_quota", "{err}");
    assert_eq!(err["error"]["code"], "insufficient_quota", "{err}");
    assert!(
        err["error"]["message"]
            .as_str()
            .unwrap_or("")
            .contains("model budget is spent"),
        "{err}"
    );
    let upstream = w.upstream_calls();
    assert_eq!(
        w.proxy.calls().len(),
        upstream,
        "the refused call reached the upstream"
    );
    assert_eq!(w.proxy.cap_hits().len(), 1);
    assert!(w.proxy.spent() <= Usd::from_dollars(0.01).unwrap());
}

#[tokio::test]
async fn a_bad_responses_call_is_refused_in_openais_shape_and_costs_nothing() {
    let w = world(None).await;
    let wrong = w
        .http
        .post(format!("{}/v1/responses", w.url))
        .bearer_auth("not-the-token")
        .json(&responses_request("gpt-5"))
        .send()
        .await
        .unwrap();
    assert_eq!(wrong.status().as_u16(), 401);
    let err: Value = wrong.json().await.unwrap();
    assert_eq!(err["error"]["code"], "invalid_api_key", "{err}");
    for (body, field) in [
        (json!({"input": "hi"}), "model"),
        (
            json!({"model": "gpt-5", "max_output_tokens": "lots"}),
            "max_output_tokens",
        ),
        (
            json!({"model": "gpt-5", "max_output_tokens": 0}),
            "max_output_tokens",
        ),
        (json!(["not", "an", "object"]), "JSON object"),
    ] {
        let (status, err, _) = w.respond(&body).await;
        assert_eq!(status, 400, "{body}: {err}");
        assert_eq!(err["error"]["type"], "invalid_request_error", "{err}");
        assert!(
            err["error"]["message"]
                .as_str()
                .unwrap_or("")
                .contains(field),
            "{body}: {err}"
        );
    }
    w.proxy.close();
    let (status, err, _) = w.respond(&responses_request("gpt-5")).await;
    assert_eq!(status, 403, "{err}");
    assert!(
        err["error"]["message"]
            .as_str()
            .unwrap_or("")
            .contains("closed")
    );
    assert_eq!(w.upstream_calls(), 0);
    assert_eq!(w.proxy.spent(), Usd::ZERO);
    assert_eq!(w.proxy.refused(), 6);
}
