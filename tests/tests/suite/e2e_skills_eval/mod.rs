//! The skills evaluation cycle and bounded edits end to end on both stores, driven by the
//! server's `ManualClock`, against the fake GitHub (through the real adapter) and the fake
//! model API (through the real Anthropic client), with a fake scorer: the test reads each
//! `improve-probe.yml` dispatch from the fake GitHub and POSTs a signed probe report over
//! real HTTP. Cases: the cadence gate; candidate → live on two positive evaluations and
//! live → retired on two non-positive; an accepted edit bumping the version and resetting
//! the evidence; a tie rejecting the edit and the next optimizer prompt carrying it.
//! `refusals.rs` holds one case per refusal of `POST /improve/probe`, each writing nothing;
//! `subscription.rs` the driver's `propose_edit`; `workflows.rs` the shipped probe workflow's
//! own steps against the server; `repo_copy.rs` the skills' repository copy (export through a
//! pull request, an edited copy read back as a candidate that the cycle then evaluates).

mod refusals;
mod repo_copy;
mod subscription;
mod workflows;

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use capsid_core::improve::report::{
    NAMESPACE_HEADER, SIGNATURE_HEADER, TIMESTAMP_HEADER, sign_report,
};
use capsid_core::ports::{
    AuditEntry, DocumentWrite, ModelUsage, SkillFailureRow, SkillRow, Store, WriteGuard,
};
use capsid_core::schedule::Task;
use capsid_core::time::{DAY_MS, Timestamp};
use capsid_tests::fake_github::FakeGitHub;
use capsid_tests::fake_model::FakeModel;
use capsid_tests::harness::Backend;
use capsid_tests::server::{ServerOptions, TestServer};
use serde_json::{Value, json};

pub(crate) const ROOT: &str = "skills-eval-root-secret";
pub(crate) const NS: &str = "proj";
pub(crate) const REPO: &str = "octo/proj";
const MODEL_KEY: &str = "sk-fake-model-key";
const START: &str = "2026-12-01T12:00:00Z";
pub(crate) const PROBES_MD: &str = "# Probes\n\n- fix a flaky test\n- add a retry\n";
pub(crate) const BODY: &str = "Step one.\nStep two.\nStep three.\nStep four.\nStep five.";

/// What a case gets.
pub(crate) struct Env {
    pub(crate) s: TestServer,
    pub(crate) g: FakeGitHub,
    pub(crate) model: FakeModel,
    pub(crate) http: reqwest::Client,
}

type Case = for<'a> fn(&'a Env) -> Pin<Box<dyn Future<Output = ()> + Send + 'a>>;

async fn run_case<S: Backend>(name: &str, case: Case) {
    let Some(fresh) = S::fresh(name).await else {
        return;
    };
    let store: Arc<dyn Store> = fresh.store.clone();
    let g = FakeGitHub::start().await;
    g.add_repo(REPO, &[("README.md", "# proj\n")]);
    g.workflow(REPO, "improve-probe.yml", true, true);
    let model = FakeModel::start(MODEL_KEY).await;
    let options = ServerOptions {
        signing_secret: Some(ROOT.to_owned()),
        repo_host: Some(g.adapter()),
        anthropic: Some((model.url.clone(), MODEL_KEY.to_owned())),
        ..ServerOptions::default()
    };
    let s = TestServer::start_customized(store, options, |_| None, |svc| svc).await;
    s.clock.set(Timestamp::parse(START).expect("instant"));
    s.namespace(NS).await;
    let wrote = s
        .admin(
            "write",
            json!({"namespace": NS, "path": "improve/probes.md", "title": "Probes",
                   "body": PROBES_MD, "allow_improve_paths": true}),
        )
        .await;
    assert!(wrote.to_string().contains("probes.md"), "{wrote}");
    let mode = s
        .admin("improve_run", json!({"action": "mode", "value": "api"}))
        .await;
    assert_eq!(mode["mode"], "api", "{mode}");
    let env = Env {
        s,
        g,
        model,
        http: reqwest::Client::new(),
    };
    case(&env).await;
    env.s.stop().await;
    fresh.finish().await;
}

