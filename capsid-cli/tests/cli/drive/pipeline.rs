//! The pipeline of issue 55 end to end ("What it must show"), with the real Claude Code in its
//! box, scripted models, the fake GitHub and each store.
//!
//! `a_scouted_change_goes_from_schedule_to_merge_through_every_role`, one `--once` drive per
//! job (so each role's turns are scripted knowing the ids before it):
//!
//! 1. The project is registered with `curl` alone (`POST /api/projects`, with its runner
//!    settings). A signed scout schedule fires its scout (`capsid tick --task scouts`); with
//!    nothing new the scout makes exactly one model call, posts nothing, and is done.
//! 2. A scout posted with `curl` (`POST /api/projects/demo/agents`, as the schedule's next
//!    window would) finds something: it dispatches a planner and writes its watermark; the
//!    planner commits a spec, pushes it through the gateway and dispatches a junior; the
//!    junior's pushed branch gets its PR from the driver; the pipeline posts the senior review
//!    (a different agent records the approval of that head), then the deploy job, whose run
//!    merges through `manage_pr`. Every job is done, the hand-offs form one chain of
//!    `parent`s, and the PR is merged on the fake GitHub.
//! 3. A deploy job whose only approval is the junior's own agent's, and one whose approval is
//!    for an older head, are refused at the gate and block with the gate's reason.
//! 4. Each role's first model request carries that role's `capsid-<role>` skill.
//!
//! `the_pipeline_started_with_curl_runs_under_a_running_driver`: the same chain started with
//! `curl` alone and run by a `capsid drive --watch` already running (see its own comment).
//!
//! The fake GitHub speaks REST, not git: in the first test each branch the gateway forwards to
//! the bare origin is made on the fake before the run that needs it; in the second the fake
//! takes a branch on from the bare origin when the driver opens its PR.

use std::process::Command;

use capsid_tests::fake_claude::{bash, text, tool};
use capsid_tests::fake_github::FakeGitHub;
use serde_json::{Value, json};

use super::claude::results;
use super::claude_boxed::{boxed, require_bwrap};
use super::support::{Store, World, git_out, said};

const REPO: &str = "you/demo";
/// The operator key the server is started with, for the admin-only `POST /api/projects`.
const OPERATOR: &str = "operator-write-key-for-the-pipeline-test";
const SCHEDULE: &str = "policy/scouts/demo/widgets.md";

/// `curl -X POST <url><path>` with `key` and the JSON `body`: the status and the answer.
fn curl_post(w: &World, key: &str, path: &str, body: &Value) -> (u16, Value) {
    let out = Command::new("curl")
        .args(["-sS", "-X", "POST", "-w", "\n%{http_code}"])
        .arg("-H")
        .arg(format!("authorization: Bearer {key}"))
        .args(["-H", "content-type: application/json", "--data-binary"])
        .arg(body.to_string())
        .arg(format!("{}{path}", w.url))
        .output()
        .expect("run curl");
    assert!(out.status.success(), "curl: {}", said(&out));
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let (answer, status) = stdout.rsplit_once('\n').expect("a status line");
    (
        status.trim().parse().expect("an HTTP status"),
        serde_json::from_str(answer).unwrap_or_else(|_| json!(answer)),
    )
}

/// Every job of `demo`.
fn jobs(w: &World) -> Vec<Value> {
    let listed = w.tool(
        &w.human,
        "jobs",
        json!({"action": "list", "namespace": "demo"}),
    );
    listed["jobs"].as_array().cloned().unwrap_or_default()
}

/// The one job of `demo` whose `parent_id` is `parent` and whose role is `role`.
fn child(w: &World, parent: &str, role: &str) -> Value {
    let all = jobs(w);
    let found: Vec<&Value> = all
        .iter()
        .filter(|j| j["parent_id"] == json!(parent) && j["role"] == json!(role))
        .collect();
    assert_eq!(
        found.len(),
        1,
        "one {role} child of {parent}: {}",
        Value::Array(all.clone())
    );
    found[0].clone()
}

fn id_of(job: &Value) -> String {
    job["id"].as_str().expect("an id").to_owned()
}

