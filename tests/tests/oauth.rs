//! The owner's way in over real HTTP: the authorization server (one negative test per row of
//! the RFC 9700 / OAuth 2.1 checklist, perf-security-anchors D.4), the full login through a
//! fake GitHub ending with a real MCP client on `/mcp`, `/csp-report`, and the console (also
//! rendered by headless Chromium). Every server runs over SQLite with a `ManualClock`.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use capsid_core::caller::Caller;
use capsid_core::oauth::pkce::s256;
use capsid_core::oauth::request::with_query;
use capsid_core::oauth::{ACCESS_TOKEN_TTL_MS, CLIENT_TTL_MS, CODE_TTL_MS, GRANT_TTL_MS};
use capsid_core::ports::AuditFilter;
use capsid_core::service::NoConfirmer;
use capsid_core::time::{HOUR_MS, MINUTE_MS};
use capsid_store_sqlite::SqliteStore;
use capsid_tests::fake_github_login::FakeGitHub;
use capsid_tests::server::{Client, ServerOptions, TestServer};
use reqwest::header::{HeaderMap, LOCATION, SET_COOKIE};
use serde_json::{Value, json};

const OWNER: &str = "octo";
const OWNER_ID: i64 = 4242;
const REDIRECT: &str = "http://127.0.0.1:7777/callback";
const VERIFIER: &str = "a-long-enough-pkce-verifier-for-the-tests-0123456789abcdef";

// ---------------------------------------------------------------------------------------------
// The environment: a server over a fresh SQLite file, a fake GitHub, a cookie-keeping browser.

struct Env {
    server: TestServer,
    github: FakeGitHub,
    db: PathBuf,
    _dir: tempfile::TempDir,
}

async fn sqlite() -> (tempfile::TempDir, PathBuf, Arc<SqliteStore>) {
    let dir = tempfile::tempdir().expect("temporary folder");
    let path = dir.path().join("capsid.db");
    let store = SqliteStore::open(&format!("sqlite://{}", path.display()))
        .await
        .expect("open sqlite");
    store.migrate().await.expect("migrate");
    (dir, path, Arc::new(store))
}

impl Env {
    async fn start() -> Env {
        Env::start_as(OWNER).await
    }

    async fn start_as(admin_login: &str) -> Env {
        let github = FakeGitHub::start(OWNER, OWNER_ID).await;
        let (dir, db, store) = sqlite().await;
        let gh = github.clone();
        let admin = admin_login.to_owned();
        let server = TestServer::start_with_owner(store, ServerOptions::default(), move |_| {
            Some(gh.owner_config(&admin))
        })
        .await;
        Env {
            server,
            github,
            db,
            _dir: dir,
        }
    }

    /// A second server over the same store, at its own URL (another audience), owned by
    /// `admin_login`.
    async fn twin(&self, admin_login: &str) -> TestServer {
        let gh = self.github.clone();
        let admin = admin_login.to_owned();
        TestServer::start_with_owner(
            self.server.store.clone(),
            ServerOptions::default(),
            move |_| Some(gh.owner_config(&admin)),
        )
        .await
    }

    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.server.url)
    }

    fn resource(&self) -> String {
        self.url("/mcp")
    }

    fn advance(&self, ms: i64) {
        self.server.clock.advance(ms);
    }

    async fn register_json(&self, body: Value) -> Resp {
        raw_post(
            &self.url("/register"),
            "application/json",
            body.to_string(),
            &[],
        )
        .await
    }

    /// Registers a public client with `redirects`; its id.
    async fn register(&self, redirects: &[&str]) -> String {
        let r = self
            .register_json(json!({"client_name": "Test client", "redirect_uris": redirects}))
            .await;
        assert_eq!(r.status, 201, "register: {}", r.body);
        r.json()["client_id"]
            .as_str()
            .expect("client_id")
            .to_owned()
    }

    /// The query of a good authorization request of `client`.
    fn authorize_query(&self, client: &str) -> Vec<(String, String)> {
        vec![
            ("response_type".into(), "code".into()),
            ("client_id".into(), client.into()),
            ("redirect_uri".into(), REDIRECT.into()),
            ("code_challenge".into(), s256(VERIFIER)),
            ("code_challenge_method".into(), "S256".into()),
            ("resource".into(), self.resource()),
            ("scope".into(), "mcp".into()),
            ("state".into(), "client-state-1".into()),
        ]
    }

    fn authorize_url(&self, query: &[(String, String)]) -> String {
        let pairs: Vec<(&str, &str)> = query
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        with_query(&self.url("/authorize"), &pairs)
    }

    /// Consent (approve) for `query` in `browser`: the response of `POST /authorize`.
    async fn consent(&self, browser: &mut Browser, query: &[(String, String)]) -> Resp {
        let page = browser.get(&self.authorize_url(query)).await;
        assert_eq!(page.status, 200, "consent page: {}", page.body);
        let csrf = hidden(&page.body, "csrf");
        let mut form: Vec<(String, String)> = query.to_vec();
        form.push(("csrf".into(), csrf));
        form.push(("decision".into(), "approve".into()));
        browser.post_form(&self.url("/authorize"), &form).await
    }

    /// The whole sign-in of `query`: consent, GitHub, callback. The final response (a
    /// redirect to the client on success).
    async fn sign_in(&self, browser: &mut Browser, query: &[(String, String)]) -> Resp {
        let to_github = self.consent(browser, query).await;
        assert_eq!(to_github.status, 302, "to GitHub: {}", to_github.body);
        let back = browser.get(&to_github.location()).await;
        assert_eq!(back.status, 302, "GitHub sends the browser back");
        browser.get(&back.location()).await
    }

    /// A code for a good request of a fresh client (its id, the code).
    async fn code(&self) -> (String, String) {
        let client = self.register(&[REDIRECT]).await;
        let mut browser = Browser::new();
        let done = self
            .sign_in(&mut browser, &self.authorize_query(&client))
            .await;
        assert_eq!(done.status, 302, "callback: {}", done.body);
        let q = query_of(&done.location());
        (client, q["code"].clone())
    }

    async fn token(&self, form: &[(&str, &str)]) -> Resp {
        let body = serde_urlencoded::to_string(form).expect("form");
        raw_post(
            &self.url("/token"),
            "application/x-www-form-urlencoded",
            body,
            &[],
        )
        .await
    }

    async fn exchange(&self, client: &str, code: &str) -> Resp {
        let resource = self.resource();
        self.token(&[
            ("grant_type", "authorization_code"),
            ("client_id", client),
            ("code", code),
            ("redirect_uri", REDIRECT),
            ("code_verifier", VERIFIER),
            ("resource", &resource),
        ])
        .await
    }

    /// Signs in and exchanges the code: (client, access token, refresh token).
    async fn tokens(&self) -> (String, String, String) {
        let (client, code) = self.code().await;
        let t = self.exchange(&client, &code).await;
        assert_eq!(t.status, 200, "token: {}", t.body);
        let j = t.json();
        (
            client,
            j["access_token"].as_str().expect("access").to_owned(),
            j["refresh_token"].as_str().expect("refresh").to_owned(),
        )
    }

    async fn refresh(&self, client: &str, refresh: &str) -> Resp {
        self.token(&[
            ("grant_type", "refresh_token"),
            ("client_id", client),
            ("refresh_token", refresh),
        ])
        .await
    }

    /// `POST /mcp` (a `ping`) with `token`: the status.
    async fn mcp_status(&self, token: &str) -> Resp {
        mcp_ping(&self.resource(), token).await
    }

    /// Every byte of the database files.
    fn db_bytes(&self) -> Vec<u8> {
        let mut out = std::fs::read(&self.db).unwrap_or_default();
        let mut wal = self.db.clone().into_os_string();
        wal.push("-wal");
        out.extend(std::fs::read(PathBuf::from(wal)).unwrap_or_default());
        out
    }

    async fn audit_actions(&self) -> Vec<(String, String)> {
        self.server
            .store
            .recent_audit(&AuditFilter::default(), 500)
            .await
            .expect("audit")
            .into_iter()
            .map(|r| (r.action.unwrap_or_default(), r.actor.unwrap_or_default()))
            .collect()
    }
}

async fn mcp_ping(url: &str, token: &str) -> Resp {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}).to_string();
    raw_post(
        url,
        "application/json",
        body,
        &[
            ("authorization", &format!("Bearer {token}")),
            ("accept", "application/json, text/event-stream"),
        ],
    )
    .await
}

/// A response, read whole.
struct Resp {
    status: u16,
    headers: HeaderMap,
    body: String,
}

impl Resp {
    fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or(Value::Null)
    }

    fn header(&self, name: &str) -> String {
        self.headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_owned()
    }

    fn location(&self) -> String {
        let l = self.header(LOCATION.as_str());
        assert!(
            !l.is_empty(),
            "expected a redirect, got {} {}",
            self.status,
            self.body
        );
        l
    }

    fn error(&self) -> String {
        self.json()["error"].as_str().unwrap_or_default().to_owned()
    }
}

fn http() -> reqwest::Client {
    capsid_http::install_tls_provider();
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .expect("http client")
}

async fn read(resp: reqwest::Response) -> Resp {
    let status = resp.status().as_u16();
    let headers = resp.headers().clone();
    let body = resp.text().await.unwrap_or_default();
    Resp {
        status,
        headers,
        body,
    }
}

async fn raw_post(url: &str, content_type: &str, body: String, headers: &[(&str, &str)]) -> Resp {
    let mut req = http()
        .post(url)
        .header("content-type", content_type)
        .body(body);
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    read(req.send().await.expect("POST")).await
}

/// The query parameters of a URL.
fn query_of(url: &str) -> BTreeMap<String, String> {
    let q = url.split_once('?').map_or("", |(_, q)| q);
    serde_urlencoded::from_str(q).unwrap_or_default()
}

/// The value of the hidden field `name` in an HTML page.
fn hidden(html: &str, name: &str) -> String {
    let marker = format!("name=\"{name}\" value=\"");
    let start = html
        .find(&marker)
        .map(|i| i + marker.len())
        .unwrap_or_else(|| panic!("no hidden {name} in {html}"));
    html[start..]
        .split('"')
        .next()
        .unwrap_or_default()
        .to_owned()
}

