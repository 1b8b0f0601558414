//! The write tools end to end (each scenario once per store): file writes under the flag
//! rules, branches and pull requests, bad input refused before GitHub is asked, and an audit
//! failure after a mutation.

use capsid_tests::fake_github::FakeGitHub;
use capsid_tests::server::TestServer;
use serde_json::{Value, json};

use super::{ALPHA, agent, setup_alpha};

capsid_tests::github_cases!(
    file_writes_follow_the_flag_rules,
    branches_and_pull_requests,
    an_audit_failure_after_a_mutation_says_do_not_retry,
    bad_input_is_refused_naming_the_field,
);

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
    // A deleted fork's head names no repository: a same-named branch here is not its own.
    g.commit(ALPHA, "orphaned", &[("o.md", Some("o"))], "someone else's");
    let orphan_pr = g.open_pull(ALPHA, "orphaned", "main", "Orphan", "");
    g.fork_head(ALPHA, orphan_pr, "");
    let out = w
        .ok(
            "manage_pr",
            json!({"namespace": "alpha", "number": orphan_pr, "action": "close"}),
        )
        .await;
    assert_eq!(out["head_branch_deleted"], false, "{out}");
    assert!(
        out["head_branch_note"]
            .as_str()
            .is_some_and(|n| n.contains("unknown")),
        "{out}"
    );
    assert!(g.branch_names(ALPHA).contains(&"orphaned".to_owned()));
    let probe = s.probe.as_ref().expect("probe");
    assert_eq!(
        probe
            .count("SELECT COUNT(*) FROM audit_log WHERE action = 'manage_pr'")
            .await,
        5
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
    // Other mutations are still audited as usual (a pull request needs a commit on its head).
    g.commit(ALPHA, "made-anyway", &[("anyway.txt", Some("x"))], "Anyway");
    let out = w
        .ok(
            "open_pr",
            json!({"namespace": "alpha", "title": "Anyway", "head": "made-anyway"}),
        )
        .await;
    assert!(out.get("audit_warning").is_none(), "{out}");
}
