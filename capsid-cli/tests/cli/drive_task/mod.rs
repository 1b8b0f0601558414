//! `capsid drive --task` end to end, on SQLite and on Postgres: the real HTTP server over a
//! real store (`capsid_tests::server`), the real `capsid` binary, a real git project with a
//! bare origin, and a fake agent script. The opener's task document is written by the
//! service's own `write_task_document` on the server's service (the opener itself is the
//! lead's slice). It verifies over MCP; session A drives it under the driver lease with the
//! body on the agent's stdin and the hooks installed; session B, started while A's agent runs,
//! is refused and named A; after A releases, B may claim. A failing test gate still releases
//! the lease, a key without the namespace is told nothing, and an edited document is refused.

use std::path::{Path, PathBuf};
use std::process::Output;
use std::sync::Arc;

use capsid_core::improve::keys::driver_key;
use capsid_core::improve::machine::run_id;
use capsid_core::ports::{AuditEntry, NewRun, RunOpened, Store};
use capsid_tests::harness::Backend;
use capsid_tests::server::{ServerOptions, TestServer};
use serde_json::{Value, json};

const BIN: &str = env!("CARGO_BIN_EXE_capsid");
const DATE: &str = "2026-12-01";
const TASK: &str = "demo/improve/run-2026-12-01.md";

