//! The authorization boundaries of repo access end to end (each scenario once per store): a
//! pull-request-mode change never lands on the default branch, a mutation that landed is
//! audited even when a later step fails, the namespace→repository mapping changes only by an
//! admin and never reaches outside the caller's repos, and the repos axis holds for the
//! repository a call resolves to, selector or not.

use capsid_core::ports::{AuditFilter, AuditRow};
use capsid_tests::fake_github::FakeGitHub;
use capsid_tests::server::{Client, TestServer};
use serde_json::{Value, json};

use super::{ALPHA, agent, setup_alpha};

capsid_tests::github_cases!(
    a_pr_mode_write_never_lands_on_the_default_branch,
    a_commit_that_landed_is_audited_when_the_pull_request_fails,
    the_namespace_mapping_changes_only_by_an_admin_and_within_the_repos_axis,
    the_repos_axis_holds_for_the_resolved_repository,
);

/// GitHub mutations so far (token requests aside).
fn mutations(g: &FakeGitHub) -> usize {
    g.calls()
        .iter()
        .filter(|c| c.method != "GET" && !c.path.contains("/access_tokens"))
        .count()
}

async fn audit_rows(s: &TestServer, action: &str) -> Vec<AuditRow> {
    s.store
        .recent_audit(&AuditFilter::default(), 1000)
        .await
        .expect("audit")
        .into_iter()
        .filter(|r| r.action.as_deref() == Some(action))
        .collect()
}

async fn a_pr_mode_write_never_lands_on_the_default_branch(s: &TestServer, g: &FakeGitHub) {
    setup_alpha(s, g).await;
    let w = agent(s, "writer", &["read", "write"], json!({})).await;
    let readme = g.file(ALPHA, "main", "README.md");
    let before = mutations(g);
    let refused = [
        (
            "write_repo_file",
            json!({"namespace": "alpha", "path": "README.md", "content": "pwned\n", "message": "m", "branch": "main"}),
        ),
        (
            "write_repo_file",
            json!({"namespace": "alpha", "path": "README.md", "content": "pwned\n", "message": "m", "mode": "pr", "branch": "master"}),
        ),
        (
            "delete_repo_file",
            json!({"namespace": "alpha", "path": "README.md", "message": "m", "branch": "main"}),
        ),
    ];
    for (tool, args) in refused {
        let err = w.err(tool, args.clone()).await;
        assert!(
            err.contains("can_direct_write") && err.contains("mode: \"direct\""),
            "{tool} {args}: {err}"
        );
    }
    assert_eq!(mutations(g), before, "refused before any GitHub mutation");
    assert_eq!(g.file(ALPHA, "main", "README.md"), readme);
    assert!(audit_rows(s, "write_repo_file").await.is_empty());
    assert!(audit_rows(s, "delete_repo_file").await.is_empty());

    // The default branch comes from GitHub, not from a guess: on a repository whose default
    // is `trunk`, `trunk` is refused (and `main` still is, by name).
    g.add_repo("octo/beta", &[("README.md", "beta\n")]);
    g.set_default_branch("octo/beta", "trunk");
    s.namespace("beta").await;
    let key = s
        .mint(
            "beta-writer",
            "driver",
            json!({"namespaces": ["beta"], "grants": ["read", "write"]}),
        )
        .await;
    let b = s.client(&key).await;
    for branch in ["trunk", "main"] {
        let err = b
            .err(
                "write_repo_file",
                json!({"namespace": "beta", "path": "README.md", "content": "x\n", "message": "m", "branch": branch}),
            )
            .await;
        assert!(err.contains("can_direct_write"), "{branch}: {err}");
    }
    assert_eq!(mutations(g), before);

    // A named work branch is still fine, and direct mode with the flag still reaches main.
    let out = w
        .ok(
            "write_repo_file",
            json!({"namespace": "alpha", "path": "docs/x.md", "content": "x\n", "message": "Add x", "branch": "feature/x"}),
        )
        .await;
    assert_eq!(out["branch"], "feature/x", "{out}");
    assert!(out["pr"]["number"].as_u64().is_some(), "{out}");
    let direct = agent(
        s,
        "direct",
        &["read", "write"],
        json!({"can_direct_write": true}),
    )
    .await;
    let out = direct
        .ok(
            "write_repo_file",
            json!({"namespace": "alpha", "path": "README.md", "content": "direct\n", "message": "m", "mode": "direct"}),
        )
        .await;
    assert_eq!(out["branch"], "main", "{out}");
    // Even with the flag, pr mode never targets the default branch.
    let err = direct
        .err(
            "write_repo_file",
            json!({"namespace": "alpha", "path": "README.md", "content": "x\n", "message": "m", "branch": "main"}),
        )
        .await;
    assert!(err.contains("mode: \"direct\""), "{err}");
}

