//! Roles in the driven run (issue 55, items 1 and 2; issue 53, item 1), with the real CLIs:
//! the role's instructions reach the agent as a skill its CLI loads from the clone (the
//! scripted model's first request carries it), a role that ships no code pushes nothing (the
//! gateway refuses a scout's push, naming the role) and a quiet run of it is done, while a job
//! that asks for a change (a junior's, or one naming no role) and ships nothing is failed,
//! "nothing shipped", with the last test verdict the hooks saw.

use capsid_tests::fake_claude::{bash, text};
use serde_json::json;

use super::claude::result_of;
use super::claude_boxed::{boxed, require_bwrap};
use super::support::{World, git_out, said};

fn post_as(w: &World, title: &str, body: &str, role: Option<&str>) -> String {
    let mut args = json!({"action": "post", "namespace": "demo", "title": title, "body": body});
    if let Some(r) = role {
        args["role"] = json!(r);
    }
    let posted = w.tool(&w.human, "jobs", args);
    assert_eq!(posted["ok"], json!(true), "{posted}");
    posted["job"]["id"].as_str().expect("an id").to_owned()
}

pub fn a_scout_reads_its_skill_pushes_nothing_and_a_quiet_run_is_done(w: &World) {
    if !require_bwrap("a_scout_reads_its_skill_pushes_nothing_and_a_quiet_run_is_done") {
        return;
    }
    let key = w.namespace_with_driver("demo");
    let root = w.project("demo");
    let id = post_as(
        w,
        "Look for stale widgets",
        "Scout the widgets. SCRIPT=scout",
        Some("scout"),
    );
    w.fake().script(
        "SCRIPT=scout",
        vec![
            // Even the base commit, on the job's own branch, is refused: a scout ships nothing.
            vec![bash(
                "git push origin HEAD:refs/heads/capsid/$CAPSID_JOB_ID 2>&1; echo exit=$?",
            )],
            vec![text("Nothing new since the watermark.")],
        ],
    );
    let extra = boxed(w);
    let extra: Vec<&str> = extra.iter().map(String::as_str).collect();
    let out = w.drive_claude_once("demo", &key, &root, &extra);
    assert_eq!(out.status.code(), Some(0), "{}", said(&out));
    let job = w.job("demo", &id);
    assert_eq!(job["status"], json!("done"), "{job}");
    let summary = job["result_summary"].as_str().unwrap_or("");
    assert!(
        summary.starts_with("Nothing new since the watermark.")
            && summary
                .contains("(a scout's run, which ships no code), so the test gate was skipped"),
        "{summary}"
    );
    // The gateway refused the push, naming the role, and the refusal reached the model.
    let (pushed, _) = result_of(w, "SCRIPT=scout", "toolu_fake_0_0").expect("the push's result");
    assert!(
        pushed.contains("role is scout, which ships no code") && !pushed.contains("exit=0"),
        "{pushed}"
    );
    let origin = w.dir.path().join("demo-origin.git");
    let branches = git_out(&origin, &["branch", "--list", "capsid/*"]);
    assert!(
        branches.trim().is_empty(),
        "a scout's branch reached origin: {branches}"
    );
    // The role's skill reached the model in the CLI's very first request: its description is
    // only in the SKILL.md the driver wrote into the clone.
    let first = w.fake().requests("SCRIPT=scout");
    let first = first.first().expect("a first request").body.to_string();
    assert!(
        first.contains("look for new work against the watermark"),
        "the scout's skill is not in the first request: {first}"
    );
    assert!(
        first.contains("Your role in this job is scout"),
        "the prompt does not name the role: {first}"
    );
    let mark = w.checkmark("demo", "demo-driver");
    assert_eq!(mark["tests_status"], json!("skipped"), "{mark}");
}

pub fn a_job_that_ships_nothing_is_done_only_when_its_role_ships_nothing(w: &World) {
    let key = w.namespace_with_driver("demo");
    let root = w.project("demo");
    let quiet = |marker: &str| {
        vec![
            vec![bash("ls && git log --oneline -1")],
            vec![text(&format!(
                "Looked around ({marker}); nothing to change."
            ))],
        ]
    };
    let cases = [
        (None, "Unroled look", "SCRIPT=unroled", "failed"),
        (Some("junior"), "Junior look", "SCRIPT=junior", "failed"),
        (Some("senior"), "Senior look", "SCRIPT=senior", "done"),
    ];
    for (role, title, marker, status) in cases {
        let id = post_as(w, title, &format!("Look. {marker}"), role);
        w.fake().script(marker, quiet(marker));
        let out = w.drive_claude_once("demo", &key, &root, &[]);
        let job = w.job("demo", &id);
        assert_eq!(
            job["status"],
            json!(status),
            "{role:?}: {job}\n{}",
            said(&out)
        );
        let summary = job["result_summary"].as_str().unwrap_or("");
        if status == "failed" {
            assert_eq!(out.status.code(), Some(4), "{}", said(&out));
            assert!(
                summary.starts_with("Nothing shipped: ")
                    && summary.contains("the agent committed nothing"),
                "{summary}"
            );
            // The hooks' last word on the tests is on the record (the project's tests pass).
            assert!(
                summary.contains("The last test run the hooks saw in the session passed"),
                "{summary}"
            );
            match role {
                None => assert!(summary.contains("it names no role"), "{summary}"),
                Some(r) => assert!(summary.contains(&format!("a {r} ships")), "{summary}"),
            }
        } else {
            assert_eq!(out.status.code(), Some(0), "{}", said(&out));
            assert!(
                summary.contains("(a senior's run, which ships no code)"),
                "{summary}"
            );
        }
    }
}

