//! A fake GitHub OAuth App on loopback (axum): `GET /login/oauth/authorize` sends the browser
//! straight back to the `redirect_uri` with a code (as if the user were signed in and had
//! already authorized the app), `POST /login/oauth/access_token` exchanges the code (checking
//! the client secret, the redirect URI and the PKCE verifier), and `GET /user` names the user
//! the test chose. Web and API endpoints share one origin.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

use axum::extract::{Query, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use capsid_core::oauth::pkce::s256;
use capsid_core::oauth::request::with_query;
use serde_json::json;
use tokio::sync::oneshot;

/// The GitHub OAuth App's client id every test server is configured with.
pub const GITHUB_CLIENT_ID: &str = "fake-github-client";
/// Its client secret.
pub const GITHUB_CLIENT_SECRET: &str = "fake-github-secret-0123456789";

#[derive(Default)]
struct Inner {
    user: (String, i64),
    codes: HashMap<String, (String, i64, String, String)>,
    tokens: HashMap<String, (String, i64)>,
    next: u64,
    fail_exchange: bool,
    exchanges: u64,
}

/// The running fake.
#[derive(Clone)]
pub struct FakeGitHub {
    /// `http://127.0.0.1:<port>`.
    pub url: String,
    inner: Arc<Mutex<Inner>>,
    stop: Arc<Mutex<Option<oneshot::Sender<()>>>>,
}

fn lock(inner: &Mutex<Inner>) -> MutexGuard<'_, Inner> {
    inner
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

async fn authorize(
    State(inner): State<Arc<Mutex<Inner>>>,
    Query(q): Query<HashMap<String, String>>,
) -> Response {
    let (Some(redirect), Some(state)) = (q.get("redirect_uri"), q.get("state")) else {
        return (
            StatusCode::BAD_REQUEST,
            "redirect_uri and state are required",
        )
            .into_response();
    };
    if q.get("client_id").map(String::as_str) != Some(GITHUB_CLIENT_ID) {
        return (StatusCode::BAD_REQUEST, "unknown client_id").into_response();
    }
    let mut g = lock(&inner);
    g.next += 1;
    let code = format!("ghcode{}", g.next);
    let (login, id) = g.user.clone();
    let challenge = q.get("code_challenge").cloned().unwrap_or_default();
    g.codes
        .insert(code.clone(), (login, id, redirect.clone(), challenge));
    let location = with_query(redirect, &[("code", &code), ("state", state)]);
    (StatusCode::FOUND, [(header::LOCATION, location)]).into_response()
}

async fn access_token(State(inner): State<Arc<Mutex<Inner>>>, body: String) -> Response {
    let form: HashMap<String, String> = serde_urlencoded::from_str(&body).unwrap_or_default();
    let mut g = lock(&inner);
    g.exchanges += 1;
    if g.fail_exchange {
        return (
            StatusCode::INTERNAL_SERVER_ERROR,
            "GitHub is having a bad day",
        )
            .into_response();
    }
    if form.get("client_secret").map(String::as_str) != Some(GITHUB_CLIENT_SECRET) {
        return Json(json!({"error": "incorrect_client_credentials"})).into_response();
    }
    let code = form.get("code").cloned().unwrap_or_default();
    let Some((login, id, redirect, challenge)) = g.codes.remove(&code) else {
        return Json(json!({"error": "bad_verification_code"})).into_response();
    };
    if form.get("redirect_uri") != Some(&redirect) {
        return Json(json!({"error": "redirect_uri_mismatch"})).into_response();
    }
    let verifier = form.get("code_verifier").cloned().unwrap_or_default();
    if challenge.is_empty() || s256(&verifier) != challenge {
        return Json(json!({"error": "invalid_grant", "error_description": "PKCE"}))
            .into_response();
    }
    let token = format!("gho_{code}");
    g.tokens.insert(token.clone(), (login, id));
    Json(json!({"access_token": token, "token_type": "bearer", "scope": "read:user"}))
        .into_response()
}

async fn user(State(inner): State<Arc<Mutex<Inner>>>, headers: HeaderMap) -> Response {
    let token = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .unwrap_or("");
    match lock(&inner).tokens.get(token) {
        Some((login, id)) => Json(json!({"login": login, "id": id})).into_response(),
        None => (
            StatusCode::UNAUTHORIZED,
            Json(json!({"message": "Bad credentials"})),
        )
            .into_response(),
    }
}

impl FakeGitHub {
    /// Starts the fake; `login`/`id` is who signs in until [`FakeGitHub::sign_in_as`].
    pub async fn start(login: &str, id: i64) -> FakeGitHub {
        let inner = Arc::new(Mutex::new(Inner {
            user: (login.to_owned(), id),
            ..Inner::default()
        }));
        let app = Router::new()
            .route("/login/oauth/authorize", get(authorize))
            .route("/login/oauth/access_token", post(access_token))
            .route("/user", get(user))
            .with_state(inner.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind the fake GitHub");
        let port = listener.local_addr().expect("local address").port();
        let (stop, stopped) = oneshot::channel::<()>();
        tokio::spawn(async move {
            let _ = axum::serve(listener, app)
                .with_graceful_shutdown(async {
                    let _ = stopped.await;
                })
                .await;
        });
        FakeGitHub {
            url: format!("http://127.0.0.1:{port}"),
            inner,
            stop: Arc::new(Mutex::new(Some(stop))),
        }
    }

    /// From now on, `login`/`id` signs in.
    pub fn sign_in_as(&self, login: &str, id: i64) {
        lock(&self.inner).user = (login.to_owned(), id);
    }

    /// Makes every code exchange fail (500) or succeed again.
    pub fn fail_exchanges(&self, fail: bool) {
        lock(&self.inner).fail_exchange = fail;
    }

    /// How many code exchanges were attempted.
    pub fn exchanges(&self) -> u64 {
        lock(&self.inner).exchanges
    }

    /// The owner configuration of a Capsid server whose owner is `admin_login`, signing in
    /// through this fake.
    pub fn owner_config(&self, admin_login: &str) -> capsid_http::OwnerConfig {
        capsid_http::OwnerConfig {
            github_client_id: GITHUB_CLIENT_ID.into(),
            github_client_secret: GITHUB_CLIENT_SECRET.into(),
            admin_login: admin_login.into(),
            cookie_key: "test-cookie-key-0123456789abcdef".into(),
            github_web_url: self.url.clone(),
            github_api_url: self.url.clone(),
        }
    }

    /// Stops the fake.
    pub fn stop(&self) {
        if let Some(s) = self
            .stop
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take()
        {
            let _ = s.send(());
        }
    }
}
