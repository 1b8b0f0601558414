//! `POST /csp-report`: browsers' CSP and COOP violation reports, logged. Bounded (16,384
//! bytes), only the two report content types, only JSON shaped like a report, and limited per
//! address (300 an hour, 1,000 a day; 429 with `Retry-After`).

use axum::extract::{Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use crate::AppState;
use crate::oauth::{BodyError, client_addr, read_body};

/// The largest report read.
pub const MAX_REPORT_BYTES: usize = 16_384;

fn answer(status: StatusCode, why: &str) -> Response {
    (status, axum::Json(json!({"error": why}))).into_response()
}

/// Whether `v` looks like a CSP report (`{"csp-report": {...}}`) or a Reporting API batch
/// (`[{"type": ..., "body": {...}}]`).
pub fn is_report(v: &Value) -> bool {
    match v {
        Value::Object(m) => m.get("csp-report").is_some_and(Value::is_object),
        Value::Array(items) => {
            !items.is_empty()
                && items.len() <= 100
                && items
                    .iter()
                    .all(|i| i["type"].is_string() && i["body"].is_object())
        }
        _ => false,
    }
}

fn short(v: &Value) -> String {
    let mut s = v.to_string();
    s.truncate(512);
    s
}

/// The route.
pub async fn csp_report(State(state): State<AppState>, req: Request) -> Response {
    let addr = client_addr(&state, &req);
    let content_type = req
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    if content_type != "application/csp-report" && content_type != "application/reports+json" {
        return answer(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "send application/csp-report or application/reports+json",
        );
    }
    match state.owner_service.rate_limit("csp", &addr).await {
        Ok(Some(over)) => {
            let mut resp = answer(StatusCode::TOO_MANY_REQUESTS, &over.describe("reports"));
            if let Ok(v) = HeaderValue::from_str(&over.retry_after_secs.to_string()) {
                resp.headers_mut().insert(header::RETRY_AFTER, v);
            }
            return resp;
        }
        Ok(None) => {}
        Err(e) => {
            tracing::warn!(error = %e, "csp-report limiter unavailable");
            return answer(StatusCode::SERVICE_UNAVAILABLE, "try again later");
        }
    }
    let bytes = match read_body(req.into_body(), MAX_REPORT_BYTES).await {
        Ok(b) => b,
        Err(BodyError::TooLarge) => {
            return answer(
                StatusCode::PAYLOAD_TOO_LARGE,
                "a report is at most 16384 bytes",
            );
        }
        Err(BodyError::Malformed(m)) => return answer(StatusCode::BAD_REQUEST, &m),
    };
    let Ok(report) = serde_json::from_slice::<Value>(&bytes) else {
        return answer(StatusCode::BAD_REQUEST, "the report is not JSON");
    };
    if !is_report(&report) {
        return answer(
            StatusCode::BAD_REQUEST,
            "the JSON is not shaped like a report",
        );
    }
    tracing::warn!(addr = %addr, report = %short(&report), "content security policy report");
    StatusCode::NO_CONTENT.into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn report_shapes() {
        assert!(is_report(
            &json!({"csp-report": {"violated-directive": "style-src"}})
        ));
        assert!(is_report(&json!([{"type": "csp-violation", "body": {}}])));
        assert!(!is_report(&json!({"hello": 1})));
        assert!(!is_report(&json!([])));
        assert!(!is_report(&json!([{"type": 1}])));
        assert!(!is_report(&json!("x")));
    }
}
