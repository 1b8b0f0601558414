//! Subscription mode's signed task document through the service, on both stores: the document
//! the opener writes verifies (seal and the loop as last audit actor) and rewriting it changes
//! nothing; one edited afterwards does not verify; one sealed with the right secret but written
//! by another actor does not either (reference 6.3's last-actor rule); no secret refuses the
//! write and verifies nothing; and `improve_status` answers `task_verification` with it.

use std::sync::Arc;

use capsid_core::caller::Caller;
use capsid_core::improve::machine::run_id;
use capsid_core::jobs::signature::seal_task;
use capsid_core::ports::{AuditEntry, AuditFilter, NewRun, RunOpened, RunRow, Store};
use capsid_core::service::{NoConfirmer, Service, ServiceConfig};
use capsid_core::time::{ManualClock, Timestamp};
use capsid_tests::harness::Backend;
use capsid_tests::server::{TEST_SECRET, TestEntropy};
use serde_json::{Value, json};

const DATE: &str = "2026-12-01";
const PATH: &str = "improve/run-2026-12-01.md";

fn service(store: Arc<dyn Store>, secret: Option<&str>) -> Service {
    Service::new(
        store,
        Arc::new(ManualClock::new(
            Timestamp::parse("2026-12-01T09:00:00Z").expect("instant"),
        )),
        Arc::new(TestEntropy),
        ServiceConfig {
            signing_secret: secret.map(str::to_owned),
            operator_keys: Vec::new(),
            ..Default::default()
        },
    )
}

async fn call(s: &Service, caller: &Caller, tool: &str, args: Value) -> Value {
    s.call_tool(caller, tool, args, &NoConfirmer)
        .await
        .unwrap_or_else(|e| panic!("{tool}: {e}"))
}

