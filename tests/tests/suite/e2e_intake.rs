//! Work from the issue tracker (issue 37), end to end on both stores against the fake GitHub
//! through the real adapter: a labelled issue becomes exactly one signed job however many ticks
//! and replicas run; the issue is told the job's id once; an edit after posting is noted and
//! leaves the job alone; unsigned, disabled, edited-after-signing and malformed policies post
//! nothing; a namespace the policy does not name is never read; an author it does not name is
//! left out; closing or unlabelling the issue fails the queued job (a held one stands); a done
//! job's pull request is commented on the issue once; every row names the `intake` actor.
//! Without an `authors` line only the repository's owners, members and collaborators come in,
//! and each pass takes in at most its caps (in all, and per author).

use capsid_core::jobs::JobStatus;
use capsid_core::jobs::signature::verify_task;
use capsid_core::ports::{AuditFilter, AuditRow, JobFilter};
use capsid_core::schedule::Task;
use capsid_core::service::TaskOutcome;
use capsid_core::time::MINUTE_MS;
use capsid_tests::fake_github::FakeGitHub;
use capsid_tests::server::{TEST_SECRET, TestServer};
use serde_json::{Value, json};

capsid_tests::github_cases!(
    a_labelled_issue_becomes_one_signed_job_however_many_ticks,
    two_replicas_ticking_at_once_post_one_job_per_issue,
    unsigned_disabled_or_edited_policies_post_nothing,
    a_malformed_policy_posts_nothing_and_names_the_field,
    a_namespace_the_policy_does_not_name_is_ignored,
    an_author_the_policy_does_not_name_is_left_out,
    closing_or_unlabelling_the_issue_fails_its_queued_job,
    a_done_jobs_pull_request_is_commented_on_the_issue,
    a_failed_comment_is_tried_again_and_never_doubled,
    more_than_a_page_of_labelled_issues_all_come_in,
    without_an_authors_line_only_the_repositorys_people_come_in,
    each_pass_takes_in_at_most_its_caps_and_the_rest_later,
);

const ALPHA: &str = "octo/alpha";
const BETA: &str = "octo/beta";

/// `octo/alpha` and `octo/beta` on the fake, namespaces `alpha`, `beta` and `capsid`.
async fn setup(s: &TestServer, g: &FakeGitHub) {
    g.add_repo(ALPHA, &[("README.md", "# Alpha\n")]);
    g.add_repo(BETA, &[("README.md", "# Beta\n")]);
    s.namespace("alpha").await;
    s.namespace("beta").await;
    s.namespace("capsid").await;
}

fn policy(version: &str, enabled: bool, namespaces: &str, extra: &str) -> String {
    format!(
        "# Intake policy\n\n- version: {version}\n- enabled: {enabled}\n- namespaces: {namespaces}\n{extra}"
    )
}

/// Writes `body` as `capsid/policy/intake.md`, signed when `sign`.
async fn write_policy(s: &TestServer, body: &str, sign: bool) {
    let written = s
        .admin(
            "write",
            json!({"namespace": "capsid", "path": "policy/intake.md", "title": "Intake",
                   "body": body, "allow_improve_paths": true, "confirm": true}),
        )
        .await;
    assert!(written.get("error").is_none(), "{written}");
    if sign {
        let signed = s
            .admin(
                "improve_run",
                json!({"action": "sign_policy", "namespace": "capsid", "path": "policy/intake.md"}),
            )
            .await;
        assert_eq!(signed["ok"], true, "{signed}");
    }
}

/// Runs the intake task now, as `capsid tick --task intake` does; its report.
async fn tick(s: &TestServer) -> Value {
    let out = s
        .admin("improve_run", json!({"action": "tick", "task": "intake"}))
        .await;
    assert_eq!(out["ok"], true, "{out}");
    let run = &out["report"]["ran"][0];
    assert_eq!(run["task"], "intake", "{out}");
    assert_eq!(run["outcome"], "ran", "{out}");
    s.clock.advance(MINUTE_MS);
    run["report"].clone()
}