/// A browser: keeps cookies by name, never follows redirects on its own.
struct Browser {
    jar: BTreeMap<String, String>,
}

impl Browser {
    fn new() -> Browser {
        Browser {
            jar: BTreeMap::new(),
        }
    }

    fn cookie_header(&self) -> String {
        self.jar
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join("; ")
    }

    fn absorb(&mut self, headers: &HeaderMap) {
        for v in headers.get_all(SET_COOKIE) {
            let text = v.to_str().unwrap_or_default();
            let pair = text.split(';').next().unwrap_or_default();
            let Some((name, value)) = pair.split_once('=') else {
                continue;
            };
            if text.contains("Max-Age=0") || value.is_empty() {
                self.jar.remove(name.trim());
            } else {
                self.jar.insert(name.trim().to_owned(), value.to_owned());
            }
        }
    }

    async fn get(&mut self, url: &str) -> Resp {
        let resp = http()
            .get(url)
            .header("cookie", self.cookie_header())
            .send()
            .await
            .expect("GET");
        let r = read(resp).await;
        self.absorb(&r.headers);
        r
    }

    async fn post_form(&mut self, url: &str, form: &[(String, String)]) -> Resp {
        let resp = http()
            .post(url)
            .header("cookie", self.cookie_header())
            .header("content-type", "application/x-www-form-urlencoded")
            .body(serde_urlencoded::to_string(form).expect("form"))
            .send()
            .await
            .expect("POST");
        let r = read(resp).await;
        self.absorb(&r.headers);
        r
    }

    /// Follows redirects from `url` (relative ones against `origin`) until a non-redirect.
    async fn follow(&mut self, origin: &str, url: &str) -> Resp {
        let mut next = url.to_owned();
        for _ in 0..10 {
            let r = self.get(&next).await;
            if !(300..400).contains(&r.status) {
                return r;
            }
            let l = r.location();
            next = if l.starts_with('/') {
                format!("{origin}{l}")
            } else {
                l
            };
        }
        panic!("too many redirects from {url}");
    }
}

fn set(query: &mut [(String, String)], key: &str, value: &str) {
    for (k, v) in query.iter_mut() {
        if k == key {
            *v = value.to_owned();
        }
    }
}

fn without(query: &[(String, String)], key: &str) -> Vec<(String, String)> {
    query.iter().filter(|(k, _)| k != key).cloned().collect()
}

/// An authorization request with `redirect_uri` replaced is refused on the page: 400, and the
/// browser is sent nowhere.
async fn refused_on_page(env: &Env, client: &str, redirect: &str) {
    let mut q = env.authorize_query(client);
    set(&mut q, "redirect_uri", redirect);
    let r = Browser::new().get(&env.authorize_url(&q)).await;
    assert_eq!(r.status, 400, "{redirect:?} should be refused: {}", r.body);
    assert!(
        r.header("location").is_empty(),
        "never redirected to {redirect:?}"
    );
    assert!(r.body.contains("not registered"), "{}", r.body);
}

/// An authorization request changed by `change` goes back to the client with `error`.
async fn refused_to_client(
    env: &Env,
    change: impl FnOnce(&mut Vec<(String, String)>),
    error: &str,
) {
    let client = env.register(&[REDIRECT]).await;
    let mut q = env.authorize_query(&client);
    change(&mut q);
    let r = Browser::new().get(&env.authorize_url(&q)).await;
    assert_eq!(r.status, 302, "{}", r.body);
    let l = r.location();
    assert!(l.starts_with(REDIRECT), "{l}");
    let back = query_of(&l);
    assert_eq!(back["error"], error, "{l}");
    assert_eq!(back["iss"], env.server.url, "RFC 9207 iss on errors too");
    assert_eq!(back["state"], "client-state-1");
    assert!(!back.contains_key("code"));
}

async fn register_refused(env: &Env, redirect: &str) {
    let r = env
        .register_json(json!({"redirect_uris": [redirect]}))
        .await;
    assert_eq!(r.status, 400, "{redirect:?} registered: {}", r.body);
    assert_eq!(r.error(), "invalid_redirect_uri", "{}", r.body);
}

// ---------------------------------------------------------------------------------------------
// D.4 row 1: redirect URIs match exactly; registration validates them.

#[tokio::test]
async fn authorize_refuses_a_redirect_registered_only_by_another_client() {
    let env = Env::start().await;
    let client = env.register(&[REDIRECT]).await;
    env.register(&["https://evil.example/cb"]).await;
    refused_on_page(&env, &client, "https://evil.example/cb").await;
}

#[tokio::test]
async fn authorize_refuses_a_trailing_slash() {
    let env = Env::start().await;
    let client = env.register(&[REDIRECT]).await;
    refused_on_page(&env, &client, &format!("{REDIRECT}/")).await;
}

#[tokio::test]
async fn authorize_refuses_a_case_change_in_the_path() {
    let env = Env::start().await;
    let client = env.register(&[REDIRECT]).await;
    refused_on_page(&env, &client, "http://127.0.0.1:7777/Callback").await;
}

#[tokio::test]
async fn authorize_refuses_an_encoded_slash() {
    let env = Env::start().await;
    let client = env.register(&["https://app.example/a/b"]).await;
    refused_on_page(&env, &client, "https://app.example/a%2Fb").await;
}

#[tokio::test]
async fn authorize_refuses_userinfo() {
    let env = Env::start().await;
    let client = env.register(&["https://app.example/cb"]).await;
    refused_on_page(&env, &client, "https://app.example@evil.example/cb").await;
    refused_on_page(&env, &client, "https://evil.example@app.example/cb").await;
}

#[tokio::test]
async fn authorize_refuses_a_fragment_and_an_extra_query() {
    let env = Env::start().await;
    let client = env.register(&["https://app.example/cb"]).await;
    refused_on_page(&env, &client, "https://app.example/cb#x").await;
    refused_on_page(&env, &client, "https://app.example/cb?next=evil").await;
}

#[tokio::test]
async fn authorize_refuses_a_scheme_swap() {
    let env = Env::start().await;
    let client = env.register(&["https://app.example/cb"]).await;
    refused_on_page(&env, &client, "http://app.example/cb").await;
    let loopback = env.register(&[REDIRECT]).await;
    refused_on_page(&env, &loopback, "https://127.0.0.1:7777/callback").await;
}

#[tokio::test]
async fn authorize_refuses_whitespace_and_control_characters() {
    let env = Env::start().await;
    let client = env.register(&[REDIRECT]).await;
    for trick in [
        format!(" {REDIRECT}"),
        format!("{REDIRECT} "),
        format!("{REDIRECT}\t"),
        format!("{REDIRECT}\u{0}"),
        format!("{REDIRECT}\r\nX: y"),
        "HTTP://127.0.0.1:7777/callback".to_owned(),
    ] {
        refused_on_page(&env, &client, &trick).await;
    }
}

#[tokio::test]
async fn register_refuses_mixed_case_schemes_and_hosts() {
    let env = Env::start().await;
    register_refused(&env, "HTTPS://app.example/cb").await;
    register_refused(&env, "Https://app.example/cb").await;
    register_refused(&env, "https://App.Example/cb").await;
}

#[tokio::test]
async fn register_refuses_whitespace_and_control_characters() {
    let env = Env::start().await;
    register_refused(&env, " https://app.example/cb").await;
    register_refused(&env, "https://app.example/cb\n").await;
    register_refused(&env, "https://app.example/c\tb").await;
    register_refused(&env, "https://app.example/c\u{0}b").await;
    register_refused(&env, "https://app.example/c\u{7f}b").await;
}

#[tokio::test]
async fn register_refuses_dangerous_schemes() {
    let env = Env::start().await;
    register_refused(&env, "javascript:alert(1)").await;
    register_refused(&env, "data:text/html,hi").await;
    register_refused(&env, "file:///etc/passwd").await;
    register_refused(&env, "//evil.example/cb").await;
}

#[tokio::test]
async fn register_refuses_plain_http_off_loopback() {
    let env = Env::start().await;
    register_refused(&env, "http://app.example/cb").await;
    register_refused(&env, "http://10.0.0.1/cb").await;
}

#[tokio::test]
async fn register_refuses_userinfo_and_fragments() {
    let env = Env::start().await;
    register_refused(&env, "https://app.example@evil.example/cb").await;
    register_refused(&env, "https://app.example/cb#frag").await;
    register_refused(&env, "https://app.example\\@evil.example/cb").await;
}

#[tokio::test]
async fn token_refuses_a_redirect_other_than_the_codes() {
    let env = Env::start().await;
    let (client, code) = env.code().await;
    let resource = env.resource();
    let r = env
        .token(&[
            ("grant_type", "authorization_code"),
            ("client_id", &client),
            ("code", &code),
            ("redirect_uri", "http://127.0.0.1:7777/callback/"),
            ("code_verifier", VERIFIER),
            ("resource", &resource),
        ])
        .await;
    assert_eq!(
        (r.status, r.error().as_str()),
        (400, "invalid_grant"),
        "{}",
        r.body
    );
    let r = env
        .token(&[
            ("grant_type", "authorization_code"),
            ("client_id", &client),
            ("code", &code),
            ("code_verifier", VERIFIER),
        ])
        .await;
    assert_eq!(
        r.error(),
        "invalid_grant",
        "a missing redirect_uri: {}",
        r.body
    );
}

// ---------------------------------------------------------------------------------------------
// Row 2: PKCE S256 only.

#[tokio::test]
async fn authorize_refuses_plain_pkce() {
    let env = Env::start().await;
    refused_to_client(
        &env,
        |q| {
            set(q, "code_challenge_method", "plain");
            set(q, "code_challenge", VERIFIER);
        },
        "invalid_request",
    )
    .await;
}

