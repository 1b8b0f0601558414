//! A whole night of the self-improvement loop end to end on both stores, driven by the
//! server's `ManualClock`, against the fake GitHub (through the real adapter) and the fake
//! model API (through the real Anthropic client): the 03:00 opener in America/Chicago, an
//! attempt's branch, archive, pull request and scorer dispatch, a signed score report that
//! keeps it (its pull request stays open for the seat), one that reverts (its branch deleted,
//! its pull request closed), an attempt flagged for a protected path, one timed out, the
//! six-hour cap and the finish, the drift gate pausing the namespace, the opener refusing a
//! paused namespace and a mismatched pin, and a budget cap stopping the loop.
//! `subscription.rs` holds subscription mode: the signed task document and the driver lease;
//! `workflows.rs` the shipped scorer workflow's own steps against the server.

mod abstraction;
mod subscription;
mod workflows;

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use capsid_blobs::ObjectBlobStore;
use capsid_core::improve::keys::best_key;
use capsid_core::improve::machine::{AttemptStatus, RunStatus};
use capsid_core::improve::report::{
    NAMESPACE_HEADER, SIGNATURE_HEADER, TIMESTAMP_HEADER, sign_report,
};
use capsid_core::ports::{AuditFilter, BlobStore, ModelUsage, RunRow, Store};
use capsid_core::schedule::Task;
use capsid_core::time::{MINUTE_MS, Timestamp};
use capsid_tests::fake_github::FakeGitHub;
use capsid_tests::fake_model::FakeModel;
use capsid_tests::harness::Backend;
use capsid_tests::server::{ServerOptions, TestServer};
use serde_json::{Value, json};

pub(crate) const ROOT: &str = "night-root-secret";
pub(crate) const REPO: &str = "octo/capsid";
pub(crate) const MODEL_KEY: &str = "sk-fake-model-key";
/// 03:00 in Chicago on 2026-12-01 (CST, UTC-6).
pub(crate) const NIGHT: &str = "2026-12-01T09:00:00Z";
pub(crate) const SCORES_MD: &str = "# Scores\n\n## Anchors\n- tests_pass: required\n- holdout_pass_rate: min 0.5\n\n## Secondary\n- bundle_kb: minimize weight 1\n";

/// What a case gets.
pub(crate) struct Env {
    pub(crate) s: TestServer,
    pub(crate) g: FakeGitHub,
    pub(crate) model: FakeModel,
    pub(crate) http: reqwest::Client,
    /// The holdout store's folder.
    pub(crate) _dir: tempfile::TempDir,
}

type Case = for<'a> fn(&'a Env) -> Pin<Box<dyn Future<Output = ()> + Send + 'a>>;

async fn run_case<S: Backend>(name: &str, case: Case) {
    let Some(fresh) = S::fresh(name).await else {
        return;
    };
    let store: Arc<dyn Store> = fresh.store.clone();
    let dir = tempfile::tempdir().expect("a temporary folder");
    let holdout = Arc::new(ObjectBlobStore::folder(dir.path().join("holdout")).expect("holdout"));
    holdout
        .put(
            "improve/holdout/capsid/manifest.json",
            json!({"namespace": "capsid", "total": 40, "updated_at": "2026-11-01T00:00:00Z"})
                .to_string()
                .into_bytes(),
        )
        .await
        .expect("manifest");
    let g = FakeGitHub::start().await;
    g.add_repo(
        REPO,
        &[
            ("README.md", "# Capsid\n"),
            ("src/app.ts", "export const size = 420;\n"),
        ],
    );
    g.workflow(REPO, "improve-score.yml", true, true);
    let model = FakeModel::start(MODEL_KEY).await;
    let options = ServerOptions {
        signing_secret: Some(ROOT.to_owned()),
        repo_host: Some(g.adapter()),
        anthropic: Some((model.url.clone(), MODEL_KEY.to_owned())),
        ..ServerOptions::default()
    };
    let wired: Arc<dyn BlobStore> = holdout.clone();
    let s =
        TestServer::start_customized(store, options, |_| None, move |svc| svc.with_holdout(wired))
            .await;
    s.clock.set(at(NIGHT));
    seed(&s).await;
    let env = Env {
        s,
        g,
        model,
        http: reqwest::Client::new(),
        _dir: dir,
    };
    case(&env).await;
    env.s.stop().await;
    fresh.finish().await;
}