/// The role's skill reached the model in its first request: the skill's description (only in
/// the SKILL.md the driver wrote into the clone) and the prompt naming the role.
fn assert_first_request_carries_the_skill(w: &World, marker: &str, role: &str) {
    let requests = w.fake().requests(marker);
    let first = requests
        .first()
        .unwrap_or_else(|| panic!("no request for {marker}"))
        .body
        .to_string();
    let built_in = capsid_core::jobs::role::parse("role", role).expect("a built-in role");
    assert!(
        first.contains(&*built_in.description),
        "the {role}'s skill is not in its first request: {first}"
    );
    assert!(
        first.contains(&format!("Your role in this job is {role}")),
        "the prompt does not name the role {role}: {first}"
    );
}

/// A drive of one job that must end `code`.
fn drive(w: &World, key: &str, root: &std::path::Path, extra: &[&str], code: i32, marker: &str) {
    let out = w.drive_claude_once("demo", key, root, extra);
    assert_eq!(
        out.status.code(),
        Some(code),
        "{}\n{}",
        said(&out),
        results(w, marker)
    );
}

fn a_scouted_change_goes_from_schedule_to_merge_through_every_role(store: Store, case: &str) {
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
    let mut env = super::support::github_app_env(&gh);
    env.push((
        "CAPSID_OPERATOR_KEY_HASH".to_owned(),
        capsid_core::crypto::sha256_hex(OPERATOR),
    ));
    let Some(w) = World::start_claude_with(store, case, env) else {
        return;
    };
    let root = w.project("demo");

    // The project, registered with curl alone, with its runner settings.
    let (status, made) = curl_post(
        &w,
        OPERATOR,
        "/api/projects",
        &json!({"namespace": "demo", "repo": REPO, "test_command": "sh test.sh",
                "build_command": "sh build.sh", "dispatch_limits": "depth=3"}),
    );
    assert_eq!(status, 201, "{made}");
    assert_eq!(made["project"]["namespace"], json!("demo"), "{made}");
    assert_eq!(
        made["project"]["runner"]["test_command"],
        json!("sh test.sh"),
        "{made}"
    );
    // The junior's, planner's, scout's and deploy's driver, and the senior's: another agent.
    let key = w.mint_driver("demo-driver", "demo");
    let reviewer = w.mint_driver("reviewer", "demo");
    let extra = boxed(&w);
    let extra: Vec<&str> = extra.iter().map(String::as_str).collect();

    // 1. A signed schedule fires its scout; nothing new: one model call, nothing posted, done.
    w.cli(&["namespaces", "register", "capsid", "--repo", "you/capsid"]);
    let wrote = w.tool(
        OPERATOR,
        "write",
        json!({"namespace": "capsid", "path": SCHEDULE, "title": "Widgets scout",
               "body": "# Widgets\n- version: 1\n- enabled: true\n- every: 1d\n- brief: Look for stale widgets. SCRIPT=quiet-scout\n",
               "allow_improve_paths": true, "confirm": true}),
    );
    assert!(wrote.get("error").is_none(), "{wrote}");
    w.cli(&["policy", "sign", SCHEDULE]);
    let ticked = w.cli_json(&["tick", "--task", "scouts", "--json"]);
    let turn = &ticked["report"]["ran"][0]["report"]["schedules"][0];
    // The server's own scheduler may have posted this window's scout first: one job either way.
    assert!(
        turn["outcome"] == json!("posted") || turn["outcome"] == json!("posted_already"),
        "{ticked}"
    );
    let quiet = turn["job_id"]
        .as_str()
        .expect("the window's job")
        .to_owned();
    w.fake().script(
        "SCRIPT=quiet-scout",
        vec![vec![text("Nothing new since the watermark.")]],
    );
    drive(&w, &key, &root, &extra, 0, "SCRIPT=quiet-scout");
    let job = w.job("demo", &quiet);
    assert_eq!(job["status"], json!("done"), "{job}");
    assert_eq!(job["role"], json!("scout"), "{job}");
    assert_eq!(job["posted_by"], json!("scheduler"), "{job}");
    assert_eq!(
        w.fake().requests("SCRIPT=quiet-scout").len(),
        1,
        "a quiet scout is one model call: {}",
        results(&w, "SCRIPT=quiet-scout")
    );
    let all = jobs(&w);
    assert_eq!(all.len(), 1, "a quiet scout posts nothing: {all:?}");
    assert_first_request_carries_the_skill(&w, "SCRIPT=quiet-scout", "scout");

    // 2. The next scout, posted with curl, finds something.
    let (status, posted) = curl_post(
        &w,
        &w.human,
        "/api/projects/demo/agents",
        &json!({"role": "scout", "brief": "Look for stale widgets again. SCRIPT=busy-scout"}),
    );
    assert_eq!(status, 201, "{posted}");
    let scout = posted["job"]["id"].as_str().expect("an id").to_owned();
    assert_eq!(posted["job"]["role"], json!("scout"), "{posted}");
    w.fake().script(
        "SCRIPT=busy-scout",
        vec![
            vec![
                tool(
                    "mcp__capsid__jobs",
                    json!({"action": "post", "namespace": "demo", "role": "planner",
                           "parent": scout, "title": "Plan: stale widgets",
                           "body": "The widgets in widgets.txt are stale. SCRIPT=planner"}),
                ),
                tool(
                    "mcp__capsid__write",
                    json!({"namespace": "demo", "path": "scouts/widgets/watermark.md",
                           "title": "Widgets watermark",
                           "body": "- reported: stale widgets\n"}),
                ),
            ],
            vec![text("Found stale widgets; a planner is on it.")],
        ],
    );
    drive(&w, &key, &root, &extra, 0, "SCRIPT=busy-scout");
    let job = w.job("demo", &scout);
    assert_eq!(
        job["status"],
        json!("done"),
        "{job}\n{}",
        results(&w, "SCRIPT=busy-scout")
    );
    let watermark = w.tool(
        &w.human,
        "read",
        json!({"namespace": "demo", "path": "scouts/widgets/watermark.md"}),
    );
    assert!(
        watermark.to_string().contains("reported: stale widgets"),
        "{watermark}"
    );
    let planner = id_of(&child(&w, &scout, "planner"));
    assert_first_request_carries_the_skill(&w, "SCRIPT=busy-scout", "scout");

    // The planner commits a spec, pushes it and dispatches a junior.
    gh.commit(
        REPO,
        &format!("capsid/{planner}"),
        &[("specs/stale-widgets.md", Some("# Stale widgets\n"))],
        "Spec: stale widgets",
    );
    w.fake().script(
        "SCRIPT=planner",
        vec![
            vec![bash(
                "mkdir -p specs && printf '# Stale widgets\\n' > specs/stale-widgets.md && git add specs && git commit -qm 'Spec: stale widgets' && git push -q origin HEAD && echo PUSHED",
            )],
            vec![tool(
                "mcp__capsid__jobs",
                json!({"action": "post", "namespace": "demo", "role": "junior",
                       "parent": planner, "title": "Build: stale widgets",
                       "body": "Build what specs/stale-widgets.md asks. SCRIPT=junior"}),
            )],
            vec![text("Spec committed; a junior is on it.")],
        ],
    );
    drive(&w, &key, &root, &extra, 0, "SCRIPT=planner");
    let job = w.job("demo", &planner);
    assert_eq!(job["status"], json!("done"), "{job}");
    let origin = w.dir.path().join("demo-origin.git");
    let spec = git_out(
        &origin,
        &[
            "show",
            &format!("refs/heads/capsid/{planner}:specs/stale-widgets.md"),
        ],
    );
    assert_eq!(spec, "# Stale widgets", "the spec reached origin");
    let junior = id_of(&child(&w, &planner, "junior"));
    assert_first_request_carries_the_skill(&w, "SCRIPT=planner", "planner");

    // The junior builds it; the driver opens its PR; the pipeline posts the senior review.
    let branch = format!("capsid/{junior}");
    let head = gh.commit(
        REPO,
        &branch,
        &[("widgets.txt", Some("fresh widgets\n"))],
        "Fresh widgets",
    );
    w.fake().script(
        "SCRIPT=junior",
        vec![
            vec![bash(
                "printf 'fresh widgets\\n' > widgets.txt && git add widgets.txt && git commit -qm 'Fresh widgets' && git push -q origin HEAD && echo PUSHED",
            )],
            vec![text("Built the fresh widgets.")],
        ],
    );
    drive(&w, &key, &root, &extra, 0, "SCRIPT=junior");
    let job = w.job("demo", &junior);
    assert_eq!(job["status"], json!("done"), "{job}");
    let number = gh
        .pulls(REPO)
        .into_iter()
        .find(|(_, _, h)| *h == branch)
        .map(|(n, _, _)| n)
        .unwrap_or_else(|| panic!("no PR for {branch}: {:?}", gh.pulls(REPO)));
    assert_eq!(
        job["result_ref"],
        json!(format!("https://github.com/{REPO}/pull/{number}")),
        "{job}"
    );
    assert_first_request_carries_the_skill(&w, "SCRIPT=junior", "junior");
    let senior = child(&w, &junior, "senior");
    assert_eq!(senior["title"], json!(format!("Review {REPO}#{number}")));
    let senior = id_of(&senior);
    let got = w.job_record("demo", &senior);
    let body = got["job"]["body"].as_str().unwrap_or("");
    assert!(
        body.contains(&format!("at head {head}")) && body.contains(&junior),
        "{got}"
    );

    // The senior, another agent, approves that head.
    // The review's body names the PR's URL and its head; the deploy's, the PR and its author.
    let senior_marker = format!("/pull/{number} at head {head}");
    w.fake().script(
        &senior_marker,
        vec![
            vec![tool(
                "mcp__capsid__jobs",
                json!({"action": "approve", "namespace": "demo", "repo": REPO,
                       "pull_request": number, "head_sha": head,
                       "body": "widgets.txt is fresh; the tests pass."}),
            )],
            vec![text("Approved.")],
        ],
    );
    drive(&w, &reviewer, &root, &extra, 0, &senior_marker);
    let job = w.job("demo", &senior);
    assert_eq!(
        job["status"],
        json!("done"),
        "{job}\n{}",
        results(&w, &senior_marker)
    );
    assert_eq!(job["claimed_by"], json!("agent:reviewer"), "{job}");
    assert_first_request_carries_the_skill(&w, &senior_marker, "senior");

    // The approval hands it on: a deploy job, whose run merges through the gate.
    let deploy = child(&w, &junior, "deploy");
    assert_eq!(deploy["title"], json!(format!("Merge {REPO}#{number}")));
    let deploy = id_of(&deploy);
    let deploy_marker = format!("Merge pull request {REPO}#{number} (the work of job {junior})");
    w.fake().script(
        &deploy_marker,
        vec![
            vec![tool(
                "mcp__capsid__manage_pr",
                json!({"namespace": "demo", "number": number, "action": "merge"}),
            )],
            vec![text("Merged.")],
        ],
    );
    drive(&w, &key, &root, &extra, 0, &deploy_marker);
    let job = w.job("demo", &deploy);
    assert_eq!(
        job["status"],
        json!("done"),
        "{job}\n{}",
        results(&w, &deploy_marker)
    );
    assert!(
        job["result_summary"]
            .as_str()
            .unwrap_or("")
            .contains(&format!("this deploy run merged {REPO}#{number}")),
        "{job}"
    );
    assert_first_request_carries_the_skill(&w, &deploy_marker, "deploy");
    assert_eq!(gh.pull(REPO, number).map(|p| p.1), Some(true), "merged");

    // Every hand-off is a job with its parent: one chain.
    let chain = [
        (&scout, None),
        (&planner, Some(&scout)),
        (&junior, Some(&planner)),
        (&senior, Some(&junior)),
        (&deploy, Some(&junior)),
    ];
    for (id, parent) in chain {
        let job = w.job("demo", id);
        assert_eq!(job["status"], json!("done"), "{job}");
        assert_eq!(job["parent_id"], json!(parent), "{job}");
    }
    assert_eq!(jobs(&w).len(), 6, "nothing else was posted: {:?}", jobs(&w));

    // 3. The gate refuses a deploy whose only approval is the junior's own agent's, and one
    // whose approval is for an older head.
    refused_at_the_gate(&w, &gh, &key, &root, &extra);
    runtime.block_on(async { gh.stop() });
    w.finish();
}

