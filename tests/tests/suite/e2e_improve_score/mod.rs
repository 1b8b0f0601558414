//! End to end over real HTTP, on both stores: `POST /improve/score` (reference 8.3) with one
//! case per refusal, a kept and a reverted verdict moving the attempt and its run, a report for
//! an attempt no longer waiting (409, nothing changes), and the reference's test vector
//! verifying; `POST /improve/holdout-credential` minting a token that reads its namespace's
//! holdout, not another's, and not after an hour. The server's clock is a `ManualClock` set
//! to the vector's instant; the run and attempt are put in place through the `RunStore` port,
//! as the loop's tick leaves them (the tick itself is a later slice). `refusals.rs` holds a
//! case per refusal, `verdicts.rs` the verdicts and the vector, `holdout.rs` the credential,
//! `pinning.rs` `improve_run pin` and the pin state `improve_status` reports.

mod holdout;
mod pinning;
mod refusals;
mod verdicts;

use holdout::*;
use pinning::*;
use refusals::*;
use verdicts::*;

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use capsid_blobs::ObjectBlobStore;
use capsid_core::improve::anchors::anchors_checksum;
use capsid_core::improve::keys::{anchor_key, best_key};
use capsid_core::improve::machine::{
    AttemptEvent, AttemptStatus, RunEvent, RunStatus, RunTally, attempt, attempt_branch,
    attempt_id, run, run_id,
};
use capsid_core::improve::report::{
    NAMESPACE_HEADER, SIGNATURE_HEADER, TIMESTAMP_HEADER, sign_report,
};
use capsid_core::ports::{
    Advance, Advanced, AttemptUpdate, AuditEntry, BlobStore, Change, NewAttempt, NewRun, RunOpened,
    RunUpdate, Store,
};
use capsid_core::time::Timestamp;
use capsid_tests::harness::Backend;
use capsid_tests::server::{ServerOptions, TestServer};
use serde_json::{Value, json};

/// The reference's root secret, instant, body and signature (also in core's report tests).
pub(crate) const ROOT: &str = "test-root-secret";
/// A legacy write operator key: an admin over real MCP.
pub(crate) const OP_WRITE: &str = "operator-write-key-for-pin-tests";
pub(crate) const TS: &str = "2026-12-01T03:00:00Z";
pub(crate) const VECTOR_BODY: &str = r#"{"namespace":"capsid","run_id":"capsid-2026-12-01T03-00-00","attempt_id":"capsid-2026-12-01T03-00-00-a01","head_sha":"0123456789abcdef0123456789abcdef01234567","jti":"j-0001","anchors":{"tests_pass":1},"secondary":{"bundle_kb":412.5,"lint_warnings":null},"holdout":{"total":40,"passed":38},"ci_minutes":6.5}"#;
pub(crate) const VECTOR_SIG: &str =
    "765c70a5f3840732fe72f7acb476503002e9d854f59d7b2eb38ab0fc89df7f96";
pub(crate) const HEAD: &str = "0123456789abcdef0123456789abcdef01234567";
pub(crate) const SCORES_MD: &str = "# Scores\n\n## Anchors\n- tests_pass: required\n- holdout_pass_rate: min 0.5\n\n## Secondary\n- bundle_kb: minimize weight 1\n- lint_warnings: minimize weight 1\n";

/// A server at the vector's instant with a holdout folder, and what the cases need.
pub(crate) struct Env {
    pub(crate) s: TestServer,
    pub(crate) http: reqwest::Client,
    pub(crate) run: String,
    pub(crate) attempt: String,
    _dir: tempfile::TempDir,
}

type Case = for<'a> fn(&'a Env) -> Pin<Box<dyn Future<Output = ()> + Send + 'a>>;

async fn run_case<S: Backend>(name: &str, no_secret: bool, case: Case) {
    let Some(fresh) = S::fresh(name).await else {
        return;
    };
    let store: Arc<dyn Store> = fresh.store.clone();
    let dir = tempfile::tempdir().expect("a temporary folder");
    let holdout = Arc::new(ObjectBlobStore::folder(dir.path().join("holdout")).expect("holdout"));
    let options = ServerOptions {
        signing_secret: Some(ROOT.to_owned()),
        no_signing_secret: no_secret,
        operator_keys: Some(capsid_core::crypto::sha256_hex(OP_WRITE)),
        ..ServerOptions::default()
    };
    let wired: Arc<dyn BlobStore> = holdout.clone();
    let s =
        TestServer::start_customized(store, options, |_| None, move |svc| svc.with_holdout(wired))
            .await;
    s.clock.set(Timestamp::parse(TS).expect("instant"));
    let (run, attempt) = seed(&s, &holdout).await;
    let env = Env {
        s,
        http: reqwest::Client::new(),
        run,
        attempt,
        _dir: dir,
    };
    case(&env).await;
    env.s.stop().await;
    fresh.finish().await;
}