#[tokio::test]
async fn authorize_refuses_a_missing_challenge() {
    let env = Env::start().await;
    refused_to_client(
        &env,
        |q| *q = without(q, "code_challenge"),
        "invalid_request",
    )
    .await;
    refused_to_client(
        &env,
        |q| *q = without(q, "code_challenge_method"),
        "invalid_request",
    )
    .await;
}

#[tokio::test]
async fn pkce_downgrade_gets_no_code_and_a_verifier_cannot_stand_in() {
    // CVE-2025-4144: a request without a challenge must not yield a code that a verifier
    // (or its absence) can then redeem.
    let env = Env::start().await;
    let client = env.register(&[REDIRECT]).await;
    let q = without(
        &without(&env.authorize_query(&client), "code_challenge"),
        "code_challenge_method",
    );
    let mut browser = Browser::new();
    let r = browser.get(&env.authorize_url(&q)).await;
    assert_eq!(r.status, 302);
    assert_eq!(query_of(&r.location())["error"], "invalid_request");
    assert!(
        !browser.jar.contains_key("capsid_csrf"),
        "no consent was offered"
    );
    // And a real code redeemed without its verifier, or with another one, fails.
    let (client, code) = env.code().await;
    for verifier in [None, Some("x".repeat(43)), Some(s256(VERIFIER))] {
        let mut form = vec![
            ("grant_type", "authorization_code"),
            ("client_id", client.as_str()),
            ("code", code.as_str()),
            ("redirect_uri", REDIRECT),
        ];
        if let Some(v) = &verifier {
            form.push(("code_verifier", v.as_str()));
        }
        let r = env.token(&form).await;
        assert_eq!(
            r.error(),
            "invalid_grant",
            "verifier {verifier:?}: {}",
            r.body
        );
    }
    // The code is still good for its own verifier (a failed PKCE check does not spend it).
    assert_eq!(env.exchange(&client, &code).await.status, 200);
}

// ---------------------------------------------------------------------------------------------
// Rows 3 and 4: codes are single-use and short-lived.

#[tokio::test]
async fn a_replayed_code_is_refused_and_revokes_what_it_issued() {
    let env = Env::start().await;
    let (client, code) = env.code().await;
    let first = env.exchange(&client, &code).await;
    assert_eq!(first.status, 200, "{}", first.body);
    let access = first.json()["access_token"].as_str().unwrap().to_owned();
    let refresh = first.json()["refresh_token"].as_str().unwrap().to_owned();
    assert_eq!(env.mcp_status(&access).await.status, 200);
    let replay = env.exchange(&client, &code).await;
    assert_eq!(
        (replay.status, replay.error().as_str()),
        (400, "invalid_grant")
    );
    assert!(replay.body.contains("revoked"), "{}", replay.body);
    assert_eq!(
        env.mcp_status(&access).await.status,
        401,
        "the first access token is revoked"
    );
    assert_eq!(
        env.refresh(&client, &refresh).await.error(),
        "invalid_grant",
        "and its refresh token"
    );
}

#[tokio::test]
async fn a_code_expires_after_ten_minutes() {
    let env = Env::start().await;
    let (client, code) = env.code().await;
    env.advance(CODE_TTL_MS);
    let r = env.exchange(&client, &code).await;
    assert_eq!(r.error(), "invalid_grant", "{}", r.body);
    assert!(r.body.contains("expired"), "{}", r.body);
}

#[tokio::test]
async fn a_code_of_another_client_is_refused() {
    let env = Env::start().await;
    let (_, code) = env.code().await;
    let other = env.register(&[REDIRECT]).await;
    let r = env.exchange(&other, &code).await;
    assert_eq!(r.error(), "invalid_grant", "{}", r.body);
}

#[tokio::test]
async fn an_unknown_code_or_client_is_refused() {
    let env = Env::start().await;
    let (client, _) = env.code().await;
    assert_eq!(
        env.exchange(&client, "capsid_ac_guess").await.error(),
        "invalid_grant"
    );
    let r = env
        .exchange("capsid_client_nobody", "capsid_ac_guess")
        .await;
    assert_eq!(
        (r.status, r.error().as_str()),
        (401, "invalid_client"),
        "{}",
        r.body
    );
}

// ---------------------------------------------------------------------------------------------
// Row 5: only the code and refresh grants.

#[tokio::test]
async fn the_implicit_flow_is_refused() {
    let env = Env::start().await;
    refused_to_client(
        &env,
        |q| set(q, "response_type", "token"),
        "unsupported_response_type",
    )
    .await;
    refused_to_client(
        &env,
        |q| set(q, "response_type", "code token"),
        "unsupported_response_type",
    )
    .await;
}

#[tokio::test]
async fn the_password_and_client_credentials_grants_are_refused() {
    let env = Env::start().await;
    let client = env.register(&[REDIRECT]).await;
    for grant in ["password", "client_credentials", "implicit", ""] {
        let r = env
            .token(&[
                ("grant_type", grant),
                ("client_id", &client),
                ("username", "octo"),
                ("password", "x"),
            ])
            .await;
        assert_eq!(r.status, 400, "{grant}: {}", r.body);
        assert!(
            matches!(
                r.error().as_str(),
                "unsupported_grant_type" | "invalid_request"
            ),
            "{}",
            r.body
        );
    }
}

#[tokio::test]
async fn register_refuses_the_implicit_grant() {
    let env = Env::start().await;
    let r = env
        .register_json(json!({"redirect_uris": [REDIRECT], "grant_types": ["implicit"]}))
        .await;
    assert_eq!(
        (r.status, r.error().as_str()),
        (400, "invalid_client_metadata")
    );
    let r = env
        .register_json(json!({"redirect_uris": [REDIRECT], "response_types": ["token"]}))
        .await;
    assert_eq!(r.status, 400, "{}", r.body);
}

// ---------------------------------------------------------------------------------------------
// Rows 6 and 7: refresh tokens rotate; reuse revokes the grant; grants end.

#[tokio::test]
async fn refresh_tokens_rotate_and_reuse_revokes_the_whole_grant() {
    let env = Env::start().await;
    let (client, access0, rt0) = env.tokens().await;
    let r1 = env.refresh(&client, &rt0).await;
    assert_eq!(r1.status, 200, "{}", r1.body);
    let rt1 = r1.json()["refresh_token"].as_str().unwrap().to_owned();
    let access1 = r1.json()["access_token"].as_str().unwrap().to_owned();
    assert_ne!(rt1, rt0, "rotated");
    assert_eq!(env.mcp_status(&access1).await.status, 200);
    let reuse = env.refresh(&client, &rt0).await;
    assert_eq!(reuse.error(), "invalid_grant", "{}", reuse.body);
    assert!(reuse.body.contains("reuse"), "{}", reuse.body);
    assert_eq!(
        env.refresh(&client, &rt1).await.error(),
        "invalid_grant",
        "RT1 is revoked too"
    );
    assert_eq!(
        env.mcp_status(&access1).await.status,
        401,
        "and the grant's access tokens"
    );
    assert_eq!(env.mcp_status(&access0).await.status, 401);
}

#[tokio::test]
async fn a_refresh_token_of_another_client_is_refused() {
    let env = Env::start().await;
    let (_, _, rt) = env.tokens().await;
    let other = env.register(&[REDIRECT]).await;
    assert_eq!(env.refresh(&other, &rt).await.error(), "invalid_grant");
}

#[tokio::test]
async fn a_grant_has_an_absolute_end_however_often_it_rotates() {
    let env = Env::start().await;
    let (client, _, mut rt) = env.tokens().await;
    let mut elapsed = 0;
    while elapsed + 7 * 24 * HOUR_MS < GRANT_TTL_MS {
        env.advance(7 * 24 * HOUR_MS);
        elapsed += 7 * 24 * HOUR_MS;
        let r = env.refresh(&client, &rt).await;
        assert_eq!(
            r.status,
            200,
            "day {}: {}",
            elapsed / (24 * HOUR_MS),
            r.body
        );
        rt = r.json()["refresh_token"].as_str().unwrap().to_owned();
    }
    env.advance(GRANT_TTL_MS - elapsed);
    let r = env.refresh(&client, &rt).await;
    assert_eq!(r.error(), "invalid_grant", "{}", r.body);
}

#[tokio::test]
async fn refresh_refuses_a_wider_scope_and_another_resource() {
    let env = Env::start().await;
    let (client, _, rt) = env.tokens().await;
    let r = env
        .token(&[
            ("grant_type", "refresh_token"),
            ("client_id", &client),
            ("refresh_token", &rt),
            ("scope", "mcp admin"),
        ])
        .await;
    assert_eq!(r.error(), "invalid_scope", "{}", r.body);
    let r = env
        .token(&[
            ("grant_type", "refresh_token"),
            ("client_id", &client),
            ("refresh_token", &rt),
            ("resource", "https://other.example/mcp"),
        ])
        .await;
    assert_eq!(r.error(), "invalid_target", "{}", r.body);
}

// ---------------------------------------------------------------------------------------------
// Row 8: short access tokens bound to this audience; the resource server's checks.

#[tokio::test]
async fn access_tokens_are_short_lived() {
    let env = Env::start().await;
    let (_, access, _) = env.tokens().await;
    env.advance(ACCESS_TOKEN_TTL_MS - 1000);
    assert_eq!(env.mcp_status(&access).await.status, 200);
    env.advance(1000);
    let r = env.mcp_status(&access).await;
    assert_eq!(r.status, 401);
    assert!(
        r.header("www-authenticate").contains("invalid_token"),
        "{}",
        r.header("www-authenticate")
    );
}

#[tokio::test]
async fn a_token_for_another_audience_gets_401() {
    let env = Env::start().await;
    let (_, access, _) = env.tokens().await;
    // The same store behind another public URL: another protected resource.
    let other = env.twin(OWNER).await;
    let r = mcp_ping(&format!("{}/mcp", other.url), &access).await;
    assert_eq!(r.status, 401, "{}", r.body);
    assert!(r.body.contains("issued for"), "{}", r.body);
    other.stop().await;
}

