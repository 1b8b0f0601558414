//! A restore onto a new host (issue 33): a store with queued, blocked and done jobs and a
//! signed, enabled gate policy, backed up and restored into the other engine
//! - under the same secret: the queued job is claimed, the blocked job resumed by a person and
//!   another resumed by the policy, which still pre-approves;
//! - under another secret: refused before anything is written, naming `signing.key` and
//!   `CAPSID_SIGNING_SECRET`;
//! - under another secret with `--re-sign`: the queued and blocked jobs are claimable and
//!   resumable under the new secret, one audit row per re-signed job, the policy is restored
//!   disabled and unsigned (it pre-approves nothing), and the report lists what the dump
//!   brought in.

use std::sync::Arc;

use capsid_core::backup::summary::NoProgress;
use capsid_core::ports::Store;
use capsid_core::service::{RestoreError, RestoreOptions, Service, ServiceConfig};
use capsid_tests::harness::{Backend, Probe};
use capsid_tests::server::{Client, ServerOptions, TestEntropy, TestServer};
use serde_json::{Value, json};

use super::refusals::assert_empty;
use super::{as_blobs, back_up, media_folder};

const GATES: &str = "# Gate policy\n\n- version: 2026-11\n- enabled: true\n\n- `additive_migration` additive schema changes\n- `push_branch` pushing a feature branch\n- `open_pr` opening a pull request\n";

/// Ids of the seeded jobs.
struct Jobs {
    queued: String,
    blocked_for_person: String,
    blocked_for_policy: String,
    done: String,
}

async fn client_for(s: &TestServer, name: &str, flags: Value) -> (String, Client) {
    let key = s
        .mint(
            name,
            "driver",
            json!({"namespaces": ["alpha", "capsid"], "grants": ["read", "write"], "flags": flags}),
        )
        .await;
    let client = s.client(&key).await;
    (key, client)
}

async fn post(c: &Client, title: &str) -> String {
    let out = c
        .ok(
            "jobs",
            json!({"action": "post", "namespace": "alpha", "title": title, "body": format!("Do {title}.\n")}),
        )
        .await;
    assert_eq!(out["ok"], true, "post {title}: {out}");
    out["job"]["id"].as_str().expect("an id").to_owned()
}

async fn act(c: &Client, args: Value) -> Value {
    let out = c.ok("jobs", args.clone()).await;
    assert_eq!(out["ok"], true, "{args}: {out}");
    out
}

/// Seeds the origin: three drivers, a signed enabled gate policy, jobs queued, blocked (two)
/// and done.
async fn seed(s: &TestServer) -> (Vec<String>, Jobs) {
    s.namespace("alpha").await;
    s.namespace("capsid").await;
    s.admin("write", json!({"namespace": "capsid", "path": "policy/gates.md", "title": "Gates", "body": GATES, "allow_improve_paths": true})).await;
    let signed = s
        .admin(
            "improve_run",
            json!({"action": "sign_policy", "namespace": "capsid", "path": "policy/gates.md"}),
        )
        .await;
    assert_eq!(signed["ok"], true, "{signed}");
    let (a_key, a) = client_for(s, "driver-a", json!({})).await;
    let (b_key, b) = client_for(s, "driver-b", json!({})).await;
    let (seat_key, _) = client_for(s, "seat", json!({"can_merge": true})).await;
    let done = post(&a, "Finished work").await;
    act(
        &a,
        json!({"action": "claim", "namespace": "alpha", "id": done}),
    )
    .await;
    act(&a, json!({"action": "complete", "namespace": "alpha", "id": done, "result_summary": "shipped"})).await;
    let blocked_for_person = post(&a, "Waits on a person").await;
    act(
        &a,
        json!({"action": "claim", "namespace": "alpha", "id": blocked_for_person}),
    )
    .await;
    act(&a, json!({"action": "block", "namespace": "alpha", "id": blocked_for_person, "reason": "a push to main", "command": "git push origin main"})).await;
    let blocked_for_policy = post(&b, "Waits on the policy").await;
    act(
        &b,
        json!({"action": "claim", "namespace": "alpha", "id": blocked_for_policy}),
    )
    .await;
    act(&b, json!({"action": "block", "namespace": "alpha", "id": blocked_for_policy, "reason": "a branch push", "command": "git push origin feature"})).await;
    let queued = post(&a, "Still queued").await;
    (
        vec![a_key, b_key, seat_key],
        Jobs {
            queued,
            blocked_for_person,
            blocked_for_policy,
            done,
        },
    )
}