/// A driver `name` of `demo` that may record review verdicts itself (`can_comment_pr`): its key.
fn mint_with_verdicts(w: &World, name: &str) -> String {
    let minted = w.cli_json(&[
        "agents",
        "mint",
        "--name",
        name,
        "--kind",
        "driver",
        "--namespaces",
        "demo",
        "--grants",
        "read,write",
        "--flag",
        "can_comment_pr",
        "--json",
    ]);
    minted["key"].as_str().expect("a key").to_owned()
}

/// A junior job held by `author` whose branch has an open PR: its id, the PR and its head.
fn a_junior_pr(w: &World, gh: &FakeGitHub, author: &str, title: &str) -> (String, u64, String) {
    let posted = w.tool(
        &w.human,
        "jobs",
        json!({"action": "post", "namespace": "demo", "title": title, "body": "Build it.\n", "role": "junior"}),
    );
    let id = posted["job"]["id"].as_str().expect("an id").to_owned();
    let claimed = w.tool(
        author,
        "jobs",
        json!({"action": "claim", "id": id, "namespace": "demo"}),
    );
    assert_eq!(claimed["ok"], json!(true), "{claimed}");
    let branch = format!("capsid/{id}");
    let head = gh.commit(REPO, &branch, &[("w.txt", Some(title))], title);
    let number = gh.open_pull(REPO, &branch, "main", title, "");
    (id, number, head)
}

