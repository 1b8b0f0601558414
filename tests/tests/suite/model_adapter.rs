//! The real `capsid-model` adapter against the fake Messages API over real loopback HTTP:
//! a completion and its tokens, the request as the API expects it, each refusal mapped to
//! the port's error, a bounded answer, a deadline, and the key kept out of every output.

use std::time::Duration;

use capsid_core::ports::{
    ModelClient, ModelError, ModelMessage, ModelReply, ModelRequest, ModelRole, ModelUsage,
};
use capsid_model::{AnthropicClient, BODY_MAX};
use capsid_tests::fake_model::{FakeModel, error_json};
use serde_json::json;

const KEY: &str = "sk-ant-test-0123456789-SECRET";

fn usage(input_tokens: u64, output_tokens: u64) -> ModelUsage {
    ModelUsage {
        input_tokens,
        output_tokens,
    }
}

fn ask(text: &str) -> ModelRequest {
    ModelRequest {
        model: "claude-haiku-4-5".into(),
        system: None,
        messages: vec![ModelMessage {
            role: ModelRole::User,
            content: text.into(),
        }],
        max_tokens: 256,
    }
}

async fn started() -> (FakeModel, AnthropicClient) {
    let fake = FakeModel::start(KEY).await;
    let client = AnthropicClient::new(&fake.url, KEY).expect("client");
    (fake, client)
}

/// The error's text, after checking it never carries the key.
fn text_of(error: &ModelError) -> &str {
    let shown = format!("{error} {error:?}");
    assert!(!shown.contains(KEY), "the key leaked: {shown}");
    match error {
        ModelError::Unauthorized(t)
        | ModelError::Busy(t)
        | ModelError::Refused(t)
        | ModelError::Failed(t) => t,
    }
}

#[tokio::test]
async fn a_completion_arrives_with_its_text_and_usage() {
    let (fake, client) = started().await;
    fake.push_text("Triage: fix the flaky test first.", usage(1_234, 56));
    let reply = client.complete(ask("What first?")).await.expect("a reply");
    assert_eq!(
        reply,
        ModelReply {
            model: "claude-haiku-4-5".into(),
            text: "Triage: fix the flaky test first.".into(),
            stop_reason: Some("end_turn".into()),
            usage: usage(1_234, 56),
        }
    );
    assert_eq!(fake.pending(), 0);
    assert_eq!(fake.requests().len(), 1);
}

#[tokio::test]
async fn system_prompt_messages_and_headers_are_sent_as_the_api_expects() {
    let (fake, client) = started().await;
    fake.push_text("one", usage(1, 1));
    fake.push_text("two", usage(1, 1));
    let request = ModelRequest {
        model: "claude-sonnet-5".into(),
        system: Some("You write small, safe changes.".into()),
        messages: vec![
            ModelMessage {
                role: ModelRole::User,
                content: "Propose a change.".into(),
            },
            ModelMessage {
                role: ModelRole::Assistant,
                content: "Which file?".into(),
            },
            ModelMessage {
                role: ModelRole::User,
                content: "src/lib.rs".into(),
            },
        ],
        max_tokens: 4_096,
    };
    client.complete(request).await.expect("first");
    client.complete(ask("Hi")).await.expect("second");
    let calls = fake.requests();
    assert_eq!(calls.len(), 2);
    let first = &calls[0];
    assert_eq!(first.method, "POST");
    assert_eq!(first.path, "/v1/messages");
    assert_eq!(first.header("x-api-key"), Some(KEY));
    assert_eq!(first.header("anthropic-version"), Some("2023-06-01"));
    assert_eq!(first.header("content-type"), Some("application/json"));
    assert_eq!(
        first.body,
        json!({"model": "claude-sonnet-5", "max_tokens": 4096,
               "system": "You write small, safe changes.",
               "messages": [{"role": "user", "content": "Propose a change."},
                            {"role": "assistant", "content": "Which file?"},
                            {"role": "user", "content": "src/lib.rs"}]})
    );
    assert_eq!(
        calls[1].body,
        json!({"model": "claude-haiku-4-5", "max_tokens": 256,
               "messages": [{"role": "user", "content": "Hi"}]}),
        "no system prompt means no system field"
    );
}

#[tokio::test]
async fn a_wrong_or_refused_key_is_unauthorized() {
    let fake = FakeModel::start(KEY).await;
    fake.push_text("never sent", usage(1, 1));
    let wrong = AnthropicClient::new(&fake.url, "sk-ant-wrong").expect("client");
    let err = wrong.complete(ask("Hi")).await.expect_err("refused");
    assert!(matches!(err, ModelError::Unauthorized(_)), "{err:?}");
    assert_eq!(
        text_of(&err),
        "HTTP 401: authentication_error: invalid x-api-key"
    );
    assert_eq!(fake.pending(), 1, "a refused key uses no scripted reply");
    assert_eq!(fake.requests()[0].header("x-api-key"), Some("sk-ant-wrong"));

    let client = AnthropicClient::new(&fake.url, KEY).expect("client");
    assert_eq!(
        client.complete(ask("Hi")).await.expect("reply").text,
        "never sent"
    );
    fake.push_status(403, error_json("permission_error", "key lacks access"));
    let err = client.complete(ask("Hi")).await.expect_err("refused");
    assert!(matches!(err, ModelError::Unauthorized(_)), "{err:?}");
    assert_eq!(
        text_of(&err),
        "HTTP 403: permission_error: key lacks access"
    );
}

