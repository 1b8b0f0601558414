//! Monthly budgets per namespace (issue 37): a job's measured cost is evidence on its
//! outcome, a namespace whose month's spend reached its budget claims nothing, another
//! namespace still claims, raising the budget or a new month (the server's clock) lets it
//! claim again, and bad budgets and costs are refused naming the field.

use super::*;
use capsid_core::jobs::budget::month_start;
use capsid_core::time::{Clock, DAY_MS};

async fn claim(c: &Client, ns: &str) -> Value {
    c.ok("jobs", json!({"action": "claim", "namespace": ns}))
        .await
}

async fn complete(c: &Client, job: &Value, evidence: Value) -> Value {
    let out = c
        .ok(
            "jobs",
            json!({"action": "complete", "id": job["id"], "namespace": job["namespace"],
                   "result_summary": "done", "evidence": evidence}),
        )
        .await;
    assert_eq!(out["ok"], true, "complete: {out}");
    out
}

async fn status_of(job: &Value, c: &Client) -> Value {
    c.ok(
        "jobs",
        json!({"action": "get", "id": job["id"], "namespace": job["namespace"]}),
    )
    .await["job"]["status"]
        .clone()
}

async fn a_spent_month_claims_nothing_until_raised_or_over(s: &TestServer) {
    setup(s).await;
    let set = s
        .admin(
            "update_namespace",
            json!({"namespace": "alpha", "monthly_budget_usd": 1.0}),
        )
        .await;
    assert_eq!(set["monthly_budget_usd"], 1.0, "{set}");
    let a = driver(s, "a", json!({})).await;

    // A finished job's measured cost is on its outcome.
    let first = post(&a, "alpha", "First", json!({})).await;
    let claimed = claim(&a, "alpha").await;
    assert_eq!(claimed["ok"], true, "{claimed}");
    let done = complete(
        &a,
        &first,
        json!({"cost_usd": 1.5, "turns": 4, "duration_ms": 64000}),
    )
    .await;
    let row = &done["outcome"]["row"];
    assert_eq!(
        (
            row["cost_usd"].clone(),
            row["turns"].clone(),
            row["duration_ms"].clone()
        ),
        (json!(1.5), json!(4), json!(64000)),
        "{done}"
    );

    // Over the budget: the next claim is refused naming the budget, the spend and the month,
    // by namespace and by id, and the job stays queued.
    let second = post(&a, "alpha", "Second", json!({})).await;
    let month = s.clock.now().month();
    for refused in [
        claim(&a, "alpha").await,
        a.ok(
            "jobs",
            json!({"action": "claim", "id": second["id"], "namespace": "alpha"}),
        )
        .await,
    ] {
        assert_eq!(refused["ok"], false, "{refused}");
        let why = refused["refusal"].as_str().unwrap_or_default();
        for part in ["'alpha'", "$1.50", "$1.00", month.as_str(), "stays queued"] {
            assert!(why.contains(part), "{part} in {why}");
        }
    }
    assert_eq!(status_of(&second, &a).await, "queued");

    // Another namespace still claims.
    let other = post(&a, "beta", "Elsewhere", json!({})).await;
    let beta = claim(&a, "beta").await;
    assert_eq!(beta["ok"], true, "{beta}");
    complete(&a, &other, json!({"cost_usd": 0.25})).await;

    // improve_status shows each namespace's spend against its budget.
    let status = s.admin("improve_status", json!({})).await;
    let budget_of = |ns: &str| {
        status["namespaces"]
            .as_array()
            .and_then(|l| l.iter().find(|n| n["namespace"] == ns))
            .map(|n| n["jobs_budget"].clone())
            .unwrap_or_default()
    };
    assert_eq!(
        (
            budget_of("alpha")["spent_usd"].clone(),
            budget_of("alpha")["budget_usd"].clone()
        ),
        (json!(1.5), json!(1.0)),
        "{status}"
    );
    assert_eq!(budget_of("beta")["spent_usd"], 0.25, "{status}");
    assert_eq!(budget_of("beta")["budget_usd"], Value::Null, "{status}");

    // Raising the budget lets it claim.
    s.admin(
        "update_namespace",
        json!({"namespace": "alpha", "monthly_budget_usd": 5}),
    )
    .await;
    let raised = claim(&a, "alpha").await;
    assert_eq!(raised["ok"], true, "{raised}");
    assert_eq!(raised["job"]["id"], second["id"]);
    complete(&a, &second, json!({"cost_usd": 0.5})).await;

    // Back under a spent budget, then a new month (the server's clock) resets the spend.
    s.admin(
        "update_namespace",
        json!({"namespace": "alpha", "monthly_budget_usd": 1.0}),
    )
    .await;
    post(&a, "alpha", "Third", json!({})).await;
    assert_eq!(claim(&a, "alpha").await["ok"], false);
    let next_month = month_start(month_start(s.clock.now()).plus_millis(32 * DAY_MS));
    s.clock.set(next_month);
    let new_month = claim(&a, "alpha").await;
    assert_eq!(new_month["ok"], true, "{new_month}");

    // Clearing the budget: none applies (no server default here).
    let cleared = s
        .admin(
            "update_namespace",
            json!({"namespace": "alpha", "monthly_budget_usd": "none"}),
        )
        .await;
    assert_eq!(cleared["monthly_budget_usd"], Value::Null, "{cleared}");
    assert_eq!(cleared["previous_monthly_budget_usd"], 1.0, "{cleared}");
}

