//! The fake's front door: every request is recorded, matched against injected faults, and
//! authenticated as GitHub does: App endpoints take an RS256 JWT (signature checked with
//! the App's public key; `iss`, `iat` and `exp` checked against the test's clock), repository
//! endpoints take an unexpired, unrevoked installation token scoped to that repository.

use std::collections::HashSet;
use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use capsid_core::time::{Clock, Timestamp};
use jsonwebtoken::{Algorithm, Validation};
use serde_json::{Value, json};

use super::model::{Call, Issued, State as FakeState};
use super::{CLIENT_ID, Shared};

#[derive(serde::Deserialize)]
struct Claims {
    iss: String,
    iat: i64,
    exp: i64,
}

/// A JSON answer.
pub fn reply(status: u16, body: Value) -> Response {
    let status = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    if status == StatusCode::NO_CONTENT {
        return status.into_response();
    }
    (status, axum::Json(body)).into_response()
}

/// GitHub's error shape.
pub fn message(status: u16, text: &str) -> Response {
    reply(
        status,
        json!({"message": text, "documentation_url": "https://docs.github.com/rest"}),
    )
}

fn decode(segment: &str) -> String {
    let bytes = segment.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        if bytes[i] == b'%'
            && i + 2 < bytes.len()
            && let (Some(hi), Some(lo)) = (hex(bytes[i + 1]), hex(bytes[i + 2]))
        {
            out.push((hi * 16 + lo) as u8);
            i += 3;
            continue;
        }
        out.push(if bytes[i] == b'+' { b' ' } else { bytes[i] });
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The query string as pairs.
pub fn query(uri: &Uri) -> Vec<(String, String)> {
    uri.query()
        .unwrap_or_default()
        .split('&')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let (k, v) = p.split_once('=').unwrap_or((p, ""));
            (decode(k), decode(v))
        })
        .collect()
}

fn verify_jwt(shared: &Shared, token: &str, now: Timestamp) -> Result<(), String> {
    let mut validation = Validation::new(Algorithm::RS256);
    validation.validate_exp = false;
    validation.validate_aud = false;
    validation.required_spec_claims = HashSet::from(["iss".into(), "iat".into(), "exp".into()]);
    let data = jsonwebtoken::decode::<Claims>(token, &shared.key.decoding, &validation)
        .map_err(|e| format!("JWT refused: {e}"))?;
    let c = data.claims;
    let now = now.as_millis().div_euclid(1000);
    if c.iss != CLIENT_ID {
        return Err(format!(
            "JWT refused: iss {:?} is not the App's client id",
            c.iss
        ));
    }
    if c.iat > now + 60 {
        return Err("JWT refused: iat is in the future".into());
    }
    if c.exp <= now {
        return Err("JWT refused: expired".into());
    }
    if c.exp > now + 600 || c.exp - c.iat > 660 {
        return Err("JWT refused: exp is more than ten minutes ahead".into());
    }
    Ok(())
}

fn verify_token(st: &FakeState, token: &str, repo: &str, now: Timestamp) -> Result<(), String> {
    if st.refuse_tokens_for.contains(repo) {
        return Err(format!("token refused: every token for {repo} is refused"));
    }
    let issued = st
        .issued
        .iter()
        .find(|t| t.token == token)
        .ok_or_else(|| "token refused: unknown token".to_owned())?;
    if issued.revoked {
        return Err("token refused: revoked".into());
    }
    if issued.expires_at <= now {
        return Err("token refused: expired".into());
    }
    if !issued.repos.iter().any(|r| r == repo) {
        return Err(format!("token refused: not scoped to {repo}"));
    }
    Ok(())
}

