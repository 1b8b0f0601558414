//! Roles an owner defines (issue 55, item 1): a signed document of the `capsid` namespace,
//! `policy/roles/<namespace>/<name>.md`, defines a role (what it ships, whether it reviews,
//! its model, cap, dispatch count and instructions) or tunes a built-in one (its model and
//! cap). Unsigned or edited after signing, it defines nothing: a post naming the role is
//! refused saying why, and a claim carries no definition. What a run credential of the role
//! may do follows the definition, never the name. A dispatch past a role's count is recorded
//! on the parent's trail; a dispatch that was never the caller's to make is not.

use super::*;

const WRITER: &str = "policy/roles/alpha/docs-writer.md";
const WRITER_BODY: &str = "# Role: docs-writer\n- version: 1\n- ships: code\n- model: claude-haiku-4-5\n- max_cost_usd: 1.50\n- dispatches: 1\n- description: Writes the project's documentation.\n\n## Instructions\nWrite the docs; never touch the code.\n";
const SCOUT_TUNING: &str = "policy/roles/alpha/scout.md";

async fn write_role(s: &TestServer, path: &str, body: &str, sign: bool) {
    let written = s
        .admin(
            "write",
            json!({"namespace": "capsid", "path": path, "title": "A role",
                   "body": body, "allow_improve_paths": true, "confirm": true}),
        )
        .await;
    assert!(written.get("error").is_none(), "{written}");
    if sign {
        let signed = s
            .admin(
                "improve_run",
                json!({"action": "sign_policy", "namespace": "capsid", "path": path}),
            )
            .await;
        assert_eq!(signed["ok"], true, "{signed}");
    }
}

async fn post_err(d: &Client, title: &str, role: &str) -> String {
    d.call(
        "jobs",
        json!({"action": "post", "namespace": "alpha", "title": title,
               "body": "Do it.\n", "role": role}),
    )
    .await
    .expect_err("refused")
}

async fn claim(d: &Client, id: &Value) -> Value {
    let out = d
        .ok(
            "jobs",
            json!({"action": "claim", "id": id, "namespace": "alpha"}),
        )
        .await;
    assert_eq!(out["ok"], true, "{out}");
    out
}

async fn refusals(s: &TestServer, parent: &Value) -> i64 {
    let id = parent.as_str().expect("an id");
    s.probe
        .as_ref()
        .expect("raw SQL")
        .count(&format!(
            "SELECT COUNT(*) FROM audit_log WHERE action = 'job-dispatch-refused' AND path = 'jobs/{id}.md'"
        ))
        .await
}