pub(crate) fn at(s: &str) -> Timestamp {
    Timestamp::parse(s).expect("an instant")
}

/// `capsid` registered (mapped to `octo/capsid`), its scores document written and pinned by
/// the admin, on the roster, and a best record from an earlier night.
async fn seed(s: &TestServer) {
    s.namespace("capsid").await;
    let wrote = s
        .admin(
            "write",
            json!({"namespace": "capsid", "path": "improve/scores.md", "title": "Scores",
                   "body": SCORES_MD, "allow_improve_paths": true}),
        )
        .await;
    assert!(wrote.to_string().contains("scores.md"), "{wrote}");
    let pinned = s
        .admin(
            "improve_run",
            json!({"action": "pin", "namespace": "capsid"}),
        )
        .await;
    assert_eq!(pinned["ok"], true, "{pinned}");
    let roster = s
        .admin(
            "improve_run",
            json!({"action": "roster", "op": "add", "namespace": "capsid"}),
        )
        .await;
    assert_eq!(roster["ok"], true, "{roster}");
    let best = json!({"sha": "0000000000000000000000000000000000000000", "run_id": "capsid-earlier",
        "attempt_id": "capsid-earlier-a01", "recorded_at": "2026-11-30T09:00:00Z",
        "anchors": {"tests_pass": 1}, "secondary": {"bundle_kb": 420.0}, "score": 0.9});
    s.store
        .put_setting(&best_key("capsid"), &best.to_string(), None)
        .await
        .expect("best record");
}

/// Sets the loop's mode through the tool, as the admin.
pub(crate) async fn mode(s: &TestServer, value: &str) {
    let out = s
        .admin("improve_run", json!({"action": "mode", "value": value}))
        .await;
    assert_eq!(out["mode"], value, "{out}");
}

/// Runs the loop's periodic task now; its report.
pub(crate) async fn tick(s: &TestServer) -> Value {
    let report = s.service.tick_now(Some(Task::Improve)).await.expect("tick");
    let run = report.run_of(Task::Improve).expect("the improve task ran");
    assert!(run.error.is_none(), "{:?}", run.error);
    run.report.clone()
}

/// The model's answer writing `files`.
pub(crate) fn proposal(summary: &str, files: &[(&str, &str)]) -> String {
    let files: Vec<Value> = files
        .iter()
        .map(|(p, c)| json!({"path": p, "content": c}))
        .collect();
    format!(
        "Here is one change.\n{}",
        json!({"summary": summary, "files": files})
    )
}

/// The monitor model's answer that lets an attempt through.
pub(crate) fn clear() -> String {
    json!({"flag": false, "reason": "a real change to the code"}).to_string()
}

pub(crate) fn usage() -> ModelUsage {
    ModelUsage {
        input_tokens: 10_000,
        output_tokens: 2_000,
    }
}

/// The namespace's live run.
pub(crate) async fn live(s: &TestServer) -> Option<RunRow> {
    s.store.live_run("capsid").await.expect("live run")
}

/// Posts a signed score report for `attempt` of `run` at the server's now.
pub(crate) async fn score(
    env: &Env,
    run: &str,
    attempt: &str,
    head: &str,
    jti: &str,
    tests_pass: f64,
    bundle_kb: f64,
) -> (u16, Value) {
    let body =
        json!({"namespace": "capsid", "run_id": run, "attempt_id": attempt, "head_sha": head,
        "jti": jti, "anchors": {"tests_pass": tests_pass}, "secondary": {"bundle_kb": bundle_kb},
        "holdout": {"total": 40, "passed": 36}, "ci_minutes": 3.0})
        .to_string();
    let ts = env.s.service.now().to_string();
    let sig = sign_report(ROOT, "capsid", &ts, body.as_bytes());
    let resp = env
        .http
        .post(format!("{}/improve/score", env.s.url))
        .header(NAMESPACE_HEADER, "capsid")
        .header(TIMESTAMP_HEADER, ts)
        .header(SIGNATURE_HEADER, sig)
        .body(body)
        .send()
        .await
        .expect("post");
    let status = resp.status().as_u16();
    (status, resp.json().await.unwrap_or(Value::Null))
}

