//! The CI poller (each scenario once per store): pushed checkpoints start `pending`; the
//! scheduler's leader asks the fake GitHub about each commit's check runs through the real
//! adapter and backfills `ci_status` and `ci_checked_at` on that log entry: pending → pass,
//! pending → fail (an `action_required` run is not green), and a commit GitHub cannot read
//! stays pending.

use capsid_core::jobs::lease::LEASE_SWEEP_INTERVAL_MS;
use capsid_core::service::Scheduler;
use capsid_core::time::Clock;
use capsid_tests::fake_github::FakeGitHub;
use capsid_tests::server::{Client, TestServer};
use serde_json::{Value, json};

use super::{ALPHA, setup_alpha};

capsid_tests::github_cases!(pushed_checkpoints_get_their_ci_verdict,);

const GREEN: &str = "1111111111111111111111111111111111111111";
const RED: &str = "2222222222222222222222222222222222222222";
const LOST: &str = "3333333333333333333333333333333333333333";

async fn pusher(s: &TestServer, name: &str) -> Client {
    let key = s
        .mint(
            name,
            "driver",
            json!({"namespaces": ["alpha", "beta"], "grants": ["read", "write"]}),
        )
        .await;
    s.client(&key).await
}

/// The newest log entry of `agent` in `ns`.
async fn newest(c: &Client, ns: &str, agent: &str) -> Value {
    let log = c
        .ok(
            "checkmarks",
            json!({"action": "log", "namespace": ns, "agent": agent}),
        )
        .await;
    log["entries"][0].clone()
}

async fn pushed_checkpoints_get_their_ci_verdict(s: &TestServer, g: &FakeGitHub) {
    setup_alpha(s, g).await;
    // beta maps octo/beta, which the fake GitHub does not have: every read of it fails.
    s.namespace("beta").await;
    let green = pusher(s, "green").await;
    let red = pusher(s, "red").await;
    let lost = pusher(s, "lost").await;
    for (c, ns, sha) in [
        (&green, "alpha", GREEN),
        (&red, "alpha", RED),
        (&lost, "beta", LOST),
    ] {
        let out = c
            .ok(
                "checkpoint",
                json!({"namespace": ns, "status": "working", "push_sha": sha, "summary": "pushed"}),
            )
            .await;
        assert!(out.to_string().contains("pending"), "{out}");
    }
    g.check_runs(ALPHA, GREEN, &[("in_progress", None)]);
    g.check_runs(ALPHA, RED, &[("queued", None)]);

    let scheduler = Scheduler::new(s.service.clone(), "replica-1");
    let first = scheduler.tick().await.expect("tick");
    assert!(first.led, "{first:?}");
    assert_eq!(first.ci_resolved, 0, "CI has not finished anything yet");
    for (c, ns, agent) in [
        (&green, "alpha", "green"),
        (&red, "alpha", "red"),
        (&lost, "beta", "lost"),
    ] {
        let e = newest(c, ns, agent).await;
        assert_eq!(e["ci_status"], json!("pending"), "{agent}: {e}");
        assert!(e["ci_checked_at"].is_string(), "asked once: {e}");
    }

    g.check_runs(
        ALPHA,
        GREEN,
        &[
            ("completed", Some("success")),
            ("completed", Some("skipped")),
        ],
    );
    g.check_runs(
        ALPHA,
        RED,
        &[
            ("completed", Some("success")),
            ("completed", Some("action_required")),
        ],
    );
    s.clock.advance(LEASE_SWEEP_INTERVAL_MS);
    let second = scheduler.tick().await.expect("tick");
    assert_eq!(second.ci_resolved, 2, "{second:?}");

    let e = newest(&green, "alpha", "green").await;
    assert_eq!(e["ci_status"], json!("pass"), "{e}");
    assert_eq!(e["ci_checked_at"], json!(s.clock.now().to_string()), "{e}");
    let e = newest(&red, "alpha", "red").await;
    assert_eq!(
        e["ci_status"],
        json!("fail"),
        "action_required is not green: {e}"
    );
    let e = newest(&lost, "beta", "lost").await;
    assert_eq!(
        e["ci_status"],
        json!("pending"),
        "unreadable stays pending: {e}"
    );
    assert_eq!(
        e["ci_checked_at"],
        json!(s.clock.now().to_string()),
        "asked again: {e}"
    );

    // A resolved verdict is final and audited once.
    s.clock.advance(LEASE_SWEEP_INTERVAL_MS);
    let third = scheduler.tick().await.expect("tick");
    assert_eq!(third.ci_resolved, 0, "{third:?}");
    let audited = s
        .probe
        .as_ref()
        .expect("probe")
        .count("SELECT COUNT(*) FROM audit_log WHERE action = 'ci-recorded'")
        .await;
    assert_eq!(audited, 2);
}