fn restorer(store: Arc<dyn Store>, s: &TestServer, secret: &str) -> Service {
    Service::new(
        store,
        s.clock.clone(),
        Arc::new(TestEntropy),
        ServiceConfig {
            signing_secret: Some(secret.into()),
            operator_keys: Vec::new(),
            ..Default::default()
        },
    )
}

/// What the restored host can do with the jobs: claim the queued one and resume the one
/// waiting on a person; whether the policy still pre-approves the other is `policy_works`.
async fn check_queue(host: &TestServer, keys: &[String], jobs: &Jobs, policy_works: bool) {
    let a = host.client(&keys[0]).await;
    let b = host.client(&keys[1]).await;
    let seat = host.client(&keys[2]).await;
    let claimed = a
        .ok(
            "jobs",
            json!({"action": "claim", "namespace": "alpha", "id": jobs.queued}),
        )
        .await;
    assert_eq!(
        claimed["ok"], true,
        "the queued job is claimable: {claimed}"
    );
    let resumed = seat
        .ok("jobs", json!({"action": "resume", "namespace": "alpha", "id": jobs.blocked_for_person, "reason": "approved by the owner"}))
        .await;
    assert_eq!(
        resumed["ok"], true,
        "a person resumes the blocked job: {resumed}"
    );
    let by_policy = b
        .ok("jobs", json!({"action": "resume", "namespace": "alpha", "id": jobs.blocked_for_policy, "reason": "policy", "approved_by_policy": "2026-11"}))
        .await;
    assert_eq!(
        by_policy["ok"], policy_works,
        "the policy pre-approves only when it came with its secret: {by_policy}"
    );
    if !policy_works {
        let why = by_policy["refusal"].as_str().unwrap_or_default();
        assert!(why.contains("not validly signed"), "{by_policy}");
    }
    let done = a
        .ok(
            "jobs",
            json!({"action": "list", "namespace": "alpha", "status": "done"}),
        )
        .await;
    assert!(done.to_string().contains(&jobs.done), "{done}");
}

async fn count(probe: &Probe, sql: &str) -> i64 {
    probe.count(sql).await
}

