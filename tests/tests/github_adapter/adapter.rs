//! The adapter on its own against the fake GitHub: the App JWT, the token and installation
//! caches, the 401 refresh, the retry bound, GitHub's statuses as errors, `capsid doctor`'s
//! diagnosis, and no token in the logs.

use std::io::Write;
use std::sync::{Arc, Mutex};

use capsid_core::ports::{Contents, RepoHost, RepoHostError, RepoRef};
use capsid_core::time::{DAY_MS, MINUTE_MS};
use capsid_github::{GitHubApp, GitHubConfig};
use capsid_tests::fake_github::other_test_key;

use super::{REPO, fake, repo};

#[tokio::test]
async fn one_token_serves_many_calls_until_expiry_approaches() {
    let gh = fake().await;
    let app = gh.adapter();
    for _ in 0..12 {
        app.repository(&repo()).await.expect("repository");
    }
    app.contents(&repo(), "src", None).await.expect("listing");
    assert_eq!(gh.token_requests(), 1, "one token for thirteen calls");
    assert_eq!(gh.count("GET", "/repos/octo/alpha/installation"), 1);
    assert!(
        gh.calls()
            .iter()
            .all(|c| c.auth == "jwt" || c.auth == "token"),
        "every call carried accepted credentials: {:?}",
        gh.calls()
    );
    assert!(gh.refusals().is_empty(), "{:?}", gh.refusals());
    // 50 minutes into a 60-minute token: still used.
    gh.clock.advance(50 * MINUTE_MS);
    app.repository(&repo()).await.expect("repository");
    assert_eq!(
        gh.token_requests(),
        1,
        "ten minutes left is more than the margin"
    );
    // 56 minutes in: within the five-minute margin, a new token is minted first.
    gh.clock.advance(6 * MINUTE_MS);
    app.repository(&repo()).await.expect("repository");
    assert_eq!(gh.token_requests(), 2, "refreshed shortly before expiry");
    assert_eq!(
        gh.count("GET", "/repos/octo/alpha/installation"),
        1,
        "the installation is cached for a day"
    );
    gh.clock.advance(DAY_MS);
    app.repository(&repo()).await.expect("repository");
    assert_eq!(gh.count("GET", "/repos/octo/alpha/installation"), 2);
    assert_eq!(gh.token_requests(), 3);
    // Every JWT the fake saw verified against the App's public key and the shared clock.
    assert!(gh.refusals().is_empty(), "{:?}", gh.refusals());
}

#[tokio::test]
async fn a_401_forces_exactly_one_refresh_not_a_loop() {
    let gh = fake().await;
    let app = gh.adapter();
    app.repository(&repo()).await.expect("first call");
    assert_eq!(gh.token_requests(), 1);
    // GitHub revokes the token: the next call is refused once, refreshes once, succeeds.
    gh.revoke_tokens();
    app.repository(&repo())
        .await
        .expect("recovered after one refresh");
    assert_eq!(gh.token_requests(), 2, "exactly one refresh");
    assert_eq!(
        gh.calls()
            .iter()
            .filter(|c| c.path == "/repos/octo/alpha")
            .count(),
        3,
        "the first call, then the refused attempt and its one retry"
    );
    // Every token is refused from now on: one refresh, then a clear error, never a loop.
    gh.refuse_tokens(REPO);
    let err = app.repository(&repo()).await.expect_err("refused");
    assert!(
        matches!(&err, RepoHostError::Forbidden(m) if m.contains("401") && m.contains("octo/alpha")),
        "{err}"
    );
    assert_eq!(gh.token_requests(), 3, "one refresh for the refused call");
    assert_eq!(
        gh.calls()
            .iter()
            .filter(|c| c.path == "/repos/octo/alpha")
            .count(),
        5,
        "two attempts for the refused call, no more"
    );
}

