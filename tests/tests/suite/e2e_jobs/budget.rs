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

/// Sixteen drivers claim at once in a namespace whose budget holds three jobs' caps: exactly
/// three are granted (the cap is reserved inside the claim's transaction), every refusal names
/// the budget, the spend and what is reserved by which jobs, and a finished job's cost
/// settles its reservation so the next claim fits again.
async fn sixteen_racing_claims_with_money_for_three_caps_grant_three(s: &TestServer) {
    setup(s).await;
    s.admin(
        "update_namespace",
        json!({"namespace": "alpha", "monthly_budget_usd": 3.0}),
    )
    .await;
    let poster = driver(s, "poster", json!({})).await;
    for i in 0..16 {
        post(
            &poster,
            "alpha",
            &format!("Capped {i}"),
            json!({"max_cost_usd": 1.0}),
        )
        .await;
    }
    let mut drivers = Vec::new();
    for i in 0..16 {
        drivers.push(driver(s, &format!("d{i}"), json!({})).await);
    }
    let answers = futures::future::join_all(drivers.iter().map(|d| claim(d, "alpha"))).await;
    let granted: Vec<&Value> = answers.iter().filter(|a| a["ok"] == true).collect();
    assert_eq!(granted.len(), 3, "{answers:#?}");
    for g in &granted {
        assert_eq!(
            g["max_cost_usd"],
            json!(1.0),
            "the run's cap rides the claim: {g}"
        );
        assert_eq!(g["job"]["max_cost_usd"], json!(1.0), "{g}");
    }
    for refused in answers.iter().filter(|a| a["ok"] != true) {
        let why = refused["refusal"].as_str().unwrap_or_default();
        for part in [
            "'alpha'",
            "$3.00",
            "$1.00",
            "$3.00 is reserved",
            "stays queued",
        ] {
            assert!(why.contains(part), "{part} in {why}");
        }
        for g in &granted {
            let id = g["job"]["id"].as_str().unwrap_or("?");
            assert!(why.contains(id), "the refusal names {id}: {why}");
        }
    }
    let queued = poster
        .ok(
            "jobs",
            json!({"action": "list", "namespace": "alpha", "status": "queued"}),
        )
        .await;
    assert_eq!(
        queued["jobs"].as_array().map(Vec::len),
        Some(13),
        "{queued}"
    );

    // A finish settles its reservation to what it spent: $0.40 spent and $2.00 reserved
    // leave $0.60, under a cap; a second finish at $0.20 leaves $1.40, and one more fits.
    let holder = |g: &Value| {
        let by = g["job"]["claimed_by"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        answers
            .iter()
            .position(|a| a["job"]["claimed_by"] == by.as_str() && a["ok"] == true)
            .map(|i| &drivers[i])
            .expect("the granted claim's driver")
    };
    complete(
        holder(granted[0]),
        &granted[0]["job"],
        json!({"cost_usd": 0.4}),
    )
    .await;
    let late = driver(s, "late", json!({})).await;
    let refused = claim(&late, "alpha").await;
    assert_eq!(refused["ok"], false, "{refused}");
    assert!(
        refused["refusal"]
            .as_str()
            .unwrap_or_default()
            .contains("$0.40 is spent"),
        "{refused}"
    );
    complete(
        holder(granted[1]),
        &granted[1]["job"],
        json!({"cost_usd": 0.2}),
    )
    .await;
    let fits = claim(&late, "alpha").await;
    assert_eq!(fits["ok"], true, "{fits}");
}

/// A cap that is not dollars above zero is refused at post, naming the field; nothing is
/// queued.
async fn a_bad_job_cap_is_refused_naming_the_field(s: &TestServer) {
    setup(s).await;
    let a = driver(s, "a", json!({})).await;
    for bad in [json!(0), json!(-1), json!("lots"), json!(1e13)] {
        let err = a
            .err(
                "jobs",
                json!({"action": "post", "namespace": "alpha", "title": "Capped",
                       "body": "Do it.\n", "max_cost_usd": bad}),
            )
            .await;
        assert!(err.contains("max_cost_usd"), "{bad}: {err}");
    }
    let listed = a
        .ok("jobs", json!({"action": "list", "namespace": "alpha"}))
        .await;
    assert_eq!(listed["jobs"], json!([]), "{listed}");
}

/// `jobs raise`: a key needs `can_raise_budget` (and the job's namespace), a raise names more
/// than the current cap, an ended job keeps its cap, and a job blocked at its budget gate is
/// answered and resumed by the raise (its driver's open question about the job).
async fn a_raise_needs_its_flag_and_resumes_a_job_blocked_at_its_budget(s: &TestServer) {
    setup(s).await;
    let a = driver(s, "a", json!({})).await;
    let raiser = driver(s, "raiser", json!({"flags": {"can_raise_budget": true}})).await;
    let narrow = driver(
        s,
        "narrow",
        json!({"namespaces": ["beta"], "flags": {"can_raise_budget": true}}),
    )
    .await;
    let job = post(&a, "alpha", "Spends", json!({"max_cost_usd": 0.05})).await;
    let raise = |usd: Value| json!({"action": "raise", "id": job["id"], "namespace": "alpha", "max_cost_usd": usd});
    let denied = a.err("jobs", raise(json!(1.0))).await;
    assert!(denied.contains("can_raise_budget"), "{denied}");
    let denied = narrow.err("jobs", raise(json!(1.0))).await;
    assert!(denied.contains("alpha"), "{denied}");
    let low = raiser.ok("jobs", raise(json!(0.05))).await;
    assert_eq!(low["ok"], false, "{low}");
    assert!(
        low["refusal"]
            .as_str()
            .unwrap_or_default()
            .contains("$0.05 already"),
        "{low}"
    );
    let bad = raiser.err("jobs", raise(json!(-2))).await;
    assert!(bad.contains("max_cost_usd"), "{bad}");
    let elsewhere = raiser
        .ok(
            "jobs",
            json!({"action": "raise", "id": job["id"], "namespace": "beta", "max_cost_usd": 1.0}),
        )
        .await;
    assert_eq!(elsewhere["ok"], false, "{elsewhere}");

    // The driver claims, its run stops at the cap, and it blocks with the budget question.
    assert_eq!(claim(&a, "alpha").await["max_cost_usd"], json!(0.05));
    let question = "The job's model budget is spent: $0.05 of its $0.05 cap used.";
    let checkpoint = a
        .ok(
            "checkpoint",
            json!({"namespace": "alpha", "status": "blocked", "job_id": job["id"], "question": question}),
        )
        .await;
    assert!(checkpoint.get("checkmark").is_some(), "{checkpoint}");
    let blocked = a
        .ok(
            "jobs",
            json!({"action": "block", "id": job["id"], "namespace": "alpha",
                   "reason": question, "command": "capsid jobs raise"}),
        )
        .await;
    assert_eq!(blocked["ok"], true, "{blocked}");
    let raised = raiser.ok("jobs", raise(json!(0.25))).await;
    assert_eq!(raised["ok"], true, "{raised}");
    assert_eq!(raised["job"]["max_cost_usd"], json!(0.25), "{raised}");
    assert_eq!(raised["max_cost_usd"], json!(0.25), "{raised}");
    assert_eq!(raised["resumed"], true, "{raised}");
    let mark = a
        .ok(
            "checkmarks",
            json!({"action": "get", "namespace": "alpha", "agent": "a"}),
        )
        .await;
    let text = mark.to_string();
    assert!(text.contains("raised to $0.25"), "{mark}");
    // The driver resumes the job: the answer's terms carry the raised cap.
    let resumed = a
        .ok(
            "jobs",
            json!({"action": "resume", "id": job["id"], "namespace": "alpha", "reason": "raised"}),
        )
        .await;
    assert_eq!(resumed["ok"], true, "{resumed}");
    assert_eq!(resumed["max_cost_usd"], json!(0.25), "{resumed}");
    // An ended job keeps its cap.
    a.ok(
        "jobs",
        json!({"action": "complete", "id": job["id"], "namespace": "alpha", "result_summary": "done"}),
    )
    .await;
    let ended = raiser.ok("jobs", raise(json!(5.0))).await;
    assert_eq!(ended["ok"], false, "{ended}");
    assert!(
        ended["refusal"]
            .as_str()
            .unwrap_or_default()
            .contains("done"),
        "{ended}"
    );
}

/// What waits on the owner, as the console reads it.
async fn attention(owner: &capsid_core::owner::OwnerService) -> Value {
    let mut marks = json!({"namespaces": []});
    owner
        .console_attention(&capsid_core::caller::Caller::admin("octo"), &mut marks)
        .await
        .expect("the owner's list")
}

/// The console's "Waiting on you" lists a namespace whose month is spent (issue 53, item 20),
/// and counts it; raising its budget takes it off.
async fn a_spent_namespace_waits_on_the_owner_in_the_console(s: &TestServer) {
    setup(s).await;
    let owner = capsid_core::owner::OwnerService::new(s.service.clone());
    let before = attention(&owner).await;
    assert_eq!(before["over_budget"], json!([]), "{before}");
    // An empty month reads 0.0, not -0.0 (issue 56, item 11).
    let status = s.admin("improve_status", json!({})).await;
    let month = &status["budget"]["month_to_date"];
    assert_eq!(
        (
            month["cost_usd"].to_string(),
            month["ci_minutes"].to_string()
        ),
        ("0.0".to_owned(), "0.0".to_owned()),
        "{status}"
    );
    s.admin(
        "update_namespace",
        json!({"namespace": "alpha", "monthly_budget_usd": 0}),
    )
    .await;
    let spent = attention(&owner).await;
    let listed = &spent["over_budget"];
    assert_eq!(listed.as_array().map(Vec::len), Some(1), "{spent}");
    assert_eq!(listed[0]["namespace"], "alpha", "{spent}");
    assert_eq!(listed[0]["budget_usd"], 0.0, "{spent}");
    assert_eq!(listed[0]["source"], "namespace", "{spent}");
    assert_eq!(
        spent["count"].as_u64(),
        before["count"].as_u64().map(|n| n + 1),
        "{spent}"
    );
    s.admin(
        "update_namespace",
        json!({"namespace": "alpha", "monthly_budget_usd": 5}),
    )
    .await;
    assert_eq!(attention(&owner).await["over_budget"], json!([]));
}

e2e_cases!(crate::e2e_jobs::options();
    a_spent_namespace_waits_on_the_owner_in_the_console,
    a_raise_needs_its_flag_and_resumes_a_job_blocked_at_its_budget,
    a_spent_month_claims_nothing_until_raised_or_over,
    a_spent_namespace_resumes_nothing,
    bad_budgets_and_costs_are_refused_naming_the_field,
    sixteen_racing_claims_with_money_for_three_caps_grant_three,
    a_bad_job_cap_is_refused_naming_the_field,
);

mod with_default_cap {
    use super::*;

    fn options() -> ServerOptions {
        ServerOptions {
            default_job_max_cost_usd: Some(capsid_core::drive::ledger::Usd::from_micros(2_000_000)),
            ..crate::e2e_jobs::options()
        }
    }

    /// A job without its own cap runs under the server's (`CAPSID_JOB_MAX_COST_USD`): the
    /// claim answers it, reserves it, and a resume is held by it as a claim is.
    async fn a_job_without_a_cap_reserves_the_servers_default(s: &TestServer) {
        setup(s).await;
        s.admin(
            "update_namespace",
            json!({"namespace": "alpha", "monthly_budget_usd": 3.0}),
        )
        .await;
        let a = driver(s, "a", json!({})).await;
        let b = driver(s, "b", json!({})).await;
        let first = post(&a, "alpha", "Default capped", json!({})).await;
        let claimed = claim(&a, "alpha").await;
        post(&a, "alpha", "Own cap", json!({"max_cost_usd": 1.5})).await;
        assert_eq!(claimed["max_cost_usd"], json!(2.0), "{claimed}");
        assert!(claimed["job"].get("max_cost_usd").is_none(), "{claimed}");
        let refused = claim(&b, "alpha").await;
        assert_eq!(
            refused["ok"], false,
            "$2.00 reserved leaves $1.00: {refused}"
        );
        let why = refused["refusal"].as_str().unwrap_or_default();
        assert!(
            why.contains("$1.50") && why.contains("$2.00 is reserved"),
            "{why}"
        );
        // The first blocks (its reservation ends), the second is claimed, and the first's
        // resume is held by the second's reservation.
        let blocked = a
            .ok(
                "jobs",
                json!({"action": "block", "id": first["id"], "namespace": "alpha",
                       "reason": "needs a person", "command": "make deploy"}),
            )
            .await;
        assert_eq!(blocked["ok"], true, "{blocked}");
        assert_eq!(claim(&b, "alpha").await["ok"], true);
        let resume = a
            .ok(
                "jobs",
                json!({"action": "resume", "id": first["id"], "namespace": "alpha", "reason": "done by hand"}),
            )
            .await;
        assert_eq!(resume["ok"], false, "{resume}");
        let why = resume["refusal"].as_str().unwrap_or_default();
        assert!(
            why.contains("$1.50 is reserved") && why.contains("stays blocked"),
            "{why}"
        );
    }

    /// A namespace's own default cap (`update_namespace job_max_cost_usd`) stands between the
    /// job's own and the server's: a claim answers and reserves it, a raise must go above
    /// it, "none" gives the server's back, and a bad one is refused naming the field and
    /// changes nothing.
    async fn a_namespaces_default_cap_stands_between_the_jobs_and_the_servers(s: &TestServer) {
        setup(s).await;
        for bad in [json!(0), json!(-1.5), json!("two"), json!(true)] {
            let err = s
                .service
                .call_tool(
                    &capsid_core::caller::Caller::cli("test"),
                    "update_namespace",
                    json!({"namespace": "alpha", "job_max_cost_usd": bad}),
                    &capsid_core::service::NoConfirmer,
                )
                .await
                .expect_err("a bad cap is refused");
            assert!(err.to_string().contains("job_max_cost_usd"), "{bad}: {err}");
        }
        let row = s.store.namespace("alpha").await.unwrap().unwrap();
        assert_eq!(row.runner, None, "nothing was written");
        let set = s
            .admin(
                "update_namespace",
                json!({"namespace": "alpha", "job_max_cost_usd": 0.5}),
            )
            .await;
        assert_eq!(set["runner"]["job_max_cost_usd"], json!("0.5"), "{set}");
        s.admin(
            "update_namespace",
            json!({"namespace": "alpha", "monthly_budget_usd": 1.2}),
        )
        .await;
        let poster = driver(s, "poster", json!({})).await;
        for i in 0..3 {
            post(&poster, "alpha", &format!("Uncapped {i}"), json!({})).await;
        }
        // Two of the namespace's $0.50 fit in $1.20; the third is refused naming them.
        let a = driver(s, "a", json!({})).await;
        let b = driver(s, "b", json!({})).await;
        let c = driver(s, "c", json!({})).await;
        let first = claim(&a, "alpha").await;
        assert_eq!(first["max_cost_usd"], json!(0.5), "{first}");
        assert_eq!(claim(&b, "alpha").await["max_cost_usd"], json!(0.5));
        let refused = claim(&c, "alpha").await;
        assert_eq!(refused["ok"], false, "{refused}");
        let why = refused["refusal"].as_str().unwrap_or_default();
        assert!(why.contains("$1.00 is reserved"), "{why}");
        // A raise goes above the namespace's default, not the server's.
        let raise = |usd: f64| {
            s.admin(
                "jobs",
                json!({"action": "raise", "id": first["job"]["id"], "namespace": "alpha", "max_cost_usd": usd}),
            )
        };
        let low = raise(0.5).await;
        assert_eq!(low["ok"], false, "{low}");
        assert!(
            low["refusal"]
                .as_str()
                .unwrap_or_default()
                .contains("$0.50 already"),
            "{low}"
        );
        assert_eq!(raise(0.6).await["ok"], true);
        // "none" clears it: the server's default ($2.00) applies again.
        s.admin(
            "update_namespace",
            json!({"namespace": "alpha", "monthly_budget_usd": "none"}),
        )
        .await;
        let cleared = s
            .admin(
                "update_namespace",
                json!({"namespace": "alpha", "job_max_cost_usd": "none"}),
            )
            .await;
        assert!(
            cleared["runner"].get("job_max_cost_usd").is_none(),
            "{cleared}"
        );
        let got = claim(&c, "alpha").await;
        assert_eq!(got["max_cost_usd"], json!(2.0), "{got}");
    }

    e2e_cases!(super::options();
        a_job_without_a_cap_reserves_the_servers_default,
        a_namespaces_default_cap_stands_between_the_jobs_and_the_servers,
    );
}

mod with_default {
    use super::*;

    fn options() -> ServerOptions {
        ServerOptions {
            default_monthly_budget_usd: Some(2.0),
            ..crate::e2e_jobs::options()
        }
    }

    async fn the_servers_default_applies_where_a_namespace_has_none(s: &TestServer) {
        super::the_servers_default_applies_where_a_namespace_has_none(s).await;
    }

    e2e_cases!(super::options();
        the_servers_default_applies_where_a_namespace_has_none,
    );
}