async fn bad_budgets_and_costs_are_refused_naming_the_field(s: &TestServer) {
    setup(s).await;
    for bad in [json!(-1), json!("lots"), json!(true)] {
        let err = s
            .service
            .call_tool(
                &capsid_core::caller::Caller::cli("test"),
                "update_namespace",
                json!({"namespace": "alpha", "monthly_budget_usd": bad}),
                &capsid_core::service::NoConfirmer,
            )
            .await
            .expect_err("a bad budget is refused");
        assert!(
            err.to_string().contains("monthly_budget_usd"),
            "{bad}: {err}"
        );
    }
    let row = s.store.namespace("alpha").await.unwrap().unwrap();
    assert_eq!(row.monthly_budget_usd, None, "nothing was written");

    let a = driver(s, "a", json!({})).await;
    let job = post(&a, "alpha", "Costly", json!({})).await;
    claim(&a, "alpha").await;
    let err = a
        .err(
            "jobs",
            json!({"action": "complete", "id": job["id"], "namespace": "alpha",
                   "result_summary": "x", "evidence": {"cost_usd": -3}}),
        )
        .await;
    assert!(err.contains("cost_usd"), "{err}");
    assert_eq!(status_of(&job, &a).await, "claimed", "nothing changed");
}

/// With the server's default budget (`CAPSID_MONTHLY_BUDGET_USD`), a namespace without its
/// own stops at the default; its own budget wins.
async fn the_servers_default_applies_where_a_namespace_has_none(s: &TestServer) {
    setup(s).await;
    s.admin(
        "update_namespace",
        json!({"namespace": "beta", "monthly_budget_usd": 10}),
    )
    .await;
    let a = driver(s, "a", json!({})).await;
    for ns in ["alpha", "beta"] {
        let job = post(&a, ns, "Spend", json!({})).await;
        claim(&a, ns).await;
        complete(&a, &job, json!({"cost_usd": 2.0})).await;
        post(&a, ns, "Next", json!({})).await;
    }
    let alpha = claim(&a, "alpha").await;
    assert_eq!(alpha["ok"], false, "the default of $2 is spent: {alpha}");
    assert!(
        alpha["refusal"]
            .as_str()
            .unwrap_or_default()
            .contains("$2.00"),
        "{alpha}"
    );
    let beta = claim(&a, "beta").await;
    assert_eq!(beta["ok"], true, "beta's own $10 wins: {beta}");
}

/// A resume is another paid session: at a spent budget (here 0) a blocked job resumes into no
/// one's lease and stays blocked, and raising the budget lets the same resume through.
async fn a_spent_namespace_resumes_nothing(s: &TestServer) {
    setup(s).await;
    let a = driver(s, "a", json!({})).await;
    let job = post(&a, "alpha", "Waits on a person", json!({})).await;
    assert_eq!(claim(&a, "alpha").await["ok"], true);
    let blocked = a
        .ok(
            "jobs",
            json!({"action": "block", "id": job["id"], "namespace": "alpha",
                   "reason": "needs a person", "command": "make deploy"}),
        )
        .await;
    assert_eq!(blocked["ok"], true, "{blocked}");
    s.admin(
        "update_namespace",
        json!({"namespace": "alpha", "monthly_budget_usd": 0}),
    )
    .await;
    let resume = || {
        a.ok(
            "jobs",
            json!({"action": "resume", "id": job["id"], "namespace": "alpha", "reason": "a person ran it"}),
        )
    };
    let refused = resume().await;
    assert_eq!(refused["ok"], false, "{refused}");
    let why = refused["refusal"].as_str().unwrap_or_default();
    for part in ["'alpha'", "$0.00", "stays blocked", "monthly-budget-usd"] {
        assert!(why.contains(part), "{part} in {why}");
    }
    assert!(refused.get("run_credential").is_none(), "{refused}");
    assert_eq!(status_of(&job, &a).await, "blocked");
    s.admin(
        "update_namespace",
        json!({"namespace": "alpha", "monthly_budget_usd": 5}),
    )
    .await;
    let resumed = resume().await;
    assert_eq!(resumed["ok"], true, "{resumed}");
    assert_eq!(status_of(&job, &a).await, "claimed");
}

e2e_cases!(crate::options();
    a_spent_month_claims_nothing_until_raised_or_over,
    a_spent_namespace_resumes_nothing,
    bad_budgets_and_costs_are_refused_naming_the_field,
);

mod with_default {
    use super::*;

    fn options() -> ServerOptions {
        ServerOptions {
            default_monthly_budget_usd: Some(2.0),
            ..crate::options()
        }
    }

    async fn the_servers_default_applies_where_a_namespace_has_none(s: &TestServer) {
        super::the_servers_default_applies_where_a_namespace_has_none(s).await;
    }

    e2e_cases!(super::options();
        the_servers_default_applies_where_a_namespace_has_none,
    );
}