fn audit(action: &str, path: &str, at: Timestamp) -> AuditEntry {
    AuditEntry {
        actor: "improve-loop".into(),
        action: action.into(),
        namespace: Some(NS.into()),
        path: Some(path.into()),
        params: json!({}),
        at,
    }
}

/// A candidate skill of `proj` with its body document, admitting `namespaces` (JSON).
pub(crate) async fn skill(s: &TestServer, id: &str, namespaces: Option<&str>) {
    let now = s.service.now();
    let path = format!("improve/skills/{id}.md");
    s.store
        .write_document(
            DocumentWrite {
                namespace: NS.into(),
                path: path.clone(),
                title: Some(format!("Skill {id}")),
                body: Some(BODY.into()),
                doc_type: None,
                status: None,
                tags: None,
                links: None,
                at: now,
            },
            WriteGuard::Upsert,
            vec![],
        )
        .await
        .expect("body");
    s.store
        .insert_skill(
            SkillRow {
                id: id.into(),
                source_namespace: NS.into(),
                title: format!("Skill {id}"),
                body_ref: path.clone(),
                version: 1,
                status: "candidate".into(),
                wins: 0,
                losses: 0,
                trigger_condition: Some("flaky test".into()),
                namespaces: namespaces.map(str::to_owned),
            },
            now,
            audit("skill-added", &path, now),
        )
        .await
        .expect("insert");
}

/// A failure note on `id`, so the optimizer is asked for an edit.
pub(crate) async fn failure(s: &TestServer, id: &str, note: &str) {
    let now = s.service.now();
    s.store
        .record_skill_failure(
            SkillFailureRow {
                skill: id.into(),
                namespace: NS.into(),
                source_kind: "job".into(),
                source_id: "job_000000000001".into(),
                note: note.into(),
                created_at: now,
            },
            audit("skill-failure", "improve/skills/", now),
        )
        .await
        .expect("failure");
}

/// Runs the `improve` periodic task now; the skills part of its report.
pub(crate) async fn tick(s: &TestServer) -> Value {
    let report = s.service.tick_now(Some(Task::Improve)).await.expect("tick");
    let run = report.run_of(Task::Improve).expect("the improve task ran");
    assert!(run.error.is_none(), "{:?}", run.error);
    run.report["skills"].clone()
}

pub(crate) fn later_days(s: &TestServer, days: i64) {
    let now = s.service.now();
    s.clock.set(now.plus_millis(days * DAY_MS));
}

/// The inputs of every probe dispatch so far.
pub(crate) fn probes(env: &Env) -> Vec<Value> {
    env.g
        .dispatches(REPO)
        .into_iter()
        .filter(|(file, _, _)| file == "improve-probe.yml")
        .map(|(_, _, inputs)| inputs)
        .collect()
}

/// Posts `body` signed for `ns` at the server's now (`sig` overrides the signature).
pub(crate) async fn post(env: &Env, ns: &str, body: &str, sig: Option<&str>) -> (u16, Value) {
    let ts = env.s.service.now().to_string();
    let good = sign_report(ROOT, ns, &ts, body.as_bytes());
    let resp = env
        .http
        .post(format!("{}/improve/probe", env.s.url))
        .header(NAMESPACE_HEADER, ns)
        .header(TIMESTAMP_HEADER, ts)
        .header(SIGNATURE_HEADER, sig.unwrap_or(&good))
        .body(body.to_owned())
        .send()
        .await
        .expect("post");
    let status = resp.status().as_u16();
    (status, resp.json().await.unwrap_or(Value::Null))
}

