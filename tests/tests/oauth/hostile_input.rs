//! Secrets never reach the logs, hostile input never gets a 500, the owner routes
//! without an owner login, and revoking every MCP client from the console.

use std::sync::Arc;

use capsid_tests::server::{ServerOptions, TestServer};
use serde_json::json;

use crate::console::console_login;
use crate::env::*;

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
    // The console is not off: it tells the owner how to sign in without GitHub.
    let page = read(
        http()
            .get(format!("{}/console", server.url))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(page.status, 401, "{}", page.body);
    assert!(page.body.contains("capsid console login"), "{}", page.body);
    assert!(page.header("content-type").starts_with("text/html"));
    let json = read(
        http()
            .get(format!("{}/console.json", server.url))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(json.status, 401, "{}", json.body);
    let checks = [
        ("POST", "/mcp"),
        ("GET", "/console/callback"),
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
