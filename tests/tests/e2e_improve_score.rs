//! End to end over real HTTP, on both stores: `POST /improve/score` (reference 8.3) with one
//! case per refusal, a kept and a reverted verdict moving the attempt and its run, a report for
//! an attempt no longer waiting (409, nothing changes), and the reference's test vector
//! verifying; `POST /improve/holdout-credential` minting a token that reads its namespace's
//! holdout, not another's, and not after an hour. The server's clock is a `ManualClock` set
//! to the vector's instant; the run and attempt are put in place through the `RunStore` port,
//! as the loop's tick leaves them (the tick itself is a later slice).

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use capsid_blobs::ObjectBlobStore;
use capsid_core::improve::anchors::anchors_checksum;
use capsid_core::improve::holdout::HOLDOUT_TOKEN_TTL_MS;
use capsid_core::improve::keys::{anchor_key, best_key};
use capsid_core::improve::machine::{
    AttemptEvent, AttemptStatus, RunEvent, RunStatus, RunTally, attempt, attempt_branch,
    attempt_id, run, run_id,
};
use capsid_core::improve::report::{
    MAX_BODY_BYTES, NAMESPACE_HEADER, SIGNATURE_HEADER, TIMESTAMP_HEADER, sign_report,
};
use capsid_core::ports::{
    Advance, Advanced, AttemptUpdate, AuditEntry, AuditFilter, BlobStore, Change, NewAttempt,
    NewRun, RunOpened, RunUpdate, Store,
};
use capsid_core::time::{MINUTE_MS, Timestamp};
use capsid_tests::harness::Backend;
use capsid_tests::server::{ServerOptions, TestServer};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// The reference's root secret, instant, body and signature (also in core's report tests).
const ROOT: &str = "test-root-secret";
const TS: &str = "2026-12-01T03:00:00Z";
const VECTOR_BODY: &str = r#"{"namespace":"capsid","run_id":"capsid-2026-12-01T03-00-00","attempt_id":"capsid-2026-12-01T03-00-00-a01","head_sha":"0123456789abcdef0123456789abcdef01234567","jti":"j-0001","anchors":{"tests_pass":1},"secondary":{"bundle_kb":412.5,"lint_warnings":null},"holdout":{"total":40,"passed":38},"ci_minutes":6.5}"#;
const VECTOR_SIG: &str = "765c70a5f3840732fe72f7acb476503002e9d854f59d7b2eb38ab0fc89df7f96";
const HEAD: &str = "0123456789abcdef0123456789abcdef01234567";
const SCORES_MD: &str = "# Scores\n\n## Anchors\n- tests_pass: required\n- holdout_pass_rate: min 0.5\n\n## Secondary\n- bundle_kb: minimize weight 1\n- lint_warnings: minimize weight 1\n";

