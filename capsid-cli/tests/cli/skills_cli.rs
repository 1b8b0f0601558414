//! The real binary: `capsid skills list [--status] [--namespace]` lists the skills in the
//! SQLite file the CLI holds, and `capsid skills show <id>` shows one with its evaluations,
//! edits and failure notes; an unknown id or status is refused (exit 2). `capsid skills export`
//! and `import` carry the skills' repository copy through the GitHub App (the fake on loopback),
//! on the SQLite file and on a Postgres database.

use std::path::Path;
use std::process::{Command, Output};

use capsid_core::ports::{
    AuditEntry, DocumentWrite, SkillEditRow, SkillEvaluationRow, SkillFailureRow, SkillRow,
    SkillStore, WriteGuard,
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

/// `capsid` with the GitHub App pointed at the fake GitHub on loopback, over the SQLite file in
/// `data` or, given, the Postgres database at `database`.
fn capsid_app(data: &Path, database: Option<&str>, api_url: &str, args: &[&str]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_capsid"));
    cmd.args(args)
        .env("CAPSID_DATA_DIR", data)
        .env_remove("CAPSID_SIGNING_SECRET")
        .env(
            "CAPSID_GITHUB_APP_CLIENT_ID",
            capsid_tests::fake_github::CLIENT_ID,
        )
        .env(
            "CAPSID_GITHUB_APP_PRIVATE_KEY",
            &capsid_tests::fake_github::test_key().private_pem,
        )
        .env("CAPSID_GITHUB_API_URL", api_url)
        .env("CAPSID_LOG", "warn");
    match database {
        Some(url) => cmd.env("CAPSID_DATABASE_URL", url),
        None => cmd.env_remove("CAPSID_DATABASE_URL"),
    };
    cmd.output().expect("run capsid")
}

const COPY: &str = "skills/sk-copy/SKILL.md";

async fn seed_live_copy(store: &dyn capsid_core::ports::Store) {
    let at = Timestamp::from_millis(1_800_000_000_000);
    store
        .write_document(
            DocumentWrite {
                namespace: "alpha".into(),
                path: "improve/skills/sk-copy.md".into(),
                title: Some("Copy".into()),
                body: Some("Run the test twice.\nThen fix it.".into()),
                doc_type: None,
                status: None,
                tags: None,
                links: None,
                at,
            },
            WriteGuard::Upsert,
            vec![],
        )
        .await
        .expect("body");
    store
        .insert_skill(
            SkillRow {
                id: "sk-copy".into(),
                source_namespace: "alpha".into(),
                title: "Retry a flaky test".into(),
                body_ref: "improve/skills/sk-copy.md".into(),
                version: 2,
                status: "live".into(),
                wins: 0,
                losses: 0,
                trigger_condition: Some("a flaky test".into()),
                namespaces: Some(r#"["alpha"]"#.into()),
            },
            at,
            audit("skill-added", "sk-copy", at),
        )
        .await
        .expect("insert");
}

/// The real binary on either store: `capsid skills export alpha` commits the live skill's copy
/// through the GitHub App and opens a pull request, again commits nothing; after a person's
/// edit on the default branch `capsid skills import alpha` reads it back as a candidate, and a
/// malformed copy is refused (exit 2) naming the file and the field.
fn export_and_import(postgres: bool) {
    capsid_http::install_tls_provider();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let database = if postgres {
        match runtime.block_on(capsid_tests::harness::fresh_database(
            "skills_export_import",
        )) {
            Some(db) => Some(db),
            None => return,
        }
    } else {
        None
    };
    let url = database.as_ref().map(|(_, url)| url.clone());
    let gh = runtime.block_on(capsid_tests::fake_github::FakeGitHub::start());
    gh.add_repo("octo/alpha", &[("README.md", "# alpha\n")]);
    let dir = tempfile::tempdir().expect("a folder");
    let data = dir.path().join("data");
    let run = |args: &[&str]| capsid_app(&data, url.as_deref(), &gh.url, args);
    let migrated = run(&["migrate"]);
    assert!(migrated.status.success(), "{}", text(&migrated));
    let registered = run(&["namespaces", "register", "alpha", "--repo", "octo/alpha"]);
    assert!(registered.status.success(), "{}", text(&registered));
    runtime.block_on(async {
        let store: std::sync::Arc<dyn capsid_core::ports::Store> = match &url {
            Some(url) => std::sync::Arc::new(
                capsid_store_postgres::PgStore::connect(url)
                    .await
                    .expect("connect"),
            ),
            None => {
                let file = format!("sqlite://{}", data.join("capsid.db").display());
                std::sync::Arc::new(SqliteStore::open(&file).await.expect("open the store"))
            }
        };
        seed_live_copy(store.as_ref()).await;
    });

    let exported = run(&["skills", "export", "alpha", "--json"]);
    assert!(exported.status.success(), "{}", text(&exported));
    let answer: Value = serde_json::from_slice(&exported.stdout).expect("json");
    assert_eq!(answer["pull"], "opened", "{answer}");
    let want = "---\nid: \"sk-copy\"\nversion: 2\ntitle: \"Retry a flaky test\"\n\
                trigger_condition: \"a flaky test\"\nnamespaces: [\"alpha\"]\n\
                termination_test: null\ncomposition_interface: null\n---\n\n\
                Run the test twice.\nThen fix it.\n";
    assert_eq!(
        gh.file("octo/alpha", "capsid-skills/alpha", COPY)
            .as_deref(),
        Some(want)
    );
    let pulls = gh.pulls("octo/alpha");
    assert_eq!(pulls.len(), 1, "{pulls:?}");
    assert_eq!(pulls[0].2, "capsid-skills/alpha");

    let again = run(&["skills", "export", "alpha"]);
    assert!(again.status.success(), "{}", text(&again));
    assert!(
        text(&again).contains("nothing committed"),
        "{}",
        text(&again)
    );
    assert_eq!(gh.pulls("octo/alpha").len(), 1);

    gh.merge("octo/alpha", pulls[0].0);
    let edited = want.replace("Then fix it.", "Then fix the cause, not the symptom.");
    gh.commit("octo/alpha", "main", &[(COPY, Some(&edited))], "edit");
    let read = run(&["skills", "import", "alpha"]);
    assert!(read.status.success(), "{}", text(&read));
    let out = String::from_utf8_lossy(&read.stdout).trim().to_owned();
    assert!(
        out.starts_with("candidate skill_") && out.ends_with(&format!("from {COPY}")),
        "{out}"
    );
    let listed = run(&["skills", "list", "--status", "candidate", "--json"]);
    let answer: Value = serde_json::from_slice(&listed.stdout).expect("json");
    assert_eq!(
        answer["skills"][0]["title"], "Retry a flaky test",
        "{answer}"
    );
    assert_eq!(answer["skills"].as_array().map(Vec::len), Some(1));

    gh.commit(
        "octo/alpha",
        "main",
        &[(COPY, Some(&edited.replace("title:", "name:")))],
        "break it",
    );
    let refused = run(&["skills", "import", "alpha"]);
    assert_eq!(refused.status.code(), Some(2), "{}", text(&refused));
    assert!(
        text(&refused).contains("refused: skills/sk-copy/SKILL.md: name: not a field of a skill"),
        "{}",
        text(&refused)
    );
    let listed = run(&["skills", "list", "--status", "candidate", "--json"]);
    let answer: Value = serde_json::from_slice(&listed.stdout).expect("json");
    assert_eq!(
        answer["skills"].as_array().map(Vec::len),
        Some(1),
        "nothing new"
    );
    if let Some((db, _)) = database {
        runtime.block_on(db.remove());
    }
}

#[test]
fn capsid_skills_export_and_import_through_the_github_app_sqlite() {
    export_and_import(false);
}

#[test]
fn capsid_skills_export_and_import_through_the_github_app_postgres() {
    export_and_import(true);
}