#[tokio::test]
async fn authorize_and_token_refuse_another_resource() {
    let env = Env::start().await;
    refused_to_client(
        &env,
        |q| set(q, "resource", "https://other.example/mcp"),
        "invalid_target",
    )
    .await;
    let (client, code) = env.code().await;
    let r = env
        .token(&[
            ("grant_type", "authorization_code"),
            ("client_id", &client),
            ("code", &code),
            ("redirect_uri", REDIRECT),
            ("code_verifier", VERIFIER),
            ("resource", "https://other.example/mcp"),
        ])
        .await;
    assert_eq!(r.error(), "invalid_target", "{}", r.body);
}

#[tokio::test]
async fn mcp_without_a_token_points_at_the_resource_metadata() {
    let env = Env::start().await;
    let r = raw_post(&env.resource(), "application/json", "{}".into(), &[]).await;
    assert_eq!(r.status, 401);
    let challenge = r.header("www-authenticate");
    let metadata = env.url("/.well-known/oauth-protected-resource/mcp");
    assert!(
        challenge.contains(&format!("resource_metadata=\"{metadata}\"")),
        "{challenge}"
    );
    let prm: Value = http()
        .get(&metadata)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(prm["resource"], env.resource());
    assert_eq!(prm["authorization_servers"][0], env.server.url);
}

#[tokio::test]
async fn mcp_refuses_garbage_refresh_and_query_tokens() {
    let env = Env::start().await;
    let (_, access, refresh) = env.tokens().await;
    assert_eq!(env.mcp_status("capsid_at_guess").await.status, 401);
    assert_eq!(
        env.mcp_status(&refresh).await.status,
        401,
        "a refresh token is not an access token"
    );
    let r = raw_post(
        &format!("{}?access_token={access}", env.resource()),
        "application/json",
        "{}".into(),
        &[],
    )
    .await;
    assert_eq!(r.status, 401, "tokens only in the Authorization header");
}

#[tokio::test]
async fn mcp_rechecks_the_owner_on_every_request() {
    let env = Env::start().await;
    let (_, access, _) = env.tokens().await;
    assert_eq!(env.mcp_status(&access).await.status, 200);
    // The same server (its public URL, so the audience still matches, and its store) started
    // again with another owner configured: the token's holder is no longer admitted.
    let config = capsid_http::HttpConfig {
        public_url: env.server.url.clone(),
        mcp_sessions: false,
        build: capsid_http::BuildInfo {
            sha: "test".into(),
            dirty: false,
            built_at: "test".into(),
            version: "test".into(),
        },
        oauth_missing: Vec::new(),
        owner: Some(env.github.owner_config("someone-else")),
    };
    let app = capsid_http::router(capsid_http::AppState::new(
        env.server.service.clone(),
        config,
    ));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let port = listener.local_addr().expect("address").port();
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    let r = mcp_ping(&format!("http://127.0.0.1:{port}/mcp"), &access).await;
    assert_eq!(r.status, 403, "{}", r.body);
    assert!(
        r.body.contains("octo is not this server's owner"),
        "{}",
        r.body
    );
    // Back on the original server, the owner is still admitted.
    assert_eq!(env.mcp_status(&access).await.status, 200);
}

// ---------------------------------------------------------------------------------------------
// The GitHub round trip: owner only, state bound to the browser, spent after the exchange.

#[tokio::test]
async fn a_non_owner_github_user_is_not_admitted() {
    let env = Env::start().await;
    env.github.sign_in_as("mallory", 666);
    let client = env.register(&[REDIRECT]).await;
    let mut browser = Browser::new();
    let r = env
        .sign_in(&mut browser, &env.authorize_query(&client))
        .await;
    assert_eq!(r.status, 403, "{}", r.body);
    assert!(
        r.body.contains("mallory") && r.body.contains("owner"),
        "{}",
        r.body
    );
    assert!(
        r.header("location").is_empty(),
        "no code goes to the client"
    );
}

#[tokio::test]
async fn the_owner_is_matched_case_insensitively_or_by_id() {
    let env = Env::start_as("OCTO").await;
    env.tokens().await;
    let by_id = Env::start_as(&OWNER_ID.to_string()).await;
    by_id.github.sign_in_as("renamed-octo", OWNER_ID);
    by_id.tokens().await;
    by_id.github.sign_in_as(&OWNER_ID.to_string(), 1);
    let client = by_id.register(&[REDIRECT]).await;
    let r = by_id
        .sign_in(&mut Browser::new(), &by_id.authorize_query(&client))
        .await;
    assert_eq!(
        r.status, 403,
        "a login that looks like the owner's id is not the owner"
    );
}

#[tokio::test]
async fn a_state_cookie_from_another_browser_is_refused() {
    let env = Env::start().await;
    let client = env.register(&[REDIRECT]).await;
    let mut alice = Browser::new();
    let to_github = env.consent(&mut alice, &env.authorize_query(&client)).await;
    let back = alice.get(&to_github.location()).await;
    // Mallory's browser started its own flow; it lands on Alice's callback URL.
    let mut mallory = Browser::new();
    env.consent(&mut mallory, &env.authorize_query(&client))
        .await;
    let r = mallory.get(&back.location()).await;
    assert_eq!(r.status, 403, "{}", r.body);
    assert!(r.body.contains("did not start"), "{}", r.body);
    let r = Browser::new().get(&back.location()).await;
    assert_eq!(r.status, 403, "and a browser with no state cookie");
    assert_eq!(env.github.exchanges(), 0, "GitHub was never asked");
}

#[tokio::test]
async fn an_expired_state_is_refused() {
    let env = Env::start().await;
    let client = env.register(&[REDIRECT]).await;
    let mut browser = Browser::new();
    let to_github = env
        .consent(&mut browser, &env.authorize_query(&client))
        .await;
    let back = browser.get(&to_github.location()).await;
    env.advance(10 * MINUTE_MS + 1);
    let r = browser.get(&back.location()).await;
    assert_eq!(r.status, 403, "{}", r.body);
    assert!(r.body.contains("expired"), "{}", r.body);
}

#[tokio::test]
async fn the_state_is_spent_only_after_a_successful_exchange() {
    let env = Env::start().await;
    let client = env.register(&[REDIRECT]).await;
    let mut browser = Browser::new();
    let to_github = env
        .consent(&mut browser, &env.authorize_query(&client))
        .await;
    let back = browser.get(&to_github.location()).await;
    env.github.fail_exchanges(true);
    let r = browser.get(&back.location()).await;
    assert_eq!(r.status, 502, "{}", r.body);
    env.github.fail_exchanges(false);
    // GitHub codes are single-use on GitHub's side too; a fresh round trip with the same
    // Capsid state is what a retry looks like. The state is still live:
    let again = browser.get(&to_github.location()).await;
    let ok = browser.get(&again.location()).await;
    assert_eq!(ok.status, 302, "{}", ok.body);
    assert!(query_of(&ok.location()).contains_key("code"));
    // Now it is spent.
    let third = browser.get(&to_github.location()).await;
    let r = browser.get(&third.location()).await;
    assert_eq!(r.status, 403, "{}", r.body);
}

#[tokio::test]
async fn a_callback_without_code_or_state_is_a_bad_request() {
    let env = Env::start().await;
    let mut browser = Browser::new();
    assert_eq!(browser.get(&env.url("/callback")).await.status, 400);
    assert_eq!(browser.get(&env.url("/callback?code=x")).await.status, 400);
    assert_eq!(browser.get(&env.url("/callback?state=x")).await.status, 400);
    assert_eq!(
        browser
            .get(&env.url("/callback?code=x&state=x&state=y"))
            .await
            .status,
        400
    );
}

// ---------------------------------------------------------------------------------------------
// Row 9: dynamic registration is bounded, limited and expires.

#[tokio::test]
async fn registration_is_limited_per_address_per_hour() {
    let env = Env::start().await;
    let morning = capsid_core::time::Timestamp::parse("2026-11-30T01:00:00Z").unwrap();
    env.server.clock.set(morning);
    for _ in 0..30 {
        env.register(&[REDIRECT]).await;
    }
    let r = env
        .register_json(json!({"redirect_uris": [REDIRECT]}))
        .await;
    assert_eq!(r.status, 429, "{}", r.body);
    assert!(
        r.json()["error_description"]
            .as_str()
            .unwrap_or("")
            .contains("limit 30"),
        "{}",
        r.body
    );
    env.advance(HOUR_MS);
    env.register(&[REDIRECT]).await;
}

#[tokio::test]
async fn registration_is_limited_per_address_per_day() {
    let env = Env::start().await;
    // Start early in a day, so the five hours stay in one day.
    let morning = capsid_core::time::Timestamp::parse("2026-11-30T01:00:00Z").unwrap();
    env.server.clock.set(morning);
    let mut registered = 0;
    let mut refused_at = None;
    for _ in 0..5 {
        for _ in 0..30 {
            let r = env
                .register_json(json!({"redirect_uris": [REDIRECT]}))
                .await;
            if r.status == 201 {
                registered += 1;
            } else {
                assert_eq!(r.status, 429);
                if r.body.contains("day") {
                    refused_at.get_or_insert(registered);
                }
            }
        }
        env.advance(HOUR_MS);
    }
    assert_eq!(registered, 100, "refused at {refused_at:?}");
    assert_eq!(
        refused_at,
        Some(100),
        "the daily limit, with its description"
    );
    env.advance(24 * HOUR_MS);
    env.register(&[REDIRECT]).await;
}

#[tokio::test]
async fn registration_body_is_bounded_and_must_be_json() {
    let env = Env::start().await;
    let big = json!({"redirect_uris": [REDIRECT], "client_name": "x".repeat(20_000)});
    let r = env.register_json(big).await;
    assert_eq!(r.status, 413, "{}", r.body);
    let r = raw_post(
        &env.url("/register"),
        "application/json",
        "not json".into(),
        &[],
    )
    .await;
    assert_eq!(
        (r.status, r.error().as_str()),
        (400, "invalid_client_metadata")
    );
    let r = env.register_json(json!({"redirect_uris": []})).await;
    assert_eq!(r.status, 400);
    let r = env
        .register_json(json!({"redirect_uris": [REDIRECT], "client_name": "a\u{7}b"}))
        .await;
    assert_eq!(r.status, 400);
}

