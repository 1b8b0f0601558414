//! The console without GitHub, over the real router and a real SQLite file: a one-time link
//! (as `capsid console login` issues it) opens a normal console session for the local owner,
//! works once and for five minutes of the server's clock, is stored only as a hash, and the
//! session ends from the console like any other. Bad links get a clear page and change
//! nothing.

use capsid_core::oauth::LOCAL_LOGIN_TTL_MS;
use capsid_core::owner::OwnerService;
use capsid_tests::server::{ServerOptions, TestServer};

use crate::env::*;

/// A server with no GitHub sign-in, over a fresh SQLite file.
pub(crate) struct Local {
    pub(crate) server: TestServer,
    pub(crate) db: std::path::PathBuf,
    _dir: tempfile::TempDir,
}

impl Local {
    pub(crate) async fn start() -> Local {
        let (dir, db, store) = sqlite().await;
        let server = TestServer::start(store, ServerOptions::default()).await;
        Local {
            server,
            db,
            _dir: dir,
        }
    }

    pub(crate) fn url(&self, path: &str) -> String {
        format!("{}{path}", self.server.url)
    }

    /// A fresh one-time link for `user`, as `capsid console login` makes it.
    pub(crate) async fn link(&self, user: &str) -> (String, String) {
        let link = OwnerService::new(self.server.service.clone())
            .start_local_console_login(user)
            .await
            .expect("a link");
        let url = self.url(&format!("/console/login?token={}", link.token));
        (url, link.token)
    }

    /// A browser signed in through a fresh link; the console page.
    pub(crate) async fn signed_in(&self, browser: &mut Browser) -> Resp {
        let (url, _) = self.link("alice").await;
        let page = browser.follow(&self.server.url, &url).await;
        assert_eq!(page.status, 200, "{}", page.body);
        page
    }
}

fn db_bytes(db: &std::path::Path) -> Vec<u8> {
    let mut out = std::fs::read(db).unwrap_or_default();
    let mut wal = db.to_path_buf().into_os_string();
    wal.push("-wal");
    out.extend(std::fs::read(std::path::PathBuf::from(wal)).unwrap_or_default());
    out
}

#[tokio::test]
async fn a_one_time_link_opens_the_console_once_as_the_local_owner() {
    let env = Local::start().await;
    let signed_out = Browser::new().get(&env.url("/console")).await;
    assert_eq!(signed_out.status, 401);
    assert!(signed_out.body.contains("capsid console login"));
    let (url, token) = env.link("alice").await;
    assert!(
        !db_bytes(&env.db)
            .windows(token.len())
            .any(|w| w == token.as_bytes()),
        "only the token's hash is stored"
    );
    let mut browser = Browser::new();
    let first = browser.get(&url).await;
    assert_eq!(first.status, 303, "{}", first.body);
    assert_eq!(first.location(), "/console");
    let set_cookie = first.header("set-cookie");
    assert!(
        set_cookie.starts_with("capsid_console=")
            && set_cookie.contains("HttpOnly")
            && set_cookie.contains("SameSite=Lax")
            && set_cookie.contains("Max-Age=43200"),
        "the same cookie as a GitHub sign-in: {set_cookie}"
    );
    let page = browser.get(&env.url("/console")).await;
    assert_eq!(page.status, 200, "{}", page.body);
    assert!(
        page.body
            .contains("signed in as <strong>cli:alice</strong>")
    );
    let view = browser.get(&env.url("/console.json")).await.json();
    assert_eq!(view["viewer"], "cli:alice");
    // The same link again, in another browser: refused with a page saying why.
    let again = Browser::new().get(&url).await;
    assert_eq!(again.status, 403, "{}", again.body);
    assert!(
        again.body.contains("expired or was already used"),
        "{}",
        again.body
    );
    assert!(again.header("set-cookie").is_empty(), "no session");
    let audit = env
        .server
        .store
        .recent_audit(&capsid_core::ports::AuditFilter::default(), 50)
        .await
        .expect("audit");
    let login = audit
        .iter()
        .find(|r| r.action.as_deref() == Some("console-login"))
        .expect("the sign-in is audited");
    assert_eq!(login.actor.as_deref(), Some("cli:alice"));
    assert!(
        !audit.iter().any(|r| format!("{r:?}").contains(&token)),
        "no secret in the audit"
    );
}