/// Registers `demo` and opens a subscription run there.
async fn open_run(s: &Service, store: &Arc<dyn Store>) -> RunRow {
    let admin = Caller::cli("test");
    call(
        s,
        &admin,
        "register_namespace",
        json!({"namespace": "demo", "repo": "octo/demo"}),
    )
    .await;
    let now = s.now();
    let id = run_id("demo", now).expect("run id");
    let opened = store
        .open_run(
            NewRun {
                id,
                namespace: "demo".into(),
                mode: "subscription".into(),
                condition: "full".into(),
                base_sha: Some("0123456789abcdef0123456789abcdef01234567".into()),
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
        .expect("open");
    match opened {
        RunOpened::Opened(run) => *run,
        RunOpened::LiveRunExists => panic!("a live run already exists"),
    }
}

async fn audit_rows(store: &Arc<dyn Store>) -> usize {
    store
        .recent_audit(&AuditFilter::default(), 500)
        .await
        .expect("audit")
        .iter()
        .filter(|r| r.path.as_deref() == Some(PATH))
        .count()
}

async fn written_verifies_and_rewriting_changes_nothing(store: Arc<dyn Store>) {
    let s = service(store.clone(), Some(TEST_SECRET));
    let run = open_run(&s, &store).await;
    let path = s.write_task_document(&run, DATE).await.expect("write");
    assert_eq!(path, PATH);
    let v = s.verify_task_document("demo", PATH).await.expect("verify");
    assert_eq!(v["ok"], json!(true), "{v}");
    assert_eq!(v["actor"], json!("improve-loop"), "{v}");
    assert_eq!(v["reason"], Value::Null, "{v}");
    assert_eq!(v["run_id"], json!(run.id), "{v}");
    let doc = store
        .document("demo", PATH)
        .await
        .expect("read")
        .expect("stored");
    assert!(
        doc.body_text().starts_with("---\ncapsid-task-signature: "),
        "{}",
        doc.body_text()
    );
    assert!(doc.body_text().contains(&format!("run_id: {}", run.id)));
    assert_eq!(audit_rows(&store).await, 1);

    // The same run again: nothing is written, no version, no audit row.
    assert_eq!(
        s.write_task_document(&run, DATE).await.expect("again"),
        PATH
    );
    assert_eq!(audit_rows(&store).await, 1);
    assert!(
        store
            .versions("demo", PATH, 10)
            .await
            .expect("versions")
            .is_empty()
    );

    // improve_status answers it, by <ns>/<path> and by namespace + path.
    let admin = Caller::cli("test");
    for args in [
        json!({"task_path": format!("demo/{PATH}")}),
        json!({"namespace": "demo", "task_path": PATH}),
    ] {
        let status = call(&s, &admin, "improve_status", args.clone()).await;
        assert_eq!(
            status["task_verification"]["ok"],
            json!(true),
            "{args}: {}",
            status["task_verification"]
        );
    }
    let status = call(&s, &admin, "improve_status", json!({"task_path": PATH})).await;
    assert_eq!(status["task_verification"]["ok"], json!(false));
    assert!(
        status["task_verification"]["reason"]
            .as_str()
            .unwrap_or("")
            .contains("name the namespace"),
        "{status}"
    );
    let bad = s
        .verify_task_document("demo", "improve/scores.md")
        .await
        .expect("verify");
    assert_eq!(bad["ok"], json!(false));
    assert!(
        bad["reason"]
            .as_str()
            .unwrap_or("")
            .contains("not a task document path"),
        "{bad}"
    );
    let missing = s
        .verify_task_document("demo", "improve/run-2026-12-02.md")
        .await
        .expect("verify");
    assert_eq!(missing["ok"], json!(false));
    assert!(
        missing["reason"]
            .as_str()
            .unwrap_or("")
            .contains("no task document"),
        "{missing}"
    );
}

async fn an_edited_document_does_not_verify(store: Arc<dyn Store>) {
    let s = service(store.clone(), Some(TEST_SECRET));
    let run = open_run(&s, &store).await;
    s.write_task_document(&run, DATE).await.expect("write");
    let stored = store
        .document("demo", PATH)
        .await
        .expect("read")
        .expect("stored")
        .body_text()
        .to_owned();
    let edited = stored.replace("attempt_limit: 10", "attempt_limit: 99");
    assert_ne!(edited, stored);
    let wrote = call(
        &s,
        &Caller::cli("editor"),
        "write",
        json!({"namespace": "demo", "path": PATH, "title": "Edited", "body": edited, "allow_improve_paths": true, "confirm": true}),
    )
    .await;
    assert!(wrote.to_string().contains(PATH), "{wrote}");
    let v = s.verify_task_document("demo", PATH).await.expect("verify");
    assert_eq!(v["ok"], json!(false), "{v}");
    assert!(
        v["reason"]
            .as_str()
            .unwrap_or("")
            .contains("edited after it was signed"),
        "{v}"
    );

    // The loop writes it again: the seal and the last actor are its own once more.
    s.write_task_document(&run, DATE).await.expect("rewrite");
    let v = s.verify_task_document("demo", PATH).await.expect("verify");
    assert_eq!(v["ok"], json!(true), "{v}");
}

async fn a_valid_seal_by_another_actor_does_not_verify(store: Arc<dyn Store>) {
    let s = service(store.clone(), Some(TEST_SECRET));
    let run = open_run(&s, &store).await;
    s.write_task_document(&run, DATE).await.expect("write");
    let body = capsid_core::jobs::signature::split_signed(
        store
            .document("demo", PATH)
            .await
            .expect("read")
            .expect("stored")
            .body_text(),
    )
    .expect("an envelope")
    .body
    .replace("attempt_limit: 10", "attempt_limit: 99");
    // Whoever holds the secret can seal; only the loop's own write makes a task document.
    let forged = seal_task(TEST_SECRET, &body);
    call(
        &s,
        &Caller::cli("mallory"),
        "write",
        json!({"namespace": "demo", "path": PATH, "title": "Forged", "body": forged, "allow_improve_paths": true, "confirm": true}),
    )
    .await;
    let v = s.verify_task_document("demo", PATH).await.expect("verify");
    assert_eq!(v["ok"], json!(false), "{v}");
    assert_eq!(v["actor"], json!("cli:mallory"), "{v}");
    assert!(
        v["reason"]
            .as_str()
            .unwrap_or("")
            .contains("last changed by cli:mallory, not by improve-loop"),
        "{v}"
    );
}

async fn no_secret_writes_nothing_and_verifies_nothing(store: Arc<dyn Store>) {
    let s = service(store.clone(), None);
    let run = open_run(&s, &store).await;
    let err = s
        .write_task_document(&run, DATE)
        .await
        .expect_err("refused")
        .to_string();
    assert!(err.contains("CAPSID_SIGNING_SECRET"), "{err}");
    assert!(store.document("demo", PATH).await.expect("read").is_none());
    let bad_date = service(store.clone(), Some(TEST_SECRET))
        .write_task_document(&run, "2026-02-30")
        .await
        .expect_err("refused")
        .to_string();
    assert!(bad_date.contains("YYYY-MM-DD"), "{bad_date}");
    let mut api = run.clone();
    api.mode = "api".into();
    let not_sub = service(store.clone(), Some(TEST_SECRET))
        .write_task_document(&api, DATE)
        .await
        .expect_err("refused")
        .to_string();
    assert!(not_sub.contains("only subscription runs"), "{not_sub}");
    assert!(store.document("demo", PATH).await.expect("read").is_none());
    let v = s.verify_task_document("demo", PATH).await.expect("verify");
    assert_eq!(v["ok"], json!(false));
    assert!(
        v["reason"]
            .as_str()
            .unwrap_or("")
            .contains("signing is not configured"),
        "{v}"
    );
}

async fn run_on<S: Backend>(case: &str, body: fn(Arc<dyn Store>) -> Case) {
    let Some(fresh) = S::fresh(case).await else {
        return;
    };
    let store: Arc<dyn Store> = fresh.store.clone();
    body(store).await;
    fresh.finish().await;
}

type Case = std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>>;

macro_rules! both_stores {
    ($($case:ident),* $(,)?) => {
        mod sqlite {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $case() {
                    super::run_on::<capsid_store_sqlite::SqliteStore>(stringify!($case), |s| Box::pin(super::$case(s))).await;
                }
            )*
        }
        mod postgres {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $case() {
                    super::run_on::<capsid_store_postgres::PgStore>(stringify!($case), |s| Box::pin(super::$case(s))).await;
                }
            )*
        }
    };
}

both_stores! {
    written_verifies_and_rewriting_changes_nothing,
    an_edited_document_does_not_verify,
    a_valid_seal_by_another_actor_does_not_verify,
    no_secret_writes_nothing_and_verifies_nothing,
}