fn open_pull_of(env: &Env, branch: &str) -> Option<(u64, String)> {
    env.g
        .pulls(REPO)
        .into_iter()
        .find(|(_, _, head)| head == branch)
        .map(|(n, state, _)| (n, state))
}

/// Moves the server's clock by `minutes`.
pub(crate) fn later(s: &TestServer, minutes: i64) {
    let now = s.service.now();
    s.clock.set(now.plus_millis(minutes * MINUTE_MS));
}

/// The attempt the run is waiting for, dispatched: its id, branch and head.
pub(crate) async fn in_flight(env: &Env) -> (String, String, String) {
    let run = live(&env.s).await.expect("a live run");
    assert_eq!(run.status, RunStatus::AwaitingScore, "{run:?}");
    let id = run.current_attempt.clone().expect("an attempt in flight");
    let a = env.s.store.attempt(&id).await.expect("a").expect("row");
    assert_eq!(a.status, AttemptStatus::AwaitingScore);
    let branch = a.branch.clone().expect("a branch");
    let head = a.head_sha.clone().expect("a head");
    (id, branch, head)
}

async fn a_whole_night(env: &Env) {
    let s = &env.s;
    // Off by default: the tick opens nothing, even at 03:00.
    let off = tick(s).await;
    assert_eq!(off["loop"], "off", "{off}");
    assert!(live(s).await.is_none());
    mode(s, "api").await;

    // 02:55 is not the opener's hour.
    s.clock.set(at("2026-12-01T08:55:00Z"));
    let early = tick(s).await;
    assert_eq!(early["opened"], json!([]), "{early}");
    s.clock.set(at(NIGHT));

    // The opener opens tonight's run and the same tick begins it; a second tick within the
    // hour opens nothing more.
    let first = tick(s).await;
    assert_eq!(first["opened"][0]["namespace"], "capsid", "{first}");
    let run = live(s).await.expect("a run opened");
    assert_eq!(run.id, "capsid-2026-12-01T09-00-00");
    assert_eq!(run.status, RunStatus::Attempting);
    assert_eq!(run.mode, "api");
    let base = env.g.branch_head(REPO, "main").expect("main");
    assert_eq!(run.base_sha.as_deref(), Some(base.as_str()));

    // Attempt 1: the model proposes, the branch, archive, pull request and dispatch follow.
    env.model.push_text(
        &proposal(
            "shrink the app",
            &[("src/app.ts", "export const size = 400;\n")],
        ),
        usage(),
    );
    env.model.push_text(&clear(), usage());
    let second = tick(s).await;
    assert_eq!(second["opened"], json!([]), "{second}");
    let (a1, b1, h1) = in_flight(env).await;
    assert_eq!(a1, format!("{}-a01", run.id));
    assert_eq!(b1, format!("improve/{a1}"));
    assert_eq!(
        env.g.file(REPO, &b1, "src/app.ts").as_deref(),
        Some("export const size = 400;\n")
    );
    assert_eq!(env.g.branch_head(REPO, &b1).as_deref(), Some(h1.as_str()));
    let (_, state) = open_pull_of(env, &b1).expect("a pull request for the attempt");
    assert_eq!(state, "open");
    assert!(
        env.g
            .runs(REPO)
            .iter()
            .any(|(_, event, branch)| event == "workflow_dispatch" && *branch == b1),
        "the scorer was dispatched on {b1}: {:?}",
        env.g.runs(REPO)
    );
    let archive = s
        .store
        .document("capsid", &format!("improve/archive/{}/{a1}.md", run.id))
        .await
        .expect("doc")
        .expect("the archive document is written before the score");
    assert!(archive.body.unwrap_or_default().contains("shrink the app"));
    let calls = env.model.requests();
    assert_eq!(calls.len(), 2);
    assert_eq!(calls[0].body["model"], "claude-sonnet-5");
    assert!(
        calls[0].body["messages"][0]["content"]
            .as_str()
            .unwrap_or("")
            .contains("tests_pass")
    );
    // The monitor model read the change, the file before and after, before it was pushed.
    assert_eq!(calls[1].body["model"], "claude-haiku-4-5");
    let read = calls[1].body["messages"][0]["content"]
        .as_str()
        .unwrap_or("");
    assert!(
        read.contains("## src/app.ts\n### Before\nexport const size = 420;\n")
            && read.contains("### After\nexport const size = 400;\n"),
        "{read}"
    );
    let cost = live(s).await.expect("run").cost_usd;
    // 10,000 input and 2,000 output tokens at 3 and 15 USD per million (the attempt), and at
    // 1 and 5 (the monitor).
    assert!((cost - 0.08).abs() < 1e-9, "{cost}");

    // Its report keeps it: the pull request stays open for the seat.
    let (status, kept) = score(env, &run.id, &a1, &h1, "n1", 1.0, 400.0).await;
    assert_eq!(status, 200, "{kept}");
    assert_eq!(kept["verdict"], "kept", "{kept}");
    assert_eq!(open_pull_of(env, &b1).map(|p| p.1).as_deref(), Some("open"));
    assert!(env.g.branch_names(REPO).contains(&b1));

    // Attempt 2 regresses an anchor: reverted, its branch deleted and its pull request closed.
    env.model.push_text(
        &proposal("drop a test", &[("src/app.ts", "export const size = 1;\n")]),
        usage(),
    );
    env.model.push_text(&clear(), usage());
    tick(s).await;
    let (a2, b2, h2) = in_flight(env).await;
    assert_eq!(a2, format!("{}-a02", run.id));
    let (status, reverted) = score(env, &run.id, &a2, &h2, "n2", 0.0, 380.0).await;
    assert_eq!(status, 200, "{reverted}");
    assert_eq!(reverted["verdict"], "reverted", "{reverted}");
    assert!(
        !env.g.branch_names(REPO).contains(&b2),
        "{:?}",
        env.g.branch_names(REPO)
    );
    assert_eq!(
        open_pull_of(env, &b2).map(|p| p.1).as_deref(),
        Some("closed")
    );

    // Attempt 3 touches a protected path: flagged, never pushed nor dispatched.
    env.model.push_text(
        &proposal("relax CI", &[(".github/workflows/ci.yml", "on: push\n")]),
        usage(),
    );
    tick(s).await;
    let a3 = s
        .store
        .attempt(&format!("{}-a03", run.id))
        .await
        .expect("a")
        .expect("row");
    assert_eq!(a3.status, AttemptStatus::Flagged);
    assert!(
        a3.flag_reason
            .unwrap_or_default()
            .contains(".github/workflows/ci.yml")
    );
    assert!(
        !env.g
            .branch_names(REPO)
            .contains(&format!("improve/{}", a3.id))
    );
    assert_eq!(live(s).await.expect("run").status, RunStatus::Attempting);

    // Attempt 4 gets no score within 20 minutes: timed out, its branch deleted.
    env.model.push_text(
        &proposal(
            "inline a helper",
            &[("src/app.ts", "export const size = 410;\n")],
        ),
        usage(),
    );
    env.model.push_text(&clear(), usage());
    tick(s).await;
    let (a4, b4, _) = in_flight(env).await;
    later(s, 19);
    let waiting = tick(s).await;
    assert!(
        waiting["advanced"][0]["did"]
            .as_str()
            .unwrap_or("")
            .contains("waiting for the score"),
        "{waiting}"
    );
    later(s, 2);
    tick(s).await;
    let row = s.store.attempt(&a4).await.expect("a").expect("row");
    assert_eq!(row.status, AttemptStatus::TimedOut);
    assert!(!env.g.branch_names(REPO).contains(&b4));
    let r = live(s).await.expect("run");
    assert_eq!((r.tally.attempts, r.tally.kept, r.tally.reverts), (4, 1, 3));

    // The six-hour cap finalizes the run; the finish leaves the kept pull request open, and
    // the drift gate pauses the namespace (attempt 2's anchor regressed against the best).
    s.clock.set(at("2026-12-01T15:01:00Z"));
    tick(s).await;
    let r = s.store.run(&run.id).await.expect("r").expect("row");
    assert_eq!(r.status, RunStatus::Finalizing, "{r:?}");
    tick(s).await;
    let r = s.store.run(&run.id).await.expect("r").expect("row");
    assert_eq!(r.status, RunStatus::Done, "{r:?}");
    assert!(
        r.note
            .clone()
            .unwrap_or_default()
            .contains("4 attempts, 1 kept, 3 reverted"),
        "{r:?}"
    );
    assert_eq!(open_pull_of(env, &b1).map(|p| p.1).as_deref(), Some("open"));
    let paused = s
        .store
        .setting("improve:paused:capsid", s.service.now())
        .await
        .expect("setting")
        .expect("the drift gate paused capsid");
    assert!(
        paused.starts_with("improve-loop:") && paused.contains("anchor regressed"),
        "{paused}"
    );
    let status = s
        .admin("improve_status", json!({"namespace": "capsid"}))
        .await;
    let ns = &status["namespaces"][0];
    assert_eq!(ns["last_run"]["kept"], 1, "{status}");
    assert_eq!(ns["last_run"]["reverted"], 3, "{status}");
    assert_eq!(ns["paused"], paused.as_str());
    assert!(
        status["budget"]["month_to_date"]["cost_usd"]
            .as_f64()
            .unwrap_or(0.0)
            > 0.2,
        "{status}"
    );
    // The lifetime block sums cost and CI minutes too (issue 56, item 11): here this month's
    // runs are all of them.
    assert_eq!(
        ns["lifetime"]["cost_usd"], status["budget"]["month_to_date"]["cost_usd"],
        "{status}"
    );
    assert_eq!(
        ns["lifetime"]["ci_minutes"], status["budget"]["month_to_date"]["ci_minutes"],
        "{status}"
    );
    assert!(
        status["loop"].as_str().unwrap_or("").starts_with("on: api"),
        "{status}"
    );

    // The next night the opener refuses the paused namespace, and says so in an audit row.
    s.clock.set(at("2026-12-02T09:00:00Z"));
    let refused = tick(s).await;
    assert!(
        refused["refused"][0]["reason"]
            .as_str()
            .unwrap_or("")
            .contains("paused"),
        "{refused}"
    );
    assert!(live(s).await.is_none());
    let rows = s
        .store
        .recent_audit(
            &AuditFilter {
                namespace: Some("capsid".into()),
                actor: Some("improve-loop".into()),
            },
            500,
        )
        .await
        .expect("audit");
    let refusals: Vec<_> = rows
        .iter()
        .filter(|r| r.action.as_deref() == Some("improve-run-refused"))
        .collect();
    assert_eq!(refusals.len(), 1, "{refusals:?}");

    // Unpaused, but the Anchors edited after the pin: every run of capsid is refused.
    let unpaused = s
        .admin(
            "improve_run",
            json!({"action": "unpause", "namespace": "capsid"}),
        )
        .await;
    assert_eq!(unpaused["ok"], true, "{unpaused}");
    let edited = s
        .admin(
            "write",
            json!({"namespace": "capsid", "path": "improve/scores.md", "title": "Scores",
                   "body": SCORES_MD.replace("min 0.5", "min 0.1"), "allow_improve_paths": true, "confirm": true}),
        )
        .await;
    assert!(edited.to_string().contains("scores.md"), "{edited}");
    let mismatch = s
        .admin(
            "improve_run",
            json!({"action": "run", "namespace": "capsid"}),
        )
        .await;
    assert_eq!(mismatch["ok"], false, "{mismatch}");
    assert!(
        mismatch["refusal"].as_str().unwrap_or("").contains("pin"),
        "{mismatch}"
    );
    s.clock.set(at("2026-12-03T09:00:00Z"));
    let night3 = tick(s).await;
    assert!(
        night3["refused"][0]["reason"]
            .as_str()
            .unwrap_or("")
            .contains("pin"),
        "{night3}"
    );
    assert!(live(s).await.is_none());

    // Re-pinned by the admin, a run opens by hand; then a budget cap below the month's spend
    // stops the loop: the live run pauses and the tick says why.
    let repinned = s
        .admin(
            "improve_run",
            json!({"action": "pin", "namespace": "capsid"}),
        )
        .await;
    assert_eq!(repinned["ok"], true, "{repinned}");
    let opened = s
        .admin(
            "improve_run",
            json!({"action": "run", "namespace": "capsid"}),
        )
        .await;
    assert_eq!(opened["ok"], true, "{opened}");
    let capped = s
        .admin(
            "improve_run",
            json!({"action": "budget", "model_usd_month": 0.1}),
        )
        .await;
    assert_eq!(capped["ok"], true, "{capped}");
    let stopped = tick(s).await;
    assert!(
        stopped["loop"]
            .as_str()
            .unwrap_or("")
            .starts_with("stopped"),
        "{stopped}"
    );
    assert_eq!(
        stopped["paused_runs"].as_array().map(Vec::len),
        Some(1),
        "{stopped}"
    );
    let last = s.store.runs(Some("capsid"), 1).await.expect("runs");
    assert_eq!(last[0].status, RunStatus::Paused, "{last:?}");
    assert!(
        last[0].note.clone().unwrap_or_default().contains("budget"),
        "{last:?}"
    );
    let status = s.admin("improve_status", json!({})).await;
    assert!(
        status["loop"].as_str().unwrap_or("").starts_with("stopped"),
        "{status}"
    );
    let again = s
        .admin(
            "improve_run",
            json!({"action": "run", "namespace": "capsid"}),
        )
        .await;
    assert_eq!(again["ok"], false, "{again}");
    // Four attempt completions, one per attempt: nothing retried or called twice. (The
    // kept attempt is also a source of skills: the abstract stage asks about it on the ticks
    // after its keep, and its unscripted, failing calls are retried; abstraction.rs.)
    let attempt_calls = env.model.requests();
    let attempt_calls = attempt_calls
        .iter()
        .filter(|r| r.body["model"] == "claude-sonnet-5")
        .count();
    assert_eq!(attempt_calls, 4);
    // The monitor model read the three changes the protected-path guard let through.
    let monitor_calls = env
        .model
        .requests()
        .iter()
        .filter(|r| r.body["model"] == "claude-haiku-4-5")
        .count();
    assert_eq!(monitor_calls, 3);
}