#[tokio::test]
async fn a_link_past_its_five_minutes_is_refused() {
    let env = Local::start().await;
    let (url, _) = env.link("alice").await;
    env.server.clock.advance(LOCAL_LOGIN_TTL_MS);
    let late = Browser::new().get(&url).await;
    assert_eq!(late.status, 403, "{}", late.body);
    assert!(late.body.contains("expired or was already used"));
    let (url, _) = env.link("alice").await;
    env.server.clock.advance(LOCAL_LOGIN_TTL_MS - 1);
    assert_eq!(Browser::new().get(&url).await.status, 303, "just in time");
}

#[tokio::test]
async fn bad_links_get_a_clear_page_and_change_nothing() {
    let env = Local::start().await;
    let before = db_bytes(&env.db);
    for query in [
        "",
        "?token=",
        "?token=capsid_cl_nope",
        "?token=%00%ff",
        "?token=a&token=b",
        &format!("?token={}", "x".repeat(10_000)),
    ] {
        let r = Browser::new()
            .get(&env.url(&format!("/console/login{query}")))
            .await;
        assert!(
            (400..500).contains(&r.status),
            "{query:.40}: {} {}",
            r.status,
            r.body
        );
        assert!(r.header("set-cookie").is_empty(), "{query:.40}: no session");
        assert!(
            r.header("content-type").starts_with("text/html"),
            "{query:.40}: a page"
        );
    }
    // Rate-limit counters aside, nothing was written: no session, no audit row.
    let audit = env
        .server
        .store
        .recent_audit(&capsid_core::ports::AuditFilter::default(), 50)
        .await
        .expect("audit");
    assert!(audit.is_empty(), "{audit:?}");
    assert!(!before.is_empty());
}

#[tokio::test]
async fn the_local_session_ends_from_the_console_like_any_other() {
    let env = Local::start().await;
    let mut browser = Browser::new();
    let page = env.signed_in(&mut browser).await;
    let csrf = hidden(&page.body, "csrf");
    // A second render (another tab) carries the same token.
    let again = browser.get(&env.url("/console")).await;
    assert_eq!(hidden(&again.body, "csrf"), csrf, "bound to the session");
    let forged = browser
        .post_form(
            &env.url("/console/logout"),
            &[("csrf".into(), "0".repeat(64))],
        )
        .await;
    assert_eq!(forged.status, 403, "CSRF first");
    let out = browser
        .post_form(
            &env.url("/console/logout"),
            &[("csrf".into(), csrf.clone())],
        )
        .await;
    assert_eq!(out.status, 200, "{}", out.body);
    assert!(out.body.contains("1 console session(s) ended"));
    let after = browser.get(&env.url("/console")).await;
    assert_eq!(after.status, 401, "signed out: {}", after.body);
    // A second session ended by "End every session" from a third.
    let mut one = Browser::new();
    env.signed_in(&mut one).await;
    let mut two = Browser::new();
    let page = env.signed_in(&mut two).await;
    let all = two
        .post_form(
            &env.url("/console/logout"),
            &[
                ("csrf".into(), hidden(&page.body, "csrf")),
                ("all".into(), "yes".into()),
            ],
        )
        .await;
    assert_eq!(all.status, 200, "{}", all.body);
    assert_eq!(one.get(&env.url("/console")).await.status, 401);
    // The CSRF token of an ended session opens nothing.
    let stale = browser
        .post_form(
            &env.url("/console"),
            &[
                ("csrf".into(), csrf),
                ("action".into(), "mode".into()),
                ("value".into(), "api".into()),
                ("confirm".into(), "yes".into()),
            ],
        )
        .await;
    assert!(
        (400..500).contains(&stale.status),
        "{} {}",
        stale.status,
        stale.body
    );
}
