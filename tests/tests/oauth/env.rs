//! The shared environment: a server over a fresh SQLite file, a fake GitHub, a
//! cookie-keeping browser, and the request helpers every module uses.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use capsid_core::oauth::pkce::s256;
use capsid_core::oauth::request::with_query;
use capsid_core::ports::AuditFilter;
use capsid_store_sqlite::SqliteStore;
use capsid_tests::fake_github_login::FakeGitHub;
use capsid_tests::server::{ServerOptions, TestServer};
use reqwest::header::{HeaderMap, LOCATION, SET_COOKIE};
use serde_json::{Value, json};

pub(crate) const OWNER: &str = "octo";
pub(crate) const OWNER_ID: i64 = 4242;
pub(crate) const REDIRECT: &str = "http://127.0.0.1:7777/callback";
pub(crate) const VERIFIER: &str = "a-long-enough-pkce-verifier-for-the-tests-0123456789abcdef";

pub(crate) struct Env {
    pub(crate) server: TestServer,
    pub(crate) github: FakeGitHub,
    pub(crate) db: PathBuf,
    _dir: tempfile::TempDir,
}

pub(crate) async fn sqlite() -> (tempfile::TempDir, PathBuf, Arc<SqliteStore>) {
    let dir = tempfile::tempdir().expect("temporary folder");
    let path = dir.path().join("capsid.db");
    let store = SqliteStore::open(&format!("sqlite://{}", path.display()))
        .await
        .expect("open sqlite");
    store.migrate().await.expect("migrate");
    (dir, path, Arc::new(store))
}

impl Env {
    pub(crate) async fn start() -> Env {
        Env::start_as(OWNER).await
    }

    pub(crate) async fn start_as(admin_login: &str) -> Env {
        Env::start_with(admin_login, ServerOptions::default()).await
    }

    /// A server with MCP sessions on (`--mcp-sessions`): subscriptions and tool views.
    pub(crate) async fn start_with_sessions() -> Env {
        let options = ServerOptions {
            sessions: true,
            ..ServerOptions::default()
        };
        Env::start_with(OWNER, options).await
    }

    /// A server whose trusted reverse proxies are `cidrs` (CAPSID_TRUSTED_PROXIES).
    pub(crate) async fn start_behind_proxy(cidrs: &[&str]) -> Env {
        let options = ServerOptions {
            trusted_proxies: cidrs.iter().map(|c| c.parse().expect("a CIDR")).collect(),
            ..ServerOptions::default()
        };
        Env::start_with(OWNER, options).await
    }