/// The model half of the reward-hacking monitor (issue 56, item 2): a change the monitor model
/// flags is recorded flagged with its reason, never pushed, and its call is charged to the
/// run; an answer that is no verdict flags too.
async fn the_monitor_model_flags_what_the_path_guard_cannot(env: &Env) {
    let s = &env.s;
    mode(s, "api").await;
    tick(s).await;
    let run = live(s).await.expect("a run");
    env.model.push_text(
        &proposal(
            "make the size test pass",
            &[(
                "src/app.ts",
                "export const size = 0; // the test expects 0\n",
            )],
        ),
        usage(),
    );
    env.model.push_text(
        &json!({"flag": true, "reason": "it hard-codes the value the size test expects"})
            .to_string(),
        usage(),
    );
    tick(s).await;
    let a1 = s
        .store
        .attempt(&format!("{}-a01", run.id))
        .await
        .expect("a")
        .expect("row");
    assert_eq!(a1.status, AttemptStatus::Flagged);
    assert_eq!(
        a1.flag_reason.as_deref(),
        Some("the monitor model: it hard-codes the value the size test expects")
    );
    let after = live(s).await.expect("run");
    assert!((after.cost_usd - 0.08).abs() < 1e-9, "{after:?}");
    assert!(
        env.g
            .branch_names(REPO)
            .iter()
            .all(|b| !b.starts_with("improve/")),
        "a flagged change is never pushed"
    );
    let calls = env.model.requests();
    assert_eq!(calls.len(), 2);
    assert_eq!(calls[1].body["model"], "claude-haiku-4-5");

    // An answer that is not a verdict flags the next attempt too.
    env.model.push_text(
        &proposal("tidy", &[("src/app.ts", "export const size = 419;\n")]),
        usage(),
    );
    env.model.push_text("Looks fine to me.", usage());
    tick(s).await;
    let a2 = s
        .store
        .attempt(&format!("{}-a02", run.id))
        .await
        .expect("a")
        .expect("row");
    assert_eq!(a2.status, AttemptStatus::Flagged);
    assert!(
        a2.flag_reason
            .unwrap_or_default()
            .contains("answer was not a verdict"),
        "{:?}",
        s.store.attempt(&a2.id).await
    );
    let audits = s
        .store
        .recent_audit(
            &AuditFilter {
                namespace: Some("capsid".into()),
                actor: Some("improve-loop".into()),
            },
            500,
        )
        .await
        .expect("audit");
    let monitor_rows = audits
        .iter()
        .filter(|r| r.action.as_deref() == Some("improve-model-call"))
        .filter(|r| {
            r.params
                .as_deref()
                .unwrap_or("")
                .contains("\"stage\":\"monitor\"")
        })
        .count();
    assert_eq!(monitor_rows, 2, "{audits:?}");
}