/// A deploy job for `number` whose run (the driver `key`) tries the merge: it must block with
/// the gate's refusal of `head` carrying `why`.
fn deploy_is_refused(
    w: &World,
    key: &str,
    root: &std::path::Path,
    extra: &[&str],
    number: u64,
    head: &str,
    why: &str,
) {
    // The pipeline posts the deploy of an approved junior's PR; a person posts one otherwise.
    let title = format!("Merge {REPO}#{number}");
    let id = match jobs(w).into_iter().find(|j| j["title"] == json!(title)) {
        Some(j) => id_of(&j),
        None => {
            let posted = w.tool(
                &w.human,
                "jobs",
                json!({"action": "post", "namespace": "demo", "title": title,
                       "body": format!("Merge pull request {REPO}#{number} (posted by a person)."),
                       "role": "deploy"}),
            );
            posted["job"]["id"].as_str().expect("an id").to_owned()
        }
    };
    let marker = &format!("Merge pull request {REPO}#{number} (");
    w.fake().script(
        marker,
        vec![
            vec![tool(
                "mcp__capsid__manage_pr",
                json!({"namespace": "demo", "number": number, "action": "merge"}),
            )],
            vec![text("Merged it.")],
        ],
    );
    drive(w, key, root, extra, 4, marker);
    let job = w.job("demo", &id);
    assert_eq!(job["status"], json!("blocked"), "{job}");
    let summary = job["result_summary"].as_str().unwrap_or("");
    let approve =
        format!("capsid jobs approve --namespace demo --repo {REPO} --pr {number} --head {head}");
    assert!(
        summary.contains(&format!(
            "The gate refused this deploy run's merge of {REPO}#{number}"
        )) && summary.contains(&approve)
            && summary.contains(why),
        "{summary}"
    );
}