async fn a_commit_that_landed_is_audited_when_the_pull_request_fails(
    s: &TestServer,
    g: &FakeGitHub,
) {
    setup_alpha(s, g).await;
    let w = agent(s, "writer", &["read", "write"], json!({})).await;
    g.fault(
        "POST",
        "/pulls",
        422,
        &[],
        r#"{"message":"Validation Failed"}"#,
        1,
    );
    let err = w
        .err(
            "write_repo_file",
            json!({"namespace": "alpha", "path": "docs/y.md", "content": "y\n", "message": "Add y", "branch": "work/y"}),
        )
        .await;
    assert!(
        err.contains("landed") && err.contains("work/y"),
        "the error says the commit landed: {err}"
    );
    assert_eq!(g.file(ALPHA, "work/y", "docs/y.md").as_deref(), Some("y\n"));
    let rows = audit_rows(s, "write_repo_file").await;
    assert_eq!(rows.len(), 1, "the landed commit is audited: {rows:?}");
    let params: Value = serde_json::from_str(rows[0].params.as_deref().unwrap_or("{}"))
        .expect("audit params are JSON");
    assert_eq!(params["branch"], "work/y", "{params}");
    assert!(
        params["commitSha"].as_str().is_some_and(|s| !s.is_empty()),
        "{params}"
    );
    assert!(
        params["error"]
            .as_str()
            .is_some_and(|e| e.contains("pull request")),
        "the row says which step failed: {params}"
    );

    // The same for a delete whose pull request cannot be opened.
    g.fault(
        "POST",
        "/pulls",
        422,
        &[],
        r#"{"message":"Validation Failed"}"#,
        1,
    );
    let err = w
        .err(
            "delete_repo_file",
            json!({"namespace": "alpha", "path": "docs/guide.md", "message": "Drop", "branch": "work/z"}),
        )
        .await;
    assert!(err.contains("landed"), "{err}");
    assert_eq!(audit_rows(s, "delete_repo_file").await.len(), 1);
}