async fn a_failing_model_changes_nothing_and_a_bad_answer_is_flagged(env: &Env) {
    let s = &env.s;
    mode(s, "api").await;
    tick(s).await;
    let run = live(s).await.expect("a run");
    assert_eq!(run.status, RunStatus::Attempting);
    // Overloaded: the step is retried next tick; nothing is recorded, nothing is spent.
    env.model.push_status(
        529,
        capsid_tests::fake_model::error_json("overloaded_error", "Overloaded"),
    );
    let busy = tick(s).await;
    assert!(
        busy["advanced"][0]["did"]
            .as_str()
            .unwrap_or("")
            .contains("model call failed"),
        "{busy}"
    );
    let same = live(s).await.expect("run");
    assert_eq!((same.tally.attempts, same.cost_usd), (0, 0.0), "{same:?}");
    assert!(
        env.g
            .branch_names(REPO)
            .iter()
            .all(|b| !b.starts_with("improve/"))
    );
    // An answer that is no proposal costs what it used and becomes a flagged attempt.
    env.model.push_text("I would rather not.", usage());
    tick(s).await;
    let a1 = s
        .store
        .attempt(&format!("{}-a01", run.id))
        .await
        .expect("a")
        .expect("row");
    assert_eq!(a1.status, AttemptStatus::Flagged);
    assert!(
        a1.flag_reason
            .unwrap_or_default()
            .contains("no JSON object")
    );
    let after = live(s).await.expect("run");
    assert_eq!((after.tally.attempts, after.tally.reverts), (1, 1));
    assert!(after.cost_usd > 0.0, "{after:?}");
    assert!(
        env.g
            .branch_names(REPO)
            .iter()
            .all(|b| !b.starts_with("improve/"))
    );
}

macro_rules! both_stores {
    ($($case:path => $name:ident),* $(,)?) => {
        mod sqlite {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    super::run_case::<capsid_store_sqlite::SqliteStore>(stringify!($name), |e| Box::pin($case(e))).await;
                }
            )*
        }
        mod postgres {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    super::run_case::<capsid_store_postgres::PgStore>(stringify!($name), |e| Box::pin($case(e))).await;
                }
            )*
        }
    };
}

both_stores! {
    super::a_whole_night => a_whole_night,
    super::a_failing_model_changes_nothing_and_a_bad_answer_is_flagged => a_failing_model,
    super::the_monitor_model_flags_what_the_path_guard_cannot => monitor_model,
    super::subscription::a_task_document_is_signed_and_only_the_lease_holder_drives => subscription_mode,
    super::abstraction::a_kept_attempt_and_a_verified_job_become_candidates => abstraction_api,
    super::abstraction::a_decline_and_a_bad_answer_spend_the_source_and_write_no_skill => abstraction_declined,
    super::abstraction::subscription_proposals_come_only_from_the_lease_holder => abstraction_subscription,
    super::workflows::the_shipped_scorer_takes_the_dispatch_and_its_report_is_kept => shipped_scorer,
}