/// The fake scorer: the report body for a dispatch's inputs.
pub(crate) fn report_body(inputs: &Value, with: f64, without: f64, jti: &str) -> Value {
    json!({"namespace": inputs["namespace"], "skill": inputs["skill"],
           "version": inputs["version"].as_str().and_then(|v| v.parse::<i64>().ok()),
           "probe_set_version": inputs["probe_set_version"], "with": with, "without": without,
           "runs": 3, "jti": jti, "edit": inputs["edit"] == "true"})
}

/// The fake scorer answering one dispatch.
pub(crate) async fn score(env: &Env, inputs: &Value, with: f64, without: f64, jti: &str) -> Value {
    let body = report_body(inputs, with, without, jti).to_string();
    let (status, answer) = post(env, NS, &body, None).await;
    assert_eq!(status, 200, "{answer}");
    answer
}

/// The dispatch of `skill` (plain or edit) in the latest cycle.
pub(crate) fn dispatch_of(env: &Env, skill: &str, edit: bool) -> Value {
    probes(env)
        .into_iter()
        .rev()
        .find(|i| {
            i["skill"] == skill && i["edit"].as_str() == Some(if edit { "true" } else { "false" })
        })
        .unwrap_or_else(|| panic!("a dispatch of {skill} (edit {edit}): {:?}", probes(env)))
}

pub(crate) async fn row(s: &TestServer, id: &str) -> SkillRow {
    s.store.skill(id).await.expect("skill").expect("row")
}

fn usage() -> ModelUsage {
    ModelUsage {
        input_tokens: 1_000,
        output_tokens: 200,
    }
}

async fn the_cadence_gates_the_cycle(env: &Env) {
    let s = &env.s;
    skill(s, "sk-a", None).await;
    s.store
        .put_setting("skills:evaluate:cadence-days", "0.5", None)
        .await
        .expect("cadence");
    let first = tick(s).await;
    assert_eq!(first["cycle"], "ran", "{first}");
    assert_eq!(
        first["cadence_days"], 14,
        "0.5 falls back to the default: {first}"
    );
    assert_eq!(probes(env).len(), 1, "one skill, one probe");
    let inputs = &probes(env)[0];
    assert_eq!(inputs["namespace"], NS);
    assert_eq!(inputs["version"], "1");
    assert_eq!(inputs["edit"], "false");
    assert_eq!(inputs["body_ref"], "proj/improve/skills/sk-a.md");
    assert!(
        inputs["probe_set_version"]
            .as_str()
            .is_some_and(|v| v.starts_with("sha256:")),
        "{inputs}"
    );
    // Not due: a day later, and a day short of the fortnight.
    later_days(s, 1);
    assert_eq!(tick(s).await["cycle"], "not due");
    later_days(s, 12);
    let early = tick(s).await;
    assert_eq!(early["cycle"], "not due", "{early}");
    assert_eq!(probes(env).len(), 1, "nothing dispatched while not due");
    later_days(s, 1);
    assert_eq!(tick(s).await["cycle"], "ran");
    assert_eq!(probes(env).len(), 2);
    // A cadence of 3 days is obeyed.
    s.store
        .put_setting("skills:evaluate:cadence-days", "3", None)
        .await
        .expect("cadence");
    later_days(s, 2);
    assert_eq!(tick(s).await["cycle"], "not due");
    later_days(s, 1);
    assert_eq!(tick(s).await["cycle"], "ran");
    assert_eq!(probes(env).len(), 3);
}

