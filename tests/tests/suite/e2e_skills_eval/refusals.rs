//! Every refusal of `POST /improve/probe` names its reason and writes nothing: no
//! evaluation, no audit row, no status change, and its `jti` stays unclaimed (a corrected
//! report with the same `jti` is then taken).

use capsid_tests::conformance::support::audit_count;
use serde_json::{Value, json};

use super::{Env, NS, PROBES_MD, post, probes, report_body, skill, tick};

/// What a refusal must leave as it was.
async fn snapshot(env: &Env) -> (usize, usize, Vec<(String, i64)>) {
    let s = &env.s;
    let mut evals = 0;
    let mut rows = Vec::new();
    for id in ["sk-r", "sk-x", "sk-old"] {
        evals += s.store.evaluations(id).await.expect("evals").len();
        if let Some(r) = s.store.skill(id).await.expect("skill") {
            rows.push((r.status, r.version));
        }
    }
    (evals, audit_count(s.store.as_ref()).await, rows)
}

fn with(mut body: Value, field: &str, value: Value) -> String {
    body[field] = value;
    body.to_string()
}

pub(crate) async fn every_refusal_writes_nothing(env: &Env) {
    let s = &env.s;
    skill(s, "sk-r", None).await;
    skill(s, "sk-x", Some(r#"["other"]"#)).await;
    skill(s, "sk-old", None).await;
    let retired = s
        .admin(
            "improve_run",
            json!({"action": "retire_skill", "skill": "sk-old", "reason": "superseded"}),
        )
        .await;
    assert_eq!(retired["ok"], true, "{retired}");
    assert_eq!(tick(s).await["cycle"], "ran");
    let inputs = probes(env)
        .into_iter()
        .find(|i| i["skill"] == "sk-r")
        .expect("sk-r probed");
    assert!(
        !probes(env)
            .iter()
            .any(|i| i["skill"] == "sk-x" || i["skill"] == "sk-old"),
        "a skill not applying to proj, and a retired one, are not probed"
    );
    let good = report_body(&inputs, 0.75, 0.5, "r-1");
    let before = snapshot(env).await;
    let cases: Vec<(&str, String, Option<&str>, u16, &str)> = vec![
        (
            "bad signature",
            good.to_string(),
            Some("00ff"),
            401,
            "does not verify",
        ),
        (
            "unknown skill",
            with(good.clone(), "skill", json!("sk-none")),
            None,
            409,
            "no skill 'sk-none'",
        ),
        (
            "retired",
            with(good.clone(), "skill", json!("sk-old")),
            None,
            409,
            "is retired",
        ),
        (
            "not applying",
            with(good.clone(), "skill", json!("sk-x")),
            None,
            409,
            "does not apply to namespace 'proj'",
        ),
        (
            "stale version",
            with(good.clone(), "version", json!(2)),
            None,
            409,
            "is at version 1",
        ),
        (
            "stale probe set",
            with(
                good.clone(),
                "probe_set_version",
                json!("sha256:0000000000000000"),
            ),
            None,
            409,
            "the probe set of 'proj' is",
        ),
        (
            "non-finite",
            with(good.clone(), "with", json!("NaN")),
            None,
            400,
            "with must be a finite number",
        ),
        (
            "no runs",
            with(good.clone(), "runs", json!(0)),
            None,
            400,
            "runs must be an integer",
        ),
        (
            "no pending edit",
            with(good.clone(), "edit", json!(true)),
            None,
            409,
            "has no pending edit",
        ),
    ];
    for (name, body, sig, status, says) in cases {
        let (got, answer) = post(env, NS, &body, sig).await;
        assert_eq!(got, status, "{name}: {answer}");
        assert_eq!(answer["ok"], false, "{name}: {answer}");
        let text = answer["error_description"].as_str().unwrap_or_default();
        assert!(text.contains(says), "{name}: {answer}");
        assert_eq!(snapshot(env).await, before, "{name} wrote something");
    }
    // Nothing burned the jti: the corrected report is taken, once.
    let (ok, answer) = post(env, NS, &good.to_string(), None).await;
    assert_eq!(ok, 200, "{answer}");
    assert_eq!(answer["verdict"], "positive");
    let after = snapshot(env).await;
    assert_eq!(after.0, before.0 + 1, "one evaluation");
    let (replayed, answer) = post(env, NS, &good.to_string(), None).await;
    assert_eq!(replayed, 409, "{answer}");
    assert!(
        answer["error_description"]
            .to_string()
            .contains("already used"),
        "{answer}"
    );
    assert_eq!(snapshot(env).await, after, "a replay wrote something");
    // A changed probe set makes the old version string stale.
    let rewrote = s
        .admin(
            "write",
            json!({"namespace": NS, "path": "improve/probes.md", "title": "Probes", "body": format!("{PROBES_MD}- a new probe\n"), "confirm": true,
                   "allow_improve_paths": true}),
        )
        .await;
    assert!(rewrote.to_string().contains("probes.md"), "{rewrote}");
    let stale = report_body(&inputs, 0.75, 0.5, "r-2").to_string();
    let (got, answer) = post(env, NS, &stale, None).await;
    assert_eq!(got, 409, "{answer}");
    let after_write = snapshot(env).await;
    assert_eq!(after_write.0, after.0);
}