fn loop_audit(action: &str, at: Timestamp) -> AuditEntry {
    AuditEntry {
        actor: "improve-loop".into(),
        action: action.into(),
        namespace: Some("capsid".into()),
        path: Some("improve/".into()),
        params: json!({}),
        at,
    }
}

fn walk(id: &str, from: RunStatus, event: RunEvent, at: Timestamp) -> RunUpdate {
    let step = run::step(from, event).expect("a legal step");
    RunUpdate::walk(id, &[step], at).expect("one step")
}

/// Registers `capsid` and `orchard`, writes and pins `capsid`'s scores document, records a
/// best record, puts the holdout manifests (`capsid` only: `orchard` has none), and leaves a
/// run with its first attempt dispatched and awaiting its score at the vector's head.
async fn seed(s: &TestServer, holdout: &ObjectBlobStore) -> (String, String) {
    s.namespace("capsid").await;
    s.namespace("orchard").await;
    // A fresh install's roster is empty: the admin puts its projects on it.
    for ns in ["capsid", "orchard"] {
        let added = s
            .admin(
                "improve_run",
                json!({"action": "roster", "op": "add", "namespace": ns}),
            )
            .await;
        assert_eq!(added["ok"], true, "{added}");
    }
    let wrote = s
        .admin(
            "write",
            json!({"namespace": "capsid", "path": "improve/scores.md", "title": "Scores",
                   "body": SCORES_MD, "allow_improve_paths": true}),
        )
        .await;
    assert!(wrote.to_string().contains("scores.md"), "{wrote}");
    let now = s.service.now();
    let store = &s.store;
    store
        .put_setting(&anchor_key("capsid"), &anchors_checksum(SCORES_MD), None)
        .await
        .expect("pin");
    let best = json!({"sha": "beef", "run_id": "capsid-earlier", "attempt_id": "capsid-earlier-a01",
        "recorded_at": "2026-11-30T03:00:00Z", "anchors": {"tests_pass": 1},
        "secondary": {"bundle_kb": 420.0, "lint_warnings": 3}, "score": 0.9});
    store
        .put_setting(&best_key("capsid"), &best.to_string(), None)
        .await
        .expect("best record");
    holdout
        .put(
            "improve/holdout/capsid/manifest.json",
            json!({"namespace": "capsid", "total": 40, "updated_at": "2026-11-01T00:00:00Z"})
                .to_string()
                .into_bytes(),
        )
        .await
        .expect("manifest");
    holdout
        .put(
            "improve/holdout/capsid/cases/001.json",
            b"{\"case\": 1}".to_vec(),
        )
        .await
        .expect("case");
    holdout
        .put(
            "improve/holdout/borealis/manifest.json",
            json!({"namespace": "borealis", "total": 3, "updated_at": "2026-11-01T00:00:00Z"})
                .to_string()
                .into_bytes(),
        )
        .await
        .expect("another namespace's manifest");

    let id = run_id("capsid", now).expect("run id");
    let opened = store
        .open_run(
            NewRun {
                id: id.clone(),
                namespace: "capsid".into(),
                mode: "api".into(),
                condition: "full".into(),
                base_sha: Some("beef".into()),
                started: now,
            },
            loop_audit("improve-run-opened", now),
        )
        .await
        .expect("open");
    assert!(matches!(opened, RunOpened::Opened(_)));
    let begin = Advance {
        run: Some(walk(&id, RunStatus::Opening, RunEvent::Begin, now)),
        audits: vec![loop_audit("improve-run-began", now)],
        ..Advance::default()
    };
    assert_eq!(
        store.advance(begin).await.expect("begin"),
        Advanced::Applied
    );
    let attempt = attempt_id(&id, 1).expect("attempt id");
    let mut add = RunUpdate::within(&id, RunStatus::Attempting, now);
    add.tally_before = Some(RunTally::default());
    add.tally = Some(RunTally {
        attempts: 1,
        ..RunTally::default()
    });
    add.current_attempt = Change::Set(attempt.clone());
    let added = store
        .add_attempt(
            NewAttempt {
                id: attempt.clone(),
                namespace: "capsid".into(),
                run_id: id.clone(),
                change_summary: Some("shrink the bundle".into()),
                diff_ref: None,
                branch: attempt_branch(&attempt),
                base_sha: Some("beef".into()),
                lineage_parent: None,
                skill_id: None,
                ts: now,
            },
            add,
            loop_audit("improve-attempt-added", now),
        )
        .await
        .expect("add");
    assert_eq!(added, Advanced::Applied);
    let mut dispatch = AttemptUpdate::step(
        &attempt,
        attempt::step(AttemptStatus::Pending, AttemptEvent::Dispatch).expect("dispatch"),
    );
    dispatch.head_sha = Change::Set(HEAD.into());
    dispatch.dispatched_at = Some(now);
    let dispatched = Advance {
        attempt: Some(dispatch),
        run: Some(walk(&id, RunStatus::Attempting, RunEvent::Dispatch, now)),
        audits: vec![loop_audit("improve-attempt-dispatched", now)],
        ..Advance::default()
    };
    assert_eq!(
        store.advance(dispatched).await.expect("dispatch"),
        Advanced::Applied
    );
    (id, attempt)
}