#[tokio::test]
async fn registrations_expire_after_ninety_days() {
    let env = Env::start().await;
    let client = env.register(&[REDIRECT]).await;
    env.advance(CLIENT_TTL_MS);
    let r = Browser::new()
        .get(&env.authorize_url(&env.authorize_query(&client)))
        .await;
    assert_eq!(r.status, 400, "{}", r.body);
    assert!(r.body.contains("unknown client"), "{}", r.body);
}

#[tokio::test]
async fn a_confidential_client_must_authenticate() {
    let env = Env::start().await;
    let r = env
        .register_json(json!({"redirect_uris": [REDIRECT], "token_endpoint_auth_method": "client_secret_post"}))
        .await;
    assert_eq!(r.status, 201, "{}", r.body);
    let client = r.json()["client_id"].as_str().unwrap().to_owned();
    let secret = r.json()["client_secret"].as_str().unwrap().to_owned();
    let mut browser = Browser::new();
    let done = env
        .sign_in(&mut browser, &env.authorize_query(&client))
        .await;
    let code = query_of(&done.location())["code"].clone();
    let resource = env.resource();
    let base = [
        ("grant_type", "authorization_code"),
        ("client_id", client.as_str()),
        ("code", code.as_str()),
        ("redirect_uri", REDIRECT),
        ("code_verifier", VERIFIER),
        ("resource", resource.as_str()),
    ];
    let mut wrong = base.to_vec();
    wrong.push(("client_secret", "capsid_cs_wrong"));
    let r = env.token(&wrong).await;
    assert_eq!(
        (r.status, r.error().as_str()),
        (401, "invalid_client"),
        "{}",
        r.body
    );
    assert_eq!(
        env.token(&base).await.error(),
        "invalid_client",
        "no secret at all"
    );
    let mut right = base.to_vec();
    right.push(("client_secret", secret.as_str()));
    assert_eq!(env.token(&right).await.status, 200);
    assert!(
        !env.db_bytes()
            .windows(secret.len())
            .any(|w| w == secret.as_bytes()),
        "the secret is stored only hashed"
    );
}

// ---------------------------------------------------------------------------------------------
// Row 13: anti-automation on the unauthenticated endpoints.

#[tokio::test]
async fn token_requests_are_limited_per_address() {
    let env = Env::start().await;
    let morning = capsid_core::time::Timestamp::parse("2026-11-30T01:00:00Z").unwrap();
    env.server.clock.set(morning);
    let client = env.register(&[REDIRECT]).await;
    for i in 0..capsid_core::oauth::AUTH_PER_HOUR {
        let r = env.exchange(&client, &format!("capsid_ac_guess{i}")).await;
        assert_eq!(r.status, 400, "request {i}: {}", r.body);
    }
    let r = env.exchange(&client, "capsid_ac_guess").await;
    assert_eq!(r.status, 429, "{}", r.body);
    assert!(r.body.contains("limit 120"), "{}", r.body);
    assert!(!r.header("retry-after").is_empty());
    env.advance(HOUR_MS);
    assert_eq!(env.exchange(&client, "capsid_ac_guess").await.status, 400);
}

#[tokio::test]
async fn authorize_and_console_sign_in_are_limited_per_address() {
    let env = Env::start().await;
    let morning = capsid_core::time::Timestamp::parse("2026-11-30T01:00:00Z").unwrap();
    env.server.clock.set(morning);
    let client = env.register(&[REDIRECT]).await;
    let url = env.authorize_url(&env.authorize_query(&client));
    for _ in 0..capsid_core::oauth::AUTH_PER_HOUR {
        assert_eq!(Browser::new().get(&url).await.status, 200);
    }
    let r = Browser::new().get(&url).await;
    assert_eq!(r.status, 429, "{}", r.body);
    for _ in 0..capsid_core::oauth::AUTH_PER_HOUR {
        assert_eq!(Browser::new().get(&env.url("/console")).await.status, 302);
    }
    assert_eq!(Browser::new().get(&env.url("/console")).await.status, 429);
}

// ---------------------------------------------------------------------------------------------
// Rows 10, 12, 14: iss, scopes, consent CSRF and framing.

