//! The gate policy (reference 7.4): pre-approval by a signed policy, and a policy the admin did
//! not sign authorizing nothing.

use super::*;

async fn write_policy(s: &TestServer, enabled: bool) {
    let body = format!(
        "# Gate policy\n\n- version: 2026-11\n- enabled: {enabled}\n\n- `additive_migration` additive schema changes\n- `push_branch` pushing a feature branch\n- `open_pr` opening a pull request\n"
    );
    s.namespace("capsid").await;
    s.admin("write", json!({"namespace": "capsid", "path": "policy/gates.md", "title": "Gates", "body": body, "allow_improve_paths": true})).await;
    let signed = s
        .admin(
            "improve_run",
            json!({"action": "sign_policy", "namespace": "capsid", "path": "policy/gates.md"}),
        )
        .await;
    assert_eq!(signed["ok"], true, "{signed}");
}

async fn gate_policy_pre_approval(s: &TestServer) {
    setup(s).await;
    write_policy(s, true).await;
    let a = driver(s, "a", json!({})).await;
    let seat = driver(s, "seat", json!({})).await;
    let block_with = async |title: &str, command: &str| {
        let job = post(&a, "alpha", title, json!({})).await;
        a.ok(
            "jobs",
            json!({"action": "claim", "id": job["id"], "namespace": "alpha"}),
        )
        .await;
        a.ok("jobs", json!({"action": "block", "id": job["id"], "namespace": "alpha", "reason": "gate", "command": command})).await;
        job["id"].as_str().unwrap().to_owned()
    };
    let forced = block_with("Force", "git push --force origin x").await;
    let out = seat.ok("jobs", json!({"action": "resume", "id": forced, "namespace": "alpha", "reason": "policy", "approved_by_policy": "2026-11"})).await;
    assert_eq!(out["ok"], false, "the never-list refuses --force: {out}");
    let plain = block_with("Push", "git push origin feature").await;
    let out = seat.ok("jobs", json!({"action": "resume", "id": plain, "namespace": "alpha", "reason": "policy", "approved_by_policy": "2026-11"})).await;
    assert_eq!(out["ok"], true, "{out}");
    seat.ok("jobs", json!({"action": "complete", "id": plain, "namespace": "alpha", "result_summary": "pushed"})).await;
    let audit = s.probe.as_ref().unwrap().count(&format!("SELECT COUNT(*) FROM audit_log WHERE action = 'job-resumed' AND params LIKE '%push_branch%' AND params LIKE '%{plain}%'")).await;
    assert_eq!(audit, 1, "the approval class is audited");
    let migration = block_with(
        "Migrate",
        "npx wrangler d1 execute capsid --remote --file=migrations/0002_add.sql",
    )
    .await;
    let out = seat.ok("jobs", json!({"action": "resume", "id": migration, "namespace": "alpha", "reason": "policy", "approved_by_policy": "2026-11"})).await;
    assert_eq!(
        out["ok"], true,
        "an additive migration read from the repo passes: {out}"
    );
    seat.ok(
        "jobs",
        json!({"action": "fail", "id": migration, "namespace": "alpha", "reason": "done testing"}),
    )
    .await;
    // Edited after signing: authorizes nothing.
    s.admin("write", json!({"namespace": "capsid", "path": "policy/gates.md", "mode": "append", "body": "edited", "allow_improve_paths": true})).await;
    let again = block_with("Push 2", "git push origin feature").await;
    let out = seat.ok("jobs", json!({"action": "resume", "id": again, "namespace": "alpha", "reason": "policy", "approved_by_policy": "2026-11"})).await;
    assert_eq!(out["ok"], false);
    assert!(out["refusal"].as_str().unwrap().contains("signed"), "{out}");
}