/// A server at the vector's instant with a holdout folder, and what the cases need.
struct Env {
    s: TestServer,
    http: reqwest::Client,
    run: String,
    attempt: String,
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

/// Registers `capsid` and `foxing`, writes and pins `capsid`'s scores document, records a
/// best record, puts the holdout manifests (`capsid` only: `foxing` has none), and leaves a
/// run with its first attempt dispatched and awaiting its score at the vector's head.
async fn seed(s: &TestServer, holdout: &ObjectBlobStore) -> (String, String) {
    s.namespace("capsid").await;
    s.namespace("foxing").await;
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
            "improve/holdout/germomics/manifest.json",
            json!({"namespace": "germomics", "total": 3, "updated_at": "2026-11-01T00:00:00Z"})
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
fn report(env: &Env, jti: &str, bundle_kb: f64, total: u64, passed: u64) -> String {
    json!({"namespace": "capsid", "run_id": env.run, "attempt_id": env.attempt, "head_sha": HEAD,
           "jti": jti, "anchors": {"tests_pass": 1}, "secondary": {"bundle_kb": bundle_kb, "lint_warnings": 3},
           "holdout": {"total": total, "passed": passed}, "ci_minutes": 4.0})
    .to_string()
}

async fn post_as(
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
async fn signed(env: &Env, path: &str, ns: &str, body: String) -> (u16, Value) {
    let ts = env.s.service.now().to_string();
    let sig = sign_report(ROOT, ns, &ts, body.as_bytes());
    post_as(env, path, ns, &ts, &sig, body).await
}

async fn attempt_status(env: &Env) -> AttemptStatus {
    env.s
        .store
        .attempt(&env.attempt)
        .await
        .expect("attempt")
        .expect("row")
        .status
}

async fn run_status(env: &Env) -> RunStatus {
    env.s
        .store
        .run(&env.run)
        .await
        .expect("run")
        .expect("row")
        .status
}

fn description(v: &Value) -> String {
    v["error_description"].as_str().unwrap_or("").to_owned()
}

async fn secret_unset_is_503(env: &Env) {
    let (status, why) = signed(
        env,
        "/improve/score",
        "capsid",
        report(env, "j1", 400.0, 40, 40),
    )
    .await;
    assert_eq!(status, 503, "{why}");
    assert!(description(&why).contains("not configured"), "{why}");
    let (status, _) = signed(
        env,
        "/improve/holdout-credential",
        "capsid",
        r#"{"jti":"c1"}"#.into(),
    )
    .await;
    assert_eq!(status, 503);
    assert_eq!(attempt_status(env).await, AttemptStatus::AwaitingScore);
}

async fn envelope_refusals_change_nothing(env: &Env) {
    let body = report(env, "j-env", 400.0, 40, 40);
    let now = env.s.service.now();
    let ts = now.to_string();
    let sig = sign_report(ROOT, "capsid", &ts, body.as_bytes());
    let (status, why) = post_as(env, "/improve/score", "Capsid!", &ts, &sig, body.clone()).await;
    assert_eq!(status, 400, "bad namespace: {why}");
    assert!(description(&why).contains(NAMESPACE_HEADER), "{why}");
    let (status, why) = post_as(
        env,
        "/improve/score",
        "capsid",
        "yesterday",
        &sig,
        body.clone(),
    )
    .await;
    assert_eq!(status, 400, "unparseable timestamp: {why}");
    let old = now.plus_millis(-31 * MINUTE_MS).to_string();
    let old_sig = sign_report(ROOT, "capsid", &old, body.as_bytes());
    let (status, why) = post_as(
        env,
        "/improve/score",
        "capsid",
        &old,
        &old_sig,
        body.clone(),
    )
    .await;
    assert_eq!(status, 401, "31 minutes old: {why}");
    assert!(description(&why).contains("30 minutes"), "{why}");
    let inside = now.plus_millis(-29 * MINUTE_MS).to_string();
    let wrong = sign_report("another-root", "capsid", &inside, body.as_bytes());
    let (status, why) = post_as(
        env,
        "/improve/score",
        "capsid",
        &inside,
        &wrong,
        body.clone(),
    )
    .await;
    assert_eq!(status, 401, "bad signature: {why}");
    let foreign = sign_report(ROOT, "foxing", &ts, body.as_bytes());
    let (status, _) = post_as(env, "/improve/score", "capsid", &ts, &foreign, body.clone()).await;
    assert_eq!(status, 401, "another namespace's key");
    assert_eq!(attempt_status(env).await, AttemptStatus::AwaitingScore);
    // The jti was never claimed by a refused envelope: the same report now goes through once.
    let (status, why) = post_as(env, "/improve/score", "capsid", &ts, &sig, body.clone()).await;
    assert_eq!(status, 200, "{why}");
    let (status, why) = post_as(env, "/improve/score", "capsid", &ts, &sig, body).await;
    assert_eq!(status, 409, "replay: {why}");
    assert!(description(&why).contains("already used"), "{why}");
}

/// Sends a request head and part of a body over a raw socket and reads the answer; the body
/// is never finished, so an answer proves the server stopped reading.
async fn raw_answer(env: &Env, head: &str, body_part: &[u8]) -> String {
    let addr = env.s.url.trim_start_matches("http://");
    let mut sock = tokio::net::TcpStream::connect(addr).await.expect("connect");
    sock.write_all(head.as_bytes()).await.expect("head");
    sock.write_all(body_part).await.expect("body part");
    let mut answer = vec![0u8; 4096];
    let read = tokio::time::timeout(std::time::Duration::from_secs(30), sock.read(&mut answer))
        .await
        .expect("the server answered while the body was still unfinished")
        .expect("read");
    String::from_utf8_lossy(&answer[..read]).into_owned()
}

async fn oversized_bodies_are_refused_unread(env: &Env) {
    let declared = format!(
        "POST /improve/score HTTP/1.1\r\nHost: x\r\n{NAMESPACE_HEADER}: capsid\r\n\
         {TIMESTAMP_HEADER}: {TS}\r\n{SIGNATURE_HEADER}: 00\r\nContent-Length: {}\r\n\r\n",
        MAX_BODY_BYTES + 1
    );
    let answer = raw_answer(env, &declared, b"{\"namespace\":").await;
    assert!(answer.starts_with("HTTP/1.1 413"), "{answer}");
    let chunked = format!(
        "POST /improve/score HTTP/1.1\r\nHost: x\r\n{NAMESPACE_HEADER}: capsid\r\n\
         {TIMESTAMP_HEADER}: {TS}\r\n{SIGNATURE_HEADER}: 00\r\nTransfer-Encoding: chunked\r\n\r\n"
    );
    let mut part = Vec::new();
    for _ in 0..5 {
        part.extend_from_slice(format!("{:x}\r\n", 4096).as_bytes());
        part.extend_from_slice(&[b' '; 4096]);
        part.extend_from_slice(b"\r\n");
    }
    // 20,480 bytes sent, no terminating chunk: the stream is cut off past 16,384.
    let answer = raw_answer(env, &chunked, &part).await;
    assert!(answer.starts_with("HTTP/1.1 413"), "{answer}");
    assert_eq!(attempt_status(env).await, AttemptStatus::AwaitingScore);
    // Exactly at the cap is read (and then judged on its merits: a padded report).
    let mut body = report(env, "j-cap", 400.0, 40, 40);
    body.push_str(&" ".repeat(MAX_BODY_BYTES - body.len()));
    let (status, why) = signed(env, "/improve/score", "capsid", body).await;
    assert_eq!(status, 200, "{why}");
}

async fn holdout_manifest_refusals(env: &Env) {
    let foxing = json!({"namespace": "foxing", "run_id": "foxing-2026-12-01T03-00-00",
        "attempt_id": "foxing-2026-12-01T03-00-00-a01", "head_sha": HEAD, "jti": "f1",
        "anchors": {"tests_pass": 1}, "secondary": {}, "holdout": {"total": 5, "passed": 5}, "ci_minutes": 1})
    .to_string();
    let (status, why) = signed(env, "/improve/score", "foxing", foxing).await;
    assert_eq!(status, 409, "{why}");
    assert!(description(&why).contains("no holdout manifest"), "{why}");
    let (status, why) = signed(
        env,
        "/improve/score",
        "capsid",
        report(env, "short", 400.0, 39, 39),
    )
    .await;
    assert_eq!(status, 409, "{why}");
    assert!(description(&why).contains("manifest holds 40"), "{why}");
    assert_eq!(attempt_status(env).await, AttemptStatus::AwaitingScore);
    assert_eq!(run_status(env).await, RunStatus::AwaitingScore);
}

async fn unknown_or_late_attempts_change_nothing(env: &Env) {
    let mut unknown: Value =
        serde_json::from_str(&report(env, "unknown", 400.0, 40, 40)).expect("json");
    unknown["attempt_id"] = json!(format!("{}-a09", env.run));
    let (status, why) = signed(env, "/improve/score", "capsid", unknown.to_string()).await;
    assert_eq!(status, 409, "{why}");
    assert!(description(&why).contains("no attempt"), "{why}");
    let before = env
        .s
        .store
        .attempt(&env.attempt)
        .await
        .expect("a")
        .expect("row");
    env.s.clock.advance(20 * MINUTE_MS + 1);
    let (status, why) = signed(
        env,
        "/improve/score",
        "capsid",
        report(env, "late", 400.0, 40, 40),
    )
    .await;
    assert_eq!(status, 409, "{why}");
    assert!(description(&why).contains("times out"), "{why}");
    let after = env
        .s
        .store
        .attempt(&env.attempt)
        .await
        .expect("a")
        .expect("row");
    assert_eq!(
        after, before,
        "a late score changes nothing; the tick times the attempt out"
    );
    assert_eq!(run_status(env).await, RunStatus::AwaitingScore);
}

async fn a_better_report_keeps_the_attempt(env: &Env) {
    let (status, answer) = signed(
        env,
        "/improve/score",
        "capsid",
        report(env, "keep", 400.0, 40, 36),
    )
    .await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["verdict"], "kept", "{answer}");
    assert_eq!(answer["holdout_pass_rate"], 0.9);
    assert_eq!(answer["run_status"], "attempting");
    let row = env
        .s
        .store
        .attempt(&env.attempt)
        .await
        .expect("a")
        .expect("row");
    assert_eq!(row.status, AttemptStatus::Kept);
    assert!(row.score_after.is_some_and(|d| d > 0.0), "{row:?}");
    let run = env.s.store.run(&env.run).await.expect("r").expect("row");
    assert_eq!(run.status, RunStatus::Attempting);
    assert_eq!((run.tally.kept, run.tally.reverts), (1, 0));
    assert_eq!(run.ci_minutes, 4.0);
    assert_eq!(run.current_attempt, None);
    let best: Value = serde_json::from_str(
        &env.s
            .store
            .setting(&best_key("capsid"), env.s.service.now())
            .await
            .expect("s")
            .expect("best"),
    )
    .expect("json");
    assert_eq!(best["attempt_id"], env.attempt.as_str());
    assert_eq!(best["sha"], HEAD);
    let audit = env
        .s
        .store
        .recent_audit(
            &AuditFilter {
                namespace: Some("capsid".into()),
                actor: Some("improve-loop".into()),
            },
            10,
        )
        .await
        .expect("audit");
    let actions: Vec<&str> = audit.iter().filter_map(|a| a.action.as_deref()).collect();
    assert!(actions.contains(&"improve-attempt-kept"), "{actions:?}");
    assert!(actions.contains(&"improve-run-scored"), "{actions:?}");

    // The attempt is no longer waiting: a fresh report for it is 409 and changes nothing.
    let (status, why) = signed(
        env,
        "/improve/score",
        "capsid",
        report(env, "late", 300.0, 40, 40),
    )
    .await;
    assert_eq!(status, 409, "{why}");
    assert!(description(&why).contains("not awaiting-score"), "{why}");
    let again = env
        .s
        .store
        .attempt(&env.attempt)
        .await
        .expect("a")
        .expect("row");
    assert_eq!(again, row, "the attempt is unchanged");
    let run_again = env.s.store.run(&env.run).await.expect("r").expect("row");
    assert_eq!(run_again, run, "the run is unchanged");
}

async fn a_worse_report_reverts_the_attempt(env: &Env) {
    let before = env
        .s
        .store
        .setting(&best_key("capsid"), env.s.service.now())
        .await
        .expect("s");
    let (status, answer) = signed(
        env,
        "/improve/score",
        "capsid",
        report(env, "revert", 450.0, 40, 40),
    )
    .await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["verdict"], "reverted", "{answer}");
    assert!(
        answer["reason"]
            .as_str()
            .unwrap_or("")
            .contains("secondary score"),
        "{answer}"
    );
    assert_eq!(attempt_status(env).await, AttemptStatus::Reverted);
    let run = env.s.store.run(&env.run).await.expect("r").expect("row");
    assert_eq!(run.status, RunStatus::Attempting);
    assert_eq!(
        (
            run.tally.kept,
            run.tally.reverts,
            run.tally.consecutive_reverts
        ),
        (0, 1, 1)
    );
    let after = env
        .s
        .store
        .setting(&best_key("capsid"), env.s.service.now())
        .await
        .expect("s");
    assert_eq!(after, before, "a revert leaves the best record");
}

async fn the_reference_vector_verifies(env: &Env) {
    let (status, answer) = post_as(
        env,
        "/improve/score",
        "capsid",
        TS,
        VECTOR_SIG,
        VECTOR_BODY.into(),
    )
    .await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["attempt_id"], "capsid-2026-12-01T03-00-00-a01");
    assert_eq!(
        answer["verdict"], "kept",
        "412.5 kB beats the best record's 420: {answer}"
    );
    assert_eq!(answer["holdout_pass_rate"], 0.95);
    let flipped = VECTOR_SIG.replace('7', "8");
    let (status, _) = post_as(
        env,
        "/improve/score",
        "capsid",
        TS,
        &flipped,
        VECTOR_BODY.into(),
    )
    .await;
    assert_eq!(status, 401);
}