#[tokio::test]
async fn success_redirects_carry_iss_and_state() {
    let env = Env::start().await;
    let client = env.register(&[REDIRECT]).await;
    let done = env
        .sign_in(&mut Browser::new(), &env.authorize_query(&client))
        .await;
    let q = query_of(&done.location());
    assert_eq!(q["iss"], env.server.url);
    assert_eq!(q["state"], "client-state-1");
    let meta: Value = http()
        .get(env.url("/.well-known/oauth-authorization-server"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(meta["issuer"], env.server.url);
    assert_eq!(meta["authorization_response_iss_parameter_supported"], true);
    assert_eq!(meta["code_challenge_methods_supported"], json!(["S256"]));
    assert!(
        !meta["grant_types_supported"]
            .to_string()
            .contains("password")
    );
}

#[tokio::test]
async fn other_scopes_are_refused() {
    let env = Env::start().await;
    refused_to_client(&env, |q| set(q, "scope", "mcp admin"), "invalid_scope").await;
}

#[tokio::test]
async fn consent_needs_the_csrf_token_of_this_browser() {
    let env = Env::start().await;
    let client = env.register(&[REDIRECT]).await;
    let q = env.authorize_query(&client);
    let mut browser = Browser::new();
    let page = browser.get(&env.authorize_url(&q)).await;
    assert_eq!(page.status, 200);
    let mut form = q.clone();
    form.push(("csrf".into(), "0".repeat(64)));
    form.push(("decision".into(), "approve".into()));
    let r = browser.post_form(&env.url("/authorize"), &form).await;
    assert_eq!(r.status, 403, "{}", r.body);
    assert!(r.header("location").is_empty());
    // The right token from another browser (no cookie) is refused too.
    let mut form = q.clone();
    form.push(("csrf".into(), hidden(&page.body, "csrf")));
    form.push(("decision".into(), "approve".into()));
    let r = Browser::new()
        .post_form(&env.url("/authorize"), &form)
        .await;
    assert_eq!(r.status, 403);
    let r = browser.post_form(&env.url("/authorize"), &q).await;
    assert_eq!(r.status, 400, "no csrf field at all");
}

#[tokio::test]
async fn consent_from_another_origin_is_refused() {
    let env = Env::start().await;
    let client = env.register(&[REDIRECT]).await;
    let q = env.authorize_query(&client);
    let mut browser = Browser::new();
    let page = browser.get(&env.authorize_url(&q)).await;
    let mut form = q.clone();
    form.push(("csrf".into(), hidden(&page.body, "csrf")));
    form.push(("decision".into(), "approve".into()));
    let resp = http()
        .post(env.url("/authorize"))
        .header("cookie", browser.cookie_header())
        .header("origin", "https://evil.example")
        .header("content-type", "application/x-www-form-urlencoded")
        .body(serde_urlencoded::to_string(&form).unwrap())
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 403);
}

#[tokio::test]
async fn the_consent_page_cannot_be_framed_and_escapes_the_client() {
    let env = Env::start().await;
    let r = env
        .register_json(json!({"client_name": "<script>alert(1)</script>", "redirect_uris": ["https://app.example/cb?a=\"x\""]}))
        .await;
    assert_eq!(r.status, 201, "{}", r.body);
    let client = r.json()["client_id"].as_str().unwrap().to_owned();
    let mut q = env.authorize_query(&client);
    set(&mut q, "redirect_uri", "https://app.example/cb?a=\"x\"");
    let page = Browser::new().get(&env.authorize_url(&q)).await;
    assert_eq!(page.status, 200, "{}", page.body);
    assert!(!page.body.contains("<script>"), "{}", page.body);
    assert!(page.body.contains("&lt;script&gt;"));
    assert!(
        page.body.contains("Only the owner"),
        "says only the owner is admitted"
    );
    let csp = page.header("content-security-policy");
    assert!(
        csp.contains("frame-ancestors 'none'") && csp.contains("default-src 'none'"),
        "{csp}"
    );
    assert_eq!(page.header("x-frame-options"), "DENY");
}

#[tokio::test]
async fn denying_consent_tells_the_client() {
    let env = Env::start().await;
    let client = env.register(&[REDIRECT]).await;
    let q = env.authorize_query(&client);
    let mut browser = Browser::new();
    let page = browser.get(&env.authorize_url(&q)).await;
    let mut form = q.clone();
    form.push(("csrf".into(), hidden(&page.body, "csrf")));
    form.push(("decision".into(), "deny".into()));
    let r = browser.post_form(&env.url("/authorize"), &form).await;
    let back = query_of(&r.location());
    assert_eq!(back["error"], "access_denied");
    assert_eq!(back["iss"], env.server.url);
}

#[tokio::test]
async fn approval_is_remembered_per_client_and_redirect_set() {
    let env = Env::start().await;
    let client = env.register(&[REDIRECT]).await;
    let done = env
        .sign_in(&mut Browser::new(), &env.authorize_query(&client))
        .await;
    assert_eq!(done.status, 302);
    // The same client again: straight to GitHub, no consent page.
    let again = Browser::new()
        .get(&env.authorize_url(&env.authorize_query(&client)))
        .await;
    assert_eq!(again.status, 302);
    assert!(
        again.location().starts_with(&env.github.url),
        "{}",
        again.location()
    );
    // A client with another redirect set is asked again.
    let other = env
        .register(&[REDIRECT, "http://127.0.0.1:7777/other"])
        .await;
    let page = Browser::new()
        .get(&env.authorize_url(&env.authorize_query(&other)))
        .await;
    assert_eq!(page.status, 200, "consent for a new redirect set");
}

// ---------------------------------------------------------------------------------------------
// Secrets stay out of the database; the full login ends in a real MCP client.

#[tokio::test]
async fn codes_and_tokens_are_stored_only_as_hashes() {
    let env = Env::start().await;
    let (client, code) = env.code().await;
    let t = env.exchange(&client, &code).await.json();
    let refresh = t["refresh_token"].as_str().unwrap().to_owned();
    let r = env.refresh(&client, &refresh).await.json();
    let bytes = env.db_bytes();
    for secret in [
        code.as_str(),
        t["access_token"].as_str().unwrap(),
        refresh.as_str(),
        r["access_token"].as_str().unwrap(),
        r["refresh_token"].as_str().unwrap(),
        capsid_tests::fake_github_login::GITHUB_CLIENT_SECRET,
    ] {
        assert!(
            !bytes.windows(secret.len()).any(|w| w == secret.as_bytes()),
            "{secret} is in the database"
        );
    }
    let audit = env
        .server
        .store
        .recent_audit(&AuditFilter::default(), 500)
        .await
        .unwrap();
    for row in audit {
        let text = format!("{:?}", row);
        assert!(!text.contains(&refresh) && !text.contains(&code), "{text}");
    }
}

#[tokio::test]
async fn full_login_through_github_ends_in_an_mcp_client_reading_as_the_owner() {
    let env = Env::start().await;
    env.server.namespace("alpha").await;
    env.server
        .admin("write", json!({"namespace": "alpha", "path": "notes/hello.md", "title": "Hello", "type": "note", "body": "Hello from the owner.\n"}))
        .await;
    // Discovery as a client does it: 401 → protected resource metadata → AS metadata.
    let challenge = raw_post(&env.resource(), "application/json", "{}".into(), &[]).await;
    assert_eq!(challenge.status, 401);
    let prm: Value = http()
        .get(env.url("/.well-known/oauth-protected-resource/mcp"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let issuer = prm["authorization_servers"][0].as_str().unwrap().to_owned();
    let meta: Value = http()
        .get(format!("{issuer}/.well-known/oauth-authorization-server"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let reg = raw_post(
        meta["registration_endpoint"].as_str().unwrap(),
        "application/json",
        json!({"client_name": "e2e", "redirect_uris": [REDIRECT]}).to_string(),
        &[],
    )
    .await;
    let client = reg.json()["client_id"].as_str().unwrap().to_owned();
    let mut browser = Browser::new();
    let done = env
        .sign_in(&mut browser, &env.authorize_query(&client))
        .await;
    let code = query_of(&done.location())["code"].clone();
    let t = env.exchange(&client, &code).await;
    assert_eq!(t.status, 200, "{}", t.body);
    assert_eq!(t.header("cache-control"), "no-store");
    let access = t.json()["access_token"].as_str().unwrap().to_owned();
    let mcp = Client::connect(&env.resource(), &access, ()).await;
    let doc = mcp
        .ok(
            "read",
            json!({"namespace": "alpha", "path": "notes/hello.md"}),
        )
        .await;
    assert!(doc.to_string().contains("Hello from the owner."), "{doc}");
    // The caller is the owner: a write through /mcp is audited as github:octo.
    mcp.ok("write", json!({"namespace": "alpha", "path": "notes/two.md", "title": "Two", "type": "note", "body": "Second.\n"})).await;
    let actions = env.audit_actions().await;
    assert!(
        actions.iter().any(|(_, actor)| actor == "github:octo"),
        "{actions:?}"
    );
    let _ = mcp.inner.cancel().await;
}

// ---------------------------------------------------------------------------------------------
// `POST /csp-report`.

#[tokio::test]
async fn csp_reports_are_bounded_typed_shaped_and_limited() {
    let env = Env::start().await;
    let url = env.url("/csp-report");
    let good = json!({"csp-report": {"document-uri": "http://x/console", "violated-directive": "style-src"}}).to_string();
    assert_eq!(
        raw_post(&url, "application/csp-report", good.clone(), &[])
            .await
            .status,
        204
    );
    assert_eq!(
        raw_post(&url, "text/plain", good.clone(), &[]).await.status,
        415
    );
    assert_eq!(
        raw_post(&url, "application/csp-report", "x".repeat(20_000), &[])
            .await
            .status,
        413
    );
    assert_eq!(
        raw_post(&url, "application/csp-report", "{\"a\":1}".into(), &[])
            .await
            .status,
        400
    );
    assert_eq!(
        raw_post(&url, "application/reports+json", "nope".into(), &[])
            .await
            .status,
        400
    );
    let mut last = 0;
    for _ in 0..300 {
        last = raw_post(&url, "application/csp-report", good.clone(), &[])
            .await
            .status;
    }
    assert_eq!(last, 429);
    let r = raw_post(&url, "application/csp-report", good, &[]).await;
    assert!(!r.header("retry-after").is_empty());
}

#[tokio::test]
async fn security_headers_follow_the_route_class() {
    let env = Env::start().await;
    let client = env.register(&[REDIRECT]).await;
    // Pages: their own policy (one hashed stylesheet, no scripts), never framed.
    let page = Browser::new()
        .get(&env.authorize_url(&env.authorize_query(&client)))
        .await;
    let csp = page.header("content-security-policy");
    assert!(
        csp.contains("style-src 'sha256-") && !csp.contains("script-src"),
        "{csp}"
    );
    // Data: nothing renders from it, nothing caches it (discovery documents may be cached).
    let token = env.exchange(&client, "capsid_ac_guess").await;
    let meta = read(
        http()
            .get(env.url("/.well-known/oauth-authorization-server"))
            .send()
            .await
            .unwrap(),
    )
    .await;
    for (what, r) in [("page", &page), ("token", &token), ("metadata", &meta)] {
        assert_eq!(r.header("x-frame-options"), "DENY", "{what}");
        assert_eq!(r.header("x-content-type-options"), "nosniff", "{what}");
        assert_eq!(r.header("referrer-policy"), "no-referrer", "{what}");
        assert!(
            r.header("content-security-policy")
                .contains("frame-ancestors 'none'"),
            "{what}"
        );
    }
    assert_eq!(token.header("cache-control"), "no-store");
    assert!(
        token
            .header("content-security-policy")
            .starts_with("default-src 'none'")
    );
    assert!(
        meta.header("cache-control").contains("max-age"),
        "discovery may be cached"
    );
}

// ---------------------------------------------------------------------------------------------
// The console.

/// Signs `browser` in to the console (following the GitHub round trip); the console page.
async fn console_login(env: &Env, browser: &mut Browser) -> Resp {
    let page = browser.follow(&env.server.url, &env.url("/console")).await;
    assert_eq!(page.status, 200, "{}", page.body);
    page
}

async fn job_status(env: &Env, id: &str) -> String {
    let out = env
        .server
        .admin("jobs", json!({"action": "list", "namespace": "alpha"}))
        .await;
    out["jobs"]
        .as_array()
        .and_then(|jobs| jobs.iter().find(|j| j["id"] == id))
        .and_then(|j| j["status"].as_str())
        .unwrap_or_default()
        .to_owned()
}

async fn blocked_job(env: &Env) -> String {
    env.server.namespace("alpha").await;
    let key = env
        .server
        .mint(
            "worker",
            "driver",
            json!({"namespaces": ["alpha"], "grants": ["read", "write"]}),
        )
        .await;
    let worker = env.server.client(&key).await;
    let post = worker
        .ok(
            "jobs",
            json!({"action": "post", "namespace": "alpha", "title": "Ship it", "body": "Ship.\n"}),
        )
        .await;
    let id = post["job"]["id"].as_str().unwrap().to_owned();
    let claim = worker
        .ok("jobs", json!({"action": "claim", "namespace": "alpha"}))
        .await;
    assert_eq!(claim["ok"], true, "{claim}");
    let block = worker
        .ok("jobs", json!({"action": "block", "id": id, "namespace": "alpha", "reason": "needs a push", "command": "git push origin feature"}))
        .await;
    assert_eq!(block["ok"], true, "{block}");
    let _ = worker.inner.cancel().await;
    id
}

#[tokio::test]
async fn console_turns_bearer_callers_away_and_signs_others_in() {
    let env = Env::start().await;
    let r = read(
        http()
            .get(env.url("/console"))
            .bearer_auth("capsid_some_key")
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(r.status, 403);
    assert!(r.body.contains("/ops/mcp"), "{}", r.body);
    let r = Browser::new().get(&env.url("/console")).await;
    assert_eq!(r.status, 302);
    assert!(
        r.location()
            .starts_with(&format!("{}/login/oauth/authorize", env.github.url))
    );
    let r = Browser::new().get(&env.url("/console.json")).await;
    assert_eq!(r.status, 401);
}

#[tokio::test]
async fn console_admits_only_the_owner() {
    let env = Env::start().await;
    env.github.sign_in_as("mallory", 666);
    let r = Browser::new()
        .follow(&env.server.url, &env.url("/console"))
        .await;
    assert_eq!(r.status, 403, "{}", r.body);
    assert!(r.body.contains("mallory"));
}

#[tokio::test]
async fn console_csrf_mismatch_is_refused_before_any_confirmation() {
    let env = Env::start().await;
    let id = blocked_job(&env).await;
    let mut browser = Browser::new();
    console_login(&env, &mut browser).await;
    let form = vec![
        ("action".to_owned(), "resume_job".to_owned()),
        ("id".to_owned(), id.clone()),
        ("reason".to_owned(), "pushed".to_owned()),
        ("csrf".to_owned(), "f".repeat(64)),
    ];
    let r = browser.post_form(&env.url("/console"), &form).await;
    assert_eq!(r.status, 403, "{}", r.body);
    assert!(
        !r.body.contains("confirm"),
        "no confirmation page: {}",
        r.body
    );
    let mut with_confirm = form.clone();
    with_confirm.push(("confirm".into(), "yes".into()));
    assert_eq!(
        browser
            .post_form(&env.url("/console"), &with_confirm)
            .await
            .status,
        403
    );
    assert_eq!(job_status(&env, &id).await, "blocked", "nothing changed");
}

#[tokio::test]
async fn console_resume_confirms_then_runs_the_jobs_tools_function_and_audits_the_person() {
    let env = Env::start().await;
    let id = blocked_job(&env).await;
    let mut browser = Browser::new();
    let page = console_login(&env, &mut browser).await;
    assert!(
        page.body.contains("git push origin feature"),
        "the exact command it waits on"
    );
    let csrf = hidden(&page.body, "csrf");
    let form = vec![
        ("action".to_owned(), "resume_job".to_owned()),
        ("id".to_owned(), id.clone()),
        ("reason".to_owned(), "pushed it".to_owned()),
        ("csrf".to_owned(), csrf),
    ];
    let confirm = browser.post_form(&env.url("/console"), &form).await;
    assert_eq!(confirm.status, 200, "{}", confirm.body);
    assert!(confirm.body.contains("confirm"), "{}", confirm.body);
    assert!(confirm.body.contains(&id));
    assert_eq!(
        job_status(&env, &id).await,
        "blocked",
        "a confirmation page changes nothing"
    );
    let mut yes = form.clone();
    yes.push(("confirm".into(), "yes".into()));
    let done = browser.post_form(&env.url("/console"), &yes).await;
    assert_eq!(done.status, 303, "{}", done.body);
    assert_eq!(done.location(), "/console");
    let actions = env.audit_actions().await;
    assert!(
        actions.contains(&("console-resume_job".into(), "github:octo".into())),
        "{actions:?}"
    );
    assert!(
        actions.contains(&("job-resumed".into(), "github:octo".into())),
        "the jobs tool's own transition: {actions:?}"
    );
    assert_eq!(
        job_status(&env, &id).await,
        "queued",
        "back to its holder's queue"
    );
}

#[tokio::test]
async fn console_never_merges_or_mints() {
    let env = Env::start().await;
    let mut browser = Browser::new();
    let page = console_login(&env, &mut browser).await;
    let csrf = hidden(&page.body, "csrf");
    for action in ["merge", "mint", "merge_pr", "mint_agent"] {
        let r = browser
            .post_form(
                &env.url("/console"),
                &[
                    ("action".into(), action.into()),
                    ("csrf".into(), csrf.clone()),
                    ("confirm".into(), "yes".into()),
                ],
            )
            .await;
        assert_eq!(r.status, 400, "{action}: {}", r.body);
        assert!(
            r.body
                .contains("pause, unpause, mode, resume_job, fail_job, revoke_agent"),
            "{}",
            r.body
        );
    }
    let view = browser.get(&env.url("/console.json")).await.json();
    let actions = view["actions"].to_string();
    assert!(
        !actions.contains("merge") && !actions.contains("mint"),
        "{actions}"
    );
    assert!(!page.body.contains("value=\"merge") && !page.body.contains("value=\"mint"));
}

#[tokio::test]
async fn console_json_is_the_object_the_page_renders_and_holds_no_secrets() {
    let env = Env::start().await;
    let id = blocked_job(&env).await;
    let mut browser = Browser::new();
    let page = console_login(&env, &mut browser).await;
    let view = browser.get(&env.url("/console.json")).await.json();
    assert_eq!(view["viewer"], "github:octo");
    for key in [
        "generated",
        "health",
        "improve",
        "agents",
        "jobs",
        "activity",
        "activity_filter",
    ] {
        assert!(view.get(key).is_some(), "{key} missing: {view}");
    }
    assert!(view["agents"].to_string().contains("worker"));
    assert!(view["jobs"].to_string().contains(&id));
    assert!(page.body.contains("worker") && page.body.contains(&id) && page.body.contains("alpha"));
    let text = view.to_string();
    let csrf = hidden(&page.body, "csrf");
    assert!(!text.contains(&csrf), "no CSRF token");
    assert!(
        !text.contains(browser.jar.get("capsid_console").unwrap()),
        "no session token"
    );
    assert!(!text.contains("key_hash"), "no hashes");
    let csp = page.header("content-security-policy");
    assert!(csp.starts_with("default-src 'none'"), "{csp}");
    assert!(
        !page.body.contains("<script") && !page.body.contains("<link"),
        "self-contained"
    );
    assert!(page.body.contains("prefers-color-scheme"), "light and dark");
}

#[tokio::test]
async fn console_sessions_last_twelve_hours_and_the_owner_can_end_them() {
    let env = Env::start().await;
    let mut a = Browser::new();
    let page_a = console_login(&env, &mut a).await;
    let mut b = Browser::new();
    let page_b = console_login(&env, &mut b).await;
    let mut c = Browser::new();
    console_login(&env, &mut c).await;
    env.advance(12 * HOUR_MS - 1000);
    assert_eq!(a.get(&env.url("/console.json")).await.status, 200);
    // Ending this session: the server forgets it (the old cookie no longer works).
    let held = a
        .jar
        .get("capsid_console")
        .cloned()
        .expect("session cookie");
    let r = a
        .post_form(
            &env.url("/console/logout"),
            &[("csrf".into(), hidden(&page_a.body, "csrf"))],
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    a.jar.insert("capsid_console".into(), held);
    assert_eq!(
        a.get(&env.url("/console.json")).await.status,
        401,
        "ended server-side"
    );
    assert_eq!(
        b.get(&env.url("/console.json")).await.status,
        200,
        "only that one"
    );
    // A logout without the page's CSRF token ends nothing.
    let r = b
        .post_form(&env.url("/console/logout"), &[("all".into(), "yes".into())])
        .await;
    assert_eq!(r.status, 403);
    assert_eq!(c.get(&env.url("/console.json")).await.status, 200);
    // Ending every session.
    let r = b
        .post_form(
            &env.url("/console/logout"),
            &[
                ("csrf".into(), hidden(&page_b.body, "csrf")),
                ("all".into(), "yes".into()),
            ],
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(
        c.get(&env.url("/console.json")).await.status,
        401,
        "every session"
    );
    // And a session ends by itself after twelve hours.
    let mut d = Browser::new();
    console_login(&env, &mut d).await;
    env.advance(12 * HOUR_MS - 1000);
    assert_eq!(d.get(&env.url("/console.json")).await.status, 200);
    env.advance(1000);
    assert_eq!(
        d.get(&env.url("/console.json")).await.status,
        401,
        "twelve hours"
    );
}

// ---------------------------------------------------------------------------------------------
// The console in headless Chromium.

fn chromium() -> String {
    if let Ok(p) = std::env::var("CAPSID_CHROMIUM") {
        return p;
    }
    for name in ["chromium", "chromium-browser", "google-chrome"] {
        for dir in std::env::var("PATH").unwrap_or_default().split(':') {
            let p = std::path::Path::new(dir).join(name);
            if p.is_file() {
                return p.display().to_string();
            }
        }
    }
    panic!(
        "headless Chromium is required (apt-get install -y chromium; scripts/test.sh installs it)"
    );
}

fn artifacts() -> PathBuf {
    let target = std::env::var("CARGO_TARGET_DIR").map_or_else(
        |_| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target"),
        PathBuf::from,
    );
    let dir = target.join("console-screenshots");
    std::fs::create_dir_all(&dir).expect("artifact folder");
    dir
}

async fn run_chromium(args: &[String], url: &str) -> std::process::Output {
    let profile = tempfile::tempdir().expect("profile");
    let mut cmd = tokio::process::Command::new(chromium());
    cmd.args([
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
    ])
    .arg(format!("--user-data-dir={}", profile.path().display()))
    .args(args)
    .arg(url)
    .kill_on_drop(true);
    tokio::time::timeout(std::time::Duration::from_secs(120), cmd.output())
        .await
        .expect("chromium finished within two minutes")
        .expect("run chromium")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn console_renders_in_headless_chromium_light_and_dark() {
    let env = Env::start().await;
    let id = blocked_job(&env).await;
    env.server.namespace("beta").await;
    env.server
        .service
        .call_tool(
            &Caller::cli("test"),
            "improve_run",
            json!({"action": "pause", "namespace": "beta", "reason": "holiday"}),
            &NoConfirmer,
        )
        .await
        .expect("pause");
    let url = env.url("/console");
    // Chromium follows the whole sign-in by itself: console → fake GitHub → callback → console.
    let dom = run_chromium(&["--dump-dom".into()], &url).await;
    let html = String::from_utf8_lossy(&dom.stdout);
    assert!(
        html.contains("Capsid console"),
        "status {:?}\n{html}\n{}",
        dom.status,
        String::from_utf8_lossy(&dom.stderr)
    );
    for want in [
        "Namespaces",
        "alpha",
        "beta",
        "Blocked jobs",
        "git push origin feature",
        &id,
        "Agents",
        "worker",
        "Recent activity",
        "github:octo",
    ] {
        assert!(html.contains(want), "the page shows {want}");
    }
    let dir = artifacts();
    for (scheme, flags) in [
        (
            "light",
            vec!["--blink-settings=preferredColorScheme=1".to_owned()],
        ),
        (
            "dark",
            vec![
                "--force-dark-mode".to_owned(),
                "--blink-settings=preferredColorScheme=0".to_owned(),
            ],
        ),
    ] {
        let path = dir.join(format!("console-{scheme}.png"));
        let _ = std::fs::remove_file(&path);
        let mut args = flags;
        args.push(format!("--screenshot={}", path.display()));
        args.push("--window-size=1400,1800".into());
        let out = run_chromium(&args, &url).await;
        let meta = std::fs::metadata(&path).unwrap_or_else(|_| {
            panic!(
                "{scheme} screenshot not written: {}",
                String::from_utf8_lossy(&out.stderr)
            )
        });
        assert!(
            meta.len() > 10_000,
            "{scheme} screenshot is {} bytes",
            meta.len()
        );
    }
    let light = std::fs::read(dir.join("console-light.png")).unwrap();
    let dark = std::fs::read(dir.join("console-dark.png")).unwrap();
    assert_ne!(light, dark, "the dark scheme renders differently");
    // The logins Chromium made are the owner's sessions; each left an audit trail of nothing
    // but reads: no action was taken.
    assert!(
        !env.audit_actions()
            .await
            .iter()
            .any(|(a, _)| a.starts_with("console-"))
    );
}

// ---------------------------------------------------------------------------------------------
// Secrets never reach the logs; hostile input never gets a 500.

/// What the server logs (its own crates at debug, everything else at info; the test's own
/// HTTP client is silenced) while this binary runs.
fn captured_logs() -> Arc<std::sync::Mutex<Vec<u8>>> {
    static LOGS: std::sync::OnceLock<Arc<std::sync::Mutex<Vec<u8>>>> = std::sync::OnceLock::new();
    LOGS.get_or_init(|| {
        let buf = Arc::new(std::sync::Mutex::new(Vec::new()));
        let sink = buf.clone();
        let filter = tracing_subscriber::EnvFilter::new(
            "info,capsid_http=debug,capsid_core=debug,capsid_store_sqlite=debug,sqlx=debug,reqwest=off,hyper=off,hyper_util=off",
        );
        let _ = tracing_subscriber::fmt()
            .with_env_filter(filter)
            .with_ansi(false)
            .with_writer(move || LogSink(sink.clone()))
            .try_init();
        buf
    })
    .clone()
}

struct LogSink(Arc<std::sync::Mutex<Vec<u8>>>);

impl std::io::Write for LogSink {
    fn write(&mut self, data: &[u8]) -> std::io::Result<usize> {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .extend_from_slice(data);
        Ok(data.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[tokio::test]
async fn no_secret_reaches_the_logs() {
    let logs = captured_logs();
    let env = Env::start().await;
    let r = env
        .register_json(json!({"redirect_uris": [REDIRECT], "token_endpoint_auth_method": "client_secret_basic"}))
        .await;
    let client = r.json()["client_id"].as_str().unwrap().to_owned();
    let secret = r.json()["client_secret"].as_str().unwrap().to_owned();
    let mut browser = Browser::new();
    let page = browser
        .get(&env.authorize_url(&env.authorize_query(&client)))
        .await;
    let csrf = hidden(&page.body, "csrf");
    let done = env
        .sign_in(&mut browser, &env.authorize_query(&client))
        .await;
    let code = query_of(&done.location())["code"].clone();
    let basic = base64_basic(&client, &secret);
    let resource = env.resource();
    let form = serde_urlencoded::to_string([
        ("grant_type", "authorization_code"),
        ("code", code.as_str()),
        ("redirect_uri", REDIRECT),
        ("code_verifier", VERIFIER),
        ("resource", resource.as_str()),
    ])
    .unwrap();
    let t = raw_post(
        &env.url("/token"),
        "application/x-www-form-urlencoded",
        form,
        &[("authorization", &basic)],
    )
    .await;
    assert_eq!(t.status, 200, "{}", t.body);
    let access = t.json()["access_token"].as_str().unwrap().to_owned();
    let refresh = t.json()["refresh_token"].as_str().unwrap().to_owned();
    // A replay and a refresh reuse, so the refusal paths log too.
    let replay = raw_post(
        &env.url("/token"),
        "application/x-www-form-urlencoded",
        serde_urlencoded::to_string([
            ("grant_type", "authorization_code"),
            ("code", code.as_str()),
            ("redirect_uri", REDIRECT),
            ("code_verifier", VERIFIER),
        ])
        .unwrap(),
        &[("authorization", &basic)],
    )
    .await;
    assert_eq!(replay.error(), "invalid_grant");
    assert_eq!(env.mcp_status(&access).await.status, 401);
    let mut console = Browser::new();
    let console_page = console_login(&env, &mut console).await;
    let session = console.jar.get("capsid_console").cloned().unwrap();
    let console_csrf = hidden(&console_page.body, "csrf");
    let logged = String::from_utf8_lossy(
        &logs
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner),
    )
    .into_owned();
    assert!(
        logged.contains("token issued") && logged.contains("console session started"),
        "the flow was logged"
    );
    for (what, value) in [
        ("client secret", secret.as_str()),
        ("authorization code", code.as_str()),
        ("access token", access.as_str()),
        ("refresh token", refresh.as_str()),
        ("PKCE verifier", VERIFIER),
        ("consent CSRF token", csrf.as_str()),
        ("console session", session.as_str()),
        ("console CSRF token", console_csrf.as_str()),
        (
            "GitHub client secret",
            capsid_tests::fake_github_login::GITHUB_CLIENT_SECRET,
        ),
        ("GitHub token", "gho_ghcode"),
        ("cookie key", "test-cookie-key-0123456789abcdef"),
    ] {
        assert!(!logged.contains(value), "the {what} is in the logs");
    }
}

fn base64_basic(id: &str, secret: &str) -> String {
    use base64::Engine;
    format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode(format!("{id}:{secret}"))
    )
}

#[tokio::test]
async fn hostile_input_never_gets_a_500() {
    let env = Env::start().await;
    let client = env.register(&[REDIRECT]).await;
    let junk_forms: Vec<Vec<u8>> = vec![
        b"%ff%fe=%00".to_vec(),
        vec![0xff, 0xfe, 0x00, 0x41],
        b"grant_type=authorization_code&grant_type=refresh_token".to_vec(),
        b"grant_type=refresh_token&refresh_token=".to_vec(),
        format!(
            "grant_type=authorization_code&client_id={client}&code={}",
            "a".repeat(10_000)
        )
        .into_bytes(),
        b"=&&&==".to_vec(),
    ];
    for body in &junk_forms {
        let resp = http()
            .post(env.url("/token"))
            .header("content-type", "application/x-www-form-urlencoded")
            .body(body.clone())
            .send()
            .await
            .unwrap();
        let status = resp.status().as_u16();
        assert!((400..500).contains(&status), "/token {body:?}: {status}");
        for path in [
            "/authorize",
            "/console",
            "/console/logout",
            "/register",
            "/csp-report",
        ] {
            let resp = http()
                .post(env.url(path))
                .header("content-type", "application/x-www-form-urlencoded")
                .body(body.clone())
                .send()
                .await
                .unwrap();
            assert!(
                resp.status().as_u16() < 500,
                "{path} {body:?}: {}",
                resp.status()
            );
        }
    }
    for query in [
        "%ff",
        "client_id=%00",
        "redirect_uri=%",
        &"a=b&".repeat(3000),
        "state=\u{0}",
    ] {
        for path in [
            "/authorize",
            "/callback",
            "/console/callback",
            "/console",
            "/console.json",
        ] {
            let resp = http()
                .get(format!("{}{path}?{query}", env.server.url))
                .send()
                .await
                .unwrap();
            assert!(
                resp.status().as_u16() < 500,
                "{path}?{query}: {}",
                resp.status()
            );
        }
    }
    for auth in ["Basic !!!", "Basic Zm9v", "Bearer", "Basic "] {
        let resp = http()
            .post(env.url("/token"))
            .header("authorization", auth)
            .body("grant_type=refresh_token")
            .send()
            .await
            .unwrap();
        assert!(
            (400..500).contains(&resp.status().as_u16()),
            "{auth}: {}",
            resp.status()
        );
    }
    for auth in [
        "Bearer",
        "Bearer ",
        "bearer x",
        "Basic Zm9v",
        &format!("Bearer {}", "x".repeat(10_000)),
    ] {
        let r = raw_post(
            &env.resource(),
            "application/json",
            "{}".into(),
            &[("authorization", auth)],
        )
        .await;
        assert_eq!(r.status, 401, "{auth}");
    }
}

#[tokio::test]
async fn without_the_owners_login_the_owner_routes_answer_503_naming_what_is_missing() {
    let (_dir, _db, store) = sqlite().await;
    let server = TestServer::start(store, ServerOptions::default()).await;
    let checks = [
        ("POST", "/mcp"),
        ("GET", "/console"),
        ("GET", "/console.json"),
        ("GET", "/authorize"),
        ("POST", "/token"),
        ("POST", "/register"),
        ("GET", "/.well-known/oauth-authorization-server"),
    ];
    for (method, path) in checks {
        let url = format!("{}{path}", server.url);
        let req = if method == "POST" {
            http()
                .post(url)
                .header("content-type", "application/json")
                .body("{}")
        } else {
            http().get(url)
        };
        let r = read(req.send().await.unwrap()).await;
        assert_eq!(r.status, 503, "{method} {path}: {}", r.body);
        assert!(
            r.body.contains("CAPSID_GITHUB_CLIENT_ID"),
            "{method} {path}: {}",
            r.body
        );
    }
    server.stop().await;
}

#[tokio::test]
async fn the_owner_revokes_every_mcp_client_from_the_console() {
    // D.4 row 11 (RFC 7009 spirit, ASVS V10.4.9): revocation available to the owner.
    let env = Env::start().await;
    let (client, access, refresh) = env.tokens().await;
    assert_eq!(env.mcp_status(&access).await.status, 200);
    let mut browser = Browser::new();
    let page = console_login(&env, &mut browser).await;
    let csrf = hidden(&page.body, "csrf");
    let url = env.url("/console/revoke-grants");
    let r = browser
        .post_form(&url, &[("csrf".into(), "0".repeat(64))])
        .await;
    assert_eq!(r.status, 403, "CSRF first");
    let confirm = browser
        .post_form(&url, &[("csrf".into(), csrf.clone())])
        .await;
    assert_eq!(confirm.status, 200, "{}", confirm.body);
    assert!(confirm.body.contains("Confirm"), "{}", confirm.body);
    assert_eq!(
        env.mcp_status(&access).await.status,
        200,
        "the confirmation changes nothing"
    );
    let done = browser
        .post_form(
            &url,
            &[("csrf".into(), csrf), ("confirm".into(), "yes".into())],
        )
        .await;
    assert_eq!(done.status, 303, "{}", done.body);
    assert_eq!(env.mcp_status(&access).await.status, 401);
    assert_eq!(
        env.refresh(&client, &refresh).await.error(),
        "invalid_grant"
    );
    let actions = env.audit_actions().await;
    assert!(
        actions.contains(&("console-revoke_grants".into(), "github:octo".into())),
        "{actions:?}"
    );
    // The approval is forgotten: the client must ask for consent again.
    let again = Browser::new()
        .get(&env.authorize_url(&env.authorize_query(&client)))
        .await;
    assert_eq!(again.status, 200, "consent page again");
}
