//! A boxed job's pull request, with the real Claude Code (issue 48): the agent in its box
//! reaches no forge, so once the run has shipped its branch through the git gateway and the
//! driver's own tests pass in a box of their own, the driver opens the job's PR itself through
//! the server's `open_pr` (the server's GitHub App, here the fake GitHub on loopback), and the
//! server verifies it as the job's evidence. A PR URL the agent printed is never taken.
//!
//! The fake GitHub speaks GitHub's REST API, not git: the branch the gateway forwards to the
//! project's bare origin is made on the fake too, as GitHub would have it after the push.

use capsid_tests::fake_claude::{bash, text};
use capsid_tests::fake_github::FakeGitHub;
use serde_json::json;

use super::claude::{origin_main, result_of, results};
use super::claude_boxed::{boxed, require_bwrap};
use super::support::{Store, World, git_out, said};

const REPO: &str = "you/demo";

fn a_boxed_job_that_ships_gets_its_pr_from_the_driver(store: Store, case: &str) {
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
    let id = w.post("demo", "Boxed PR", "Ship a file. SCRIPT=boxed-pr");
    gh.commit(
        REPO,
        &format!("capsid/{id}"),
        &[("pr.txt", Some("pr\n"))],
        "Boxed PR",
    );
    w.fake().script(
        "SCRIPT=boxed-pr",
        vec![
            vec![bash(
                "printf 'pr\\n' > pr.txt && git add pr.txt && git commit -qm 'Boxed PR' && git push -q origin HEAD && echo PUSHED",
            )],
            // The agent's own word about a PR is not evidence.
            vec![text(
                "Shipped. Opened https://github.com/you/demo/pull/999 for review.",
            )],
        ],
    );
    let main_before = origin_main(&w, "demo");
    let mut extra = boxed(&w);
    extra.push("--quiet".to_owned());
    let extra: Vec<&str> = extra.iter().map(String::as_str).collect();
    let out = w.drive_claude_once("demo", &key, &root, &extra);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}\n{}",
        said(&out),
        results(&w, "SCRIPT=boxed-pr")
    );
    let (pushed, _) = result_of(&w, "SCRIPT=boxed-pr", "toolu_fake_0_0").expect("the push");
    assert!(pushed.contains("PUSHED"), "{pushed}");
    let origin = w.dir.path().join("demo-origin.git");
    assert_eq!(
        git_out(&origin, &["rev-parse", &format!("refs/heads/capsid/{id}")]).len(),
        40
    );
    assert_eq!(origin_main(&w, "demo"), main_before);

    // One PR, the driver's, from the job's branch onto main, naming the job.
    let pulls = gh.pulls(REPO);
    assert_eq!(pulls.len(), 1, "{pulls:?}\n{}", said(&out));
    let (number, state, head) = pulls[0].clone();
    assert_eq!(
        (state.as_str(), head.as_str()),
        ("open", format!("capsid/{id}").as_str())
    );
    let (_, _, _, title) = gh.pull(REPO, number).expect("the pull");
    assert_eq!(title, "Boxed PR");
    let url = format!("https://github.com/{REPO}/pull/{number}");
    let job = w.job("demo", &id);
    assert_eq!(job["status"], json!("done"), "{job}\n{}", said(&out));
    assert_eq!(job["result_ref"], json!(url), "{job}");
    let record = w.job_record("demo", &id);
    // The server read the PR from GitHub: opened and verified, the agent's /pull/999 not
    // among the evidence (its words stay in the summary as its words).
    let outcome = &record["outcome"];
    assert_eq!(outcome["prs_opened"], json!(1), "{record}");
    assert_eq!(outcome["result_kind"], json!("pr"), "{record}");
    let verified: serde_json::Value =
        serde_json::from_str(outcome["verified"].as_str().unwrap_or("{}")).expect("verified");
    assert_eq!(verified["prs_opened"], json!(true), "{record}");
    assert!(stderr_has(&out, &format!("opened {url}")), "{}", said(&out));
    runtime.block_on(async { gh.stop() });
}

fn stderr_has(out: &std::process::Output, text: &str) -> bool {
    String::from_utf8_lossy(&out.stderr).contains(text)
}

#[test]
fn sqlite_a_boxed_job_that_ships_gets_its_pr_from_the_driver() {
    a_boxed_job_that_ships_gets_its_pr_from_the_driver(
        Store::Sqlite,
        "sqlite_a_boxed_job_that_ships_gets_its_pr_from_the_driver",
    );
}

#[test]
fn postgres_a_boxed_job_that_ships_gets_its_pr_from_the_driver() {
    a_boxed_job_that_ships_gets_its_pr_from_the_driver(
        Store::Postgres,
        "postgres_a_boxed_job_that_ships_gets_its_pr_from_the_driver",
    );
}