fn refused_at_the_gate(
    w: &World,
    gh: &FakeGitHub,
    key: &str,
    root: &std::path::Path,
    extra: &[&str],
) {
    // Approved only by the junior's own agent.
    let author = mint_with_verdicts(w, "author");
    let (_, number, head) = a_junior_pr(w, gh, &author, "Self approved");
    let approved = w.tool(
        &author,
        "jobs",
        json!({"action": "approve", "namespace": "demo", "repo": REPO, "pull_request": number,
               "head_sha": head, "body": "My own work looks fine."}),
    );
    assert_eq!(approved["ok"], json!(true), "{approved}");
    // Its approval is the author's: the pipeline may post its own deploy job; either way the
    // merge below is refused.
    deploy_is_refused(w, key, root, extra, number, &head, "the author's own");
    assert_eq!(
        gh.pull(REPO, number).map(|p| p.1),
        Some(false),
        "not merged"
    );

    // Approved by another agent, then a newer commit: the approval is for an older head.
    let other_author = w.mint_driver("author-2", "demo");
    let (_, number, old) = a_junior_pr(w, gh, &other_author, "Moved on");
    let approved = w.tool(
        &mint_with_verdicts(w, "second-reviewer"),
        "jobs",
        json!({"action": "approve", "namespace": "demo", "repo": REPO, "pull_request": number,
               "head_sha": old, "body": "Looks right."}),
    );
    assert_eq!(approved["ok"], json!(true), "{approved}");
    let branch = gh
        .pull(REPO, number)
        .map(|p| p.2)
        .expect("the pull's branch");
    let newer = gh.commit(
        REPO,
        &branch,
        &[("w.txt", Some("changed after review\n"))],
        "After review",
    );
    assert_ne!(newer, old);
    // A driver key holds one job waiting on a person: another deployer runs this one.
    let deployer = w.mint_driver("deployer-2", "demo");
    deploy_is_refused(
        w,
        &deployer,
        root,
        extra,
        number,
        &newer,
        "no review verdict is recorded for head",
    );
    assert_eq!(
        gh.pull(REPO, number).map(|p| p.1),
        Some(false),
        "not merged"
    );
}

