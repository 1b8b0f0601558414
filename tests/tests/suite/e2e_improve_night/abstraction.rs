//! Abstraction (issue 17) on the loop's tick: a kept attempt (through the score path) and a job
//! completed `verified-success` through the jobs tool each become a `candidate` with its body
//! document, asked of the fake model (stage abstract) with its cost on the run; a source is
//! never asked about twice, also once its skill is retired; a decline and an answer that is
//! not a skill spend the source and write no skill; in subscription mode the signed task
//! lists the sources and only the driver-lease holder's `propose_skill` inserts.

use capsid_core::jobs::signature::verify_task;
use capsid_core::ports::AuditFilter;
use capsid_core::skills::abstraction::{SourceKind, spent_key};
use capsid_tests::server::Client;
use serde_json::{Value, json};

use super::{
    Env, NIGHT, ROOT, at, clear, in_flight, later, live, mode, proposal, score, tick, usage,
};

fn skill_answer(title: &str, trigger: &str, body: &str) -> String {
    format!(
        "Here is the skill.\n{}",
        json!({"title": title, "trigger_condition": trigger, "namespaces": ["capsid"],
               "termination_test": "the measure improves", "composition_interface": "none",
               "body": body})
    )
}

async fn agent(env: &Env, name: &str) -> Client {
    let axes = json!({"namespaces": ["capsid"], "grants": ["read", "write"]});
    env.s.client(&env.s.mint(name, "driver", axes).await).await
}

/// Posts, claims and completes a job with the verifier's verdict `verdict`: its id.
async fn finished_job(d: &Client, title: &str, verdict: &str) -> String {
    let posted = d
        .ok(
            "jobs",
            json!({"action": "post", "namespace": "capsid", "title": title, "body": format!("Do {title}.\n")}),
        )
        .await;
    let id = posted["job"]["id"].as_str().expect("a job id").to_owned();
    let claimed = d
        .ok(
            "jobs",
            json!({"action": "claim", "id": id, "namespace": "capsid"}),
        )
        .await;
    assert_eq!(claimed["job"]["status"], "claimed", "{claimed}");
    let done = d
        .ok(
            "jobs",
            json!({"action": "complete", "id": id, "namespace": "capsid",
                   "result_summary": format!("{title}: done"), "skill_verdict": verdict}),
        )
        .await;
    assert_eq!(done["job"]["status"], "done", "{done}");
    id
}

async fn propose(c: &Client, job: &str, proposal: Value) -> Value {
    let args = json!({"action": "propose_skill", "namespace": "capsid",
                      "source_kind": "job", "source_id": job, "proposal": proposal});
    c.ok("improve_run", args).await
}

async fn audits(env: &Env, action: &str) -> Vec<Value> {
    let rows = env
        .s
        .store
        .recent_audit(&AuditFilter::default(), 1_000)
        .await
        .expect("audit");
    rows.into_iter()
        .filter(|r| r.action.as_deref() == Some(action))
        .map(|r| {
            r.params
                .and_then(|p| serde_json::from_str(&p).ok())
                .unwrap_or(Value::Null)
        })
        .collect()
}

async fn body_of(env: &Env, path: &str) -> Option<String> {
    env.s
        .store
        .document("capsid", path)
        .await
        .expect("document")
        .and_then(|d| d.body)
}