async fn jobs_in(s: &TestServer, ns: &str) -> Vec<capsid_core::jobs::Job> {
    s.store
        .jobs(
            &JobFilter {
                namespace: Some(ns.into()),
                status: None,
            },
            1000,
        )
        .await
        .expect("jobs")
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

fn params(row: &AuditRow) -> Value {
    serde_json::from_str(row.params.as_deref().unwrap_or("{}")).expect("params JSON")
}

/// Every intake row and every job row about the intake's jobs names the `intake` actor.
async fn assert_all_intake(s: &TestServer, min: usize) {
    let rows: Vec<AuditRow> = s
        .store
        .recent_audit(&AuditFilter::default(), 1000)
        .await
        .expect("audit")
        .into_iter()
        .filter(|r| {
            r.action
                .as_deref()
                .is_some_and(|a| a.starts_with("intake-"))
        })
        .collect();
    assert!(rows.len() >= min, "{rows:?}");
    for row in &rows {
        assert_eq!(row.actor.as_deref(), Some("intake"), "{row:?}");
    }
}

async fn a_labelled_issue_becomes_one_signed_job_however_many_ticks(
    s: &TestServer,
    g: &FakeGitHub,
) {
    setup(s, g).await;
    write_policy(s, &policy("v1", true, "alpha", ""), true).await;
    let n = g.open_issue(
        ALPHA,
        "Fix the parser",
        "The parser drops the last line.",
        "octocat",
        &["bug", "capsid"],
    );
    let other = g.open_issue(ALPHA, "Not for agents", "by hand", "octocat", &["bug"]);
    // A pull request is in GitHub's issue listing too; it never becomes a job.
    g.commit(ALPHA, "feat/x", &[("x.rs", Some("x"))], "x");
    g.open_pull(ALPHA, "feat/x", "main", "A pull request", "");
    let first = tick(s).await;
    assert_eq!(first["posted"].as_array().map(Vec::len), Some(1), "{first}");
    assert_eq!(first["policy"]["version"], "v1", "{first}");
    for _ in 0..4 {
        let again = tick(s).await;
        assert_eq!(again["posted"], json!([]), "{again}");
        assert_eq!(again["commented"], json!([]), "{again}");
    }
    let jobs = jobs_in(s, "alpha").await;
    assert_eq!(jobs.len(), 1, "{jobs:?}");
    let job = &jobs[0];
    assert_eq!(job.posted_by, "intake");
    assert_eq!(job.title, format!("{ALPHA}#{n}: Fix the parser"));
    let body = verify_task(TEST_SECRET, &job.body).expect("the job is signed by the server");
    assert!(body.contains("The parser drops the last line."), "{body}");
    assert!(body.contains(&format!("Closes #{n}")), "{body}");
    assert!(body.contains("version v1"), "{body}");
    assert_eq!(first["posted"][0]["job"], job.id.as_str());
    // The issue was told its job's id once; the other issue nothing.
    let comments = g.comment_texts(ALPHA, n);
    assert_eq!(comments.len(), 1, "{comments:?}");
    assert!(comments[0].contains(&job.id), "{comments:?}");
    assert!(g.comment_texts(ALPHA, other).is_empty());
    // Audited under `intake`: taken, posted, commented.
    let taken = audit_rows(s, "intake-taken").await;
    assert_eq!(taken.len(), 1);
    let p = params(&taken[0]);
    assert_eq!(
        (p["repo"].as_str(), p["number"].as_u64()),
        (Some(ALPHA), Some(n))
    );
    assert_eq!(p["job_id"], job.id.as_str());
    assert_eq!(p["author"], "octocat");
    assert_eq!(p["policy_version"], "v1");
    let posted = audit_rows(s, "job-posted").await;
    assert_eq!(posted.len(), 1, "{posted:?}");
    assert_eq!(posted[0].actor.as_deref(), Some("intake"));
    assert_eq!(audit_rows(s, "intake-commented").await.len(), 1);
    // An edit of the issue body is noted once; the signed job keeps its text.
    g.edit_issue_body(ALPHA, n, "The parser drops the last TWO lines.");
    let edited = tick(s).await;
    assert_eq!(
        edited["edited"].as_array().map(Vec::len),
        Some(1),
        "{edited}"
    );
    tick(s).await;
    let rows = audit_rows(s, "intake-issue-edited").await;
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!(params(&rows[0])["job_id"], job.id.as_str());
    let after = jobs_in(s, "alpha").await;
    assert_eq!(after.len(), 1);
    assert_eq!(after[0].body, job.body, "the signed job is unchanged");
    assert_eq!(g.comment_texts(ALPHA, n).len(), 1);
    assert_all_intake(s, 3).await;
}

async fn two_replicas_ticking_at_once_post_one_job_per_issue(s: &TestServer, g: &FakeGitHub) {
    setup(s, g).await;
    write_policy(s, &policy("v1", true, "alpha, beta", ""), true).await;
    let issues = [
        (
            ALPHA,
            g.open_issue(ALPHA, "One", "1", "octocat", &["capsid"]),
        ),
        (
            ALPHA,
            g.open_issue(ALPHA, "Two", "2", "octocat", &["capsid"]),
        ),
        (BETA, g.open_issue(BETA, "Three", "3", "hubot", &["capsid"])),
    ];
    let (a, b) = (s.service.clone(), s.service.clone());
    // The passes themselves, racing (no scheduler turn between them), several times over.
    for _ in 0..3 {
        let (ra, rb) = tokio::join!(a.intake_pass(), b.intake_pass());
        let (ra, rb) = (ra.expect("pass a"), rb.expect("pass b"));
        assert!(ra.notes.is_empty() && rb.notes.is_empty(), "{ra:?} {rb:?}");
    }
    // And the scheduled task on demand from both at once: one of them runs it.
    let (ta, tb) = tokio::join!(
        a.tick_now(Some(Task::Intake)),
        b.tick_now(Some(Task::Intake))
    );
    let outcomes: Vec<TaskOutcome> = [ta.expect("tick a"), tb.expect("tick b")]
        .iter()
        .filter_map(|r| r.run_of(Task::Intake).map(|run| run.outcome))
        .collect();
    assert!(outcomes.contains(&TaskOutcome::Ran), "{outcomes:?}");
    let mut all = jobs_in(s, "alpha").await;
    all.extend(jobs_in(s, "beta").await);
    assert_eq!(all.len(), 3, "one job per issue: {all:?}");
    for (repo, n) in issues {
        let mine: Vec<_> = all
            .iter()
            .filter(|j| j.title.starts_with(&format!("{repo}#{n}:")))
            .collect();
        assert_eq!(mine.len(), 1, "{repo}#{n}: {all:?}");
        let comments = g.comment_texts(repo, n);
        assert_eq!(comments.len(), 1, "{repo}#{n}: {comments:?}");
        assert!(comments[0].contains(&mine[0].id));
    }
    assert_eq!(audit_rows(s, "intake-taken").await.len(), 3);
    assert_eq!(audit_rows(s, "job-posted").await.len(), 3);
    assert_eq!(audit_rows(s, "intake-commented").await.len(), 3);
    assert_all_intake(s, 6).await;
}

async fn unsigned_disabled_or_edited_policies_post_nothing(s: &TestServer, g: &FakeGitHub) {
    setup(s, g).await;
    g.open_issue(ALPHA, "Work", "do it", "octocat", &["capsid"]);
    let none = tick(s).await;
    assert!(
        none["policy"]["note"]
            .as_str()
            .unwrap()
            .contains("there is no capsid/policy/intake.md"),
        "{none}"
    );
    // Written, never signed.
    write_policy(s, &policy("v1", true, "alpha", ""), false).await;
    let unsigned = tick(s).await;
    assert!(
        unsigned["policy"]["note"]
            .as_str()
            .unwrap()
            .contains("not validly signed"),
        "{unsigned}"
    );
    // Signed, but disabled.
    write_policy(s, &policy("v2", false, "alpha", ""), true).await;
    let disabled = tick(s).await;
    assert_eq!(disabled["policy"]["signed"], true, "{disabled}");
    assert!(
        disabled["policy"]["note"]
            .as_str()
            .unwrap()
            .contains("disabled"),
        "{disabled}"
    );
    // Signed enabled, then edited after signing (the envelope kept, the text changed).
    write_policy(s, &policy("v3", true, "alpha", ""), true).await;
    let stored = s
        .store
        .document("capsid", "policy/intake.md")
        .await
        .expect("read")
        .expect("the policy")
        .body_text()
        .to_owned();
    assert!(stored.contains("- namespaces: alpha"), "{stored}");
    let edited = stored.replace("- namespaces: alpha", "- namespaces: alpha, beta");
    assert_ne!(edited, stored);
    write_policy(s, &edited, false).await;
    let after_edit = tick(s).await;
    assert!(
        after_edit["policy"]["note"]
            .as_str()
            .unwrap()
            .contains("not validly signed"),
        "{after_edit}"
    );
    for report in [&none, &unsigned, &disabled, &after_edit] {
        assert_eq!(report["posted"], json!([]), "{report}");
    }
    assert!(jobs_in(s, "alpha").await.is_empty());
    assert!(audit_rows(s, "intake-taken").await.is_empty());
    assert_eq!(g.count("GET", "/issues"), 0, "no policy, no reads");
    // The same issue under a policy signed as it stands: one job (the refusals above were the
    // policy's, not the issue's).
    write_policy(s, &policy("v4", true, "alpha", ""), true).await;
    let ok = tick(s).await;
    assert_eq!(ok["posted"].as_array().map(Vec::len), Some(1), "{ok}");
    assert_eq!(jobs_in(s, "alpha").await.len(), 1);
}

async fn a_malformed_policy_posts_nothing_and_names_the_field(s: &TestServer, g: &FakeGitHub) {
    setup(s, g).await;
    g.open_issue(ALPHA, "Work", "do it", "octocat", &["capsid"]);
    for (body, field) in [
        (policy("v1", true, "alpha", "- label: a, b\n"), "`label`"),
        (
            "- version: v1\n- enabled: maybe\n- namespaces: alpha\n".to_owned(),
            "`enabled`",
        ),
        (policy("v1", true, "", ""), "`namespaces`"),
        (
            policy("v1", true, "alpha", "- authors: not a login\n"),
            "`authors`",
        ),
    ] {
        write_policy(s, &body, true).await;
        let report = tick(s).await;
        let note = report["policy"]["note"].as_str().unwrap_or_default();
        assert!(note.contains(field), "{field}: {report}");
        assert_eq!(report["posted"], json!([]), "{report}");
    }
    assert!(jobs_in(s, "alpha").await.is_empty());
}

async fn a_namespace_the_policy_does_not_name_is_ignored(s: &TestServer, g: &FakeGitHub) {
    setup(s, g).await;
    write_policy(s, &policy("v1", true, "alpha", ""), true).await;
    let a = g.open_issue(ALPHA, "In alpha", "a", "octocat", &["capsid"]);
    let b = g.open_issue(BETA, "In beta", "b", "octocat", &["capsid"]);
    tick(s).await;
    tick(s).await;
    assert_eq!(jobs_in(s, "alpha").await.len(), 1);
    assert!(jobs_in(s, "beta").await.is_empty());
    assert_eq!(
        g.count("GET", "/repos/octo/beta/issues"),
        0,
        "beta never read"
    );
    assert!(g.count("GET", "/repos/octo/alpha/issues") >= 2);
    assert_eq!(g.comment_texts(ALPHA, a).len(), 1);
    assert!(g.comment_texts(BETA, b).is_empty());
    // Naming it takes its issue in.
    write_policy(s, &policy("v2", true, "alpha, beta", ""), true).await;
    tick(s).await;
    assert_eq!(jobs_in(s, "beta").await.len(), 1);
}

async fn an_author_the_policy_does_not_name_is_left_out(s: &TestServer, g: &FakeGitHub) {
    setup(s, g).await;
    write_policy(
        s,
        &policy("v1", true, "alpha", "- authors: Octocat\n"),
        true,
    )
    .await;
    let mine = g.open_issue(ALPHA, "Mine", "m", "octocat", &["capsid"]);
    let theirs = g.open_issue(ALPHA, "Theirs", "t", "mallory", &["capsid"]);
    let report = tick(s).await;
    assert_eq!(
        report["posted"].as_array().map(Vec::len),
        Some(1),
        "{report}"
    );
    let skipped = report["skipped"].as_array().expect("a list");
    assert_eq!(skipped.len(), 1, "{report}");
    assert!(
        skipped[0].as_str().unwrap().contains("@mallory"),
        "{report}"
    );
    let jobs = jobs_in(s, "alpha").await;
    assert_eq!(jobs.len(), 1);
    assert!(jobs[0].title.starts_with(&format!("{ALPHA}#{mine}:")));
    assert!(g.comment_texts(ALPHA, theirs).is_empty());
}

/// A label is not an authorization boundary (an issue template can apply it to any issue):
/// with no `authors` line the intake takes in only the issues of people GitHub relates to the
/// repository as owner, member or collaborator (issue 53, item 8); `- authors: *` opens it.
async fn without_an_authors_line_only_the_repositorys_people_come_in(
    s: &TestServer,
    g: &FakeGitHub,
) {
    setup(s, g).await;
    write_policy(s, &policy("v1", true, "alpha", ""), true).await;
    let mut ours = Vec::new();
    for (who, association) in [
        ("octo", "OWNER"),
        ("mona", "MEMBER"),
        ("hubot", "COLLABORATOR"),
    ] {
        ours.push(g.open_issue_as(
            ALPHA,
            &format!("From {who}"),
            "b",
            who,
            association,
            &["capsid"],
        ));
    }
    let mut theirs = Vec::new();
    for (who, association) in [
        ("mallory", "NONE"),
        ("eve", "CONTRIBUTOR"),
        ("trudy", "FIRST_TIME_CONTRIBUTOR"),
    ] {
        theirs.push(g.open_issue_as(
            ALPHA,
            &format!("From {who}"),
            "b",
            who,
            association,
            &["capsid"],
        ));
    }
    let report = tick(s).await;
    assert_eq!(
        report["posted"].as_array().map(Vec::len),
        Some(3),
        "{report}"
    );
    let skipped: Vec<&str> = report["skipped"]
        .as_array()
        .expect("a list")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert_eq!(skipped.len(), 3, "{report}");
    assert!(
        skipped
            .iter()
            .any(|s| s.contains("@mallory (NONE), not an owner, member or collaborator")),
        "{skipped:?}"
    );
    let titles: Vec<String> = jobs_in(s, "alpha")
        .await
        .into_iter()
        .map(|j| j.title)
        .collect();
    for n in &ours {
        assert!(
            titles
                .iter()
                .any(|t| t.starts_with(&format!("{ALPHA}#{n}:"))),
            "#{n}: {titles:?}"
        );
    }
    for n in &theirs {
        assert!(
            !titles
                .iter()
                .any(|t| t.starts_with(&format!("{ALPHA}#{n}:"))),
            "#{n}: {titles:?}"
        );
        assert!(g.comment_texts(ALPHA, *n).is_empty());
    }
    // The owner opens it to anyone.
    write_policy(s, &policy("v2", true, "alpha", "- authors: *\n"), true).await;
    let open = tick(s).await;
    assert_eq!(open["posted"].as_array().map(Vec::len), Some(3), "{open}");
    assert_eq!(jobs_in(s, "alpha").await.len(), 6);
}

/// Each pass takes in at most `jobs_per_pass` new issues, and at most `jobs_per_author` of one
/// author; the rest come in on later passes, each once (issue 53, item 8).
async fn each_pass_takes_in_at_most_its_caps_and_the_rest_later(s: &TestServer, g: &FakeGitHub) {
    setup(s, g).await;
    let caps = "- jobs_per_pass: 4\n- jobs_per_author: 2\n";
    write_policy(s, &policy("v1", true, "alpha", caps), true).await;
    for i in 0..3 {
        g.open_issue(ALPHA, &format!("Alice {i}"), "b", "alice", &["capsid"]);
        g.open_issue(ALPHA, &format!("Bob {i}"), "b", "bob", &["capsid"]);
    }
    g.open_issue(ALPHA, "Carol", "b", "carol", &["capsid"]);
    let authors = |jobs: &[capsid_core::jobs::Job], who: &str| {
        jobs.iter()
            .filter(|j| j.title.contains(&format!(": {who}")))
            .count()
    };
    let first = tick(s).await;
    assert_eq!(first["posted"].as_array().map(Vec::len), Some(4), "{first}");
    let jobs = jobs_in(s, "alpha").await;
    assert!(
        authors(&jobs, "Alice") <= 2 && authors(&jobs, "Bob") <= 2,
        "{jobs:?}"
    );
    let later = first["skipped"].as_array().expect("a list");
    assert_eq!(later.len(), 3, "{first}");
    assert!(
        later
            .iter()
            .filter_map(Value::as_str)
            .all(|s| s.contains("left for a later pass")),
        "{first}"
    );
    assert!(
        later
            .iter()
            .filter_map(Value::as_str)
            .any(|s| s.contains("jobs_per_pass") || s.contains("jobs_per_author")),
        "{first}"
    );
    let second = tick(s).await;
    assert_eq!(
        second["posted"].as_array().map(Vec::len),
        Some(3),
        "{second}"
    );
    let jobs = jobs_in(s, "alpha").await;
    assert_eq!(jobs.len(), 7);
    assert_eq!(
        (
            authors(&jobs, "Alice"),
            authors(&jobs, "Bob"),
            authors(&jobs, "Carol")
        ),
        (3, 3, 1)
    );
    assert_eq!(tick(s).await["posted"], json!([]));
}

async fn closing_or_unlabelling_the_issue_fails_its_queued_job(s: &TestServer, g: &FakeGitHub) {
    setup(s, g).await;
    write_policy(s, &policy("v1", true, "alpha", ""), true).await;
    let closed = g.open_issue(ALPHA, "Closed later", "c", "octocat", &["capsid"]);
    let unlabelled = g.open_issue(ALPHA, "Unlabelled later", "u", "octocat", &["capsid"]);
    let held = g.open_issue(ALPHA, "Held", "h", "octocat", &["capsid"]);
    tick(s).await;
    let jobs = jobs_in(s, "alpha").await;
    assert_eq!(jobs.len(), 3);
    let id_of = |n: u64| {
        jobs.iter()
            .find(|j| j.title.starts_with(&format!("{ALPHA}#{n}:")))
            .map(|j| j.id.clone())
            .expect("a job")
    };
    let (closed_job, unlabelled_job, held_job) = (id_of(closed), id_of(unlabelled), id_of(held));
    // A driver claims the third; the intake never fails a held job.
    let key = s
        .mint(
            "d1",
            "driver",
            json!({"namespaces": ["alpha"], "grants": ["read", "write"]}),
        )
        .await;
    let driver = s.client(&key).await;
    let claim = driver
        .ok(
            "jobs",
            json!({"action": "claim", "id": held_job, "namespace": "alpha"}),
        )
        .await;
    assert_eq!(claim["ok"], true, "{claim}");
    g.set_issue_state(ALPHA, closed, "closed");
    g.set_issue_labels(ALPHA, unlabelled, &["bug"]);
    g.set_issue_state(ALPHA, held, "closed");
    let report = tick(s).await;
    assert_eq!(
        report["failed"].as_array().map(Vec::len),
        Some(2),
        "{report}"
    );
    let job = |id: &str| {
        let id = id.to_owned();
        async move { s.store.job(&id).await.expect("job").expect("exists") }
    };
    let c = job(&closed_job).await;
    assert_eq!(c.status, JobStatus::Failed);
    assert!(
        c.result_summary
            .as_deref()
            .unwrap()
            .contains(&format!("{ALPHA}#{closed} was closed")),
        "{c:?}"
    );
    let u = job(&unlabelled_job).await;
    assert_eq!(u.status, JobStatus::Failed);
    assert!(
        u.result_summary
            .as_deref()
            .unwrap()
            .contains("label 'capsid' was removed"),
        "{u:?}"
    );
    assert_eq!(job(&held_job).await.status, JobStatus::Claimed);
    let fails = audit_rows(s, "job-admin-fail").await;
    assert_eq!(fails.len(), 2, "{fails:?}");
    for row in &fails {
        assert_eq!(row.actor.as_deref(), Some("intake"));
    }
    assert_eq!(audit_rows(s, "intake-closed").await.len(), 2);
    // Later ticks change nothing more.
    let again = tick(s).await;
    assert_eq!(again["failed"], json!([]), "{again}");
    assert_eq!(audit_rows(s, "job-admin-fail").await.len(), 2);
    assert_all_intake(s, 5).await;
}

async fn a_done_jobs_pull_request_is_commented_on_the_issue(s: &TestServer, g: &FakeGitHub) {
    setup(s, g).await;
    write_policy(s, &policy("v1", true, "alpha", ""), true).await;
    let n = g.open_issue(ALPHA, "Add a feature", "f", "octocat", &["capsid"]);
    tick(s).await;
    let job = jobs_in(s, "alpha").await.remove(0);
    let key = s
        .mint(
            "d1",
            "driver",
            json!({"namespaces": ["alpha"], "grants": ["read", "write"]}),
        )
        .await;
    let driver = s.client(&key).await;
    driver
        .ok(
            "jobs",
            json!({"action": "claim", "id": job.id, "namespace": "alpha"}),
        )
        .await;
    // Claimed: the issue hears nothing more.
    tick(s).await;
    assert_eq!(g.comment_texts(ALPHA, n).len(), 1);
    // The job's branch and its pull request, as its driver opened them; and someone else's
    // pull request, which the job's result names instead.
    let branch = format!("capsid/{}", job.id);
    g.commit(ALPHA, &branch, &[("f.rs", Some("f"))], "f");
    let pr = g.open_pull(
        ALPHA,
        &branch,
        "main",
        "Add a feature",
        &format!("Closes #{n}, {}", job.id),
    );
    let url = format!("https://github.com/{ALPHA}/pull/{pr}");
    g.commit(ALPHA, "feat/other", &[("o.rs", Some("o"))], "o");
    let other = g.open_pull(ALPHA, "feat/other", "main", "Someone else's", "");
    let named = format!("https://github.com/{ALPHA}/pull/{other}");
    let done = driver
        .ok(
            "jobs",
            json!({"action": "complete", "id": job.id, "namespace": "alpha",
                           "result_summary": "added", "result_ref": named}),
        )
        .await;
    assert_eq!(done["ok"], true, "{done}");
    // The issue closes with the pull request; the job is done, not failed.
    g.set_issue_state(ALPHA, n, "closed");
    let report = tick(s).await;
    assert_eq!(
        report["closed"].as_array().map(Vec::len),
        Some(1),
        "{report}"
    );
    // The issue hears of the pull request GitHub shows from the job's branch, not the one the
    // job's result named.
    let comments = g.comment_texts(ALPHA, n);
    assert_eq!(comments.len(), 2, "{comments:?}");
    assert!(
        comments[1].contains(&url) && comments[1].contains(&job.id),
        "{comments:?}"
    );
    assert!(!comments[1].contains(&named), "{comments:?}");
    let closed = audit_rows(s, "intake-closed").await;
    assert_eq!(closed.len(), 1);
    assert_eq!(params(&closed[0])["pr"], url.as_str());
    assert_eq!(
        s.store.job(&job.id).await.unwrap().unwrap().status,
        JobStatus::Done
    );
    tick(s).await;
    tick(s).await;
    assert_eq!(g.comment_texts(ALPHA, n).len(), 2, "commented once");
    assert_all_intake(s, 3).await;
}

async fn a_failed_comment_is_tried_again_and_never_doubled(s: &TestServer, g: &FakeGitHub) {
    setup(s, g).await;
    write_policy(s, &policy("v1", true, "alpha", ""), true).await;
    let n = g.open_issue(ALPHA, "Flaky GitHub", "f", "octocat", &["capsid"]);
    g.fault(
        "POST",
        &format!("/repos/{ALPHA}/issues/{n}/comments"),
        502,
        &[],
        "Bad Gateway",
        1,
    );
    let first = tick(s).await;
    assert_eq!(first["posted"].as_array().map(Vec::len), Some(1), "{first}");
    assert_eq!(first["commented"], json!([]), "{first}");
    assert!(
        first["notes"][0]
            .as_str()
            .unwrap_or_default()
            .contains("comment failed"),
        "{first}"
    );
    assert!(g.comment_texts(ALPHA, n).is_empty());
    let failed = audit_rows(s, "intake-comment-failed").await;
    assert_eq!(failed.len(), 1, "{failed:?}");
    assert_eq!(failed[0].actor.as_deref(), Some("intake"));
    // The next pass tells the issue; later ones do not repeat it.
    let second = tick(s).await;
    assert_eq!(
        second["commented"].as_array().map(Vec::len),
        Some(1),
        "{second}"
    );
    tick(s).await;
    let comments = g.comment_texts(ALPHA, n);
    assert_eq!(comments.len(), 1, "{comments:?}");
    assert_eq!(jobs_in(s, "alpha").await.len(), 1);
    assert!(comments[0].contains(&jobs_in(s, "alpha").await[0].id));
}

/// Issue 53, item 8: GitHub lists a hundred issues a page; with 130 labelled, one pass reads
/// every page and takes all 130 (it took the first hundred, then none, and 30 never came in).
async fn more_than_a_page_of_labelled_issues_all_come_in(s: &TestServer, g: &FakeGitHub) {
    setup(s, g).await;
    // Caps high enough for every issue to come in on one pass.
    let caps = "- jobs_per_pass: 1000\n- jobs_per_author: 1000\n";
    write_policy(s, &policy("v1", true, "alpha", caps), true).await;
    let numbers: Vec<u64> = (0..130)
        .map(|i| g.open_issue(ALPHA, &format!("Issue {i}"), "b", "octocat", &["capsid"]))
        .collect();
    let first = tick(s).await;
    assert_eq!(
        first["posted"].as_array().map(Vec::len),
        Some(130),
        "{first}"
    );
    assert_eq!(tick(s).await["posted"], json!([]));
    let titles: std::collections::BTreeSet<String> = jobs_in(s, "alpha")
        .await
        .into_iter()
        .map(|j| j.title)
        .collect();
    for n in numbers {
        assert!(
            titles
                .iter()
                .any(|t| t.starts_with(&format!("{ALPHA}#{n}:"))),
            "#{n} never came in"
        );
    }
}