/// A report body for the seeded attempt.
pub(crate) fn report(env: &Env, jti: &str, bundle_kb: f64, total: u64, passed: u64) -> String {
    json!({"namespace": "capsid", "run_id": env.run, "attempt_id": env.attempt, "head_sha": HEAD,
           "jti": jti, "anchors": {"tests_pass": 1}, "secondary": {"bundle_kb": bundle_kb, "lint_warnings": 3},
           "holdout": {"total": total, "passed": passed}, "ci_minutes": 4.0})
    .to_string()
}

pub(crate) async fn post_as(
    env: &Env,
    path: &str,
    ns: &str,
    ts: &str,
    sig: &str,
    body: String,
) -> (u16, Value) {
    let resp = env
        .http
        .post(format!("{}{path}", env.s.url))
        .header(NAMESPACE_HEADER, ns)
        .header(TIMESTAMP_HEADER, ts)
        .header(SIGNATURE_HEADER, sig)
        .body(body)
        .send()
        .await
        .expect("post");
    let status = resp.status().as_u16();
    (status, resp.json().await.unwrap_or(Value::Null))
}

/// Posts `body` to `path` for `ns`, signed now with the right key.
pub(crate) async fn signed(env: &Env, path: &str, ns: &str, body: String) -> (u16, Value) {
    let ts = env.s.service.now().to_string();
    let sig = sign_report(ROOT, ns, &ts, body.as_bytes());
    post_as(env, path, ns, &ts, &sig, body).await
}

pub(crate) async fn attempt_status(env: &Env) -> AttemptStatus {
    env.s
        .store
        .attempt(&env.attempt)
        .await
        .expect("attempt")
        .expect("row")
        .status
}

pub(crate) async fn run_status(env: &Env) -> RunStatus {
    env.s
        .store
        .run(&env.run)
        .await
        .expect("run")
        .expect("row")
        .status
}

pub(crate) fn description(v: &Value) -> String {
    v["error_description"].as_str().unwrap_or("").to_owned()
}

macro_rules! both_stores {
    ($($no_secret:literal $case:ident),* $(,)?) => {
        mod sqlite {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $case() {
                    super::run_case::<capsid_store_sqlite::SqliteStore>(stringify!($case), $no_secret, |e| Box::pin(super::$case(e))).await;
                }
            )*
        }
        mod postgres {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $case() {
                    super::run_case::<capsid_store_postgres::PgStore>(stringify!($case), $no_secret, |e| Box::pin(super::$case(e))).await;
                }
            )*
        }
    };
}

both_stores! {
    true secret_unset_is_503,
    false envelope_refusals_change_nothing,
    false oversized_bodies_are_refused_unread,
    false holdout_manifest_refusals,
    false unknown_or_late_attempts_change_nothing,
    false a_better_report_keeps_the_attempt,
    false a_worse_report_reverts_the_attempt,
    false the_reference_vector_verifies,
    false holdout_credential_reads_only_its_namespace_for_an_hour,
    false a_pin_follows_the_anchors_and_guards_the_score,
}
