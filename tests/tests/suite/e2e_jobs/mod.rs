//! End to end: the work queue through a real MCP client on both stores, one scenario per rule
//! of the reference (section 6) and the gate policy (7.4); GitHub is a fake behind the
//! `RepoHost` port. Each module holds its scenarios and expands them once per store.

mod budget;
mod crowd;
mod dispatch_bounds;
mod doors;
mod evidence;
mod ledger;
mod owner_roles;
mod paths;
mod policy;
mod queue;
mod resume;
mod role;
mod runtime;
mod scouts;
mod skill_merges;
mod skills;
mod spawn;

use std::sync::{Arc, OnceLock};

use capsid_core::jobs::lease::JOB_LEASE_MS;
use capsid_core::jobs::signature::seal_task;
use capsid_core::service::Scheduler;
use capsid_core::time::MINUTE_MS;
use capsid_tests::e2e_cases;
use capsid_tests::fake_repo::FakeRepoHost;
use capsid_tests::server::{Client, ServerOptions, TEST_SECRET, TestServer};
use serde_json::{Value, json};

pub(crate) const OP_WRITE: &str = "operator-write-key-for-job-tests";

pub(crate) fn host() -> Arc<FakeRepoHost> {
    static HOST: OnceLock<Arc<FakeRepoHost>> = OnceLock::new();
    HOST.get_or_init(|| {
        let h = FakeRepoHost::default();
        h.add_pr("octo/alpha", 1, true, 3, 4, "sha-one");
        h.add_pr("octo/alpha", 2, true, 2, 1, "sha-two");
        h.runs("octo/alpha", "sha-two", &[("completed", Some("success")), ("completed", Some("skipped"))]);
        h.break_repo("octo/broken");
        h.add_pr("octo/alpha", 7, false, 1, 1, "sha-seven");
        h.comment("octo/alpha", 7, "rev", "REVIEW: needs a test. CHANGES", "2026-11-01T00:00:00Z");
        h.add_pr("octo/alpha", 8, false, 1, 1, "sha-eight");
        h.comment("octo/alpha", 8, "rev", "REVIEW: too early. CHANGES", "2026-11-01T00:00:00Z");
        h.comment("octo/alpha", 8, "rev", "REVIEW: looks right. **APPROVE**", "2026-11-02T00:00:00Z");
        h.file("octo/alpha", "migrations/0002_add.sql", "-- additive\nALTER TABLE jobs ADD COLUMN note TEXT;\nCREATE INDEX IF NOT EXISTS jobs_note ON jobs (note);");
        h.file("octo/beta", "migrations/0001_init.sql", "CREATE TABLE IF NOT EXISTS jobs (id TEXT PRIMARY KEY);");
        h.file("octo/beta", "migrations/0002_backfill.sql", "UPDATE jobs SET note = 'x';");
        h.file("octo/beta", "migrations/0002_backfill.down.sql", "DROP TABLE jobs;");
        Arc::new(h)
    })
    .clone()
}

pub(crate) fn options() -> ServerOptions {
    ServerOptions {
        operator_keys: Some(capsid_core::crypto::sha256_hex(OP_WRITE)),
        sessions: false,
        repo_host: Some(host()),
        webhook: None,
        ..ServerOptions::default()
    }
}

pub(crate) async fn driver(s: &TestServer, name: &str, extra: Value) -> Client {
    let mut axes = json!({"namespaces": ["alpha", "beta"], "grants": ["read", "write"]});
    if let (Value::Object(a), Value::Object(e)) = (&mut axes, extra) {
        a.extend(e);
    }
    let key = s.mint(name, "driver", axes).await;
    s.client(&key).await
}

pub(crate) async fn setup(s: &TestServer) {
    s.namespace("alpha").await;
    s.namespace("beta").await;
}

pub(crate) async fn post(c: &Client, ns: &str, title: &str, extra: Value) -> Value {
    let mut args = json!({"action": "post", "namespace": ns, "title": title, "body": format!("Do {title}.\n")});
    if let (Value::Object(a), Value::Object(e)) = (&mut args, extra) {
        a.extend(e);
    }
    let out = c.ok("jobs", args).await;
    assert_eq!(out["ok"], true, "post {title}: {out}");
    out["job"].clone()
}