/// A policy authorizes only with the signature its signing recorded (SPEC 8). Job bodies and
/// policies share the signing key and envelope, so an agent holding `capsid` and
/// `can_touch_protected` could post a job whose body is a policy, read the sealed text from
/// the job's mirror and write it to `capsid/policy/gates.md` without `sign_policy`; and an
/// older signed policy could be written back over a newer one. Neither authorizes anything.
async fn a_policy_not_signed_by_the_admin_authorizes_nothing(s: &TestServer) {
    setup(s).await;
    s.namespace("capsid").await;
    let policy = "# Gate policy\n\n- version: 2026-11\n- enabled: true\n\n- `additive_migration` additive schema changes\n- `push_branch` pushing a feature branch\n- `open_pr` opening a pull request\n";
    let key = s
        .mint(
            "forger",
            "session",
            json!({"namespaces": ["alpha", "capsid"], "grants": ["read", "write"], "flags": {"can_touch_protected": true}}),
        )
        .await;
    let forger = s.client(&key).await;
    let job = post(
        &forger,
        "capsid",
        "Looks like a policy",
        json!({"body": policy}),
    )
    .await;
    let id = job["id"].as_str().expect("id").to_owned();
    let mirror = forger
        .ok(
            "read",
            json!({"namespace": "capsid", "path": format!("jobs/{id}.md")}),
        )
        .await;
    let body = mirror["body"].as_str().expect("mirror body");
    let (_, sealed) = body
        .split_once("## The prompt\n\n")
        .expect("the prompt section");
    assert!(
        sealed.starts_with("---\ncapsid-task-signature: "),
        "{sealed}"
    );
    let wrote = forger
        .ok("write", json!({"namespace": "capsid", "path": "policy/gates.md", "title": "Gates", "body": sealed, "allow_improve_paths": true}))
        .await;
    assert_eq!(wrote["action"], "created", "{wrote}");

    let a = driver(s, "a", json!({})).await;
    let seat = driver(s, "seat", json!({})).await;
    let blocked = async |title: &str| {
        let job = post(&a, "alpha", title, json!({})).await;
        a.ok(
            "jobs",
            json!({"action": "claim", "id": job["id"], "namespace": "alpha"}),
        )
        .await;
        a.ok("jobs", json!({"action": "block", "id": job["id"], "namespace": "alpha", "reason": "gate", "command": "git push origin feature"})).await;
        job["id"].as_str().expect("id").to_owned()
    };
    let resume = async |id: &str| {
        seat.ok("jobs", json!({"action": "resume", "id": id, "namespace": "alpha", "reason": "policy", "approved_by_policy": "2026-11"})).await
    };
    let first = blocked("Push forged").await;
    let out = resume(&first).await;
    assert_eq!(
        out["ok"], false,
        "a forged policy authorizes nothing: {out}"
    );
    assert!(
        out["refusal"]
            .as_str()
            .unwrap_or_default()
            .contains("not signed by the admin"),
        "{out}"
    );

    // Signed by the admin, it authorizes; an older signed text written back does not.
    let signed = s
        .admin(
            "improve_run",
            json!({"action": "sign_policy", "namespace": "capsid", "path": "policy/gates.md"}),
        )
        .await;
    assert_eq!(signed["ok"], true, "{signed}");
    let out = resume(&first).await;
    assert_eq!(out["ok"], true, "the admin's signature authorizes: {out}");
    seat.ok(
        "jobs",
        json!({"action": "fail", "id": first, "namespace": "alpha", "reason": "done testing"}),
    )
    .await;
    let old = s
        .admin(
            "read",
            json!({"namespace": "capsid", "path": "policy/gates.md"}),
        )
        .await;
    let old = old["body"].as_str().expect("body").to_owned();
    s.admin("write", json!({"namespace": "capsid", "path": "policy/gates.md", "mode": "patch", "find": "- enabled: true", "replace_with": "- enabled: false", "allow_improve_paths": true, "confirm": true})).await;
    let resigned = s
        .admin(
            "improve_run",
            json!({"action": "sign_policy", "namespace": "capsid", "path": "policy/gates.md"}),
        )
        .await;
    assert_eq!(resigned["resigned"], true, "{resigned}");
    forger
        .ok("write", json!({"namespace": "capsid", "path": "policy/gates.md", "title": "Gates", "body": old, "allow_improve_paths": true, "confirm": true}))
        .await;
    let second = blocked("Push replayed").await;
    let out = resume(&second).await;
    assert_eq!(
        out["ok"], false,
        "a replayed older signature authorizes nothing: {out}"
    );
    assert!(
        out["refusal"]
            .as_str()
            .unwrap_or_default()
            .contains("not signed by the admin"),
        "{out}"
    );
}