/// A running driver, killed when dropped.
struct Running(std::process::Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Polls `demo`'s jobs (every quarter second, for at most two minutes) until `done` holds of
/// them: the jobs then. Panics with the last list and the running driver's log when it never
/// does.
fn wait_for(w: &World, what: &str, done: impl Fn(&[Value]) -> bool) -> Vec<Value> {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    loop {
        let all = jobs(w);
        if done(&all) {
            return all;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "{what}: never happened; the jobs: {}\n--- the driver said\n{}",
            Value::Array(all),
            std::fs::read_to_string(w.dir.path().join("driver.log")).unwrap_or_default()
        );
        std::thread::sleep(std::time::Duration::from_millis(250));
    }
}

fn with_role<'a>(all: &'a [Value], role: &str) -> Option<&'a Value> {
    all.iter().find(|j| j["role"] == json!(role))
}

/// Issue 55's "the whole pipeline started with curl alone against a running server and
/// driver": the project registered and its scout posted with `curl`, a `capsid drive --watch`
/// already running picks each job up as it is posted. The scripted turns name the values only
/// known at run time by placeholders (`{{after:...}}`, see `fake_claude`): each run echoes its
/// job's id for its dispatch's `parent`; the senior and the deploy read the PR's number and
/// head from their job's body. The fake GitHub takes each pushed branch on from the bare origin
/// when the driver opens its PR.
///
/// The running driver holds two keys (`--max-parallel 2`, one job per key): the pipeline's
/// senior review is never claimed by the agent that wrote the junior's PR (the hand-off
/// excludes it), so the other key's agent reviews it; the deploy is never claimed by the
/// reviewer (whose approval would not count for its own merge), so the gate finds a standing
/// approval by another agent, and the chain merges with no person in it.
fn the_pipeline_started_with_curl_runs_under_a_running_driver(store: Store, case: &str) {
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
    let mut env = super::support::github_app_env(&gh);
    env.push((
        "CAPSID_OPERATOR_KEY_HASH".to_owned(),
        capsid_core::crypto::sha256_hex(OPERATOR),
    ));
    let Some(w) = World::start_claude_with(store, case, env) else {
        return;
    };
    let root = w.project("demo");
    gh.mirror_branches_from(REPO, &w.dir.path().join("demo-origin.git"));
    let (status, made) = curl_post(
        &w,
        OPERATOR,
        "/api/projects",
        &json!({"namespace": "demo", "repo": REPO, "root_dir": root.display().to_string(),
                "test_command": "sh test.sh", "build_command": "sh build.sh"}),
    );
    assert_eq!(status, 201, "{made}");
    let key = w.mint_driver("demo-driver", "demo");
    let second = w.mint_driver("demo-driver-2", "demo");
    let key_files: Vec<std::path::PathBuf> = [&key, &second]
        .iter()
        .enumerate()
        .map(|(i, k)| {
            let path = w.dir.path().join(format!("driver-{i}.key"));
            std::fs::write(&path, k).expect("a key file");
            path
        })
        .collect();

    let echo_id = || bash("echo JOB=$CAPSID_JOB_ID");
    w.fake().script(
        "SCRIPT=watch-scout",
        vec![
            vec![echo_id()],
            vec![
                tool(
                    "mcp__capsid__jobs",
                    json!({"action": "post", "namespace": "demo", "role": "planner",
                           "parent": "{{after:JOB=}}", "title": "Plan: stale gadgets",
                           "body": "The gadgets are stale. SCRIPT=watch-planner"}),
                ),
                tool(
                    "mcp__capsid__write",
                    json!({"namespace": "demo", "path": "scouts/gadgets/watermark.md",
                           "title": "Gadgets watermark", "body": "- reported: stale gadgets\n"}),
                ),
            ],
            vec![text("Found stale gadgets; a planner is on it.")],
        ],
    );
    w.fake().script(
        "SCRIPT=watch-planner",
        vec![
            vec![bash(
                "echo JOB=$CAPSID_JOB_ID && mkdir -p specs && printf '# Gadgets\\n' > specs/gadgets.md && git add specs && git commit -qm 'Spec: gadgets' && git push -q origin HEAD && echo PUSHED",
            )],
            vec![tool(
                "mcp__capsid__jobs",
                json!({"action": "post", "namespace": "demo", "role": "junior",
                       "parent": "{{after:JOB=}}", "title": "Build: fresh gadgets",
                       "body": "Build what specs/gadgets.md asks. SCRIPT=watch-junior"}),
            )],
            vec![text("Spec committed; a junior is on it.")],
        ],
    );
    w.fake().script(
        "SCRIPT=watch-junior",
        vec![
            vec![bash(
                "printf 'fresh gadgets\\n' > gadgets.txt && git add gadgets.txt && git commit -qm 'Fresh gadgets' && git push -q origin HEAD && echo PUSHED",
            )],
            vec![text("Built the fresh gadgets.")],
        ],
    );
    w.fake().script(
        "Review pull request",
        vec![
            vec![tool(
                "mcp__capsid__jobs",
                json!({"action": "approve", "namespace": "demo", "repo": REPO,
                       "pull_request": "{{number-after:/pull/}}",
                       "head_sha": "{{after:at head }}", "body": "Fresh gadgets; tests pass."}),
            )],
            vec![text("Approved.")],
        ],
    );
    let merge = json!({"namespace": "demo", "number": "{{number-after:Merge pull request you/demo#}}",
                       "action": "merge"});
    w.fake().script(
        "Merge pull request",
        vec![
            vec![tool("mcp__capsid__manage_pr", merge.clone())],
            vec![text("Merged it.")],
            // Resumed once a person approved the head: the same merge goes through.
            vec![tool("mcp__capsid__manage_pr", merge)],
            vec![text("Merged the pull request.")],
        ],
    );

    // The driver is running, with two keys, before anything is posted.
    let extra = boxed(&w);
    let mut extra: Vec<String> = extra.clone();
    extra.extend([
        "--poll-secs".into(),
        "1".into(),
        "--max-parallel".into(),
        "2".into(),
    ]);
    for f in &key_files {
        extra.push("--key-file".into());
        extra.push(f.display().to_string());
    }
    let extra: Vec<&str> = extra.iter().map(String::as_str).collect();
    let driver = Running(
        w.drive_claude_watching("demo", &key, &root, &extra)
            .env_remove("CAPSID_KEY")
            .stdout(std::process::Stdio::null())
            .stderr(
                std::fs::File::create(w.dir.path().join("driver.log")).expect("the driver's log"),
            )
            .spawn()
            .expect("start capsid drive --watch"),
    );
    let (status, posted) = curl_post(
        &w,
        &w.human,
        "/api/projects/demo/agents",
        &json!({"role": "scout", "brief": "Look for stale gadgets. SCRIPT=watch-scout"}),
    );
    assert_eq!(status, 201, "{posted}");
    let scout = posted["job"]["id"].as_str().expect("an id").to_owned();

    // The chain runs by itself to the merge.
    let all = wait_for(&w, "the deploy done", |all| {
        with_role(all, "deploy").is_some_and(|j| j["status"] == json!("done"))
    });
    drop(driver);
    let deploy = with_role(&all, "deploy").cloned().expect("a deploy job");
    let number: u64 = deploy["title"]
        .as_str()
        .and_then(|t| t.strip_prefix(&format!("Merge {REPO}#")))
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("the pipeline's deploy title: {deploy}"));
    let branch = gh.pull(REPO, number).map(|p| p.2).expect("the PR's branch");
    assert!(
        deploy["result_summary"]
            .as_str()
            .unwrap_or("")
            .contains(&format!("this deploy run merged {REPO}#{number}")),
        "{deploy}"
    );
    assert_eq!(gh.pull(REPO, number).map(|p| p.1), Some(true), "merged");

    // One chain: scout, planner, junior, then the senior and the deploy of its PR.
    let role = |r: &str| {
        with_role(&all, r)
            .cloned()
            .unwrap_or_else(|| panic!("no {r} job in {all:?}"))
    };
    let (planner, junior, senior) = (role("planner"), role("junior"), role("senior"));
    // The review was another agent's, and the merger was not the reviewer.
    assert_ne!(
        senior["claimed_by"], junior["claimed_by"],
        "{senior}\n{junior}"
    );
    assert_ne!(
        deploy["claimed_by"], senior["claimed_by"],
        "{deploy}\n{senior}"
    );
    assert_eq!(planner["parent_id"], json!(scout), "{planner}");
    assert_eq!(junior["parent_id"], planner["id"], "{junior}");
    assert_eq!(senior["parent_id"], junior["id"], "{senior}");
    assert_eq!(deploy["parent_id"], junior["id"], "{deploy}");
    assert_eq!(
        branch,
        format!("capsid/{}", junior["id"].as_str().unwrap_or("")),
        "the PR is the junior's"
    );
    for job in [&planner, &junior, &senior] {
        assert_eq!(job["status"], json!("done"), "{job}");
    }
    assert_eq!(w.job("demo", &scout)["status"], json!("done"));
    assert_eq!(all.len(), 5, "nothing but the chain was posted: {all:?}");
    for (marker, r) in [
        ("SCRIPT=watch-scout", "scout"),
        ("SCRIPT=watch-planner", "planner"),
        ("SCRIPT=watch-junior", "junior"),
        ("Review pull request", "senior"),
        ("Merge pull request", "deploy"),
    ] {
        assert_first_request_carries_the_skill(&w, marker, r);
    }
    runtime.block_on(async { gh.stop() });
    w.finish();
}

#[test]
fn sqlite_the_pipeline_started_with_curl_runs_under_a_running_driver() {
    the_pipeline_started_with_curl_runs_under_a_running_driver(
        Store::Sqlite,
        "sqlite_the_pipeline_started_with_curl_runs_under_a_running_driver",
    );
}

#[test]
fn postgres_the_pipeline_started_with_curl_runs_under_a_running_driver() {
    the_pipeline_started_with_curl_runs_under_a_running_driver(
        Store::Postgres,
        "postgres_the_pipeline_started_with_curl_runs_under_a_running_driver",
    );
}

#[test]
fn sqlite_a_scouted_change_goes_from_schedule_to_merge_through_every_role() {
    a_scouted_change_goes_from_schedule_to_merge_through_every_role(
        Store::Sqlite,
        "sqlite_a_scouted_change_goes_from_schedule_to_merge_through_every_role",
    );
}

#[test]
fn postgres_a_scouted_change_goes_from_schedule_to_merge_through_every_role() {
    a_scouted_change_goes_from_schedule_to_merge_through_every_role(
        Store::Postgres,
        "postgres_a_scouted_change_goes_from_schedule_to_merge_through_every_role",
    );
}
