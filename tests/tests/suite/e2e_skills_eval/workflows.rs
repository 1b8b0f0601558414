//! The shipped probe workflow (`templates/workflows/improve-probe.yml`) against the real
//! server: the cycle's dispatch is exactly the file and the inputs the template takes, its
//! fetch job's own step reads the probe set and the skill's body over `/ops/mcp` with a read
//! key and checks the probe set's version, and its report job's own step signs and sends
//! what the probe measured, which the server records. The runner's tools read the wall clock,
//! so the server's clock is set to it once at the start.

use std::collections::BTreeMap;

use capsid_core::improve::report::namespace_key;
use capsid_core::improve::workflows::Workflow;
use capsid_core::time::Timestamp;
use capsid_tests::workflows::{Template, run_step};
use serde_json::{Value, json};

use super::{BODY, Env, NS, PROBES_MD, ROOT, probes, skill, tick};

fn said(out: &std::process::Output) -> String {
    format!(
        "exit {:?}\nstdout: {}\nstderr: {}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

pub(crate) async fn the_shipped_probe_takes_the_dispatch_reads_and_reports(env: &Env) {
    let s = &env.s;
    let ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("after 1970")
        .as_millis();
    s.clock
        .set(Timestamp::from_millis(i64::try_from(ms).expect("millis")));
    skill(s, "sk-a", None).await;
    let cycle = tick(s).await;
    assert_eq!(cycle["cycle"], "ran", "{cycle}");

    let t = Template::of(Workflow::Probe);
    let dispatches = env.g.dispatches(super::REPO);
    let (file, _, inputs) = dispatches.last().expect("a probe was dispatched");
    assert_eq!(file, Workflow::Probe.file_name());
    assert_eq!(&probes(env)[0], inputs);
    let sent: Vec<String> = inputs.as_object().unwrap().keys().cloned().collect();
    let mut declared = t.inputs();
    declared.sort();
    assert_eq!(sent, declared, "the dispatch's inputs are the template's");

    let reader = s
        .mint(
            "probe-reader",
            "driver",
            json!({"namespaces": [NS], "grants": ["read"]}),
        )
        .await;
    let given = BTreeMap::from([
        ("CAPSID_URL", s.url.clone()),
        ("CAPSID_READ_KEY", reader),
        ("CAPSID_IMPROVE_KEY", namespace_key(ROOT, NS)),
    ]);
    let work = tempfile::tempdir().expect("the runner's workspace");

    // fetch: the probe set and the body, read over MCP with the read key.
    let vars = t.job_env("fetch", inputs, &given);
    let fetched = run_step(
        &t.step("fetch", "Read the probe set and the skill"),
        work.path(),
        &vars,
        None,
    )
    .await;
    assert!(fetched.status.success(), "{}", said(&fetched));
    assert_eq!(
        std::fs::read_to_string(work.path().join("probe-in/probes.md")).unwrap(),
        PROBES_MD
    );
    assert_eq!(
        std::fs::read_to_string(work.path().join("probe-in/skill.md")).unwrap(),
        BODY
    );
    // A probe set other than the one dispatched is refused by the step.
    let mut stale = inputs.clone();
    stale["probe_set_version"] = json!("sha256:0000000000000000");
    let refused = run_step(
        &t.step("fetch", "Read the probe set and the skill"),
        work.path(),
        &t.job_env("fetch", &stale, &given),
        None,
    )
    .await;
    assert!(!refused.status.success(), "{}", said(&refused));
    assert!(said(&refused).contains("not the sha256:0000000000000000"));

    // report: what the repository's probe job measured, signed and sent.
    std::fs::create_dir_all(work.path().join("probe-out")).unwrap();
    std::fs::write(
        work.path().join("probe-out/result.json"),
        r#"{"with": 0.8, "without": 0.5, "runs": 3}"#,
    )
    .unwrap();
    let mut vars = t.job_env("report", inputs, &given);
    vars.insert("GITHUB_RUN_ID".into(), "77".into());
    vars.insert("GITHUB_RUN_ATTEMPT".into(), "1".into());
    let sent = run_step(
        &t.step("report", "Send the signed report"),
        work.path(),
        &vars,
        None,
    )
    .await;
    assert!(sent.status.success(), "{}", said(&sent));
    let answer: Value = serde_json::from_slice(&sent.stdout).expect("the server's JSON");
    assert_eq!(answer["verdict"], "positive", "{answer}");
    let evals = s.store.evaluations("sk-a").await.expect("evaluations");
    assert_eq!(evals.len(), 1, "{evals:?}");
}
