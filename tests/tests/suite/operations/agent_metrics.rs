//! The agents' figures on `GET /metrics` (issue 56, item 6), read with a Prometheus parser:
//! agents by namespace and status, questions waiting for a person and the oldest one's age
//! (time from the server's clock, moved by the test), checkpoints recorded, and runs in
//! progress with what the job ledger holds for them; a scraper narrowed to one namespace sees
//! only its own. And the Grafana dashboard shipped in `docs/grafana/` queries only families
//! a scrape serves.

use std::collections::BTreeSet;

use capsid_tests::server::{Client, TestServer};
use prometheus_parse::{Sample, Scrape, Value as Sampled};
use serde_json::{Value, json};

use crate::operations::http_get;

/// The dashboard, from the repository's root.
const DASHBOARD: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../docs/grafana/capsid-agents.json"
);

/// The families this item adds, as the parser names their samples.
const AGENT_FAMILIES: [&str; 6] = [
    "capsid_agents",
    "capsid_questions_waiting",
    "capsid_question_oldest_age_seconds",
    "capsid_checkpoints_total",
    "capsid_runs_in_progress",
    "capsid_run_spend_usd",
];

async fn scrape(s: &TestServer, key: &str) -> Scrape {
    let (status, _, body) = http_get(&format!("{}/metrics", s.url), Some(key), None).await;
    assert_eq!(status, 200, "{body}");
    Scrape::parse(body.lines().map(|l| Ok(l.to_owned()))).expect("the scrape parses")
}

/// The value of the one sample of `metric` whose labels are exactly `labels`.
fn one(scrape: &Scrape, metric: &str, labels: &[(&str, &str)]) -> f64 {
    let found: Vec<&Sample> = scrape
        .samples
        .iter()
        .filter(|s| {
            s.metric == metric
                && s.labels.len() == labels.len()
                && labels.iter().all(|(k, v)| s.labels.get(k) == Some(*v))
        })
        .collect();
    assert_eq!(found.len(), 1, "{metric} {labels:?}: {found:?}");
    match found[0].value {
        Sampled::Counter(v) | Sampled::Gauge(v) | Sampled::Untyped(v) => v,
        ref other => panic!("{metric} is not a single value: {other:?}"),
    }
}

fn namespaces_of(scrape: &Scrape, metric: &str) -> BTreeSet<String> {
    scrape
        .samples
        .iter()
        .filter(|s| s.metric == metric)
        .filter_map(|s| s.labels.get("namespace").map(str::to_owned))
        .collect()
}

/// An agent of `ns` that records checkpoints.
async fn agent(s: &TestServer, name: &str, ns: &str) -> Client {
    let key = s
        .mint(
            name,
            "driver",
            json!({"namespaces": [ns], "grants": ["read", "write"]}),
        )
        .await;
    s.client(&key).await
}

async fn checkpoint(c: &Client, args: Value) {
    c.ok("checkpoint", args).await;
}

/// A driver of `ns` holding the oldest queued job there.
async fn holder(s: &TestServer, name: &str, ns: &str) -> (Client, Value) {
    let key = s
        .mint(
            name,
            "driver",
            json!({"namespaces": [ns], "grants": ["read", "write"]}),
        )
        .await;
    let c = s.client(&key).await;
    let claim = c
        .ok("jobs", json!({"action": "claim", "namespace": ns}))
        .await;
    assert_eq!(claim["ok"], true, "{claim}");
    (c, claim["job"].clone())
}

/// The holder's door meters `costs` (US dollars) on `job`, as calls `<door>_<n>`.
async fn meter(c: &Client, door: &str, job: &Value, costs: &[f64]) {
    let calls: Vec<Value> = costs
        .iter()
        .enumerate()
        .map(|(i, cost)| {
            json!({
                "call_id": format!("{door}_{i}"),
                "model": "claude-sonnet-5", "input_tokens": 1000, "output_tokens": 200,
                "cost_usd": cost, "priced": "table", "ended": "completed",
                "started_at": "2026-11-02T10:00:00.000Z", "ended_at": "2026-11-02T10:00:03.000Z",
            })
        })
        .collect();
    let out = c
        .ok(
            "jobs",
            json!({"action": "meter", "id": job["id"], "namespace": job["namespace"], "calls": calls}),
        )
        .await;
    assert_eq!(out["ok"], true, "{out}");
}

async fn post(s: &TestServer, ns: &str, title: &str) {
    let out = s
        .admin(
            "jobs",
            json!({"action": "post", "namespace": ns, "title": title, "body": "Do it.\n"}),
        )
        .await;
    assert_eq!(out["ok"], true, "{out}");
}