/// The migration tools of `additive_migration` come from the namespace's runner setting
/// `migration_tools` (issue 56, item 13): unset, only the Worker's `wrangler d1 execute`
/// matches; named, `psql -f <file>` has its file read and `sqlx migrate run` every forward
/// migration of its folder; the self-hosted never-list refuses `sqlx migrate revert`.
async fn self_hosted_migration_tools_from_the_namespace_setting(s: &TestServer) {
    setup(s).await;
    write_policy(s, true).await;
    let a = driver(s, "a", json!({})).await;
    let seat = driver(s, "seat", json!({})).await;
    let block_with = async |ns: &str, title: &str, command: &str| {
        let job = post(&a, ns, title, json!({})).await;
        a.ok(
            "jobs",
            json!({"action": "claim", "id": job["id"], "namespace": ns}),
        )
        .await;
        a.ok("jobs", json!({"action": "block", "id": job["id"], "namespace": ns, "reason": "gate", "command": command})).await;
        job["id"].as_str().expect("id").to_owned()
    };
    let resume = async |ns: &str, id: &str| {
        seat.ok("jobs", json!({"action": "resume", "id": id, "namespace": ns, "reason": "policy", "approved_by_policy": "2026-11"})).await
    };
    let refusal = |out: &Value| out["refusal"].as_str().unwrap_or_default().to_owned();

    // Unset: psql matches no class, the Worker's d1 still does.
    let psql = block_with(
        "beta",
        "Psql",
        "psql \"$DATABASE_URL\" -f migrations/0001_init.sql",
    )
    .await;
    let out = resume("beta", &psql).await;
    assert_eq!(out["ok"], false, "{out}");
    assert!(
        refusal(&out).contains("matches no pre-approved class"),
        "{out}"
    );

    // A tool Capsid cannot check is refused, naming the setting.
    let bad = s
        .service
        .call_tool(
            &capsid_core::caller::Caller::cli("test"),
            "update_namespace",
            json!({"namespace": "beta", "migration_tools": "psql,flyway"}),
            &capsid_core::service::NoConfirmer,
        )
        .await
        .expect_err("flyway is refused");
    assert!(
        bad.to_string()
            .contains("migration_tools: 'flyway' is not a migration tool"),
        "{bad}"
    );
    s.admin(
        "update_namespace",
        json!({"namespace": "beta", "migration_tools": "psql, sqlx"}),
    )
    .await;
    let out = resume("beta", &psql).await;
    assert_eq!(out["ok"], true, "psql -f of an additive file passes: {out}");
    let probe = s.probe.as_ref().expect("probe");
    let audited = probe.count(&format!("SELECT COUNT(*) FROM audit_log WHERE action = 'job-resumed' AND params LIKE '%additive_migration%' AND params LIKE '%migrations/0001_init.sql: CREATE TABLE IF NOT EXISTS%' AND params LIKE '%{psql}%'")).await;
    assert_eq!(audited, 1, "the file and its statements are audited");
    seat.ok(
        "jobs",
        json!({"action": "fail", "id": psql, "namespace": "beta", "reason": "done testing"}),
    )
    .await;

    // sqlx applies whatever is pending: one non-additive forward file refuses the folder
    // (the .down.sql beside it is not read).
    let sqlx = block_with("beta", "Sqlx", "sqlx migrate run").await;
    let out = resume("beta", &sqlx).await;
    assert_eq!(out["ok"], false, "{out}");
    assert!(
        refusal(&out).contains("migrations/0002_backfill.sql contains a statement this policy does not call additive: \"UPDATE jobs SET note = 'x'\"")
            && refusal(&out).contains("sqlx migrate run applies whichever migrations are pending"),
        "{out}"
    );
    let revert = block_with("beta", "Revert", "sqlx migrate revert").await;
    let out = resume("beta", &revert).await;
    assert_eq!(out["ok"], false, "{out}");
    assert!(
        refusal(&out).contains("reverts an applied migration"),
        "{out}"
    );

    // alpha's folder is all additive: sqlx passes there once alpha names it; d1 then does not.
    s.admin(
        "update_namespace",
        json!({"namespace": "alpha", "migration_tools": "sqlx"}),
    )
    .await;
    let folder = block_with(
        "alpha",
        "Sqlx alpha",
        "sqlx migrate run --source migrations",
    )
    .await;
    let out = resume("alpha", &folder).await;
    assert_eq!(out["ok"], true, "{out}");
    let audited = probe.count(&format!("SELECT COUNT(*) FROM audit_log WHERE action = 'job-resumed' AND params LIKE '%migrations/0002_add.sql: ALTER TABLE ADD COLUMN, CREATE INDEX%' AND params LIKE '%{folder}%'")).await;
    assert_eq!(audited, 1, "every file of the folder is audited");
    seat.ok(
        "jobs",
        json!({"action": "fail", "id": folder, "namespace": "alpha", "reason": "done testing"}),
    )
    .await;
    let d1 = block_with(
        "alpha",
        "D1",
        "npx wrangler d1 execute capsid --remote --file=migrations/0002_add.sql",
    )
    .await;
    let out = resume("alpha", &d1).await;
    assert_eq!(out["ok"], false, "{out}");
    assert!(
        refusal(&out).contains("matches no pre-approved class"),
        "{out}"
    );
}

e2e_cases!(crate::e2e_jobs::options();
    gate_policy_pre_approval,
    a_policy_not_signed_by_the_admin_authorizes_nothing,
    self_hosted_migration_tools_from_the_namespace_setting,
);
