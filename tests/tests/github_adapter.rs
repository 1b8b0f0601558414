//! The real `capsid-github` adapter against the fake GitHub: the App JWT is verified (RS256
//! signature, issuer, lifetime), installation tokens are cached until expiry approaches and
//! installations for a day (proven by call counts), a 401 forces exactly one refresh,
//! secondary rate limits are retried within a bound, GitHub's statuses become clear errors,
//! `capsid doctor`'s diagnosis, and no token ever reaches the logs.

use std::io::Write;
use std::sync::{Arc, Mutex};

use capsid_core::ports::{Contents, RepoHost, RepoHostError, RepoRef};
use capsid_core::time::{DAY_MS, MINUTE_MS};
use capsid_github::GitHubApp;
use capsid_tests::fake_github::{FakeGitHub, other_test_key};

const REPO: &str = "octo/alpha";

fn repo() -> RepoRef {
    RepoRef::parse(REPO).expect("repo")
}

async fn fake() -> FakeGitHub {
    capsid_http::install_tls_provider();
    let gh = FakeGitHub::start().await;
    gh.add_repo(
        REPO,
        &[("README.md", "hello\n"), ("src/lib.rs", "pub fn x() {}\n")],
    );
    gh
}

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
async fn the_facts_other_features_read() {
    let gh = fake().await;
    let app = gh.adapter();
    gh.commit(
        REPO,
        "topic",
        &[("a.txt", Some("a")), ("README.md", None)],
        "Topic",
    );
    let head = gh.commit(REPO, "topic", &[("b.txt", Some("b"))], "More");
    let number = gh.open_pull(REPO, "topic", "main", "Topic", "Closes #1.");
    gh.check_runs(
        REPO,
        &head,
        &[("completed", Some("success")), ("in_progress", None)],
    );
    gh.add_run(REPO, "ci.yml", "topic", Some("success"), vec![]);
    gh.comment(
        REPO,
        number,
        "rev",
        "REVIEW: fine. APPROVE",
        "2026-11-02T00:00:00Z",
    );

    let pr = app
        .pull_request(&repo(), number)
        .await
        .expect("pull request");
    assert_eq!(
        (pr.number, pr.merged, pr.open, pr.commits, pr.changed_files),
        (number, false, true, 2, 3),
        "{pr:?}"
    );
    assert_eq!(
        (pr.head_ref.as_str(), pr.base_ref.as_str()),
        ("topic", "main")
    );
    assert_eq!(pr.head_sha, head);
    assert!(!pr.head_is_fork);
    assert_eq!(pr.body, "Closes #1.");
    let mut files = app
        .pull_request_files(&repo(), number)
        .await
        .expect("files");
    files.sort();
    assert_eq!(files, ["README.md", "a.txt", "b.txt"]);
    let checks = app.check_runs(&repo(), &head).await.expect("check runs");
    assert_eq!(checks.len(), 2, "{checks:?}");
    assert!(
        checks
            .iter()
            .any(|c| c.conclusion.as_deref() == Some("success"))
    );
    assert!(
        checks
            .iter()
            .any(|c| c.status == "in_progress" && c.conclusion.is_none())
    );
    let runs = app
        .workflow_runs(&repo(), &head)
        .await
        .expect("workflow runs");
    assert_eq!(runs.len(), 1, "{runs:?}");
    assert_eq!(runs[0].head_sha, head);
    assert_eq!(runs[0].conclusion.as_deref(), Some("success"));
    let comments = app.issue_comments(&repo(), number).await.expect("comments");
    assert_eq!(comments.len(), 1);
    assert_eq!(comments[0].login, "rev");
    assert!(comments[0].body.starts_with("REVIEW:"));
    assert_eq!(
        app.file_text(&repo(), "a.txt", Some("topic"))
            .await
            .expect("text"),
        "a"
    );
    gh.merge(REPO, number);
    let pr = app
        .pull_request(&repo(), number)
        .await
        .expect("pull request");
    assert!(pr.merged && !pr.open, "{pr:?}");
    let err = app.pull_request(&repo(), 999).await.expect_err("missing");
    assert!(
        matches!(&err, RepoHostError::NotFound(m) if m.contains("octo/alpha")),
        "{err}"
    );
    assert_eq!(gh.token_requests(), 1, "one token for every fact");
    assert!(gh.refusals().is_empty(), "{:?}", gh.refusals());
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

use capsid_github::GitHubConfig;

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

// ---------------------------------------------------------------------------------------------
// The thirteen repo tools end to end: a real MCP client, the one enforcement point, the real
// adapter and the fake GitHub (each scenario once per store).
// ---------------------------------------------------------------------------------------------

use capsid_tests::fake_github::{job, step};
use capsid_tests::server::{Client, TestServer};
use serde_json::{Value, json};

capsid_tests::github_cases!(
    read_tools_answer_from_the_mapped_repository,
    search_code_pages_and_never_hides_exhaustion,
    file_writes_follow_the_flag_rules,
    branches_and_pull_requests,
    ci_status_and_dispatch,
    outcome_verification_and_review_gate_read_github,
    an_audit_failure_after_a_mutation_says_do_not_retry,
    big_answers_are_cut_within_their_budgets,
    bad_input_is_refused_naming_the_field,
);

const ALPHA: &str = "octo/alpha";

fn alpha_files() -> Vec<(&'static str, &'static str)> {
    vec![
        ("README.md", "# Alpha\nHello world\n"),
        (
            "src/lib.rs",
            "pub fn hello() -> &'static str {\n    \"Hello\"\n}\n",
        ),
        ("src/deep/mod.rs", "// hello from deep\n"),
        ("docs/guide.md", "Nothing to see.\n"),
    ]
}

async fn agent(s: &TestServer, name: &str, grants: &[&str], flags: Value) -> Client {
    let key = s
        .mint(
            name,
            "driver",
            json!({"namespaces": ["alpha"], "grants": grants, "flags": flags}),
        )
        .await;
    s.client(&key).await
}

async fn setup_alpha(s: &TestServer, g: &FakeGitHub) {
    g.add_repo(ALPHA, &alpha_files());
    s.namespace("alpha").await;
}

async fn read_tools_answer_from_the_mapped_repository(s: &TestServer, g: &FakeGitHub) {
    setup_alpha(s, g).await;
    g.add_repo("stranger/repo", &[("x.txt", "x")]);
    let r = agent(s, "reader", &["read"], json!({})).await;

    // list_repo_tree: root, a directory, cached until a write.
    let root = r.ok("list_repo_tree", json!({"namespace": "alpha"})).await;
    let names: Vec<&str> = root["entries"]
        .as_array()
        .expect("entries")
        .iter()
        .map(|e| e["path"].as_str().unwrap_or(""))
        .collect();
    assert!(
        names.contains(&"README.md") && names.contains(&"src"),
        "{root}"
    );
    let src = r
        .ok(
            "list_repo_tree",
            json!({"namespace": "alpha", "path": "src"}),
        )
        .await;
    assert!(src.to_string().contains("src/lib.rs"), "{src}");
    let contents_calls = g.count("GET", "/repos/octo/alpha/contents");
    r.ok(
        "list_repo_tree",
        json!({"namespace": "alpha", "path": "src"}),
    )
    .await;
    assert_eq!(
        g.count("GET", "/repos/octo/alpha/contents"),
        contents_calls,
        "a repeated read is served from the short cache"
    );

    // The namespace's mapping is the authorization boundary.
    let err = r
        .err(
            "list_repo_tree",
            json!({"namespace": "alpha", "repo": "stranger/repo"}),
        )
        .await;
    assert!(err.contains("stranger/repo"), "{err}");
    assert_eq!(
        g.count("GET", "/repos/stranger/repo"),
        0,
        "an unmapped repository is refused before GitHub is asked"
    );

    // read_repo_file: single, batch, and the argument refusals.
    let one = r
        .ok(
            "read_repo_file",
            json!({"namespace": "alpha", "path": "README.md"}),
        )
        .await;
    assert!(one.to_string().contains("Hello world"), "{one}");
    let batch = r
        .ok(
            "read_repo_file",
            json!({"namespace": "alpha", "paths": ["README.md", "src/lib.rs", "missing.txt"]}),
        )
        .await;
    assert_eq!(batch["requested"], 3, "{batch}");
    let files = batch["files"].as_array().expect("files");
    assert!(files[1].to_string().contains("pub fn hello"), "{batch}");
    assert!(files[2]["error"].is_string(), "per-file error: {batch}");
    for (args, field) in [
        (
            json!({"namespace": "alpha", "path": "README.md", "paths": ["src/lib.rs"]}),
            "path",
        ),
        (json!({"namespace": "alpha"}), "path"),
        (json!({"namespace": "alpha", "paths": []}), "paths"),
    ] {
        let err = r.err("read_repo_file", args.clone()).await;
        assert!(err.contains(field), "{args} → {err}");
    }
    let too_many: Vec<String> = (0..21).map(|i| format!("f{i}.txt")).collect();
    let err = r
        .err(
            "read_repo_file",
            json!({"namespace": "alpha", "paths": too_many}),
        )
        .await;
    assert!(err.contains("paths"), "{err}");
    let err = r
        .err(
            "read_repo_file",
            json!({"namespace": "alpha", "path": "src"}),
        )
        .await;
    assert!(err.contains("directory"), "{err}");

    // repo_refs: branches with ahead/behind, tags, open pull requests.
    g.commit(
        ALPHA,
        "feature",
        &[("src/new.rs", Some("// new\n"))],
        "Add new",
    );
    g.tag(ALPHA, "v1.0.0", "main");
    let pr = g.open_pull(ALPHA, "feature", "main", "Add new", "body");
    let refs = r.ok("repo_refs", json!({"namespace": "alpha"})).await;
    let feature = refs["branches"]
        .as_array()
        .expect("branches")
        .iter()
        .find(|b| b["name"] == "feature")
        .cloned()
        .unwrap_or_else(|| panic!("feature listed: {refs}"));
    assert_eq!(feature["ahead_by"], 1, "{refs}");
    assert!(refs["tags"].to_string().contains("v1.0.0"), "{refs}");
    assert!(
        refs["pull_requests"].to_string().contains(&format!("{pr}")),
        "{refs}"
    );

    // repo_history: the three modes, patches only on request, mixed modes refused.
    let commits = r
        .ok(
            "repo_history",
            json!({"namespace": "alpha", "ref": "feature", "limit": 5}),
        )
        .await;
    assert_eq!(commits["mode"], "commits");
    assert!(commits.to_string().contains("Add new"), "{commits}");
    let cmp = r
        .ok(
            "repo_history",
            json!({"namespace": "alpha", "base": "main", "head": "feature"}),
        )
        .await;
    assert_eq!(cmp["mode"], "compare");
    assert!(cmp.to_string().contains("src/new.rs"), "{cmp}");
    assert!(
        !cmp.to_string().contains("\"patch\""),
        "no patch unless asked: {cmp}"
    );
    let sha = commits["commits"][0]["sha"]
        .as_str()
        .expect("sha")
        .to_owned();
    let one = r
        .ok(
            "repo_history",
            json!({"namespace": "alpha", "sha": sha, "patch": true}),
        )
        .await;
    assert_eq!(one["mode"], "commit");
    assert!(
        one.to_string().contains("\"patch\""),
        "patch on request: {one}"
    );
    for args in [
        json!({"namespace": "alpha", "ref": "main", "sha": sha}),
        json!({"namespace": "alpha", "base": "main"}),
        json!({"namespace": "alpha"}),
    ] {
        r.err("repo_history", args).await;
    }
    assert!(g.refusals().is_empty(), "{:?}", g.refusals());
}

async fn search_code_pages_and_never_hides_exhaustion(s: &TestServer, g: &FakeGitHub) {
    setup_alpha(s, g).await;
    let r = agent(s, "reader", &["read"], json!({})).await;
    let all = r
        .ok(
            "search_code",
            json!({"namespace": "alpha", "query": "HELLO"}),
        )
        .await;
    let paths: Vec<&str> = all["items"]
        .as_array()
        .expect("items")
        .iter()
        .map(|i| i["path"].as_str().unwrap_or(""))
        .collect();
    assert!(
        paths.contains(&"README.md") && paths.contains(&"src/lib.rs"),
        "case-insensitive: {all}"
    );
    assert_eq!(all["truncated"], false, "{all}");
    let under = r
        .ok(
            "search_code",
            json!({"namespace": "alpha", "query": "hello", "path_prefix": "src/deep"}),
        )
        .await;
    assert_eq!(under["total_results"], 1, "{under}");
    assert_eq!(under["items"][0]["path"], "src/deep/mod.rs");
    // One file per page: the first page says where to resume, the next starts there.
    let page = r
        .ok(
            "search_code",
            json!({"namespace": "alpha", "query": "hello", "max_files": 1}),
        )
        .await;
    assert_eq!(page["truncated"], true, "{page}");
    assert_eq!(page["next_start"], 1, "{page}");
    let next = r
        .ok(
            "search_code",
            json!({"namespace": "alpha", "query": "hello", "max_files": 1, "start": 1}),
        )
        .await;
    assert_eq!(next["start"], 1, "{next}");
    // The quota runs out mid-scan: an error, never an empty result.
    g.fault(
        "GET",
        "/git/blobs/",
        403,
        &[
            ("x-ratelimit-remaining", "0"),
            ("x-ratelimit-reset", "1700000000"),
        ],
        r#"{"message":"API rate limit exceeded"}"#,
        100,
    );
    let err = r
        .err(
            "search_code",
            json!({"namespace": "alpha", "query": "nothing-like-this"}),
        )
        .await;
    assert!(err.contains("NOT an empty result"), "{err}");
}

async fn file_writes_follow_the_flag_rules(s: &TestServer, g: &FakeGitHub) {
    setup_alpha(s, g).await;
    let w = agent(s, "writer", &["read", "write"], json!({})).await;
    let direct = agent(
        s,
        "direct",
        &["read", "write"],
        json!({"can_direct_write": true}),
    )
    .await;
    let wf = agent(
        s,
        "workflows",
        &["read", "write"],
        json!({"can_write_workflows": true}),
    )
    .await;
    // Warm the read cache, so the write must invalidate it.
    let before = w
        .ok(
            "read_repo_file",
            json!({"namespace": "alpha", "path": "README.md"}),
        )
        .await;
    assert!(before.to_string().contains("Hello world"));

    // pr mode (the default): a new branch, the commit on it, a pull request.
    let out = w
        .ok(
            "write_repo_file",
            json!({"namespace": "alpha", "path": "docs/new.md", "content": "New — verbatim\n", "message": "Add a page"}),
        )
        .await;
    assert_eq!(out["mode"], "pr", "{out}");
    let branch = out["branch"].as_str().expect("branch").to_owned();
    assert_ne!(branch, "main");
    assert_eq!(
        g.file(ALPHA, &branch, "docs/new.md").as_deref(),
        Some("New — verbatim\n"),
        "written verbatim on the work branch"
    );
    assert_eq!(g.file(ALPHA, "main", "docs/new.md"), None);
    let number = out["pr"]["number"].as_u64().expect("a pull request");
    assert_eq!(g.pull(ALPHA, number).expect("pull").0, "open");

    // direct mode needs can_direct_write.
    let err = w
        .err(
            "write_repo_file",
            json!({"namespace": "alpha", "path": "README.md", "content": "x", "message": "m", "mode": "direct"}),
        )
        .await;
    assert!(err.contains("can_direct_write"), "{err}");
    let out = direct
        .ok(
            "write_repo_file",
            json!({"namespace": "alpha", "path": "README.md", "content": "# Alpha\nChanged\n", "message": "Edit", "mode": "direct"}),
        )
        .await;
    assert_eq!(out["branch"], "main", "{out}");
    assert_eq!(
        g.file(ALPHA, "main", "README.md").as_deref(),
        Some("# Alpha\nChanged\n")
    );
    let after = w
        .ok(
            "read_repo_file",
            json!({"namespace": "alpha", "path": "README.md"}),
        )
        .await;
    assert!(
        after.to_string().contains("Changed"),
        "the write invalidated the cached read: {after}"
    );

    // The workflow directory, protected paths and money paths.
    let prot = agent(
        s,
        "protected",
        &["read", "write"],
        json!({"can_touch_protected": true}),
    )
    .await;
    let before_calls = g.calls().len();
    let err = prot
        .err(
            "write_repo_file",
            json!({"namespace": "alpha", "path": ".github/workflows/ci.yml", "content": "on: push\n", "message": "m"}),
        )
        .await;
    assert!(err.contains("allow_workflow_write"), "{err}");
    // The flags are asked at the one check, before the handler runs.
    let err = w
        .err(
            "write_repo_file",
            json!({"namespace": "alpha", "path": ".github/workflows/ci.yml", "content": "on: push\n", "message": "m"}),
        )
        .await;
    assert!(err.contains("can_touch_protected"), "{err}");
    let err = w
        .err(
            "write_repo_file",
            json!({"namespace": "alpha", "path": ".github/workflows/ci.yml", "content": "on: push\n", "message": "m", "allow_workflow_write": true}),
        )
        .await;
    assert!(err.contains("can_write_workflows"), "{err}");
    let err = w
        .err(
            "write_repo_file",
            json!({"namespace": "alpha", "path": "migrations/0002.sql", "content": "x", "message": "m"}),
        )
        .await;
    assert!(err.contains("can_touch_protected"), "{err}");
    let err = w
        .err(
            "write_repo_file",
            json!({"namespace": "alpha", "path": "src/billing/charge.rs", "content": "x", "message": "m"}),
        )
        .await;
    assert!(err.contains("money_paths"), "{err}");
    let err = w
        .err(
            "delete_repo_file",
            json!({"namespace": "alpha", "path": "src/stripe-client.rs", "message": "m"}),
        )
        .await;
    assert!(err.contains("money_paths"), "{err}");
    assert_eq!(
        g.calls().len(),
        before_calls,
        "every refusal came before any GitHub call"
    );
    // can_write_workflows with the opt-in writes the workflow (it is also a protected path).
    let err = wf
        .err(
            "write_repo_file",
            json!({"namespace": "alpha", "path": ".github/workflows/ci.yml", "content": "on: push\n", "message": "m", "allow_workflow_write": true}),
        )
        .await;
    assert!(err.contains("can_touch_protected"), "{err}");
    let both = agent(
        s,
        "both",
        &["read", "write"],
        json!({"can_write_workflows": true, "can_touch_protected": true}),
    )
    .await;
    let out = both
        .ok(
            "write_repo_file",
            json!({"namespace": "alpha", "path": ".github/workflows/ci.yml", "content": "on: push\n", "message": "CI", "allow_workflow_write": true}),
        )
        .await;
    assert_eq!(out["allow_workflow_write"], true, "{out}");

    // delete_repo_file: the file must exist; pr mode by default.
    let err = w
        .err(
            "delete_repo_file",
            json!({"namespace": "alpha", "path": "nope.txt", "message": "m"}),
        )
        .await;
    assert!(err.contains("nope.txt"), "{err}");
    let out = w
        .ok(
            "delete_repo_file",
            json!({"namespace": "alpha", "path": "docs/guide.md", "message": "Drop the guide"}),
        )
        .await;
    let branch = out["branch"].as_str().expect("branch");
    assert_eq!(g.file(ALPHA, branch, "docs/guide.md"), None, "{out}");
    assert!(g.file(ALPHA, "main", "docs/guide.md").is_some());

    // Audit rows after each mutation, with no credential in them.
    let probe = s.probe.as_ref().expect("probe");
    assert_eq!(
        probe
            .count("SELECT COUNT(*) FROM audit_log WHERE action = 'write_repo_file'")
            .await,
        3
    );
    assert_eq!(
        probe
            .count("SELECT COUNT(*) FROM audit_log WHERE action = 'delete_repo_file'")
            .await,
        1
    );
    assert_eq!(
        probe
            .count(
                "SELECT COUNT(*) FROM audit_log WHERE params LIKE '%ghs_%' OR params LIKE '%eyJ%'"
            )
            .await,
        0,
        "no token in an audit row"
    );
    assert!(g.refusals().is_empty(), "{:?}", g.refusals());
}

async fn branches_and_pull_requests(s: &TestServer, g: &FakeGitHub) {
    setup_alpha(s, g).await;
    let w = agent(s, "writer", &["read", "write"], json!({})).await;
    let merger = agent(s, "merger", &["read", "write"], json!({"can_merge": true})).await;
    let commenter = agent(
        s,
        "commenter",
        &["read", "write"],
        json!({"can_comment_pr": true}),
    )
    .await;

    // create_branch off the default branch, open_pr against it.
    let out = w
        .ok(
            "create_branch",
            json!({"namespace": "alpha", "branch": "topic"}),
        )
        .await;
    assert_eq!(out["branch"], "topic", "{out}");
    assert!(g.branch_names(ALPHA).contains(&"topic".to_owned()));
    let err = w
        .err(
            "create_branch",
            json!({"namespace": "alpha", "branch": "bad..name"}),
        )
        .await;
    assert!(err.contains("branch"), "{err}");
    g.commit(ALPHA, "topic", &[("src/topic.rs", Some("// t\n"))], "Topic");
    let pr = w
        .ok(
            "open_pr",
            json!({"namespace": "alpha", "title": "Topic", "head": "topic", "body": "Adds a topic."}),
        )
        .await;
    let number = pr["number"].as_u64().expect("number");
    assert_eq!(pr["base"], "main", "{pr}");

    // delete_branch: default never, open PR or improve/ only with force, missing refused.
    let err = w
        .err(
            "delete_branch",
            json!({"namespace": "alpha", "branch": "main", "force": true}),
        )
        .await;
    assert!(err.contains("default branch"), "{err}");
    let err = w
        .err(
            "delete_branch",
            json!({"namespace": "alpha", "branch": "topic"}),
        )
        .await;
    assert!(err.contains("force"), "{err}");
    g.commit(ALPHA, "improve/run-1", &[("x.md", Some("x"))], "loop");
    let err = w
        .err(
            "delete_branch",
            json!({"namespace": "alpha", "branch": "improve/run-1"}),
        )
        .await;
    assert!(err.contains("improve/"), "{err}");
    let err = w
        .err(
            "delete_branch",
            json!({"namespace": "alpha", "branch": "ghost"}),
        )
        .await;
    assert!(err.contains("ghost"), "{err}");
    let out = w
        .ok(
            "delete_branch",
            json!({"namespace": "alpha", "branch": "improve/run-1", "force": true}),
        )
        .await;
    assert_eq!(out["deleted"], true, "{out}");

    // manage_pr: merge needs can_merge; comment needs can_comment_pr.
    let err = w
        .err(
            "manage_pr",
            json!({"namespace": "alpha", "number": number, "action": "merge"}),
        )
        .await;
    assert!(err.contains("can_merge"), "{err}");
    let err = w
        .err(
            "manage_pr",
            json!({"namespace": "alpha", "number": number, "action": "comment", "body": "hi"}),
        )
        .await;
    assert!(err.contains("can_comment_pr"), "{err}");
    let out = commenter
        .ok(
            "manage_pr",
            json!({"namespace": "alpha", "number": number, "action": "comment", "body": "Looks fine."}),
        )
        .await;
    assert_eq!(out["action"], "comment", "{out}");
    assert_eq!(
        g.comment_texts(ALPHA, number),
        vec!["Looks fine.".to_owned()]
    );
    let out = merger
        .ok(
            "manage_pr",
            json!({"namespace": "alpha", "number": number, "action": "merge"}),
        )
        .await;
    assert_eq!(out["merge_method"], "squash", "{out}");
    assert_eq!(out["head_branch"], "topic", "{out}");
    assert_eq!(out["head_branch_deleted"], true, "{out}");
    assert!(g.pull(ALPHA, number).expect("pull").1, "merged");
    assert!(!g.branch_names(ALPHA).contains(&"topic".to_owned()));

    // close keeps an improve/ head branch and a fork's head.
    g.commit(ALPHA, "improve/run-2", &[("y.md", Some("y"))], "loop");
    let loop_pr = g.open_pull(ALPHA, "improve/run-2", "main", "Loop", "");
    let out = w
        .ok(
            "manage_pr",
            json!({"namespace": "alpha", "number": loop_pr, "action": "close"}),
        )
        .await;
    assert_eq!(out["head_branch_deleted"], false, "{out}");
    assert!(out["head_branch_note"].is_string(), "{out}");
    assert!(g.branch_names(ALPHA).contains(&"improve/run-2".to_owned()));
    assert_eq!(g.pull(ALPHA, loop_pr).expect("pull").0, "closed");
    g.commit(ALPHA, "forked", &[("z.md", Some("z"))], "fork");
    let fork_pr = g.open_pull(ALPHA, "forked", "main", "Fork", "");
    g.fork_head(ALPHA, fork_pr, "someone/alpha");
    let out = w
        .ok(
            "manage_pr",
            json!({"namespace": "alpha", "number": fork_pr, "action": "close"}),
        )
        .await;
    assert_eq!(out["head_branch_deleted"], false, "{out}");
    assert!(g.branch_names(ALPHA).contains(&"forked".to_owned()));
    let probe = s.probe.as_ref().expect("probe");
    assert_eq!(
        probe
            .count("SELECT COUNT(*) FROM audit_log WHERE action = 'manage_pr'")
            .await,
        4
    );
}

async fn bad_input_is_refused_naming_the_field(s: &TestServer, g: &FakeGitHub) {
    setup_alpha(s, g).await;
    let w = agent(
        s,
        "writer",
        &["read", "write"],
        json!({"can_merge": true, "can_dispatch": true, "can_comment_pr": true}),
    )
    .await;
    let before = g.calls().len();
    let many: serde_json::Map<String, Value> =
        (0..11).map(|i| (format!("k{i}"), json!("v"))).collect();
    for (tool, args, field) in [
        (
            "write_repo_file",
            json!({"namespace": "alpha", "path": "../etc/passwd", "content": "x", "message": "m"}),
            "path",
        ),
        (
            "write_repo_file",
            json!({"namespace": "alpha", "path": "a.txt", "content": "x", "message": "m", "branch": "a..b"}),
            "branch",
        ),
        (
            "write_repo_file",
            json!({"namespace": "alpha", "path": "a.txt", "content": "x", "message": "m", "mode": "sideways"}),
            "mode",
        ),
        (
            "manage_pr",
            json!({"namespace": "alpha", "number": 0, "action": "merge"}),
            "number",
        ),
        (
            "manage_pr",
            json!({"namespace": "alpha", "number": 1, "action": "comment"}),
            "body",
        ),
        (
            "ci_dispatch",
            json!({"namespace": "alpha", "workflow": "ci.yml", "ref": "main", "inputs": many}),
            "inputs",
        ),
        (
            "ci_dispatch",
            json!({"namespace": "alpha", "workflow": "ci.yml"}),
            "ref",
        ),
        (
            "repo_history",
            json!({"namespace": "alpha", "limit": 0, "ref": "main"}),
            "limit",
        ),
        (
            "list_repo_tree",
            json!({"namespace": "alpha", "ref": "-x"}),
            "ref",
        ),
    ] {
        let err = w.err(tool, args.clone()).await;
        assert!(err.contains(field), "{tool} {args} → {err}");
    }
    assert_eq!(g.calls().len(), before, "nothing reached GitHub");
    let probe = s.probe.as_ref().expect("probe");
    assert_eq!(
        probe
            .count("SELECT COUNT(*) FROM audit_log WHERE action IN ('write_repo_file', 'manage_pr', 'ci_dispatch')")
            .await,
        0,
        "nothing changed"
    );
}

async fn ci_status_and_dispatch(s: &TestServer, g: &FakeGitHub) {
    setup_alpha(s, g).await;
    let r = agent(s, "reader", &["read"], json!({})).await;
    let w = agent(s, "writer", &["read", "write"], json!({})).await;
    let d = agent(
        s,
        "dispatcher",
        &["read", "write"],
        json!({"can_dispatch": true}),
    )
    .await;
    let log = "line one\nline two\n##[error]assertion failed: left == right\nline four\n";
    let (run_id, _) = g.add_run(
        ALPHA,
        "ci.yml",
        "main",
        Some("failure"),
        vec![job(
            "test",
            "failure",
            vec![
                step(
                    "checkout",
                    "success",
                    "2026-11-30T00:00:00Z",
                    "2026-11-30T00:00:10Z",
                ),
                step(
                    "cargo test",
                    "failure",
                    "2026-11-30T00:00:10Z",
                    "2026-11-30T00:01:00Z",
                ),
            ],
            log,
        )],
    );
    // A read-only caller sees the failing step, but the log is withheld.
    let out = r.ok("ci_status", json!({"namespace": "alpha"})).await;
    assert!(out.to_string().contains("cargo test"), "{out}");
    assert!(out["failed_run"]["log_tail_withheld"].is_string(), "{out}");
    assert!(!out.to_string().contains("assertion failed"), "{out}");
    // A write-grant caller gets the tail.
    let out = w.ok("ci_status", json!({"namespace": "alpha"})).await;
    let failed = &out["failed_run"];
    assert!(
        failed["log"].to_string().contains("assertion failed"),
        "{out}"
    );
    assert!(failed["log_region"].is_string(), "{out}");
    assert_eq!(failed["failing_step"], "cargo test", "{out}");
    let err = r
        .err(
            "ci_status",
            json!({"namespace": "alpha", "run_id": 999_999}),
        )
        .await;
    assert!(err.contains("999999"), "{err}");

    // ci_dispatch needs can_dispatch, refuses the scorer, dispatches and finds the run.
    g.workflow(ALPHA, "ci.yml", true, true);
    g.workflow(ALPHA, "push-only.yml", false, false);
    g.workflow(ALPHA, "slow.yml", true, false);
    let err = w
        .err(
            "ci_dispatch",
            json!({"namespace": "alpha", "workflow": "ci.yml", "ref": "main"}),
        )
        .await;
    assert!(err.contains("can_dispatch"), "{err}");
    let err = d
        .err(
            "ci_dispatch",
            json!({"namespace": "alpha", "workflow": "improve-score.yml", "ref": "main"}),
        )
        .await;
    assert!(err.contains("improve-score.yml"), "{err}");
    let err = d
        .err(
            "ci_dispatch",
            json!({"namespace": "alpha", "workflow": "ci.yml", "ref": "main", "run_id": run_id}),
        )
        .await;
    assert!(err.contains("run_id") || err.contains("both"), "{err}");
    let out = d
        .ok(
            "ci_dispatch",
            json!({"namespace": "alpha", "workflow": "ci.yml", "ref": "main", "inputs": {"level": "full"}}),
        )
        .await;
    assert_eq!(out["dispatched"], true, "{out}");
    let new_run = out["run_id"]
        .as_u64()
        .expect("the new run found by polling");
    assert_ne!(new_run, run_id);
    assert!(
        g.runs(ALPHA)
            .iter()
            .any(|(id, event, _)| *id == new_run && event == "workflow_dispatch"),
        "{:?}",
        g.runs(ALPHA)
    );
    let err = d
        .err(
            "ci_dispatch",
            json!({"namespace": "alpha", "workflow": "push-only.yml", "ref": "main"}),
        )
        .await;
    assert!(err.contains("workflow_dispatch"), "{err}");
    // Accepted, but no run appears within the poll bound: null and a note, not an error.
    let out = d
        .ok(
            "ci_dispatch",
            json!({"namespace": "alpha", "workflow": "slow.yml", "ref": "main"}),
        )
        .await;
    assert_eq!(out["dispatched"], true, "{out}");
    assert!(out["run_id"].is_null(), "{out}");
    assert!(out["note"].is_string(), "{out}");
    let out = d
        .ok(
            "ci_dispatch",
            json!({"namespace": "alpha", "run_id": run_id}),
        )
        .await;
    assert_eq!(out["rerun_requested"], true, "{out}");
    assert_eq!(g.reruns(ALPHA), vec![run_id]);
}

async fn outcome_verification_and_review_gate_read_github(s: &TestServer, g: &FakeGitHub) {
    setup_alpha(s, g).await;
    let a = agent(s, "driver-a", &["read", "write"], json!({})).await;
    // Two merged PRs; CI green on the last one's head.
    g.commit(
        ALPHA,
        "one",
        &[("a.txt", Some("a")), ("b.txt", Some("b"))],
        "One",
    );
    let pr1 = g.open_pull(ALPHA, "one", "main", "One", "");
    g.merge(ALPHA, pr1);
    g.commit(ALPHA, "two", &[("c.txt", Some("c"))], "Two");
    g.commit(ALPHA, "two", &[("d.txt", Some("d"))], "Two again");
    let pr2 = g.open_pull(ALPHA, "two", "main", "Two", "");
    g.add_run(ALPHA, "ci.yml", "two", Some("success"), vec![]);
    g.add_run(ALPHA, "lint.yml", "two", Some("skipped"), vec![]);
    g.merge(ALPHA, pr2);
    let post = a
        .ok("jobs", json!({"action": "post", "namespace": "alpha", "title": "Verified", "body": "Do it.\n"}))
        .await;
    let id = post["job"]["id"].clone();
    a.ok(
        "jobs",
        json!({"action": "claim", "id": id, "namespace": "alpha"}),
    )
    .await;
    let url = |n: u64| format!("https://github.com/octo/alpha/pull/{n}");
    let done = a
        .ok("jobs", json!({"action": "complete", "id": id, "namespace": "alpha", "result_summary": "two PRs",
                           "result_ref": url(pr2), "evidence": {"prs": [url(pr1), url(pr2)], "commits": 99}}))
        .await;
    let row = &done["outcome"]["row"];
    assert_eq!(
        (
            row["prs_opened"].clone(),
            row["prs_merged"].clone(),
            row["commits"].clone(),
            row["files_changed"].clone(),
            row["ci_green"].clone()
        ),
        (json!(2), json!(2), json!(3), json!(4), json!(1)),
        "verified against the fake GitHub, not the driver's 99: {done}"
    );
    let verified: Value = match &row["verified"] {
        Value::String(s) => serde_json::from_str(s).expect("verified JSON"),
        other => other.clone(),
    };
    for key in [
        "prs_opened",
        "prs_merged",
        "commits",
        "files_changed",
        "ci_green",
    ] {
        assert_eq!(verified[key], true, "{key}: {verified}");
    }
    assert!(g.count("GET", &format!("/pulls/{pr2}")) >= 1);
    assert!(g.count("GET", "/actions/runs") >= 1);

    // The review gate reads issue comments through the adapter.
    g.commit(ALPHA, "three", &[("e.txt", Some("e"))], "Three");
    let pr3 = g.open_pull(ALPHA, "three", "main", "Three", "");
    g.comment(
        ALPHA,
        pr3,
        "rev",
        "REVIEW: needs a test. CHANGES",
        "2026-11-01T00:00:00Z",
    );
    let post = a
        .ok("jobs", json!({"action": "post", "namespace": "alpha", "title": "Reviewed", "body": "Do it.\n", "review_required": true}))
        .await;
    let id = post["job"]["id"].clone();
    a.ok(
        "jobs",
        json!({"action": "claim", "id": id, "namespace": "alpha"}),
    )
    .await;
    let out = a
        .ok("jobs", json!({"action": "complete", "id": id, "namespace": "alpha", "result_summary": "done", "result_ref": url(pr3)}))
        .await;
    assert_eq!(out["ok"], false, "{out}");
    assert!(
        out["refusal"]
            .to_string()
            .contains("spent a correction (1 of 2)"),
        "{out}"
    );
    g.comment(
        ALPHA,
        pr3,
        "rev",
        "REVIEW: good now. **APPROVE**",
        "2026-11-02T00:00:00Z",
    );
    let out = a
        .ok("jobs", json!({"action": "complete", "id": id, "namespace": "alpha", "result_summary": "done", "result_ref": url(pr3)}))
        .await;
    assert_eq!(out["job"]["status"], "done", "{out}");
    assert!(g.count("GET", &format!("/issues/{pr3}/comments")) >= 2);

    // GitHub unreadable: the review gate holds the job (never an approval) ...
    let post = a
        .ok("jobs", json!({"action": "post", "namespace": "alpha", "title": "Held", "body": "Do it.\n", "review_required": true}))
        .await;
    let id = post["job"]["id"].clone();
    a.ok(
        "jobs",
        json!({"action": "claim", "id": id, "namespace": "alpha"}),
    )
    .await;
    g.fault("GET", "/comments", 502, &[], "upstream broke", 1);
    let out = a
        .call("jobs", json!({"action": "complete", "id": id, "namespace": "alpha", "result_summary": "done", "result_ref": url(pr3)}))
        .await;
    let text = match &out {
        Ok(v) => v.to_string(),
        Err(e) => e.clone(),
    };
    assert!(
        out.as_ref().map_or(true, |v| v["ok"] == false),
        "an unreadable review is no approval: {text}"
    );
    let listed = a
        .ok(
            "jobs",
            json!({"action": "list", "namespace": "alpha", "status": "claimed"}),
        )
        .await;
    let held = listed["jobs"]
        .as_array()
        .and_then(|jobs| jobs.iter().find(|j| j["id"] == id))
        .unwrap_or_else(|| panic!("the job is listed: {listed}"));
    assert_eq!(held["status"], "claimed", "the job is held: {held}");
    // ... and evidence that cannot be read stays driver-reported and unverified.
    let done = a
        .ok(
            "jobs",
            json!({"action": "complete", "id": id, "namespace": "alpha", "result_summary": "done",
                           "evidence": {"prs": [url(999)], "commits": 4}}),
        )
        .await;
    assert_eq!(done["outcome"]["row"]["commits"], 4, "{done}");
    assert!(
        done["outcome"]["notes"].to_string().contains("could"),
        "{done}"
    );
    assert!(g.refusals().is_empty(), "{:?}", g.refusals());
}

async fn an_audit_failure_after_a_mutation_says_do_not_retry(s: &TestServer, g: &FakeGitHub) {
    setup_alpha(s, g).await;
    let w = agent(s, "writer", &["read", "write"], json!({})).await;
    let probe = s.probe.as_ref().expect("probe");
    // The store refuses create_branch's audit row, after GitHub accepted the branch.
    match probe {
        capsid_tests::harness::Probe::Sqlite(_) => {
            probe
                .execute(
                    "CREATE TRIGGER refuse_branch_audit BEFORE INSERT ON audit_log \
                     WHEN NEW.action = 'create_branch' \
                     BEGIN SELECT RAISE(ABORT, 'audit refused by the test'); END",
                )
                .await;
        }
        capsid_tests::harness::Probe::Postgres(_) => {
            probe
                .execute(
                    "CREATE FUNCTION refuse_branch_audit() RETURNS trigger AS $$ BEGIN \
                     IF NEW.action = 'create_branch' THEN RAISE EXCEPTION 'audit refused by the test'; END IF; \
                     RETURN NEW; END $$ LANGUAGE plpgsql",
                )
                .await;
            probe
                .execute(
                    "CREATE TRIGGER refuse_branch_audit BEFORE INSERT ON audit_log \
                     FOR EACH ROW EXECUTE FUNCTION refuse_branch_audit()",
                )
                .await;
        }
    }
    let out = w
        .ok(
            "create_branch",
            json!({"namespace": "alpha", "branch": "made-anyway"}),
        )
        .await;
    assert_eq!(out["branch"], "made-anyway", "{out}");
    let warning = out["audit_warning"]
        .as_str()
        .unwrap_or_else(|| panic!("{out}"));
    assert!(warning.contains("Do not retry"), "{warning}");
    assert!(g.branch_names(ALPHA).contains(&"made-anyway".to_owned()));
    assert_eq!(
        probe
            .count("SELECT COUNT(*) FROM audit_log WHERE action = 'create_branch'")
            .await,
        0
    );
    // Other mutations are still audited as usual.
    let out = w
        .ok(
            "open_pr",
            json!({"namespace": "alpha", "title": "Anyway", "head": "made-anyway"}),
        )
        .await;
    assert!(out.get("audit_warning").is_none(), "{out}");
}

async fn big_answers_are_cut_within_their_budgets(s: &TestServer, g: &FakeGitHub) {
    setup_alpha(s, g).await;
    let r = agent(s, "reader", &["read"], json!({})).await;
    let big = "hello, budget\n".repeat(20_000);
    let notes = "budget line\n".repeat(10);
    let sha = g.commit(
        ALPHA,
        "main",
        &[
            ("big.txt", Some(big.as_str())),
            ("notes.txt", Some(notes.as_str())),
        ],
        "Big",
    );
    // A batch read cuts each file at REPO_FILE_BUDGET and says so.
    let out = r
        .ok(
            "read_repo_file",
            json!({"namespace": "alpha", "paths": ["big.txt", "README.md"]}),
        )
        .await;
    let files = out["files"].as_array().expect("files");
    assert_eq!(files[0]["truncated"], true, "{}", files[0]["path"]);
    let kept = files[0]["content"].as_str().expect("content").len();
    assert!(kept <= 200 * 1024 && kept > 100 * 1024, "{kept}");
    assert_eq!(files[1]["truncated"], false);
    // A patch past REPO_PATCH_BUDGET is left out and flagged; without `patch` none is sent.
    let one = r
        .ok(
            "repo_history",
            json!({"namespace": "alpha", "sha": sha, "patch": true}),
        )
        .await;
    let text = one.to_string();
    assert!(
        text.contains("\"patch_truncated\":true"),
        "{}",
        &text[..text.len().min(500)]
    );
    assert!(
        text.len() < 200 * 1024,
        "the answer stays within the budget"
    );
    // max_results caps the matches and says more may exist (a blob past the scan limit is
    // not scanned: big.txt is no candidate).
    let out = r
        .ok(
            "search_code",
            json!({"namespace": "alpha", "query": "budget", "max_results": 3}),
        )
        .await;
    assert_eq!(out["total_results"], 3, "{out}");
    assert_eq!(out["truncated"], true, "{out}");
    assert!(
        out["note"]
            .as_str()
            .is_some_and(|n| n.contains("max_results")),
        "{out}"
    );
}