/// Alpha: a1 working (two checkpoints), a2 paused on a question since t0, a4 paused since
/// t0 + 60 s, a3 blocked since t0 + 90 s and answered; beta: b1 done. Scraped at t0 + 120 s.
async fn agents_and_questions(s: &TestServer) {
    let a1 = agent(s, "a1", "alpha").await;
    let a2 = agent(s, "a2", "alpha").await;
    let a3 = agent(s, "a3", "alpha").await;
    let a4 = agent(s, "a4", "alpha").await;
    let b1 = agent(s, "b1", "beta").await;
    checkpoint(
        &a1,
        json!({"namespace": "alpha", "status": "working", "where_it_stopped": "schema"}),
    )
    .await;
    checkpoint(
        &a2,
        json!({"namespace": "alpha", "status": "paused_for_input", "question": "Postgres or SQLite?"}),
    )
    .await;
    s.clock.advance(60_000);
    checkpoint(
        &a4,
        json!({"namespace": "alpha", "status": "paused_for_input", "question": "Which port?"}),
    )
    .await;
    s.clock.advance(30_000);
    checkpoint(
        &a3,
        json!({"namespace": "alpha", "status": "blocked", "question": "Run the migration, please."}),
    )
    .await;
    s.admin(
        "checkmarks",
        json!({"action": "answer", "namespace": "alpha", "agent": "a3", "answer": "Done."}),
    )
    .await;
    checkpoint(
        &a1,
        json!({"namespace": "alpha", "status": "working", "where_it_stopped": "migration"}),
    )
    .await;
    checkpoint(
        &b1,
        json!({"namespace": "beta", "status": "done", "tests_status": "pass"}),
    )
    .await;
    // A refused checkpoint (done without passing tests) records nothing.
    let refused = b1
        .call(
            "checkpoint",
            json!({"namespace": "beta", "status": "done", "tests_status": "fail"}),
        )
        .await;
    assert!(refused.is_err(), "{refused:?}");
    s.clock.advance(30_000);
}

/// Alpha: one run with 0.375 USD metered, one failed after 1 USD (not in progress), one job
/// queued; beta: one run with nothing metered.
async fn runs_with_spend(s: &TestServer) {
    for title in ["first", "second", "third"] {
        post(s, "alpha", title).await;
    }
    post(s, "beta", "fourth").await;
    let (d1, running) = holder(s, "d1", "alpha").await;
    meter(&d1, "d1", &running, &[0.25, 0.125]).await;
    let (d2, failed) = holder(s, "d2", "alpha").await;
    meter(&d2, "d2", &failed, &[1.0]).await;
    let out = d2
        .ok(
            "jobs",
            json!({"action": "fail", "id": failed["id"], "namespace": "alpha", "reason": "gave up"}),
        )
        .await;
    assert_eq!(out["ok"], true, "{out}");
    holder(s, "d3", "beta").await;
}