pub(crate) async fn a_kept_attempt_and_a_verified_job_become_candidates(env: &Env) {
    let s = &env.s;
    mode(s, "api").await;
    let first = tick(s).await;
    assert_eq!(first["abstraction"]["proposed"], json!([]), "{first}");
    let run = live(s).await.expect("a run");
    env.model.push_text(
        &proposal(
            "shrink the app",
            &[("src/app.ts", "export const size = 400;\n")],
        ),
        usage(),
    );
    env.model.push_text(&clear(), usage());
    tick(s).await;
    let (a1, _, h1) = in_flight(env).await;
    let (status, kept) = score(env, &run.id, &a1, &h1, "k1", 1.0, 400.0).await;
    assert_eq!(
        (status, kept["verdict"].as_str()),
        (200, Some("kept")),
        "{kept}"
    );
    let d = agent(env, "worker").await;
    let job = finished_job(&d, "Fix the flaky login test", "verified-success").await;
    let improvised = finished_job(&d, "Rename a variable", "improvised").await;

    // Past the run's cap the tick asks nothing for the run; abstraction asks once per source.
    let calls = env.model.requests().len();
    let cost_before = s
        .store
        .run(&run.id)
        .await
        .expect("run")
        .expect("row")
        .cost_usd;
    env.model.push_text(
        &skill_answer("Shrink bundles", "bundle size", "1. Drop dead exports.\n"),
        usage(),
    );
    env.model.push_text(
        &skill_answer("Retry flaky tests", "flaky test", "1. Rerun twice.\n"),
        usage(),
    );
    later(s, 6 * 60 + 1);
    let report = tick(s).await;
    let proposed = report["abstraction"]["proposed"]
        .as_array()
        .cloned()
        .unwrap_or_else(|| panic!("{report}"));
    assert_eq!(proposed.len(), 2, "{report}");
    let requests = env.model.requests();
    assert_eq!(requests.len(), calls + 2);
    assert_eq!(requests[calls].body["model"], "claude-opus-5");
    let prompt = |i: usize| {
        requests[i].body["messages"][0]["content"]
            .as_str()
            .unwrap_or("")
            .to_owned()
    };
    assert!(prompt(calls).contains(&a1) && prompt(calls).contains("shrink the app"));
    assert!(prompt(calls + 1).contains("Fix the flaky login test"));
    assert!(!prompt(calls + 1).contains(&improvised));
    let cost_after = s
        .store
        .run(&run.id)
        .await
        .expect("run")
        .expect("row")
        .cost_usd;
    // Two calls of 10,000 input and 2,000 output tokens at 15 and 75 USD per million.
    assert!(
        (cost_after - cost_before - 0.6).abs() < 1e-9,
        "{cost_after}"
    );
    let charged = audits(env, "improve-model-call").await;
    assert_eq!(
        charged.iter().filter(|p| p["stage"] == "abstract").count(),
        2
    );

    for (entry, source, title, body) in [
        (
            &proposed[0],
            a1.as_str(),
            "Shrink bundles",
            "1. Drop dead exports.\n",
        ),
        (
            &proposed[1],
            job.as_str(),
            "Retry flaky tests",
            "1. Rerun twice.\n",
        ),
    ] {
        assert_eq!(entry["source"]["source_id"], source, "{entry}");
        let id = entry["skill"].as_str().expect("a skill id");
        let row = s.store.skill(id).await.expect("skill").expect("row");
        assert_eq!(row.status, "candidate");
        assert_eq!(row.title, title);
        assert_eq!(row.namespaces.as_deref(), Some(r#"["capsid"]"#));
        assert_eq!(row.body_ref, format!("improve/skills/{id}.md"));
        assert_eq!(body_of(env, &row.body_ref).await.as_deref(), Some(body));
        let last = s
            .store
            .last_actor("capsid", &row.body_ref)
            .await
            .expect("actor");
        assert_eq!(last.as_deref(), Some("improve-loop"));
    }
    let shown = s
        .admin(
            "improve_run",
            json!({"action": "skills", "status": "candidate"}),
        )
        .await;
    assert_eq!(shown["skills"].as_array().map(Vec::len), Some(2), "{shown}");

    // Nothing is asked again; a retired skill keeps its source spent.
    let again = tick(s).await;
    assert_eq!(again["abstraction"]["proposed"], json!([]), "{again}");
    let attempt_skill = proposed[0]["skill"].as_str().unwrap_or_default();
    let retired = s
        .admin(
            "improve_run",
            json!({"action": "retire_skill", "skill": attempt_skill, "reason": "superseded"}),
        )
        .await;
    assert_eq!(retired["ok"], true, "{retired}");
    later(s, 5);
    let after = tick(s).await;
    assert_eq!(after["abstraction"]["proposed"], json!([]), "{after}");
    assert_eq!(
        env.model.requests().len(),
        calls + 2,
        "nothing asked of the model"
    );
}

pub(crate) async fn a_decline_and_a_bad_answer_spend_the_source_and_write_no_skill(env: &Env) {
    let s = &env.s;
    mode(s, "api").await;
    let d = agent(env, "worker").await;
    let declined = finished_job(&d, "Tidy the changelog", "verified-success").await;
    let bad = finished_job(&d, "Speed up the build", "verified-success").await;
    env.model
        .push_text("Nothing reusable here. {\"skill\": null}", usage());
    env.model.push_text(
        &format!(
            "{}",
            json!({"title": "No trigger", "body": "1. Something.\n"})
        ),
        usage(),
    );
    // The opener's tick opens the run (the cost's carrier) and then abstracts.
    let report = tick(s).await;
    assert_eq!(report["opened"][0]["namespace"], "capsid", "{report}");
    let out = &report["abstraction"];
    assert_eq!(out["proposed"], json!([]), "{report}");
    let reasons: Vec<String> = out["declined"]
        .as_array()
        .unwrap_or_else(|| panic!("{report}"))
        .iter()
        .map(|d| d["reason"].as_str().unwrap_or("").to_owned())
        .collect();
    assert_eq!(reasons.len(), 2, "{report}");
    assert!(reasons[0].contains("declined"), "{reasons:?}");
    assert!(reasons[1].contains("trigger_condition"), "{reasons:?}");
    assert!(s.store.skills(None).await.expect("skills").is_empty());
    for id in [&declined, &bad] {
        let marker = s
            .store
            .setting(&spent_key(SourceKind::Job, id), s.service.now())
            .await
            .expect("setting");
        assert!(marker.is_some(), "{id} is spent");
    }
    let audited = audits(env, "skill-source-declined").await;
    assert_eq!(audited.len(), 2);
    assert!(
        audited.iter().any(|p| p["reason"]
            .as_str()
            .unwrap_or("")
            .contains("trigger_condition")),
        "{audited:?}"
    );
    let abstract_calls = || {
        env.model
            .requests()
            .iter()
            .filter(|r| r.body["model"] == "claude-opus-5")
            .count()
    };
    assert_eq!(abstract_calls(), 2);
    later(s, 5);
    let again = tick(s).await;
    assert_eq!(again["abstraction"]["declined"], json!([]), "{again}");
    assert_eq!(abstract_calls(), 2, "a spent source is not asked again");
}

pub(crate) async fn subscription_proposals_come_only_from_the_lease_holder(env: &Env) {
    let s = &env.s;
    mode(s, "subscription").await;
    let worker = agent(env, "worker").await;
    let job = finished_job(&worker, "Fix the flaky login test", "verified-success").await;
    s.clock.set(at(NIGHT));
    let report = tick(s).await;
    assert_eq!(
        report["abstraction"]["tasks"][0]["written"], true,
        "{report}"
    );
    let path = "improve/abstract-2026-12-01.md";
    let sealed = body_of(env, path).await.expect("the task document");
    let task = verify_task(ROOT, &sealed).expect("signed by the loop");
    assert!(task.contains(&format!("source: job {job}")), "{task}");
    assert!(task.contains("propose_skill"));
    let again = tick(s).await;
    assert_eq!(
        again["abstraction"]["tasks"][0]["written"], false,
        "the same body is not rewritten: {again}"
    );

    let a = agent(env, "driver-a").await;
    let b = agent(env, "driver-b").await;
    let claim = a
        .ok(
            "improve_run",
            json!({"action": "claim", "namespace": "capsid"}),
        )
        .await;
    assert_eq!(claim["ok"], true, "{claim}");
    let fields = json!({"title": "Retry flaky tests", "trigger_condition": "flaky test",
                        "body": "1. Rerun twice.\n"});
    let refused = propose(&b, &job, fields.clone()).await;
    assert_eq!(refused["ok"], false, "{refused}");
    assert!(
        refused["refusal"]
            .as_str()
            .unwrap_or("")
            .contains("driver lease"),
        "{refused}"
    );
    assert!(s.store.skills(None).await.expect("skills").is_empty());
    let invalid = a
        .err(
            "improve_run",
            json!({"action": "propose_skill", "namespace": "capsid", "source_kind": "job",
                   "source_id": job, "proposal": {"title": "t", "trigger_condition": "x", "body": ""}}),
        )
        .await;
    assert!(invalid.contains("body"), "{invalid}");
    assert!(s.store.skills(None).await.expect("skills").is_empty());

    let made = propose(&a, &job, fields.clone()).await;
    assert_eq!(made["ok"], true, "{made}");
    let id = made["skill"].as_str().expect("a skill id");
    let row = s.store.skill(id).await.expect("skill").expect("row");
    assert_eq!(row.status, "candidate");
    assert_eq!(row.namespaces, None, "no namespaces named: any");
    assert_eq!(
        body_of(env, &row.body_ref).await.as_deref(),
        Some("1. Rerun twice.\n")
    );
    let twice = propose(&a, &job, fields).await;
    assert_eq!(twice["ok"], false, "a spent source is refused: {twice}");
    assert_eq!(s.store.skills(None).await.expect("skills").len(), 1);
}
