//! Autonomy on the scheduler, end to end on both stores: the roster as a setting (tool and
//! CLI, audited), the auto-merge tick against the fake GitHub through the real adapter (one
//! scenario per check, the merge, an edited or disabled policy, one audit row per decision,
//! GitHub's refusals), schedulers sharing a store, and the watcher driven by the clock.
//!
//! One test binary, split by responsibility:
//! - `roster`: add, remove and list through `improve_run` and `capsid improve roster`.
//! - `auto_merge`: the seven checks, the merge, the policy's refusals, never twice.
//! - `schedulers`: two schedulers over one store run each task once; tick on demand.
//! - `watcher`: findings posted once, cleared ones failed, a healthy system quiet.

use capsid_core::ports::{AuditFilter, AuditRow};
use capsid_tests::fake_github::FakeGitHub;
use capsid_tests::server::TestServer;
use serde_json::{Value, json};

mod auto_merge;
mod roster;
mod schedulers;
mod watcher;

const ALPHA: &str = "octo/alpha";

/// `octo/alpha` on the fake, `alpha` and `capsid` registered, `alpha` on the roster.
async fn setup(s: &TestServer, g: &FakeGitHub) {
    g.add_repo(
        ALPHA,
        &[
            ("README.md", "# Alpha\n"),
            ("src/lib.rs", "pub fn a() {}\n"),
        ],
    );
    s.namespace("alpha").await;
    s.namespace("capsid").await;
    let added = s
        .admin(
            "improve_run",
            json!({"action": "roster", "op": "add", "namespace": "alpha"}),
        )
        .await;
    assert_eq!(added["ok"], true, "{added}");
}

/// The auto-merge policy body naming `namespaces`.
fn merge_policy(version: &str, enabled: bool, namespaces: &str) -> String {
    format!(
        "# Auto-merge policy\n\n- version: {version}\n- enabled: {enabled}\n- namespaces: {namespaces}\n\n\
         - `body_names_job`\n- `author_is_driver`\n- `base_is_default_branch`\n- `ci_green`\n\
         - `paths_unprotected`\n- `paths_not_money`\n- `no_migration_workflow_lockfile`\n"
    )
}

/// Writes `body` as `capsid/policy/auto-merge.md` and signs it.
async fn sign_merge_policy(s: &TestServer, body: &str) {
    let written = s
        .admin(
            "write",
            json!({"namespace": "capsid", "path": "policy/auto-merge.md", "title": "Auto-merge",
                   "body": body, "allow_improve_paths": true}),
        )
        .await;
    assert!(written.get("error").is_none(), "{written}");
    let signed = s
        .admin(
            "improve_run",
            json!({"action": "sign_policy", "namespace": "capsid", "path": "policy/auto-merge.md"}),
        )
        .await;
    assert_eq!(signed["ok"], true, "{signed}");
}

/// A job in `alpha` claimed by a fresh agent `name` of `kind`; its id.
async fn claimed_job(s: &TestServer, name: &str, kind: &str) -> String {
    let key = s
        .mint(
            name,
            kind,
            json!({"namespaces": ["alpha"], "grants": ["read", "write"]}),
        )
        .await;
    let posted = s
        .admin(
            "jobs",
            json!({"action": "post", "namespace": "alpha", "title": format!("Work for {name}"), "body": "do it"}),
        )
        .await;
    assert_eq!(posted["ok"], true, "{posted}");
    let agent = s.client(&key).await;
    let claim = agent
        .ok("jobs", json!({"action": "claim", "namespace": "alpha"}))
        .await;
    assert_eq!(claim["ok"], true, "{claim}");
    claim["job"]["id"].as_str().expect("an id").to_owned()
}

/// A branch `branch` off main with `files`, a PR from it to `base` with `body`, and check runs
/// on its head; its number and head sha.
fn pull(
    g: &FakeGitHub,
    branch: &str,
    base: &str,
    files: &[(&str, Option<&str>)],
    body: &str,
    checks: &[(&str, Option<&str>)],
) -> (u64, String) {
    let sha = g.commit(ALPHA, branch, files, "change");
    let number = g.open_pull(ALPHA, branch, base, &format!("PR from {branch}"), body);
    g.check_runs(ALPHA, &sha, checks);
    (number, sha)
}

const GREEN: &[(&str, Option<&str>)] = &[("completed", Some("success"))];

/// Runs the auto-merge task now, as the admin; its report.
async fn auto_merge_tick(s: &TestServer) -> Value {
    let out = s
        .admin(
            "improve_run",
            json!({"action": "tick", "task": "auto-merge"}),
        )
        .await;
    assert_eq!(out["ok"], true, "{out}");
    let run = &out["report"]["ran"][0];
    assert_eq!(run["task"], "auto-merge", "{out}");
    assert_eq!(run["outcome"], "ran", "{out}");
    run["report"].clone()
}

/// Audit rows with `action`, newest first.
async fn audit_rows(s: &TestServer, action: &str) -> Vec<AuditRow> {
    s.store
        .recent_audit(&AuditFilter::default(), 500)
        .await
        .expect("audit")
        .into_iter()
        .filter(|r| r.action.as_deref() == Some(action))
        .collect()
}

fn params(row: &AuditRow) -> Value {
    serde_json::from_str(row.params.as_deref().unwrap_or("{}")).expect("params JSON")
}

/// `improve_status`'s autonomy block, as the admin sees it.
async fn autonomy_status(s: &TestServer) -> Value {
    s.admin("improve_status", json!({})).await["autonomy"].clone()
}