#[tokio::test]
async fn a_jwt_signed_by_another_key_is_refused() {
    let gh = fake().await;
    let app = GitHubApp::new(gh.config_with(other_test_key()), gh.clock.clone()).expect("app");
    let err = app.repository(&repo()).await.expect_err("refused");
    assert!(
        matches!(&err, RepoHostError::Forbidden(m) if m.contains("JWT")),
        "{err}"
    );
    assert_eq!(gh.token_requests(), 0);
    assert!(
        gh.refusals().iter().any(|r| r.contains("JWT refused")),
        "{:?}",
        gh.refusals()
    );
    let diagnosis = app.diagnose().await;
    assert!(diagnosis.jwt.is_err(), "{diagnosis:?}");
}

#[tokio::test]
async fn a_clock_far_from_githubs_makes_the_jwt_refused() {
    let gh = fake().await;
    let skewed = Arc::new(capsid_core::time::ManualClock::new(
        capsid_core::time::Clock::now(gh.clock.as_ref()).plus_millis(-20 * MINUTE_MS),
    ));
    let app = GitHubApp::new(
        gh.config_with(capsid_tests::fake_github::test_key()),
        skewed,
    )
    .expect("app");
    assert!(app.repository(&repo()).await.is_err());
    assert!(
        gh.refusals().iter().any(|r| r.contains("expired")),
        "an expired JWT is refused: {:?}",
        gh.refusals()
    );
}

#[tokio::test]
async fn secondary_rate_limits_are_retried_within_a_bound() {
    let gh = fake().await;
    let app = gh.adapter();
    app.repository(&repo()).await.expect("warm");
    let limited = r#"{"message":"You have exceeded a secondary rate limit. Please wait a few minutes before you try again."}"#;
    gh.fault(
        "GET",
        "/git/trees/",
        403,
        &[("retry-after", "0")],
        limited,
        2,
    );
    let tree = app
        .tree(&repo(), "main")
        .await
        .expect("third attempt succeeds");
    assert!(tree.items.iter().any(|i| i.path == "src/lib.rs"));
    assert_eq!(
        gh.count("GET", "/git/trees/"),
        3,
        "two refusals, one success"
    );
    gh.fault("GET", "/git/trees/", 403, &[], limited, 100);
    let err = app.tree(&repo(), "main").await.expect_err("gives up");
    assert!(
        matches!(&err, RepoHostError::RateLimited(m) if m.contains("secondary") && m.contains("octo/alpha")),
        "{err}"
    );
    assert_eq!(
        gh.count("GET", "/git/trees/"),
        3 + 4,
        "the first attempt and three retries"
    );
}

#[tokio::test]
async fn githubs_statuses_become_clear_errors() {
    let gh = fake().await;
    let app = gh.adapter();
    let err = app
        .contents(&repo(), "missing.txt", None)
        .await
        .expect_err("404");
    assert!(
        matches!(&err, RepoHostError::NotFound(m) if m.contains("missing.txt") && m.contains("octo/alpha")),
        "{err}"
    );
    let err = app
        .create_branch(&repo(), "main", "0000000000000000000000000000000000000000")
        .await
        .expect_err("422");
    assert!(
        matches!(&err, RepoHostError::Rejected(m) if m.contains("create branch main")),
        "{err}"
    );
    gh.fault(
        "PUT",
        "/contents/",
        409,
        &[],
        r#"{"message":"is at 1 but expected 2"}"#,
        1,
    );
    let write = capsid_core::ports::FileWrite {
        path: "a.txt",
        content: "x",
        message: "m",
        branch: "main",
        sha: None,
    };
    let err = app.put_file(&repo(), &write).await.expect_err("409");
    assert!(
        matches!(&err, RepoHostError::Conflict(m) if m.contains("commit a.txt to octo/alpha")),
        "{err}"
    );
    gh.fault("GET", "/branches", 502, &[], "upstream broke", 1);
    let err = app.branches(&repo()).await.expect_err("5xx");
    assert!(
        matches!(&err, RepoHostError::Failed(m) if m.contains("502") && m.contains("branches of octo/alpha")),
        "{err}"
    );
    gh.fault(
        "GET",
        "/tags",
        403,
        &[
            ("x-ratelimit-remaining", "0"),
            ("x-ratelimit-reset", "1700000000"),
        ],
        r#"{"message":"API rate limit exceeded"}"#,
        1,
    );
    let err = app.tags(&repo()).await.expect_err("primary limit");
    assert!(
        matches!(&err, RepoHostError::RateLimited(m) if m.contains("1700000000")),
        "{err}"
    );
    assert_eq!(
        gh.count("GET", "/tags"),
        1,
        "a primary limit is not retried"
    );
    gh.fault(
        "GET",
        "/pulls",
        403,
        &[],
        r#"{"message":"Resource not accessible by integration"}"#,
        1,
    );
    let err = app
        .open_pull_requests(&repo(), None)
        .await
        .expect_err("403");
    assert!(matches!(&err, RepoHostError::Forbidden(_)), "{err}");
    // Still usable afterwards, and a big file arrives decoded.
    match app
        .contents(&repo(), "README.md", None)
        .await
        .expect("file")
    {
        Contents::File(f) => assert_eq!(f.bytes, b"hello\n"),
        other => panic!("expected a file, got {other:?}"),
    }
}