/// Every request.
pub async fn handle(
    State(shared): State<Arc<Shared>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    if uri.path().contains("/git/blobs/") {
        shared.blob_gate.pass().await;
    }
    let now = shared.clock.now();
    let segs: Vec<String> = uri
        .path()
        .split('/')
        .filter(|s| !s.is_empty())
        .map(decode)
        .collect();
    let segs: Vec<&str> = segs.iter().map(String::as_str).collect();
    let bearer = headers
        .get(axum::http::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(str::to_owned);
    let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let q = query(&uri);
    let path = uri
        .path_and_query()
        .map(|p| p.as_str().to_owned())
        .unwrap_or_default();
    let mut st = shared.lock();
    let app_route = matches!(
        segs.as_slice(),
        ["app", ..] | ["repos", _, _, "installation"]
    );
    let repo = match segs.as_slice() {
        ["repos", owner, name, ..] if !app_route => Some(format!("{owner}/{name}")),
        _ => None,
    };
    let verdict = match (&bearer, app_route, &repo) {
        (Some(jwt), true, _) => verify_jwt(&shared, jwt, now).map(|()| "jwt"),
        (Some(token), false, Some(repo)) => verify_token(&st, token, repo, now).map(|()| "token"),
        (None, false, None) if segs.first() == Some(&"_logs") => Ok("none"),
        (None, ..) => Err("no credentials".into()),
        _ => Err("credentials sent where none are taken".into()),
    };
    st.calls.push(Call {
        method: method.to_string(),
        path: path.clone(),
        auth: verdict.as_ref().map_or("bad", |k| k).to_owned(),
    });
    if let Some(fault) = st
        .faults
        .iter_mut()
        .find(|f| f.remaining > 0 && f.method == method.as_str() && path.contains(&f.path_contains))
    {
        fault.remaining -= 1;
        let mut response = reply(
            fault.status,
            serde_json::from_str(&fault.body).unwrap_or(json!({"message": fault.body})),
        );
        for (k, v) in &fault.headers {
            if let (Ok(k), Ok(v)) = (
                axum::http::HeaderName::from_bytes(k.as_bytes()),
                axum::http::HeaderValue::from_str(v),
            ) {
                response.headers_mut().insert(k, v);
            }
        }
        return response;
    }
    if let Err(why) = verdict {
        st.refusals.push(why.clone());
        return message(
            401,
            if app_route {
                "A JSON web token could not be decoded"
            } else {
                "Bad credentials"
            },
        );
    }
    match segs.as_slice() {
        ["_logs", rest @ ..] => super::actions::log_download(&st, rest),
        ["app"] => reply(
            200,
            json!({"id": 1, "slug": "capsid-test", "name": "Capsid Test App", "client_id": CLIENT_ID}),
        ),
        ["app", "installations"] => reply(
            200,
            Value::Array(
                st.installations
                    .iter()
                    .map(|(owner, id)| json!({"id": id, "account": {"login": owner}}))
                    .collect(),
            ),
        ),
        ["app", "installations", id, "access_tokens"] if method == Method::POST => {
            access_token(&mut st, id, &body, now)
        }
        ["repos", owner, name, "installation"] => {
            match (
                st.installations.get(*owner),
                st.repos.contains_key(&format!("{owner}/{name}")),
            ) {
                (Some(id), true) => reply(200, json!({"id": id, "account": {"login": owner}})),
                _ => message(404, "Not Found"),
            }
        }
        ["repos", owner, name, rest @ ..] => {
            let full = format!("{owner}/{name}");
            let url = shared.url.clone();
            super::routes::repo(&mut st, &url, &full, &method, rest, &q, &body, now)
        }
        _ => message(404, "Not Found"),
    }
}

fn access_token(st: &mut FakeState, id: &str, body: &Value, now: Timestamp) -> Response {
    let Some(owner) = st
        .installations
        .iter()
        .find(|(_, i)| i.to_string() == id)
        .map(|(o, _)| o.clone())
    else {
        return message(404, "Not Found");
    };
    let names: Vec<String> = match body["repositories"].as_array() {
        Some(list) => list
            .iter()
            .filter_map(Value::as_str)
            .map(|n| format!("{owner}/{n}"))
            .collect(),
        None => st
            .repos
            .keys()
            .filter(|r| r.starts_with(&format!("{owner}/")))
            .cloned()
            .collect(),
    };
    if names.iter().any(|r| !st.repos.contains_key(r)) {
        return message(
            422,
            "There is at least one repository that does not exist or is not accessible to the parent installation.",
        );
    }
    let n = st.id();
    let token = format!("ghs_fake{n:036}");
    let expires_at = now.plus_millis(st.token_ttl_ms);
    st.issued.push(Issued {
        token: token.clone(),
        repos: names,
        expires_at,
        revoked: false,
    });
    reply(
        201,
        json!({"token": token, "expires_at": expires_at.to_string(),
               "permissions": {"contents": "write", "pull_requests": "write", "actions": "write"},
               "repository_selection": "selected"}),
    )
}