pub(crate) async fn metrics_count_agents_questions_checkpoints_and_runs(s: &TestServer) {
    s.namespace("alpha").await;
    s.namespace("beta").await;
    let scraper = s
        .mint(
            "scraper",
            "session",
            json!({"namespaces": ["*"], "grants": ["read"]}),
        )
        .await;
    let narrow = s
        .mint(
            "alpha-watcher",
            "session",
            json!({"namespaces": ["alpha"], "grants": ["read"]}),
        )
        .await;
    // Before any agent: every status of every namespace is there, at zero.
    let empty = scrape(s, &scraper).await;
    for ns in ["alpha", "beta"] {
        for status in ["working", "paused_for_input", "blocked", "done"] {
            assert_eq!(
                one(
                    &empty,
                    "capsid_agents",
                    &[("namespace", ns), ("status", status)]
                ),
                0.0
            );
        }
        assert_eq!(
            one(&empty, "capsid_checkpoints_total", &[("namespace", ns)]),
            0.0
        );
    }

    runs_with_spend(s).await;
    agents_and_questions(s).await;
    let m = scrape(s, &scraper).await;
    let agents = |ns, status| {
        one(
            &m,
            "capsid_agents",
            &[("namespace", ns), ("status", status)],
        )
    };
    assert_eq!(agents("alpha", "working"), 1.0);
    assert_eq!(agents("alpha", "paused_for_input"), 2.0);
    assert_eq!(agents("alpha", "blocked"), 1.0);
    assert_eq!(agents("alpha", "done"), 0.0);
    assert_eq!(agents("beta", "done"), 1.0);
    assert_eq!(agents("beta", "working"), 0.0);
    let by_ns = |metric, ns| one(&m, metric, &[("namespace", ns)]);
    // a3's question was answered: two wait in alpha, the oldest (a2's) asked 120 s ago.
    assert_eq!(by_ns("capsid_questions_waiting", "alpha"), 2.0);
    assert_eq!(by_ns("capsid_question_oldest_age_seconds", "alpha"), 120.0);
    assert_eq!(by_ns("capsid_questions_waiting", "beta"), 0.0);
    assert_eq!(by_ns("capsid_question_oldest_age_seconds", "beta"), 0.0);
    assert_eq!(by_ns("capsid_checkpoints_total", "alpha"), 5.0);
    assert_eq!(by_ns("capsid_checkpoints_total", "beta"), 1.0);
    assert_eq!(by_ns("capsid_runs_in_progress", "alpha"), 1.0);
    assert_eq!(by_ns("capsid_run_spend_usd", "alpha"), 0.375);
    assert_eq!(by_ns("capsid_runs_in_progress", "beta"), 1.0);
    assert_eq!(by_ns("capsid_run_spend_usd", "beta"), 0.0);

    // Answering the oldest question leaves a4's, asked 60 s ago.
    s.admin(
        "checkmarks",
        json!({"action": "answer", "namespace": "alpha", "agent": "a2", "answer": "SQLite."}),
    )
    .await;
    let later = scrape(s, &narrow).await;
    assert_eq!(
        one(
            &later,
            "capsid_questions_waiting",
            &[("namespace", "alpha")]
        ),
        1.0
    );
    assert_eq!(
        one(
            &later,
            "capsid_question_oldest_age_seconds",
            &[("namespace", "alpha")]
        ),
        60.0
    );
    // The narrowed scraper sees alpha only, in every family this item adds.
    for family in AGENT_FAMILIES {
        assert_eq!(
            namespaces_of(&later, family),
            ["alpha".to_owned()].into(),
            "{family}"
        );
    }
}

/// Every `capsid_` name in `text`, as written (a PromQL expression or a variable's query).
fn capsid_names(text: &str, into: &mut BTreeSet<String>) {
    let mut rest = text;
    while let Some(at) = rest.find("capsid_") {
        let tail = &rest[at..];
        let end = tail
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == ':'))
            .unwrap_or(tail.len());
        into.insert(tail[..end].to_owned());
        rest = &tail[end..];
    }
}

/// The metric names of every query (`expr`) and variable query (`query`) in the dashboard.
fn queried_names(v: &Value, into: &mut BTreeSet<String>) {
    match v {
        Value::Object(map) => {
            for (key, value) in map {
                match (key.as_str(), value) {
                    ("expr" | "query", Value::String(q)) => capsid_names(q, into),
                    _ => queried_names(value, into),
                }
            }
        }
        Value::Array(items) => items.iter().for_each(|i| queried_names(i, into)),
        _ => {}
    }
}

pub(crate) async fn the_agents_dashboard_queries_only_served_metrics(s: &TestServer) {
    let text = std::fs::read_to_string(DASHBOARD).expect("the dashboard is shipped");
    let dashboard: Value = serde_json::from_str(&text).expect("the dashboard is JSON");
    assert!(dashboard["title"].is_string(), "a dashboard has a title");
    let panels = dashboard["panels"].as_array().expect("panels");
    assert!(!panels.is_empty());
    let mut queried = BTreeSet::new();
    queried_names(&dashboard, &mut queried);
    for family in AGENT_FAMILIES {
        assert!(queried.contains(family), "no panel queries {family}");
    }

    // What a scrape serves once every family has a sample.
    s.namespace("alpha").await;
    let scraper = s
        .mint(
            "scraper",
            "session",
            json!({"namespaces": ["*"], "grants": ["read"]}),
        )
        .await;
    let a1 = agent(s, "a1", "alpha").await;
    checkpoint(
        &a1,
        json!({"namespace": "alpha", "status": "working", "where_it_stopped": "schema"}),
    )
    .await;
    let served: BTreeSet<String> = scrape(s, &scraper)
        .await
        .samples
        .into_iter()
        .map(|x| x.metric)
        .collect();
    for name in &queried {
        assert!(
            served.contains(name),
            "the dashboard queries {name}, which /metrics does not serve: {served:?}"
        );
    }
}