/// Protected branches are a namespace setting (issue 55, item 4): with `release` protected, a
/// boxed push to it is held at the gateway for a person (the job blocks on exactly that
/// update), where without the setting it is only a branch that is not the job's.
pub fn the_protected_branch_setting_decides_what_the_gateway_holds(w: &World) {
    if !require_bwrap("the_protected_branch_setting_decides_what_the_gateway_holds") {
        return;
    }
    let key = w.namespace_with_driver("demo");
    let root = w.project("demo");
    let bad = w.cli_output(&[
        "namespaces",
        "update",
        "demo",
        "--protected-branches",
        "a..b",
    ]);
    assert_ne!(bad.status.code(), Some(0), "{}", said(&bad));
    assert!(said(&bad).contains("protected_branches"), "{}", said(&bad));
    w.cli(&[
        "namespaces",
        "update",
        "demo",
        "--protected-branches",
        "release",
    ]);
    let id = post_as(
        w,
        "Release it",
        "Ship to release. SCRIPT=release",
        Some("junior"),
    );
    w.fake().script(
        "SCRIPT=release",
        vec![
            vec![bash(
                "echo r > r.txt && git add r.txt && git commit -qm r && git push origin HEAD:release 2>&1; echo exit=$?",
            )],
            vec![text("Pushed to release.")],
        ],
    );
    let extra = boxed(w);
    let extra: Vec<&str> = extra.iter().map(String::as_str).collect();
    let out = w.drive_claude_once("demo", &key, &root, &extra);
    assert_eq!(out.status.code(), Some(4), "{}", said(&out));
    let (pushed, _) = result_of(w, "SCRIPT=release", "toolu_fake_0_0").expect("the push's result");
    assert!(pushed.contains("refs/heads/release: held"), "{pushed}");
    let job = w.job("demo", &id);
    assert_eq!(job["status"], json!("blocked"), "{job}");
    let mark = w.checkmark("demo", "demo-driver");
    let question = mark["open_question"].as_str().unwrap_or("");
    assert!(
        question.contains("refs/heads/release") && question.contains("git gateway held"),
        "{mark}"
    );
    let origin = w.dir.path().join("demo-origin.git");
    assert!(
        git_out(&origin, &["branch", "--list", "release"])
            .trim()
            .is_empty(),
        "release moved without a person"
    );
}