async fn the_namespace_mapping_changes_only_by_an_admin_and_within_the_repos_axis(
    s: &TestServer,
    g: &FakeGitHub,
) {
    setup_alpha(s, g).await;
    g.add_repo(
        "octo/secret",
        &[("private.txt", "the other namespace's code\n")],
    );
    s.namespace("secret").await;
    let w = agent(s, "writer", &["read", "write"], json!({})).await;
    // A write-grant agent of the namespace cannot point it at another namespace's repository.
    let err = w
        .err(
            "update_namespace",
            json!({"namespace": "alpha", "repos": r#"[{"repo":"octo/secret","label":"primary"}]"#}),
        )
        .await;
    assert!(err.contains("admin"), "{err}");
    let row = s
        .store
        .namespace("alpha")
        .await
        .expect("read")
        .expect("alpha");
    assert!(
        row.repos
            .as_deref()
            .unwrap_or_default()
            .contains("octo/alpha")
            && !row.repos.as_deref().unwrap_or_default().contains("secret"),
        "the mapping is unchanged: {row:?}"
    );
    assert!(
        !w.tool_names()
            .await
            .contains(&"update_namespace".to_owned()),
        "an admin-only tool is not listed to a minted agent"
    );
    // The CLI (an admin) still remaps.
    let out = s
        .admin(
            "update_namespace",
            json!({"namespace": "alpha", "repos": r#"[{"repo":"octo/alpha","label":"primary"},{"repo":"octo/alpha-docs","label":"docs"}]"#}),
        )
        .await;
    assert_eq!(out["action"], "updated", "{out}");

    // register_namespace refuses repositories outside the caller's repos axis.
    let key = s
        .mint(
            "registrar",
            "session",
            json!({"namespaces": ["fresh", "fresh2", "fresh3"], "repos": ["octo/fresh"], "grants": ["read", "write"]}),
        )
        .await;
    let r = s.client(&key).await;
    let err = r
        .err(
            "register_namespace",
            json!({"namespace": "fresh", "repo": "octo/secret"}),
        )
        .await;
    assert!(
        err.contains("octo/secret") && err.contains("repos"),
        "{err}"
    );
    let err = r
        .err(
            "register_namespace",
            json!({"namespace": "fresh2", "repos": r#"[{"repo":"octo/fresh","label":"primary"},{"repo":"octo/secret","label":"legacy"}]"#}),
        )
        .await;
    assert!(err.contains("octo/secret"), "{err}");
    for ns in ["fresh", "fresh2"] {
        assert!(
            s.store.namespace(ns).await.expect("read").is_none(),
            "{ns} was not registered"
        );
    }
    let out = r
        .ok(
            "register_namespace",
            json!({"namespace": "fresh3", "repo": "octo/fresh"}),
        )
        .await;
    assert_eq!(out["action"], "registered", "{out}");
}

async fn call_text(c: &Client, tool: &str, args: Value) -> Result<Value, String> {
    c.call(tool, args).await
}

async fn the_repos_axis_holds_for_the_resolved_repository(s: &TestServer, g: &FakeGitHub) {
    setup_alpha(s, g).await;
    let mint = |name: &'static str, repos: Value| async move {
        let key = s
            .mint(
                name,
                "session",
                json!({"namespaces": ["alpha"], "repos": repos, "grants": ["read", "write"]}),
            )
            .await;
        s.client(&key).await
    };
    let other = mint("other-repos", json!(["octo/beta"])).await;
    let by_name = mint("by-name", json!(["octo/alpha"])).await;
    let by_label = mint("by-label", json!(["primary"])).await;
    let reads = g.count("GET", "/contents/");
    // Omitting `repo` is no way around the repos axis: the resolved repository is checked.
    for (tool, args) in [
        (
            "read_repo_file",
            json!({"namespace": "alpha", "path": "README.md"}),
        ),
        ("list_repo_tree", json!({"namespace": "alpha"})),
        (
            "write_repo_file",
            json!({"namespace": "alpha", "path": "docs/n.md", "content": "n\n", "message": "m"}),
        ),
    ] {
        let err = call_text(&other, tool, args.clone())
            .await
            .expect_err("refused");
        assert!(
            err.contains("octo/alpha") && err.contains("octo/beta"),
            "{tool} {args}: {err}"
        );
    }
    assert_eq!(
        g.count("GET", "/contents/"),
        reads,
        "refused before GitHub was read"
    );
    // The resolved repository passes under its owner/name or its label.
    for c in [&by_name, &by_label] {
        let out = c
            .ok(
                "read_repo_file",
                json!({"namespace": "alpha", "path": "README.md"}),
            )
            .await;
        assert!(out.to_string().contains("Hello world"), "{out}");
    }
    // A selector is still checked as given.
    let err = by_label
        .err(
            "read_repo_file",
            json!({"namespace": "alpha", "repo": "octo/alpha", "path": "README.md"}),
        )
        .await;
    assert!(err.contains("repo \"octo/alpha\""), "{err}");
}