async fn an_owners_signed_role_document_defines_a_role_and_its_powers(s: &TestServer) {
    setup(s).await;
    s.namespace("capsid").await;
    let d = driver(s, "d", json!({})).await;

    // Not there, then unsigned: no such role, and the refusal says why.
    let err = post_err(&d, "Docs", "docs-writer").await;
    assert!(
        err.contains("role: \"docs-writer\" is not a role") && err.contains("there is no"),
        "{err}"
    );
    write_role(s, WRITER, WRITER_BODY, false).await;
    let err = post_err(&d, "Docs", "docs-writer").await;
    assert!(err.contains("not validly signed"), "{err}");
    assert_eq!(
        d.ok("jobs", json!({"action": "list", "namespace": "alpha"}))
            .await["jobs"],
        json!([]),
        "a refused post posts nothing"
    );

    // `roles` lists the built-in five and names the unsigned document and why.
    let listed = d
        .ok("jobs", json!({"action": "roles", "namespace": "alpha"}))
        .await;
    let names: Vec<&str> = listed["roles"]
        .as_array()
        .map(|rs| rs.iter().filter_map(|r| r["name"].as_str()).collect())
        .unwrap_or_default();
    assert_eq!(
        names,
        ["scout", "planner", "junior", "senior", "deploy"],
        "{listed}"
    );
    let inert = listed["inert"].to_string();
    assert!(
        inert.contains(WRITER) && inert.contains("not validly signed"),
        "{listed}"
    );

    // Signed: the role exists, its cap applies, and the claim carries its definition.
    write_role(s, WRITER, WRITER_BODY, true).await;
    let listed = d
        .ok("jobs", json!({"action": "roles", "namespace": "alpha"}))
        .await;
    let writer = listed["roles"]
        .as_array()
        .and_then(|rs| rs.iter().find(|r| r["name"] == "docs-writer"))
        .cloned()
        .unwrap_or_else(|| panic!("no docs-writer in {listed}"));
    assert_eq!(writer["model"], "claude-haiku-4-5", "{writer}");
    assert_eq!(listed["inert"], json!([]), "{listed}");
    let job = post(&d, "alpha", "Docs", json!({"role": "docs-writer"})).await;
    assert_eq!(job["role"], "docs-writer", "{job}");
    assert_eq!(job["max_cost_usd"], json!(1.5), "the role's cap: {job}");
    let claimed = claim(&d, &job["id"]).await;
    let def = &claimed["role_definition"];
    assert_eq!(def["name"], "docs-writer", "{claimed}");
    assert_eq!(def["ships"], "code", "{def}");
    assert_eq!(def["model"], "claude-haiku-4-5", "{def}");
    assert_eq!(def["reviews"], false, "{def}");
    assert_eq!(def["built_in"], false, "{def}");
    assert_eq!(
        def["instructions"], "Write the docs; never touch the code.\n",
        "{def}"
    );
    let got = d
        .ok(
            "jobs",
            json!({"action": "get", "id": job["id"], "namespace": "alpha"}),
        )
        .await;
    assert_eq!(got["role_definition"], *def, "{got}");

    // Its run credential has no reviewer's or merger's powers: the definition says so.
    let run = s
        .client(claimed["run_credential"].as_str().expect("a credential"))
        .await;
    let verdict = run
        .call(
            "jobs",
            json!({"action": "approve", "namespace": "alpha", "repo": "o/r",
                   "pull_request": 1, "head_sha": "a".repeat(40), "body": "ok"}),
        )
        .await
        .expect_err("a docs-writer records no verdicts");
    assert!(verdict.contains("jobs.approve"), "{verdict}");

    // Its dispatch count is the document's: one child, then a refusal on the trail. A
    // dispatch from a job the caller does not hold is bad input, and leaves no row.
    let child = run
        .ok(
            "jobs",
            json!({"action": "post", "namespace": "alpha", "title": "Review the docs",
                   "body": "Review.\n", "parent": job["id"], "role": "senior"}),
        )
        .await;
    assert_eq!(child["ok"], true, "{child}");
    let second = run
        .ok(
            "jobs",
            json!({"action": "post", "namespace": "alpha", "title": "More docs",
                   "body": "More.\n", "parent": job["id"]}),
        )
        .await;
    assert_eq!(second["ok"], false, "{second}");
    assert!(
        second["refusal"]
            .as_str()
            .unwrap_or("")
            .contains("already dispatched 1 jobs"),
        "{second}"
    );
    assert_eq!(refusals(s, &job["id"]).await, 1);
    let other = driver(s, "e", json!({})).await;
    let stray = other
        .ok(
            "jobs",
            json!({"action": "post", "namespace": "alpha", "title": "Stray",
                   "body": "Stray.\n", "parent": job["id"]}),
        )
        .await;
    assert_eq!(stray["ok"], false, "{stray}");
    assert!(
        stray["refusal"]
            .as_str()
            .unwrap_or("")
            .contains("only the holder"),
        "{stray}"
    );
    assert_eq!(
        refusals(s, &job["id"]).await,
        1,
        "no row for a stray dispatch"
    );

    // Edited after signing: it defines nothing again; a claim of its job carries no
    // definition (a driver then refuses to run it).
    write_role(
        s,
        WRITER,
        &WRITER_BODY.replace("ships: code", "ships: merge"),
        false,
    )
    .await;
    let err = post_err(&d, "Docs again", "docs-writer").await;
    assert!(err.contains("not validly signed"), "{err}");
    let got = d
        .ok(
            "jobs",
            json!({"action": "get", "id": job["id"], "namespace": "alpha"}),
        )
        .await;
    assert!(got.get("role_definition").is_none(), "{got}");
}

async fn a_signed_document_tunes_a_built_in_roles_model_and_cap(s: &TestServer) {
    setup(s).await;
    s.namespace("capsid").await;
    let d = driver(s, "d", json!({})).await;
    write_role(
        s,
        SCOUT_TUNING,
        "- version: 1\n- model: haiku\n- max_cost_usd: 0.25\n## Instructions\nCheck the changelog too.\n",
        true,
    )
    .await;
    let scout = post(&d, "alpha", "Scouting", json!({"role": "scout"})).await;
    assert_eq!(scout["max_cost_usd"], json!(0.25), "{scout}");
    let claimed = claim(&d, &scout["id"]).await;
    let def = &claimed["role_definition"];
    assert_eq!(
        (def["model"].as_str(), def["built_in"].as_bool()),
        (Some("haiku"), Some(true)),
        "{def}"
    );
    let text = def["instructions"].as_str().unwrap_or("");
    assert!(
        text.contains("watermark")
            && text.ends_with("This namespace adds:\n\nCheck the changelog too.\n"),
        "{text}"
    );
    // A scout's run still keeps its watermark (a built-in's powers are fixed).
    let run = s
        .client(claimed["run_credential"].as_str().expect("a credential"))
        .await;
    let kept = run
        .call(
            "write",
            json!({"namespace": "alpha", "path": "scouts/w/watermark.md",
                   "title": "Watermark", "body": "Seen: 1.\n"}),
        )
        .await;
    assert!(kept.is_ok(), "{kept:?}");
    // A document may not change what a built-in ships: it defines nothing, and the
    // built-in role stands as built.
    write_role(s, SCOUT_TUNING, "- version: 2\n- ships: merge\n", true).await;
    let plain = post(&d, "alpha", "Scouting 2", json!({"role": "scout"})).await;
    assert_eq!(
        plain["max_cost_usd"],
        json!(0.5),
        "the built-in cap: {plain}"
    );
    let got = d
        .ok(
            "jobs",
            json!({"action": "get", "id": plain["id"], "namespace": "alpha"}),
        )
        .await;
    assert_eq!(got["role_definition"]["ships"], "nothing", "{got}");
    assert!(got["role_definition"].get("model").is_none(), "{got}");
}

e2e_cases!(crate::e2e_jobs::options();
    an_owners_signed_role_document_defines_a_role_and_its_powers,
    a_signed_document_tunes_a_built_in_roles_model_and_cap,
);
