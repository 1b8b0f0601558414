//! The Messages API's JSON shapes (`POST /v1/messages`), and how an answer becomes a
//! `ModelReply` or a `ModelError`: pure functions of a status, a header and bytes.

use capsid_core::ports::{ModelError, ModelMessage, ModelReply, ModelRequest, ModelUsage};
use serde::{Deserialize, Serialize};

/// The longest API message an error carries.
pub const MESSAGE_MAX: usize = 512;

/// The request body.
#[derive(Serialize)]
pub struct Body<'a> {
    model: &'a str,
    max_tokens: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    system: Option<&'a str>,
    messages: &'a [ModelMessage],
}

impl<'a> Body<'a> {
    /// The body of `request`.
    pub fn of(request: &'a ModelRequest) -> Body<'a> {
        Body {
            model: &request.model,
            max_tokens: request.max_tokens,
            system: request.system.as_deref(),
            messages: &request.messages,
        }
    }
}

#[derive(Deserialize)]
struct Answer {
    #[serde(default)]
    model: Option<String>,
    content: Vec<Block>,
    #[serde(default)]
    stop_reason: Option<String>,
    usage: Usage,
}

#[derive(Deserialize)]
struct Block {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    text: Option<String>,
}

#[derive(Deserialize)]
struct Usage {
    input_tokens: u64,
    output_tokens: u64,
    #[serde(default)]
    cache_creation_input_tokens: Option<u64>,
    #[serde(default)]
    cache_read_input_tokens: Option<u64>,
}

#[derive(Deserialize)]
struct ErrorAnswer {
    error: ErrorDetail,
}

#[derive(Deserialize)]
struct ErrorDetail {
    #[serde(rename = "type", default)]
    kind: Option<String>,
    #[serde(default)]
    message: Option<String>,
}

/// A successful answer's body as a reply: text blocks joined, other blocks ignored, and the
/// prompt tokens counted with the cache's (written or read), so a cost estimated from them
/// never undercounts. `asked` names the model when the answer does not.
pub fn reply(asked: &str, bytes: &[u8]) -> Result<ModelReply, ModelError> {
    let answer: Answer = serde_json::from_slice(bytes)
        .map_err(|e| ModelError::Failed(format!("the answer does not parse: {e}")))?;
    let text = answer
        .content
        .into_iter()
        .filter(|b| b.kind == "text")
        .filter_map(|b| b.text)
        .collect::<Vec<_>>()
        .join("");
    let usage = answer.usage;
    let input_tokens = usage
        .input_tokens
        .saturating_add(usage.cache_creation_input_tokens.unwrap_or(0))
        .saturating_add(usage.cache_read_input_tokens.unwrap_or(0));
    Ok(ModelReply {
        model: answer.model.unwrap_or_else(|| asked.to_owned()),
        text,
        stop_reason: answer.stop_reason,
        usage: ModelUsage {
            input_tokens,
            output_tokens: usage.output_tokens,
        },
    })
}

/// A refusal's status, `retry-after` header and body (`None` when it was too large to read)
/// as the error the port names, carrying the API's `error.message` when there is one.
pub fn refusal(status: u16, retry_after: Option<&str>, body: Option<&[u8]>) -> ModelError {
    let detail = body
        .and_then(|b| serde_json::from_slice::<ErrorAnswer>(b).ok())
        .map(|a| match (a.error.kind, a.error.message) {
            (Some(kind), Some(message)) => format!("{kind}: {message}"),
            (None, Some(message)) => message,
            (Some(kind), None) => kind,
            (None, None) => "no message".to_owned(),
        })
        .unwrap_or_else(|| "no error message".to_owned());
    let mut text = format!("HTTP {status}: {}", bounded(&detail));
    match status {
        401 | 403 => ModelError::Unauthorized(text),
        429 | 529 => {
            if let Some(wait) = retry_after.map(str::trim).filter(|w| !w.is_empty()) {
                text.push_str(&format!(" (retry after {} s)", bounded(wait)));
            }
            ModelError::Busy(text)
        }
        400 | 404 | 413 => ModelError::Refused(text),
        _ => ModelError::Failed(text),
    }
}

/// `text` cut to [`MESSAGE_MAX`] characters, control characters as spaces.
pub fn bounded(text: &str) -> String {
    let mut out: String = text
        .chars()
        .take(MESSAGE_MAX)
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    if text.chars().nth(MESSAGE_MAX).is_some() {
        out.push('…');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use capsid_core::ports::ModelRole;

    #[test]
    fn the_body_names_model_tokens_system_and_messages() {
        let mut request = ModelRequest {
            model: "claude-sonnet-5".into(),
            system: Some("Be brief.".into()),
            messages: vec![
                ModelMessage {
                    role: ModelRole::User,
                    content: "Hi".into(),
                },
                ModelMessage {
                    role: ModelRole::Assistant,
                    content: "Hello".into(),
                },
            ],
            max_tokens: 64,
        };
        let json = serde_json::to_value(Body::of(&request)).unwrap();
        assert_eq!(
            json,
            serde_json::json!({"model": "claude-sonnet-5", "max_tokens": 64, "system": "Be brief.",
                "messages": [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello"}]})
        );
        request.system = None;
        let json = serde_json::to_value(Body::of(&request)).unwrap();
        assert!(json.get("system").is_none(), "{json}");
    }

    #[test]
    fn text_blocks_join_and_cache_tokens_count_as_input() {
        let body = br#"{"id":"msg_1","type":"message","role":"assistant","model":"claude-haiku-4-5-20251001",
            "content":[{"type":"text","text":"a"},{"type":"tool_use","id":"t","name":"x","input":{}},{"type":"text","text":"b"}],
            "stop_reason":"max_tokens","usage":{"input_tokens":10,"output_tokens":3,
            "cache_creation_input_tokens":5,"cache_read_input_tokens":7}}"#;
        let reply = reply("claude-haiku-4-5", body).unwrap();
        assert_eq!(reply.text, "ab");
        assert_eq!(reply.model, "claude-haiku-4-5-20251001");
        assert_eq!(reply.stop_reason.as_deref(), Some("max_tokens"));
        assert_eq!(
            reply.usage,
            ModelUsage {
                input_tokens: 22,
                output_tokens: 3
            }
        );
    }

    #[test]
    fn an_answer_without_usage_or_content_fails() {
        for body in [
            &br#"{"content":[]}"#[..],
            br#"{"usage":{"input_tokens":1,"output_tokens":1}}"#,
            br#"{"content":[],"usage":{"input_tokens":-1,"output_tokens":1}}"#,
            b"not json",
        ] {
            assert!(
                matches!(reply("m", body), Err(ModelError::Failed(_))),
                "{}",
                String::from_utf8_lossy(body)
            );
        }
    }

    #[test]
    fn statuses_map_to_the_port_errors() {
        let err = br#"{"type":"error","error":{"type":"invalid_request_error","message":"max_tokens: too big"}}"#;
        for (status, expect) in [
            (401, "Unauthorized"),
            (403, "Unauthorized"),
            (429, "Busy"),
            (529, "Busy"),
            (400, "Refused"),
            (404, "Refused"),
            (413, "Refused"),
            (500, "Failed"),
            (502, "Failed"),
            (418, "Failed"),
        ] {
            let got = refusal(status, None, Some(err));
            let (kind, text) = match &got {
                ModelError::Unauthorized(t) => ("Unauthorized", t),
                ModelError::Busy(t) => ("Busy", t),
                ModelError::Refused(t) => ("Refused", t),
                ModelError::Failed(t) => ("Failed", t),
            };
            assert_eq!(kind, expect, "{status}");
            assert_eq!(
                text,
                &format!("HTTP {status}: invalid_request_error: max_tokens: too big")
            );
        }
    }

    #[test]
    fn busy_carries_retry_after_and_odd_bodies_still_map() {
        assert_eq!(
            refusal(429, Some("30"), None),
            ModelError::Busy("HTTP 429: no error message (retry after 30 s)".into())
        );
        assert_eq!(
            refusal(529, Some(" "), Some(b"{}")),
            ModelError::Busy("HTTP 529: no error message".into())
        );
        assert_eq!(
            refusal(400, None, Some(br#"{"error":{"message":"bad\nthing"}}"#)),
            ModelError::Refused("HTTP 400: bad thing".into())
        );
    }

    #[test]
    fn messages_are_bounded() {
        let long = "x".repeat(MESSAGE_MAX + 10);
        let cut = bounded(&long);
        assert_eq!(cut.chars().count(), MESSAGE_MAX + 1);
        assert!(cut.ends_with('…'));
        assert_eq!(bounded(&"y".repeat(MESSAGE_MAX)), "y".repeat(MESSAGE_MAX));
    }
}
