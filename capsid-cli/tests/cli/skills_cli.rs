//! The real binary: `capsid skills list [--status] [--namespace]` lists the skills in the
//! SQLite file the CLI holds, and `capsid skills show <id>` shows one with its evaluations,
//! edits and failure notes; an unknown id or status is refused (exit 2).

use std::path::Path;
use std::process::{Command, Output};

use capsid_core::ports::{
    AuditEntry, SkillEditRow, SkillEvaluationRow, SkillFailureRow, SkillRow, SkillStore,
};
use capsid_core::time::Timestamp;
use capsid_store_sqlite::SqliteStore;
use serde_json::{Value, json};

fn capsid(data: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_capsid"))
        .args(args)
        .env("CAPSID_DATA_DIR", data)
        .env_remove("CAPSID_DATABASE_URL")
        .env_remove("CAPSID_SIGNING_SECRET")
        .env_remove("CAPSID_MEDIA_URL")
        .env_remove("CAPSID_HOLDOUT_URL")
        .env_remove("CAPSID_GITHUB_APP_CLIENT_ID")
        .env_remove("CAPSID_GITHUB_APP_PRIVATE_KEY")
        .env("CAPSID_LOG", "warn")
        .output()
        .expect("run capsid")
}

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

fn audit(action: &str, id: &str, at: Timestamp) -> AuditEntry {
    AuditEntry {
        actor: "improve-loop".into(),
        action: action.into(),
        namespace: Some("alpha".into()),
        path: Some(format!("improve/skills/{id}.md")),
        params: json!({}),
        at,
    }
}

async fn seed(data: &Path) {
    let url = format!("sqlite://{}", data.join("capsid.db").display());
    let store = SqliteStore::open(&url).await.expect("open the store");
    let at = Timestamp::from_millis(1_800_000_000_000);
    for (i, (id, status, ns)) in [
        ("sk-live", "live", None),
        ("sk-cand", "candidate", Some(r#"["beta"]"#)),
    ]
    .into_iter()
    .enumerate()
    {
        let when = at.plus_millis(i as i64 * 1000);
        store
            .insert_skill(
                SkillRow {
                    id: id.into(),
                    source_namespace: "alpha".into(),
                    title: format!("Title of {id}"),
                    body_ref: format!("improve/skills/{id}.md"),
                    version: 1,
                    status: status.into(),
                    wins: 0,
                    losses: 0,
                    trigger_condition: Some("flaky test retry".into()),
                    namespaces: ns.map(str::to_owned),
                },
                when,
                audit("skill-added", id, when),
            )
            .await
            .expect("insert");
    }
    store
        .record_evaluation(
            SkillEvaluationRow {
                skill: "sk-live".into(),
                version: 1,
                namespace: "alpha".into(),
                probe_set_version: "p1".into(),
                delta: 0.5,
                runs: 3,
                verdict: "positive".into(),
                evaluated_at: at,
            },
            audit("skill-evaluated", "sk-live", at),
        )
        .await
        .expect("evaluation");
    store
        .record_skill_edit(
            SkillEditRow {
                skill: "sk-live".into(),
                from_version: 1,
                to_version: 2,
                ops: r#"[{"op":"delete","line":2}]"#.into(),
                accepted: false,
                reason: "tie".into(),
                evaluated_at: at,
            },
            audit("skill-edit", "sk-live", at),
        )
        .await
        .expect("edit");
    store
        .record_skill_failure(
            SkillFailureRow {
                skill: "sk-live".into(),
                namespace: "alpha".into(),
                source_kind: "job".into(),
                source_id: "job_000000000001".into(),
                note: "verified-failure: wrong fix".into(),
                created_at: at,
            },
            audit("skill-failure-noted", "sk-live", at),
        )
        .await
        .expect("failure");
}

#[tokio::test]
async fn capsid_skills_list_and_show() {
    let dir = tempfile::tempdir().expect("a folder");
    let data = dir.path().join("data");
    let migrated = capsid(&data, &["migrate"]);
    assert!(migrated.status.success(), "{}", text(&migrated));
    let registered = capsid(
        &data,
        &["namespaces", "register", "alpha", "--repo", "octo/alpha"],
    );
    assert!(registered.status.success(), "{}", text(&registered));

    let empty = capsid(&data, &["skills", "list"]);
    assert!(empty.status.success(), "{}", text(&empty));
    assert_eq!(String::from_utf8_lossy(&empty.stdout).trim(), "no skills");

    seed(&data).await;
    let all = capsid(&data, &["skills", "list"]);
    assert!(all.status.success(), "{}", text(&all));
    let out = String::from_utf8_lossy(&all.stdout);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(
        lines,
        [
            "sk-cand  candidate  v1  0/0  Title of sk-cand",
            "sk-live  live  v1  0/0  Title of sk-live"
        ],
        "newest first"
    );

    let live = capsid(&data, &["skills", "list", "--status", "live", "--json"]);
    assert!(live.status.success(), "{}", text(&live));
    let answer: Value = serde_json::from_slice(&live.stdout).expect("json");
    let ids: Vec<&str> = answer["skills"]
        .as_array()
        .expect("skills")
        .iter()
        .filter_map(|s| s["id"].as_str())
        .collect();
    assert_eq!(ids, ["sk-live"]);

    let beta = capsid(&data, &["skills", "list", "--namespace", "beta", "--json"]);
    let answer: Value = serde_json::from_slice(&beta.stdout).expect("json");
    let ids: Vec<&str> = answer["skills"]
        .as_array()
        .expect("skills")
        .iter()
        .filter_map(|s| s["id"].as_str())
        .collect();
    assert_eq!(ids, ["sk-cand", "sk-live"], "sk-live admits any namespace");

    let show = capsid(&data, &["skills", "show", "sk-live"]);
    assert!(show.status.success(), "{}", text(&show));
    assert_eq!(
        String::from_utf8_lossy(&show.stdout).trim(),
        "sk-live  live  v1  0/0  Title of sk-live\ntrigger: flaky test retry\nevaluations: 1, edits: 1, failure notes: 1\n  job job_000000000001: verified-failure: wrong fix"
    );
    let shown = capsid(&data, &["skills", "show", "sk-live", "--json"]);
    let answer: Value = serde_json::from_slice(&shown.stdout).expect("json");
    assert_eq!(answer["edits"][0]["reason"], "tie");
    assert_eq!(answer["edits"][0]["to_version"], 2);
    assert_eq!(answer["evaluations"][0]["verdict"], "positive");

    let unknown = capsid(&data, &["skills", "show", "nosuch"]);
    assert_eq!(unknown.status.code(), Some(2), "{}", text(&unknown));
    assert!(
        text(&unknown).contains("no skill nosuch"),
        "{}",
        text(&unknown)
    );
    let bad = capsid(&data, &["skills", "list", "--status", "archived"]);
    assert_eq!(bad.status.code(), Some(2), "{}", text(&bad));
    assert!(text(&bad).contains("status must be"), "{}", text(&bad));
}