/// An owner's role (issue 55, item 1): a signed `capsid/policy/roles/<ns>/<name>.md` defines
/// it; the driver takes its definition from the server's claim, so its instructions reach the
/// model as the skill the CLI loads (in the first request), its model is the one the CLI asks
/// for, and its verdict follows what it ships (a reviewer's quiet run is done). Unsigned, the
/// role does not exist: the post is refused saying why.
pub fn an_owners_role_reaches_the_agent_as_its_skill_and_on_its_model(w: &World) {
    if !require_bwrap("an_owners_role_reaches_the_agent_as_its_skill_and_on_its_model") {
        return;
    }
    let key = w.namespace_with_driver("demo");
    let root = w.project("demo");
    w.cli(&["namespaces", "register", "capsid", "--repo", "you/capsid"]);
    let model = match w.model() {
        m if m.starts_with("claude") => "claude-haiku-4-5",
        _ => "gpt-5-mini",
    };
    let path = "policy/roles/demo/checker.md";
    let body = format!(
        "# Role: checker\n- version: 1\n- ships: nothing\n- reviews: true\n- model: {model}\n- max_cost_usd: 0.75\n- description: Checks the changelog against the merged work.\n\n## Instructions\nRead CHANGELOG.md and list what it misses. Say CHECKER-OATH first.\n"
    );
    // The owner writes the role's document (a protected path: a key with that flag) and
    // signs it (`capsid policy sign`, the admin's).
    let owner = w.cli_json(&[
        "agents",
        "mint",
        "--name",
        "role-author",
        "--namespaces",
        "capsid",
        "--grants",
        "read,write",
        "--flag",
        "can_touch_protected",
        "--json",
    ]);
    let owner = owner["key"].as_str().expect("a key");
    let written = w.tool(
        owner,
        "write",
        json!({"namespace": "capsid", "path": path, "title": "Checker role", "body": body,
               "allow_improve_paths": true, "confirm": true}),
    );
    assert!(written.get("error").is_none(), "{written}");
    let unsigned = w.tool_error(
        &w.human,
        "jobs",
        json!({"action": "post", "namespace": "demo", "title": "Check it", "body": "Check.", "role": "checker"}),
    );
    assert!(unsigned.contains("not validly signed"), "{unsigned}");
    w.cli(&["policy", "sign", path]);
    let listed = w.cli(&["jobs", "roles", "--namespace", "demo"]);
    assert!(
        listed.contains(&format!("model {model}"))
            && listed.contains("checker")
            && listed.contains("(the owner's)")
            && listed.contains("reviews"),
        "{listed}"
    );
    let id = post_as(
        w,
        "Check it",
        "Check the changelog. SCRIPT=checker",
        Some("checker"),
    );
    w.fake().script(
        "SCRIPT=checker",
        vec![vec![text("CHECKER-OATH. The changelog misses nothing.")]],
    );
    let extra = boxed(w);
    let extra: Vec<&str> = extra.iter().map(String::as_str).collect();
    let out = w.drive_claude_once("demo", &key, &root, &extra);
    assert_eq!(out.status.code(), Some(0), "{}", said(&out));
    let job = w.job("demo", &id);
    assert_eq!(job["status"], json!("done"), "{job}\n{}", said(&out));
    assert!(
        job["result_summary"]
            .as_str()
            .unwrap_or("")
            .contains("(a checker's run, which ships no code)"),
        "{job}"
    );
    let requests = w.fake().requests("SCRIPT=checker");
    assert_eq!(requests.len(), 1, "one model call for a quiet check");
    let first = &requests[0].body;
    assert_eq!(
        first["model"],
        json!(model),
        "the role's model: {}",
        first["model"]
    );
    let text = first.to_string();
    assert!(
        text.contains("Checks the changelog against the merged work")
            && text.contains("Your role in this job is checker"),
        "the checker's skill is not in the first request: {text}"
    );
    assert!(
        said(&out).contains(&format!("the checker role asks for model {model}")),
        "{}",
        said(&out)
    );
}

/// Path leases where edits happen and where they leave (issue 51): the agent of a job on
/// `docs/**` first writes a file outside it with a redirection the PreToolUse hook can read
/// (denied, naming what the job holds); then writes it in a way the hook cannot see (`cp`),
/// commits and pushes. The git gateway refuses the push, naming the path and the lease; origin
/// never sees the job's branch, and the job did not ship.
pub fn a_push_outside_the_jobs_paths_is_refused_at_the_gateway(w: &World) {
    if !require_bwrap("a_push_outside_the_jobs_paths_is_refused_at_the_gateway") {
        return;
    }
    let key = w.namespace_with_driver("demo");
    let root = w.project("demo");
    let posted = w.tool(
        &w.human,
        "jobs",
        json!({"action": "post", "namespace": "demo", "title": "Document widgets",
               "body": "Write the widget docs. SCRIPT=outside", "paths": ["docs/**"]}),
    );
    assert_eq!(posted["ok"], json!(true), "{posted}");
    let id = posted["job"]["id"].as_str().expect("an id").to_owned();
    w.fake().script(
        "SCRIPT=outside",
        vec![
            vec![bash("echo 'fn main() {}' > app.rs")],
            vec![bash(
                "mkdir -p docs && echo d > docs/widgets.md && cp docs/widgets.md app.rs && git add -A && git commit -qm docs && git push origin HEAD 2>&1; echo exit=$?",
            )],
            vec![text("Pushed the docs.")],
        ],
    );
    let extra = boxed(w);
    let extra: Vec<&str> = extra.iter().map(String::as_str).collect();
    let out = w.drive_claude_once("demo", &key, &root, &extra);
    assert_ne!(out.status.code(), Some(0), "{}", said(&out));
    let (denied, _) = result_of(w, "SCRIPT=outside", "toolu_fake_0_0").expect("the hook's answer");
    assert!(
        denied.contains("This job holds `docs/**`") && denied.contains("`app.rs` outside it"),
        "{denied}"
    );
    let (pushed, _) = result_of(w, "SCRIPT=outside", "toolu_fake_1_0").expect("the push's result");
    assert!(
        pushed.contains("outside this job's lease: `app.rs`")
            && pushed.contains("The job holds `docs/**`")
            && pushed.contains("exit=1"),
        "{pushed}"
    );
    let origin = w.dir.path().join("demo-origin.git");
    assert!(
        git_out(&origin, &["branch", "--list", &format!("capsid/{id}")])
            .trim()
            .is_empty(),
        "the job's branch reached origin"
    );
    let job = w.job("demo", &id);
    assert_ne!(job["status"], json!("done"), "{job}");
}