#[tokio::test]
async fn rate_limits_and_overload_are_busy_with_their_retry_after() {
    let (fake, client) = started().await;
    fake.push_status_with(
        429,
        &[("retry-after", "17")],
        error_json(
            "rate_limit_error",
            "Number of requests has exceeded your rate limit",
        ),
    );
    fake.push_status(529, error_json("overloaded_error", "Overloaded"));
    let err = client.complete(ask("Hi")).await.expect_err("429");
    assert!(matches!(err, ModelError::Busy(_)), "{err:?}");
    assert_eq!(
        text_of(&err),
        "HTTP 429: rate_limit_error: Number of requests has exceeded your rate limit (retry after 17 s)"
    );
    let err = client.complete(ask("Hi")).await.expect_err("529");
    assert_eq!(
        err,
        ModelError::Busy("HTTP 529: overloaded_error: Overloaded".into())
    );
}

#[tokio::test]
async fn malformed_requests_are_refused_with_the_api_message_and_5xx_failed() {
    let (fake, client) = started().await;
    fake.push_status(
        400,
        error_json("invalid_request_error", "max_tokens: must be at most 64000"),
    );
    fake.push_status(404, error_json("not_found_error", "model: claude-nope"));
    fake.push_status(
        413,
        error_json("request_too_large", "Request exceeds the maximum size"),
    );
    fake.push_status(500, error_json("api_error", "Internal server error"));
    let mut seen = Vec::new();
    for _ in 0..4 {
        seen.push(client.complete(ask("Hi")).await.expect_err("refused"));
    }
    assert_eq!(
        seen,
        vec![
            ModelError::Refused(
                "HTTP 400: invalid_request_error: max_tokens: must be at most 64000".into()
            ),
            ModelError::Refused("HTTP 404: not_found_error: model: claude-nope".into()),
            ModelError::Refused(
                "HTTP 413: request_too_large: Request exceeds the maximum size".into()
            ),
            ModelError::Failed("HTTP 500: api_error: Internal server error".into()),
        ]
    );
}

#[tokio::test]
async fn an_answer_over_one_mebibyte_fails_without_being_read_whole() {
    let (fake, client) = started().await;
    // Declared too large: refused before reading.
    fake.push_oversized(BODY_MAX + 1, true);
    let err = client.complete(ask("Hi")).await.expect_err("too large");
    assert_eq!(
        text_of(&err),
        format!("the answer is larger than {BODY_MAX} bytes")
    );
    // Streamed with no length: reading stops at the bound, long before the end.
    let huge = 64 * BODY_MAX;
    fake.push_oversized(huge, false);
    let err = client.complete(ask("Hi")).await.expect_err("too large");
    assert!(matches!(err, ModelError::Failed(_)), "{err:?}");
    assert_eq!(
        text_of(&err),
        format!("the answer is larger than {BODY_MAX} bytes")
    );
    assert!(
        fake.streamed_bytes() < huge / 2,
        "the fake produced {} of {huge} bytes",
        fake.streamed_bytes()
    );
    // Exactly at the bound is read (and here fails only because it is not JSON).
    fake.push_oversized(BODY_MAX, true);
    let err = client.complete(ask("Hi")).await.expect_err("not JSON");
    assert!(
        text_of(&err).starts_with("the answer does not parse"),
        "{err:?}"
    );
    // The client still works afterwards.
    fake.push_text("fine", usage(1, 1));
    assert_eq!(
        client.complete(ask("Hi")).await.expect("reply").text,
        "fine"
    );
}

#[tokio::test]
async fn a_completion_past_its_deadline_fails() {
    let (fake, client) = started().await;
    let client = client
        .with_timeout(Duration::from_millis(300))
        .expect("client");
    fake.push_hang();
    let err = client.complete(ask("Hi")).await.expect_err("deadline");
    assert_eq!(err, ModelError::Failed("no answer within 0.3 s".into()));
}

#[tokio::test]
async fn an_unreachable_api_fails() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let url = format!("http://{}", listener.local_addr().expect("addr"));
    drop(listener);
    let client = AnthropicClient::new(&url, KEY).expect("client");
    let err = client.complete(ask("Hi")).await.expect_err("unreachable");
    assert!(matches!(err, ModelError::Failed(_)), "{err:?}");
    assert!(
        text_of(&err).starts_with("the request did not complete"),
        "{err:?}"
    );
}

#[tokio::test]
async fn the_key_is_absent_from_debug_output_and_echoed_errors() {
    let (fake, client) = started().await;
    for shown in [format!("{client:?}"), format!("{client:#?}")] {
        assert!(!shown.contains(KEY), "{shown}");
        assert!(!shown.contains("SECRET"), "{shown}");
        assert!(shown.contains(&fake.url), "{shown}");
    }
    fake.push_status(
        400,
        error_json(
            "invalid_request_error",
            &format!("bad header x-api-key: {KEY}"),
        ),
    );
    let err = client.complete(ask("Hi")).await.expect_err("refused");
    assert_eq!(
        text_of(&err),
        "HTTP 400: invalid_request_error: bad header x-api-key: <redacted>"
    );
}

#[tokio::test]
async fn the_check_lists_models_without_a_completion_and_names_a_refused_key() {
    let (fake, client) = started().await;
    client.check().await.expect("the key is accepted");
    let wrong = AnthropicClient::new(&fake.url, "sk-ant-wrong").expect("client");
    let err = wrong.check().await.expect_err("refused");
    assert_eq!(
        err,
        ModelError::Unauthorized("HTTP 401: authentication_error: invalid x-api-key".into())
    );
    let calls = fake.requests();
    assert_eq!(calls.len(), 2);
    assert_eq!(
        (calls[0].method.as_str(), calls[0].path.as_str()),
        ("GET", "/v1/models")
    );
    assert_eq!(calls[0].header("x-api-key"), Some(KEY));
    assert_eq!(calls[0].header("anthropic-version"), Some("2023-06-01"));
}