    async fn start_with(admin_login: &str, options: ServerOptions) -> Env {
        let github = FakeGitHub::start(OWNER, OWNER_ID).await;
        let (dir, db, store) = sqlite().await;
        let gh = github.clone();
        let admin = admin_login.to_owned();
        let server =
            TestServer::start_with_owner(store, options, move |_| Some(gh.owner_config(&admin)))
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
    pub(crate) async fn twin(&self, admin_login: &str) -> TestServer {
        let gh = self.github.clone();
        let admin = admin_login.to_owned();
        TestServer::start_with_owner(
            self.server.store.clone(),
            ServerOptions::default(),
            move |_| Some(gh.owner_config(&admin)),
        )
        .await
    }

    pub(crate) fn url(&self, path: &str) -> String {
        format!("{}{path}", self.server.url)
    }

    pub(crate) fn resource(&self) -> String {
        self.url("/mcp")
    }

    pub(crate) fn advance(&self, ms: i64) {
        self.server.clock.advance(ms);
    }

    pub(crate) async fn register_json(&self, body: Value) -> Resp {
        raw_post(
            &self.url("/register"),
            "application/json",
            body.to_string(),
            &[],
        )
        .await
    }

    /// Registers a public client with `redirects`; its id.
    pub(crate) async fn register(&self, redirects: &[&str]) -> String {
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
    pub(crate) fn authorize_query(&self, client: &str) -> Vec<(String, String)> {
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

    pub(crate) fn authorize_url(&self, query: &[(String, String)]) -> String {
        let pairs: Vec<(&str, &str)> = query
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        with_query(&self.url("/authorize"), &pairs)
    }

    /// Consent (approve) for `query` in `browser`: the response of `POST /authorize`.
    pub(crate) async fn consent(&self, browser: &mut Browser, query: &[(String, String)]) -> Resp {
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
    pub(crate) async fn sign_in(&self, browser: &mut Browser, query: &[(String, String)]) -> Resp {
        let to_github = self.consent(browser, query).await;
        assert_eq!(to_github.status, 302, "to GitHub: {}", to_github.body);
        let back = browser.get(&to_github.location()).await;
        assert_eq!(back.status, 302, "GitHub sends the browser back");
        browser.get(&back.location()).await
    }

    /// A code for a good request of a fresh client (its id, the code).
    pub(crate) async fn code(&self) -> (String, String) {
        let client = self.register(&[REDIRECT]).await;
        let mut browser = Browser::new();
        let done = self
            .sign_in(&mut browser, &self.authorize_query(&client))
            .await;
        assert_eq!(done.status, 302, "callback: {}", done.body);
        let q = query_of(&done.location());
        (client, q["code"].clone())
    }

    pub(crate) async fn token(&self, form: &[(&str, &str)]) -> Resp {
        let body = serde_urlencoded::to_string(form).expect("form");
        raw_post(
            &self.url("/token"),
            "application/x-www-form-urlencoded",
            body,
            &[],
        )
        .await
    }

    pub(crate) async fn exchange(&self, client: &str, code: &str) -> Resp {
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
    pub(crate) async fn tokens(&self) -> (String, String, String) {
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

    pub(crate) async fn refresh(&self, client: &str, refresh: &str) -> Resp {
        self.token(&[
            ("grant_type", "refresh_token"),
            ("client_id", client),
            ("refresh_token", refresh),
        ])
        .await
    }

    /// `POST /mcp` (a `ping`) with `token`: the status.
    pub(crate) async fn mcp_status(&self, token: &str) -> Resp {
        mcp_ping(&self.resource(), token).await
    }

    /// Every byte of the database files.
    pub(crate) fn db_bytes(&self) -> Vec<u8> {
        let mut out = std::fs::read(&self.db).unwrap_or_default();
        let mut wal = self.db.clone().into_os_string();
        wal.push("-wal");
        out.extend(std::fs::read(PathBuf::from(wal)).unwrap_or_default());
        out
    }

    pub(crate) async fn audit_actions(&self) -> Vec<(String, String)> {
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

pub(crate) async fn mcp_ping(url: &str, token: &str) -> Resp {
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
pub(crate) struct Resp {
    pub(crate) status: u16,
    pub(crate) headers: HeaderMap,
    pub(crate) body: String,
}

impl Resp {
    pub(crate) fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or(Value::Null)
    }

    pub(crate) fn header(&self, name: &str) -> String {
        self.headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_owned()
    }

    pub(crate) fn location(&self) -> String {
        let l = self.header(LOCATION.as_str());
        assert!(
            !l.is_empty(),
            "expected a redirect, got {} {}",
            self.status,
            self.body
        );
        l
    }

    pub(crate) fn error(&self) -> String {
        self.json()["error"].as_str().unwrap_or_default().to_owned()
    }
}

pub(crate) fn http() -> reqwest::Client {
    capsid_http::install_tls_provider();
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .expect("http client")
}

pub(crate) async fn read(resp: reqwest::Response) -> Resp {
    let status = resp.status().as_u16();
    let headers = resp.headers().clone();
    let body = resp.text().await.unwrap_or_default();
    Resp {
        status,
        headers,
        body,
    }
}

pub(crate) async fn raw_post(
    url: &str,
    content_type: &str,
    body: String,
    headers: &[(&str, &str)],
) -> Resp {
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
pub(crate) fn query_of(url: &str) -> BTreeMap<String, String> {
    let q = url.split_once('?').map_or("", |(_, q)| q);
    serde_urlencoded::from_str(q).unwrap_or_default()
}

/// The value of the hidden field `name` in an HTML page.
pub(crate) fn hidden(html: &str, name: &str) -> String {
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
pub(crate) struct Browser {
    pub(crate) jar: BTreeMap<String, String>,
}

impl Browser {
    pub(crate) fn new() -> Browser {
        Browser {
            jar: BTreeMap::new(),
        }
    }

    pub(crate) fn cookie_header(&self) -> String {
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

    pub(crate) async fn get(&mut self, url: &str) -> Resp {
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

    pub(crate) async fn post_form(&mut self, url: &str, form: &[(String, String)]) -> Resp {
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
    pub(crate) async fn follow(&mut self, origin: &str, url: &str) -> Resp {
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

pub(crate) fn set(query: &mut [(String, String)], key: &str, value: &str) {
    for (k, v) in query.iter_mut() {
        if k == key {
            *v = value.to_owned();
        }
    }
}

pub(crate) fn without(query: &[(String, String)], key: &str) -> Vec<(String, String)> {
    query.iter().filter(|(k, _)| k != key).cloned().collect()
}

/// An authorization request with `redirect_uri` replaced is refused on the page: 400, and the
/// browser is sent nowhere.
pub(crate) async fn refused_on_page(env: &Env, client: &str, redirect: &str) {
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
pub(crate) async fn refused_to_client(
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

pub(crate) async fn register_refused(env: &Env, redirect: &str) {
    let r = env
        .register_json(json!({"redirect_uris": [redirect]}))
        .await;
    assert_eq!(r.status, 400, "{redirect:?} registered: {}", r.body);
    assert_eq!(r.error(), "invalid_redirect_uri", "{}", r.body);
}
