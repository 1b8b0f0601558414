//! The read tools end to end (each scenario once per store): the tree, files, refs and
//! history of the mapped repository, code search and its paging, and the answer budgets.

use capsid_tests::fake_github::FakeGitHub;
use capsid_tests::server::TestServer;
use serde_json::json;

use super::{ALPHA, agent, setup_alpha};

capsid_tests::github_cases!(
    read_tools_answer_from_the_mapped_repository,
    search_code_pages_and_never_hides_exhaustion,
    big_answers_are_cut_within_their_budgets,
    a_single_file_read_is_cut_at_its_budget,
);

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

/// A single-file read is cut at a byte budget with a note, as batch reads are (SPEC 8): a
/// 1.5 MB file answers at most 1,000,000 bytes of content, says so, and says how large the
/// file is.
async fn a_single_file_read_is_cut_at_its_budget(s: &TestServer, g: &FakeGitHub) {
    setup_alpha(s, g).await;
    let r = agent(s, "reader", &["read"], json!({})).await;
    let huge = "0123456789abcdé\n".repeat(100_000);
    g.commit(ALPHA, "main", &[("huge.txt", Some(huge.as_str()))], "Huge");
    let out = r
        .ok(
            "read_repo_file",
            json!({"namespace": "alpha", "path": "huge.txt"}),
        )
        .await;
    let content = out["content"].as_str().expect("content");
    assert!(
        content.len() <= 1_000_000 && content.len() > 900_000,
        "{}",
        content.len()
    );
    assert!(huge.starts_with(content), "cut on a character boundary");
    assert_eq!(out["truncated"], true);
    assert_eq!(out["size"], huge.len());
    assert!(
        out["note"]
            .as_str()
            .is_some_and(|n| n.contains("1000000") && n.contains("search_code")),
        "{}",
        out["note"]
    );
    // A small file is whole and says so.
    let out = r
        .ok(
            "read_repo_file",
            json!({"namespace": "alpha", "path": "README.md"}),
        )
        .await;
    assert_eq!(out["truncated"], false, "{out}");
}