#[tokio::test]
async fn an_uninstalled_repository_is_named() {
    let gh = fake().await;
    let app = gh.adapter();
    let other = RepoRef::parse("stranger/repo").expect("repo");
    let err = app.repository(&other).await.expect_err("not installed");
    assert!(
        matches!(&err, RepoHostError::NotFound(m) if m.contains("not installed on stranger/repo")),
        "{err}"
    );
}

#[tokio::test]
async fn doctor_sees_the_app_and_its_installations() {
    let gh = fake().await;
    gh.add_repo("acme/site", &[("index.html", "hi")]);
    let diagnosis = gh.adapter().diagnose().await;
    assert_eq!(diagnosis.jwt, Ok("Capsid Test App".to_owned()));
    let installations = diagnosis.installations.expect("listed");
    assert_eq!(installations.len(), 2, "{installations:?}");
    assert!(installations.iter().any(|i| i.starts_with("octo (")));
    assert!(installations.iter().any(|i| i.starts_with("acme (")));
    let bad = GitHubConfig::new("x", "not a key", Some(&gh.url));
    let err = GitHubApp::new(bad, gh.clock.clone()).expect_err("key refused");
    assert!(err.contains("CAPSID_GITHUB_APP_PRIVATE_KEY"), "{err}");
}

/// Everything any test of this binary logs: one global subscriber, installed once (a
/// thread-local default races with callsite interest caching across test threads).
fn captured_logs() -> &'static Arc<Mutex<Vec<u8>>> {
    static LOGS: std::sync::OnceLock<Arc<Mutex<Vec<u8>>>> = std::sync::OnceLock::new();
    LOGS.get_or_init(|| {
        let logs = Arc::new(Mutex::new(Vec::new()));
        let writer = Captured(logs.clone());
        let subscriber = tracing_subscriber::fmt()
            .with_max_level(tracing::Level::TRACE)
            .with_ansi(false)
            .with_writer(move || writer.clone())
            .finish();
        tracing::subscriber::set_global_default(subscriber).expect("one global subscriber");
        logs
    })
}

#[derive(Clone)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[tokio::test]
async fn tokens_never_reach_the_logs() {
    let captured = captured_logs();
    let gh = fake().await;
    let app = gh.adapter();
    app.repository(&repo()).await.expect("call");
    gh.revoke_tokens();
    app.repository(&repo()).await.expect("call after a refresh");
    let logs =
        String::from_utf8_lossy(&captured.lock().unwrap_or_else(|p| p.into_inner())).into_owned();
    assert!(
        logs.contains("GitHub answered"),
        "the adapter logged: {logs}"
    );
    assert!(logs.contains("refreshing it once"), "{logs}");
    assert!(
        !logs.contains("ghs_"),
        "an installation token reached the logs: {logs}"
    );
    assert!(!logs.contains("eyJ"), "a JWT reached the logs: {logs}");
}
