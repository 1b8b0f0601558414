//! One case per refusal of `POST /improve/score`; each leaves the attempt as it was.

use capsid_core::improve::machine::{AttemptStatus, RunStatus};
use capsid_core::improve::report::{
    MAX_BODY_BYTES, NAMESPACE_HEADER, SIGNATURE_HEADER, TIMESTAMP_HEADER, sign_report,
};
use capsid_core::time::MINUTE_MS;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::{
    Env, HEAD, ROOT, TS, attempt_status, description, post_as, report, run_status, signed,
};

pub(crate) async fn secret_unset_is_503(env: &Env) {
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

pub(crate) async fn envelope_refusals_change_nothing(env: &Env) {
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
    let foreign = sign_report(ROOT, "orchard", &ts, body.as_bytes());
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
pub(crate) async fn raw_answer(env: &Env, head: &str, body_part: &[u8]) -> String {
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

pub(crate) async fn oversized_bodies_are_refused_unread(env: &Env) {
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

pub(crate) async fn holdout_manifest_refusals(env: &Env) {
    let orchard = json!({"namespace": "orchard", "run_id": "orchard-2026-12-01T03-00-00",
        "attempt_id": "orchard-2026-12-01T03-00-00-a01", "head_sha": HEAD, "jti": "f1",
        "anchors": {"tests_pass": 1}, "secondary": {}, "holdout": {"total": 5, "passed": 5}, "ci_minutes": 1})
    .to_string();
    let (status, why) = signed(env, "/improve/score", "orchard", orchard).await;
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

pub(crate) async fn unknown_or_late_attempts_change_nothing(env: &Env) {
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