async fn the_lifecycle_moves_on_evaluations(env: &Env) {
    let s = &env.s;
    skill(s, "sk-b", None).await;
    let mut jti = 0;
    let mut cycle = |with: f64| {
        jti += 1;
        (with, format!("life-{jti}"))
    };
    // Two positive evaluations: candidate → live (one is a sample).
    for (n, want) in [(1, "candidate"), (2, "live")] {
        assert_eq!(tick(s).await["cycle"], "ran");
        let (with, j) = cycle(0.75);
        let answer = score(env, &dispatch_of(env, "sk-b", false), with, 0.5, &j).await;
        assert_eq!(answer["verdict"], "positive", "{answer}");
        assert_eq!(answer["status"], want, "evaluation {n}: {answer}");
        assert_eq!(row(s, "sk-b").await.status, want);
        later_days(s, 14);
    }
    // Live → retired on the two newest non-positive.
    assert_eq!(tick(s).await["cycle"], "ran");
    let (_, j) = cycle(0.0);
    let neutral = score(env, &dispatch_of(env, "sk-b", false), 0.5, 0.5, &j).await;
    assert_eq!(neutral["verdict"], "neutral");
    assert_eq!(neutral["status"], "live", "{neutral}");
    later_days(s, 14);
    assert_eq!(tick(s).await["cycle"], "ran");
    let (_, j) = cycle(0.0);
    let negative = score(env, &dispatch_of(env, "sk-b", false), 0.25, 0.5, &j).await;
    assert_eq!(negative["verdict"], "negative");
    assert_eq!(negative["status"], "retired", "{negative}");
    assert_eq!(row(s, "sk-b").await.status, "retired");
    assert_eq!(s.store.evaluations("sk-b").await.expect("evals").len(), 4);
    // A retired skill is not probed again.
    let before = probes(env).len();
    later_days(s, 14);
    assert_eq!(tick(s).await["cycle"], "ran");
    assert_eq!(probes(env).len(), before);
}

async fn an_accepted_edit_bumps_the_version_and_resets_evidence(env: &Env) {
    let s = &env.s;
    skill(s, "sk-c", None).await;
    failure(s, "sk-c", "step two sent the agent in circles").await;
    env.model.push_text(
        r#"{"ops":[{"op":"replace","line":2,"text":"Step two, bounded to three tries."}]}"#,
        usage(),
    );
    let cycle = tick(s).await;
    assert_eq!(cycle["edits"][0]["pending"], true, "{cycle}");
    let prompt = env.model.requests()[0].body.to_string();
    assert!(
        prompt.contains("step two sent the agent in circles"),
        "{prompt}"
    );
    assert!(prompt.contains("   2 | Step two."), "{prompt}");
    let edit_dispatch = dispatch_of(env, "sk-c", true);
    assert_eq!(
        edit_dispatch["body_ref"],
        "proj/improve/skills/sk-c.edit.md"
    );
    let edited = s
        .store
        .document(NS, "improve/skills/sk-c.edit.md")
        .await
        .expect("doc")
        .and_then(|d| d.body)
        .expect("the edited body for the probe");
    assert!(edited.contains("bounded to three tries"));
    // The current version first (positive: one evaluation), then the edit, strictly better.
    let plain = score(env, &dispatch_of(env, "sk-c", false), 0.75, 0.5, "c-1").await;
    assert_eq!(plain["status"], "candidate");
    let judged = score(env, &edit_dispatch, 1.0, 0.5, "c-2").await;
    assert_eq!(judged["outcome"], "edit-accepted", "{judged}");
    assert_eq!(judged["version"], 2);
    let r = row(s, "sk-c").await;
    assert_eq!(r.version, 2);
    let body = s
        .store
        .document(NS, "improve/skills/sk-c.md")
        .await
        .expect("doc")
        .and_then(|d| d.body)
        .expect("body");
    assert_eq!(
        body,
        "Step one.\nStep two, bounded to three tries.\nStep three.\nStep four.\nStep five."
    );
    let edits = s.store.skill_edits("sk-c", 10).await.expect("edits");
    assert_eq!(edits.len(), 1);
    assert!(edits[0].accepted, "{edits:?}");
    assert_eq!((edits[0].from_version, edits[0].to_version), (1, 2));
    // The evidence reset: one positive at version 2 does not promote.
    later_days(s, 14);
    env.model.push_text(
        r#"{"ops":[{"op":"delete","line":1},{"op":"delete","line":2}]}"#,
        usage(),
    );
    let next = tick(s).await;
    assert!(
        next["edits"][0]["rejected"]
            .as_str()
            .is_some_and(|r| r.contains("bound is 1")),
        "an out-of-bound proposal is rejected: {next}"
    );
    let v2 = dispatch_of(env, "sk-c", false);
    assert_eq!(v2["version"], "2");
    let after = score(env, &v2, 0.75, 0.5, "c-3").await;
    assert_eq!(after["verdict"], "positive");
    assert_eq!(after["status"], "candidate", "{after}");
    let edits = s.store.skill_edits("sk-c", 10).await.expect("edits");
    assert_eq!(edits.len(), 2);
    assert!(
        !edits[0].accepted && edits[0].reason.contains("bound is 1"),
        "{edits:?}"
    );
}