async fn holdout_credential_reads_only_its_namespace_for_an_hour(env: &Env) {
    let (status, cred) = signed(
        env,
        "/improve/holdout-credential",
        "capsid",
        r#"{"jti":"cred-1"}"#.into(),
    )
    .await;
    assert_eq!(status, 200, "{cred}");
    assert_eq!(cred["scope"], "improve/holdout/capsid/");
    assert_eq!(cred["access"], "read");
    let keys: Vec<&str> = cred["objects"]
        .as_array()
        .expect("objects")
        .iter()
        .filter_map(|o| o["key"].as_str())
        .collect();
    assert_eq!(
        keys,
        [
            "improve/holdout/capsid/cases/001.json",
            "improve/holdout/capsid/manifest.json"
        ]
    );
    let (status, _) = signed(
        env,
        "/improve/holdout-credential",
        "capsid",
        r#"{"jti":"cred-1"}"#.into(),
    )
    .await;
    assert_eq!(status, 409, "a jti works once");
    let (status, _) = signed(
        env,
        "/improve/holdout-credential",
        "capsid",
        r#"{"jti":"x","more":1}"#.into(),
    )
    .await;
    assert_eq!(status, 400);
    let token = cred["token"].as_str().expect("a token").to_owned();
    let get = |key: &str| {
        env.http
            .get(format!("{}/improve/holdout/objects/{key}", env.s.url))
            .bearer_auth(&token)
            .send()
    };
    let read = get("improve/holdout/capsid/manifest.json")
        .await
        .expect("get");
    assert_eq!(read.status(), 200);
    let manifest: Value = read.json().await.expect("json");
    assert_eq!(manifest["total"], 40);
    let other = get("improve/holdout/germomics/manifest.json")
        .await
        .expect("get");
    assert_eq!(other.status(), 401, "another namespace's prefix");
    let climb = get("improve/holdout/capsid/../germomics/manifest.json")
        .await
        .expect("get");
    assert_ne!(climb.status(), 200);
    let by_query = env
        .http
        .get(format!(
            "{}/improve/holdout/objects/improve/holdout/capsid/cases/001.json?token={token}",
            env.s.url
        ))
        .send()
        .await
        .expect("get");
    assert_eq!(by_query.status(), 200);
    assert_eq!(
        by_query.bytes().await.expect("bytes").as_ref(),
        b"{\"case\": 1}"
    );
    let anonymous = env
        .http
        .get(format!(
            "{}/improve/holdout/objects/improve/holdout/capsid/manifest.json",
            env.s.url
        ))
        .send()
        .await
        .expect("get");
    assert_eq!(anonymous.status(), 401);
    env.s.clock.advance(HOLDOUT_TOKEN_TTL_MS);
    let expired = get("improve/holdout/capsid/manifest.json")
        .await
        .expect("get");
    assert_eq!(expired.status(), 401, "after an hour");
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
}