async fn restore_onto_a_new_host<S: Backend, T: Backend>(tag: &str) {
    let (Some(source), Some(same), Some(foreign), Some(resigned)) = (
        S::fresh(&format!("newhost_{tag}_source")).await,
        T::fresh(&format!("newhost_{tag}_same")).await,
        T::fresh(&format!("newhost_{tag}_foreign")).await,
        T::fresh(&format!("newhost_{tag}_resign")).await,
    ) else {
        return;
    };
    let (_dir, media) = media_folder();
    let origin = TestServer::start_with_media(
        source.store.clone(),
        ServerOptions::default(),
        as_blobs(&media),
    )
    .await;
    let (keys, jobs) = seed(&origin).await;
    let run = back_up(&origin).await.run.expect("a run id");

    // The same secret: everything works on the new host.
    let same_store: Arc<dyn Store> = same.store.clone();
    let report = restorer(
        same_store.clone(),
        &origin,
        capsid_tests::server::TEST_SECRET,
    )
    .restore_dump(media.as_ref(), Some(&run), &NoProgress)
    .await
    .expect("restored");
    assert!(report.verified, "{report:?}");
    assert!(report.re_signed.is_none());
    let host = TestServer::start(same_store, ServerOptions::default()).await;
    check_queue(&host, &keys, &jobs, true).await;
    host.stop().await;

    // Another secret: refused, nothing written, the message says what to carry over.
    let foreign_store: Arc<dyn Store> = foreign.store.clone();
    let refused = restorer(foreign_store.clone(), &origin, "a new host's secret")
        .restore_dump(media.as_ref(), Some(&run), &NoProgress)
        .await;
    let Err(RestoreError::Refused(refusal)) = refused else {
        panic!("a foreign secret is refused: {refused:?}");
    };
    let text = refusal.to_string();
    for named in ["signing.key", "CAPSID_SIGNING_SECRET", "--re-sign"] {
        assert!(text.contains(named), "names {named}: {text}");
    }
    assert_empty(foreign_store.as_ref()).await;

    // Another secret, the old one lost: re-signed.
    let new_secret = "the new host's own secret";
    let resigned_store: Arc<dyn Store> = resigned.store.clone();
    let options = RestoreOptions {
        re_sign: true,
        operator: Some("owner".into()),
        ..RestoreOptions::default()
    };
    let plan = capsid_core::service::re_sign_plan(media.as_ref(), Some(&run))
        .await
        .expect("a plan");
    let report = restorer(resigned_store.clone(), &origin, new_secret)
        .restore_dump_with(media.as_ref(), Some(&run), &options, &NoProgress)
        .await
        .expect("restored under the new secret");
    assert!(report.verified, "{report:?}");
    assert!(
        report.provenance.contains("RE-SIGNED"),
        "{}",
        report.provenance
    );
    let re_signed = report.re_signed.clone().expect("what was re-signed");
    assert_eq!(
        re_signed, plan.1,
        "the confirmation showed what the restore did"
    );
    let mut ids: Vec<&str> = re_signed.jobs.iter().map(|j| j.id.as_str()).collect();
    ids.sort_unstable();
    let mut expected = vec![
        jobs.queued.as_str(),
        jobs.blocked_for_person.as_str(),
        jobs.blocked_for_policy.as_str(),
    ];
    expected.sort_unstable();
    assert_eq!(ids, expected, "queued and blocked jobs, not the done one");
    assert_eq!(re_signed.policies, vec!["policy/gates.md".to_owned()]);
    for agent in ["driver-a (driver)", "driver-b (driver)", "seat (driver)"] {
        assert!(
            re_signed.agents.iter().any(|a| a == agent),
            "{agent} listed: {:?}",
            re_signed.agents
        );
    }
    assert_eq!(
        count(
            &resigned.probe,
            "SELECT COUNT(*) FROM audit_log WHERE action = 'job.resigned' AND actor = 'cli:owner'"
        )
        .await,
        3,
        "one audit row per re-signed job"
    );
    for job in [
        &jobs.queued,
        &jobs.blocked_for_person,
        &jobs.blocked_for_policy,
    ] {
        assert_eq!(
            count(
                &resigned.probe,
                &format!("SELECT COUNT(*) FROM audit_log WHERE action = 'job.resigned' AND params LIKE '%{job}%'")
            )
            .await,
            1,
            "{job} audited once"
        );
    }
    let host = TestServer::start(
        resigned_store,
        ServerOptions {
            signing_secret: Some(new_secret.into()),
            ..ServerOptions::default()
        },
    )
    .await;
    let policy = host
        .admin(
            "read",
            json!({"namespace": "capsid", "path": "policy/gates.md"}),
        )
        .await;
    let body = policy.to_string();
    assert!(
        body.contains("- enabled: false") && !body.contains("capsid-task-signature"),
        "the policy is disabled and unsigned: {policy}"
    );
    check_queue(&host, &keys, &jobs, false).await;
    host.stop().await;
    origin.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_onto_a_new_postgres_host() {
    restore_onto_a_new_host::<capsid_store_sqlite::SqliteStore, capsid_store_postgres::PgStore>(
        "s2p",
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_onto_a_new_sqlite_host() {
    restore_onto_a_new_host::<capsid_store_postgres::PgStore, capsid_store_sqlite::SqliteStore>(
        "p2s",
    )
    .await;
}
