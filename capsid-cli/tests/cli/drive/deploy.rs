//! A deploy run's verdict, with the real Claude Code in its box (issue 55, items 2, 4 and 6):
//! the agent merges through Capsid's `manage_pr` and its verdict is the server's record of
//! that merge, never its word. Without a standing approval of the head by another agent the
//! gate refuses the merge, and the job blocks on the gate's reason with the one command that
//! lets it through (a person's `capsid jobs approve` of that head); once that approval is
//! recorded (which also makes the pipeline post the pull request's own deploy job) and the job
//! resumed, its run merges and is done.

use capsid_tests::fake_claude::{text, tool};
use capsid_tests::fake_github::FakeGitHub;
use serde_json::json;

use super::claude::result_of;
use super::claude_boxed::{boxed, require_bwrap};
use super::support::{Store, World, said};

const REPO: &str = "you/demo";

fn a_deploy_run_merges_only_through_the_gate_and_blocks_on_its_refusal(store: Store, case: &str) {
    if !require_bwrap(case) {
        return;
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("runtime");
    let gh = runtime.block_on(FakeGitHub::start());
    gh.add_repo(REPO, &[("README.md", "demo\n")]);
    let env = super::support::github_app_env(&gh);
    let Some(w) = World::start_claude_with(store, case, env) else {
        return;
    };
    let key = w.namespace_with_driver("demo");
    let root = w.project("demo");

    // A junior's job, held by another driver (its author), whose branch has a pull request.
    let author = w.mint_driver("author", "demo");
    let posted = w.tool(
        &w.human,
        "jobs",
        json!({"action": "post", "namespace": "demo", "title": "Build it", "body": "Build it.\n", "role": "junior"}),
    );
    let junior = posted["job"]["id"].as_str().expect("an id").to_owned();
    let claimed = w.tool(
        &author,
        "jobs",
        json!({"action": "claim", "id": junior, "namespace": "demo"}),
    );
    assert_eq!(claimed["ok"], json!(true), "{claimed}");
    let branch = format!("capsid/{junior}");
    let head = gh.commit(REPO, &branch, &[("w.txt", Some("w\n"))], "Work");
    let number = gh.open_pull(REPO, &branch, "main", "Work", "");

    // A deploy job before anyone approved: the gate refuses the merge, and the job blocks on it.
    let posted = w.tool(
        &w.human,
        "jobs",
        json!({"action": "post", "namespace": "demo", "title": "Ship it",
               "body": format!("Merge {REPO}#{number}. SCRIPT=deploy-early"), "role": "deploy"}),
    );
    let early = posted["job"]["id"].as_str().expect("an id").to_owned();
    let merge = json!({"namespace": "demo", "number": number, "action": "merge"});
    w.fake().script(
        "SCRIPT=deploy-early",
        vec![
            vec![tool("mcp__capsid__manage_pr", merge.clone())],
            vec![text("Merged it.")],
            // Resumed once a person approved the head: the same merge goes through.
            vec![tool("mcp__capsid__manage_pr", merge)],
            vec![text("Merged the pull request.")],
        ],
    );
    let extra = boxed(&w);
    let extra: Vec<&str> = extra.iter().map(String::as_str).collect();
    let out = w.drive_claude_once("demo", &key, &root, &extra);
    assert_eq!(out.status.code(), Some(4), "{}", said(&out));
    let (refused, _) =
        result_of(&w, "SCRIPT=deploy-early", "toolu_fake_0_0").expect("the merge's answer");
    assert!(refused.contains("is not merged"), "{refused}");
    let job = w.job("demo", &early);
    assert_eq!(
        job["status"],
        json!("blocked"),
        "the agent's word is not a merge: {job}"
    );
    let summary = job["result_summary"].as_str().unwrap_or("");
    let approve =
        format!("capsid jobs approve --namespace demo --repo {REPO} --pr {number} --head {head}");
    assert!(
        summary.contains(&format!(
            "The gate refused this deploy run's merge of {REPO}#{number}"
        )) && summary.contains(&approve),
        "{summary}"
    );
    assert_eq!(
        gh.pull(REPO, number).map(|p| p.1),
        Some(false),
        "nothing merged"
    );

    // The person runs the command the job waits on and resumes it: the run merges and is done.
    // The approval of the junior's pull request also hands it on: the pipeline posts its
    // deploy job, a child of the junior's job.
    let args: Vec<String> = approve.split(' ').skip(1).map(str::to_owned).collect();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    w.cli(&args);
    let listed = w.tool(
        &w.human,
        "jobs",
        json!({"action": "list", "namespace": "demo"}),
    );
    let handed = listed["jobs"]
        .as_array()
        .and_then(|jobs| {
            jobs.iter()
                .find(|j| j["title"] == format!("Merge {REPO}#{number}"))
        })
        .cloned()
        .unwrap_or_else(|| panic!("no deploy job was handed on: {listed}"));
    assert_eq!(handed["role"], json!("deploy"), "{handed}");
    assert_eq!(handed["parent_id"], json!(junior), "{handed}");
    // The namespace's deploy command runs after the merge, on the driver's host, in the
    // project's own checkout, with the merge it ships.
    w.cli(&[
        "namespaces",
        "update",
        "demo",
        "--deploy-command",
        "echo \"deployed $CAPSID_DEPLOY_REPO#$CAPSID_DEPLOY_PR at $CAPSID_DEPLOY_SHA\" > deployed.txt",
    ]);
    let (status, body) = w.api(
        "POST",
        "/api/projects/demo/agents/demo-driver/answer",
        Some(json!({"answer": "Approved; merge it.", "resume": true})),
    );
    assert_eq!(status, 200, "{body}");
    let out = w.drive_claude_once("demo", &key, &root, &extra);
    assert_eq!(out.status.code(), Some(0), "{}", said(&out));
    let job = w.job("demo", &early);
    assert_eq!(job["status"], json!("done"), "{job}\n{}", said(&out));
    let summary = job["result_summary"].as_str().unwrap_or("");
    assert!(
        summary.contains(&format!("this deploy run merged {REPO}#{number}")),
        "{summary}"
    );
    assert_eq!(gh.pull(REPO, number).map(|p| p.1), Some(true), "merged");
    assert!(
        summary.contains("deploy command `echo") && summary.contains("it passed"),
        "{summary}"
    );
    let deployed = std::fs::read_to_string(root.join("deployed.txt")).expect("the deploy ran");
    let prefix = format!("deployed {REPO}#{number} at ");
    assert!(
        deployed.starts_with(&prefix) && deployed.trim().len() > prefix.len(),
        "{deployed}"
    );
    runtime.block_on(async { gh.stop() });
}

#[test]
fn sqlite_a_deploy_run_merges_only_through_the_gate_and_blocks_on_its_refusal() {
    a_deploy_run_merges_only_through_the_gate_and_blocks_on_its_refusal(
        Store::Sqlite,
        "sqlite_a_deploy_run_merges_only_through_the_gate_and_blocks_on_its_refusal",
    );
}

#[test]
fn postgres_a_deploy_run_merges_only_through_the_gate_and_blocks_on_its_refusal() {
    a_deploy_run_merges_only_through_the_gate_and_blocks_on_its_refusal(
        Store::Postgres,
        "postgres_a_deploy_run_merges_only_through_the_gate_and_blocks_on_its_refusal",
    );
}