async fn a_tie_rejects_the_edit_and_the_next_prompt_carries_it(env: &Env) {
    let s = &env.s;
    skill(s, "sk-d", None).await;
    failure(s, "sk-d", "step three was skipped").await;
    env.model.push_text(
        r#"{"ops":[{"op":"replace","line":3,"text":"Step three: never skip."}]}"#,
        usage(),
    );
    tick(s).await;
    score(env, &dispatch_of(env, "sk-d", false), 0.75, 0.5, "d-1").await;
    let tie = score(env, &dispatch_of(env, "sk-d", true), 0.75, 0.5, "d-2").await;
    assert_eq!(tie["outcome"], "edit-rejected", "{tie}");
    assert_eq!(tie["version"], 1);
    assert_eq!(row(s, "sk-d").await.version, 1);
    let edits = s.store.skill_edits("sk-d", 10).await.expect("edits");
    assert_eq!(edits.len(), 1);
    assert!(
        !edits[0].accepted && edits[0].reason.contains("tie"),
        "{edits:?}"
    );
    assert!(edits[0].ops.contains("never skip"));
    let body = s
        .store
        .document(NS, "improve/skills/sk-d.md")
        .await
        .expect("doc")
        .and_then(|d| d.body);
    assert_eq!(
        body.as_deref(),
        Some(BODY),
        "a rejected edit leaves the body"
    );
    // The next cycle's optimizer prompt carries the refused proposal.
    later_days(s, 14);
    env.model.push_text(
        r#"{"ops":[{"op":"add","line":5,"text":"Step six."}]}"#,
        usage(),
    );
    tick(s).await;
    let calls = env.model.requests();
    assert_eq!(calls.len(), 2);
    let prompt = calls[1].body.to_string();
    assert!(prompt.contains("never skip"), "{prompt}");
    assert!(prompt.contains("rejected: tie"), "{prompt}");
    // A new pending edit: a second edit report for the old one is refused.
    assert!(
        s.store
            .setting("skills:edit:sk-d", s.service.now())
            .await
            .expect("setting")
            .is_some()
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
    super::the_cadence_gates_the_cycle => cadence_gate,
    super::the_lifecycle_moves_on_evaluations => lifecycle,
    super::an_accepted_edit_bumps_the_version_and_resets_evidence => accepted_edit,
    super::a_tie_rejects_the_edit_and_the_next_prompt_carries_it => tie_rejects,
    super::refusals::every_refusal_writes_nothing => refusals,
    super::subscription::the_lease_holder_proposes_an_edit => subscription_edit,
    super::workflows::the_shipped_probe_takes_the_dispatch_reads_and_reports => shipped_probe,
    super::repo_copy::an_edited_copy_comes_back_as_a_candidate => repo_copy_read_back,
    super::repo_copy::a_malformed_copy_is_refused_whole => repo_copy_malformed,
    super::repo_copy::only_the_namespaces_writers_copy_its_skills => repo_copy_scope,
}