fn git(dir: &Path, args: &[&str]) {
    let out = std::process::Command::new("git")
        .args(args)
        .current_dir(dir)
        .output()
        .expect("run git");
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A git project with a test script and a bare origin.
fn project(dir: &Path) -> PathBuf {
    let origin = dir.join("demo-origin.git");
    git(
        dir,
        &[
            "init",
            "-q",
            "--bare",
            "-b",
            "main",
            &origin.display().to_string(),
        ],
    );
    let root = dir.join("demo");
    std::fs::create_dir_all(&root).expect("project folder");
    git(&root, &["init", "-q", "-b", "main"]);
    git(&root, &["config", "user.name", "Capsid Test"]);
    git(&root, &["config", "user.email", "test@capsid.invalid"]);
    std::fs::write(
        root.join("test.sh"),
        "if [ -f state.txt ] && grep -q broken state.txt; then\n  echo 'widgets are broken'\n  exit 1\nfi\necho 'all tests passed'\n",
    )
    .expect("test.sh");
    git(&root, &["add", "."]);
    git(&root, &["commit", "-qm", "The project"]);
    git(
        &root,
        &["remote", "add", "origin", &origin.display().to_string()],
    );
    git(&root, &["push", "-q", "origin", "main"]);
    root
}

fn fake_agent() -> String {
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/cli/drive_task/fake_task_agent.sh");
    format!("sh {}", path.display())
}

fn said(out: &Output) -> String {
    format!(
        "exit {:?}\n--- stdout\n{}\n--- stderr\n{}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// The `capsid drive --task` command line (without the key).
fn drive_line(url: &str, root: &Path, task: &str) -> Vec<String> {
    [
        "drive",
        "--unboxed",
        "--task",
        task,
        "--url",
        url,
        "--root-dir",
        &root.display().to_string(),
        "--test-command",
        "sh test.sh",
        "--agent-command",
        &fake_agent(),
    ]
    .iter()
    .map(|s| (*s).to_owned())
    .collect()
}

/// Runs `capsid drive --task` with `key` and `env`.
async fn drive(url: &str, root: &Path, key: &str, log: &Path, env: &[(&str, &str)]) -> Output {
    let mut c = tokio::process::Command::new(BIN);
    c.args(drive_line(url, root, TASK))
        .env("CAPSID_KEY", key)
        .env("TASK_LOG", log)
        .env_remove("CAPSID_NAMESPACE")
        .env_remove("CAPSID_TEST_COMMAND")
        .env_remove("CAPSID_BUILD_COMMAND")
        .env_remove("CAPSID_CREDENTIAL_REF")
        .env_remove("SECOND_DRIVER")
        .env_remove("TASK_BREAK")
        .env("GIT_AUTHOR_NAME", "Fake Agent")
        .env("GIT_AUTHOR_EMAIL", "agent@capsid.invalid")
        .env("GIT_COMMITTER_NAME", "Fake Agent")
        .env("GIT_COMMITTER_EMAIL", "agent@capsid.invalid");
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().await.expect("run capsid drive --task")
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_default()
}

async fn lease(s: &TestServer) -> Option<String> {
    s.store
        .setting(&driver_key("demo"), s.service.now())
        .await
        .expect("setting")
}

async fn the_task_document_is_driven_by_the_lease_holder_only<S: Backend>(case: &str) {
    let Some(fresh) = S::fresh(case).await else {
        return;
    };
    let store: Arc<dyn Store> = fresh.store.clone();
    let s = TestServer::start(store.clone(), ServerOptions::default()).await;
    s.namespace("demo").await;
    s.namespace("other").await;
    let axes = json!({"namespaces": ["demo"], "grants": ["read", "write"]});
    let a_key = s.mint("demo-driver-a", "driver", axes.clone()).await;
    let b_key = s.mint("demo-driver-b", "driver", axes).await;
    let outsider = s
        .mint(
            "other-driver",
            "driver",
            json!({"namespaces": ["other"], "grants": ["read", "write"]}),
        )
        .await;

    // The opener's step: a subscription run and its task document, by the service.
    let now = s.service.now();
    let opened = store
        .open_run(
            NewRun {
                id: run_id("demo", now).expect("run id"),
                namespace: "demo".into(),
                mode: "subscription".into(),
                condition: "full".into(),
                base_sha: None,
                started: now,
            },
            AuditEntry {
                actor: "improve-loop".into(),
                action: "improve-run-opened".into(),
                namespace: Some("demo".into()),
                path: Some("improve/".into()),
                params: json!({}),
                at: now,
            },
        )
        .await
        .expect("open run");
    let RunOpened::Opened(run) = opened else {
        panic!("a live run already exists");
    };
    let path = s
        .service
        .write_task_document(&run, DATE)
        .await
        .expect("write the task document");
    assert_eq!(format!("demo/{path}"), TASK);

    // It verifies over MCP for a key of the namespace, and tells another namespace's key nothing.
    let a = s.client(&a_key).await;
    let status = a
        .ok(
            "improve_status",
            json!({"namespace": "demo", "task_path": TASK}),
        )
        .await;
    let v = &status["task_verification"];
    assert_eq!(v["ok"], json!(true), "{v}");
    assert_eq!(v["actor"], json!("improve-loop"), "{v}");
    assert_eq!(v["run_id"], json!(run.id), "{v}");
    let other = s.client(&outsider).await;
    let denied = other
        .err(
            "improve_status",
            json!({"namespace": "demo", "task_path": TASK}),
        )
        .await;
    assert!(denied.contains("scope refused"), "{denied}");
    let hidden = other
        .ok(
            "improve_status",
            json!({"namespace": "other", "task_path": TASK}),
        )
        .await;
    let h = &hidden["task_verification"];
    assert_eq!(h["ok"], json!(false), "{h}");
    assert_eq!(h["actor"], Value::Null, "{h}");
    assert!(
        h["reason"]
            .as_str()
            .unwrap_or("")
            .contains("not a task document of namespace other"),
        "{h}"
    );
    assert!(h.get("run_id").is_none(), "{h}");

    let dir = tempfile::tempdir().expect("temporary folder");
    let root = project(dir.path());
    let log = dir.path().join("task.log");
    // Session B, started by A's agent while A holds the lease.
    let b_line = drive_line(&s.url, &root, TASK)
        .iter()
        .map(|a| format!("'{a}'"))
        .collect::<Vec<_>>()
        .join(" ");
    let second = format!("CAPSID_KEY='{b_key}' '{BIN}' {b_line}");
    let out = drive(&s.url, &root, &a_key, &log, &[("SECOND_DRIVER", &second)]).await;
    assert_eq!(out.status.code(), Some(0), "{}", said(&out));
    assert!(
        String::from_utf8_lossy(&out.stdout)
            .contains("task demo/improve/run-2026-12-01.md: agent exit 0, tests pass"),
        "{}",
        said(&out)
    );

    // A's agent ran with the task body (no signature), in a fresh worktree, under the hooks.
    let stdin = read(&log.with_extension("log.stdin"));
    let stored = store
        .document("demo", &path)
        .await
        .expect("read")
        .expect("stored");
    let body = capsid_core::jobs::signature::split_signed(stored.body_text())
        .expect("sealed")
        .body;
    assert_eq!(stdin, body.trim_end_matches('\n'), "the agent got the body");
    assert!(!stdin.contains("capsid-task-signature"), "{stdin}");
    assert!(stdin.contains(&format!("run_id: {}", run.id)), "{stdin}");
    let wt = root.join(".capsid/worktrees/improve-run-2026-12-01");
    let seen = read(&log);
    assert!(
        seen.contains(&format!(
            "agent=demo-driver-a ns=demo task={TASK} run={} job=none hooks=yes cwd={}",
            run.id,
            wt.display()
        )),
        "{seen}"
    );

    // B was refused while A held the lease, and was told who holds it; its agent never ran.
    assert_eq!(
        read(&log.with_extension("log.b.rc")).trim(),
        "2",
        "B: {}",
        read(&log.with_extension("log.b.err"))
    );
    let b_err = read(&log.with_extension("log.b.err"));
    assert!(
        b_err.contains("the driver lease of demo is held by agent:demo-driver-a"),
        "{b_err}"
    );
    assert_eq!(seen.lines().count(), 1, "only A's agent ran: {seen}");

    // A released the lease at the end; now B may claim it.
    assert_eq!(lease(&s).await, None);
    let b = s.client(&b_key).await;
    let claimed = b
        .ok(
            "improve_run",
            json!({"action": "claim", "namespace": "demo"}),
        )
        .await;
    assert_eq!(claimed["ok"], json!(true), "{claimed}");
    assert_eq!(claimed["holder"], json!("agent:demo-driver-b"), "{claimed}");
    let refused = a
        .ok(
            "improve_run",
            json!({"action": "claim", "namespace": "demo"}),
        )
        .await;
    assert_eq!(refused["ok"], json!(false), "{refused}");
    let released = b
        .ok(
            "improve_run",
            json!({"action": "claim", "namespace": "demo", "release": true}),
        )
        .await;
    assert_eq!(released["released"], json!(true), "{released}");

    // A failing test gate is gated (exit 4), and the lease is released all the same.
    let out = drive(&s.url, &root, &b_key, &log, &[("TASK_BREAK", "1")]).await;
    assert_eq!(out.status.code(), Some(4), "{}", said(&out));
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("tests fail"),
        "{}",
        said(&out)
    );
    assert_eq!(lease(&s).await, None, "released after a failure");

    // An edited document does not verify: the driver refuses before taking the lease.
    let edited = stored
        .body_text()
        .replace("attempt_limit: 10", "attempt_limit: 99");
    s.admin(
        "write",
        json!({"namespace": "demo", "path": path, "title": "Edited", "body": edited,
               "allow_improve_paths": true, "confirm": true}),
    )
    .await;
    let out = drive(&s.url, &root, &a_key, &log, &[]).await;
    assert_eq!(out.status.code(), Some(2), "{}", said(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("does not verify"),
        "{}",
        said(&out)
    );
    assert_eq!(
        lease(&s).await,
        None,
        "no lease taken for a refused document"
    );

    drop((a, b, other));
    s.stop().await;
    fresh.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_the_task_document_is_driven_by_the_lease_holder_only() {
    the_task_document_is_driven_by_the_lease_holder_only::<capsid_store_sqlite::SqliteStore>(
        "drive_task_sqlite",
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_the_task_document_is_driven_by_the_lease_holder_only() {
    the_task_document_is_driven_by_the_lease_holder_only::<capsid_store_postgres::PgStore>(
        "drive_task_postgres",
    )
    .await;
}
