//! `GET /metrics` over HTTP, read with a Prometheus text-format parser (`prometheus-parse`):
//! the key it needs, the families it serves, the values they hold after real tool calls, and
//! the labels it never uses (no agent names, paths, ids or keys; only closed label sets).

use std::collections::BTreeSet;

use capsid_core::improve::keys::BACKUP_LAST_OK_KEY;
use capsid_core::service::REGISTRY;
use capsid_core::service::Scheduler;
use capsid_core::time::{Clock, HOUR_MS};
use capsid_tests::server::TestServer;
use prometheus_parse::{Sample, Scrape, Value};
use serde_json::json;

use crate::operations::http_get;

/// Every label name the endpoint may use (`le` is the histogram's own).
const ALLOWED_LABELS: [&str; 12] = [
    "route",
    "status",
    "tool",
    "outcome",
    "namespace",
    "state",
    "pool",
    "task",
    "version",
    "sha",
    "dirty",
    "le",
];

/// The families a scrape must hold, as the parser names their samples.
const FAMILIES: [&str; 14] = [
    "capsid_http_requests_total",
    "capsid_tool_calls_total",
    "capsid_tool_call_duration_seconds",
    "capsid_scheduler_ticks_total",
    "capsid_build_info",
    "capsid_store_up",
    "capsid_jobs",
    "capsid_queue_depth",
    "capsid_queue_oldest_age_seconds",
    "capsid_queue_namespaces_left_out",
    "capsid_job_leases",
    "capsid_backup_age_seconds",
    "capsid_store_connections",
    "capsid_store_connections_max",
];

/// Scrapes with `key` and parses the body.
async fn scrape(server: &TestServer, key: &str) -> Scrape {
    let (status, headers, body) =
        http_get(&format!("{}/metrics", server.url), Some(key), None).await;
    assert_eq!(status, 200, "{body}");
    assert!(
        headers
            .get("content-type")
            .is_some_and(|v| v.starts_with("text/plain; version=0.0.4")),
        "{headers:?}"
    );
    Scrape::parse(body.lines().map(|l| Ok(l.to_owned()))).expect("the scrape parses")
}

fn value(sample: &Sample) -> f64 {
    match &sample.value {
        Value::Counter(v) | Value::Gauge(v) | Value::Untyped(v) => *v,
        other => panic!("{} is not a single value: {other:?}", sample.metric),
    }
}

/// The one sample of `metric` whose labels include `labels`.
fn one(scrape: &Scrape, metric: &str, labels: &[(&str, &str)]) -> f64 {
    let found: Vec<&Sample> = scrape
        .samples
        .iter()
        .filter(|s| s.metric == metric && labels.iter().all(|(k, v)| s.labels.get(k) == Some(*v)))
        .collect();
    assert_eq!(found.len(), 1, "{metric} {labels:?}: {found:?}");
    value(found[0])
}

fn label_values(scrape: &Scrape, metric: &str, label: &str) -> BTreeSet<String> {
    scrape
        .samples
        .iter()
        .filter(|s| s.metric == metric)
        .filter_map(|s| s.labels.get(label).map(str::to_owned))
        .collect()
}

pub(crate) async fn metrics_need_a_read_key_and_serve_every_family(s: &TestServer) {
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
    let no_read = s
        .mint(
            "writer-only",
            "session",
            json!({"namespaces": ["*"], "grants": ["write"]}),
        )
        .await;
    let driver_key = s
        .mint(
            "driver-zebra-1234",
            "driver",
            json!({"namespaces": ["alpha"], "grants": ["read", "write"]}),
        )
        .await;

    // No key, an unknown key, a key without the read grant: refused before any figure.
    let (status, headers, _) = http_get(&format!("{}/metrics", s.url), None, None).await;
    assert_eq!(status, 401);
    assert_eq!(
        headers.get("www-authenticate").map(String::as_str),
        Some("Bearer realm=\"capsid-operator\"")
    );
    let (status, _, _) = http_get(&format!("{}/metrics", s.url), Some("nope"), None).await;
    assert_eq!(status, 401);
    let (status, _, body) = http_get(&format!("{}/metrics", s.url), Some(&no_read), None).await;
    assert_eq!(status, 403, "{body}");
    assert!(body.contains("read grant"), "{body}");

    // Work to count: two jobs in alpha (one claimed by the driver), documents written and
    // read, a refused read, and a tool name no table holds.
    for title in ["first", "second"] {
        s.admin(
            "jobs",
            json!({"action": "post", "namespace": "alpha", "title": title, "body": "Do it.\n"}),
        )
        .await;
    }
    let driver = s.client(&driver_key).await;
    let claim = driver
        .ok("jobs", json!({"action": "claim", "namespace": "alpha"}))
        .await;
    assert_eq!(claim["ok"], true, "{claim}");
    let job_id = claim["job"]["id"].as_str().expect("an id").to_owned();
    let secret_path = "notes/private-path-quokka.md";
    driver
        .ok(
            "write",
            json!({"namespace": "alpha", "path": secret_path, "title": "t", "body": "hello\n"}),
        )
        .await;
    driver
        .ok("read", json!({"namespace": "alpha", "path": secret_path}))
        .await;
    driver
        .err(
            "read",
            json!({"namespace": "alpha", "path": "notes/missing.md"}),
        )
        .await;
    driver.err("no_such_tool_wombat", json!({})).await;
    // A scheduler tick of this process, as `capsid serve` records it.
    let tick = Scheduler::new(s.service.clone(), "replica-a").tick().await;
    s.metrics.record_tick("lease_sweep", &tick);
    if let Ok(report) = &tick {
        s.metrics.record_task_runs(report);
    }

    let scraped = scrape(s, &scraper).await;
    let names: BTreeSet<&str> = scraped.samples.iter().map(|x| x.metric.as_str()).collect();
    for family in FAMILIES {
        assert!(names.contains(family), "{family} missing from {names:?}");
    }

    // Values, read through the parser.
    assert_eq!(
        one(&scraped, "capsid_queue_depth", &[("namespace", "alpha")]),
        1.0
    );
    assert_eq!(
        one(&scraped, "capsid_queue_depth", &[("namespace", "beta")]),
        0.0
    );
    assert!(
        one(
            &scraped,
            "capsid_queue_oldest_age_seconds",
            &[("namespace", "alpha")]
        ) >= 0.0
    );
    assert_eq!(one(&scraped, "capsid_jobs", &[("status", "claimed")]), 1.0);
    assert_eq!(one(&scraped, "capsid_jobs", &[("status", "queued")]), 1.0);
    assert_eq!(one(&scraped, "capsid_jobs", &[("status", "done")]), 0.0);
    assert_eq!(
        one(&scraped, "capsid_job_leases", &[("state", "live")]),
        1.0
    );
    assert_eq!(
        one(&scraped, "capsid_job_leases", &[("state", "lapsed")]),
        0.0
    );
    assert_eq!(
        one(
            &scraped,
            "capsid_tool_calls_total",
            &[("tool", "read"), ("outcome", "ok")]
        ),
        1.0
    );
    assert_eq!(
        one(
            &scraped,
            "capsid_tool_calls_total",
            &[("tool", "read"), ("outcome", "not_found")]
        ),
        1.0
    );
    assert_eq!(
        one(
            &scraped,
            "capsid_tool_calls_total",
            &[("tool", "unknown"), ("outcome", "invalid")]
        ),
        1.0
    );
    assert_eq!(
        one(
            &scraped,
            "capsid_tool_calls_total",
            &[("tool", "jobs"), ("outcome", "ok")]
        ),
        1.0
    );
    assert_eq!(
        one(
            &scraped,
            "capsid_scheduler_ticks_total",
            &[("task", "lease_sweep"), ("outcome", "led")]
        ),
        1.0
    );
    // Each periodic task is counted by its name.
    for task in ["sweep", "ci-poll", "backup", "auto-merge", "watcher"] {
        assert_eq!(
            one(
                &scraped,
                "capsid_scheduler_ticks_total",
                &[("task", task), ("outcome", "ran")]
            ),
            1.0,
            "{task}"
        );
    }
    assert_eq!(one(&scraped, "capsid_store_up", &[]), 1.0);
    assert_eq!(
        one(&scraped, "capsid_build_info", &[("version", "test")]),
        1.0
    );
    assert_eq!(
        one(&scraped, "capsid_backup_age_seconds", &[]),
        f64::INFINITY
    );
    assert!(
        one(
            &scraped,
            "capsid_http_requests_total",
            &[("route", "/ops/mcp"), ("status", "200")]
        ) >= 5.0
    );
    assert_eq!(
        one(
            &scraped,
            "capsid_http_requests_total",
            &[("route", "/metrics"), ("status", "403")]
        ),
        1.0
    );
    // The latency histogram: fixed buckets, every tool call in the +Inf bucket.
    let read_latency = scraped
        .samples
        .iter()
        .find(|x| {
            x.metric == "capsid_tool_call_duration_seconds" && x.labels.get("tool") == Some("read")
        })
        .expect("read latency");
    let Value::Histogram(buckets) = &read_latency.value else {
        panic!("not a histogram: {read_latency:?}");
    };
    let bounds: Vec<f64> = buckets.iter().map(|b| b.less_than).collect();
    let mut expected = capsid_http::TOOL_LATENCY_BUCKETS.to_vec();
    expected.push(f64::INFINITY);
    assert_eq!(bounds, expected);
    assert_eq!(buckets.last().map(|b| b.count), Some(2.0));

    // No forbidden label: only the closed names, no agent name, path, id or key in a value.
    for sample in &scraped.samples {
        for (name, v) in sample.labels.iter() {
            assert!(
                ALLOWED_LABELS.contains(&name.as_str()),
                "label {name} on {}",
                sample.metric
            );
            for secret in [
                "driver-zebra-1234",
                "scraper",
                "quokka",
                "notes/",
                job_id.as_str(),
                driver_key.as_str(),
                scraper.as_str(),
            ] {
                assert!(
                    !v.contains(secret),
                    "{secret} leaked as {name}={v} on {}",
                    sample.metric
                );
            }
        }
    }
    let tools: BTreeSet<&str> = REGISTRY
        .iter()
        .map(|e| e.spec.name)
        .chain(["unknown"])
        .collect();
    for family in [
        "capsid_tool_calls_total",
        "capsid_tool_call_duration_seconds",
    ] {
        for tool in label_values(&scraped, family, "tool") {
            assert!(
                tools.contains(tool.as_str()),
                "tool label {tool} on {family}"
            );
        }
    }
    assert_eq!(
        label_values(&scraped, "capsid_queue_depth", "namespace"),
        ["alpha", "beta"].map(str::to_owned).into()
    );

    // A recorded backup gives its age; a scraper narrowed to alpha sees only alpha.
    let hour_ago = s.clock.now().plus_millis(-HOUR_MS);
    s.store
        .put_setting(BACKUP_LAST_OK_KEY, &hour_ago.to_string(), None)
        .await
        .expect("setting");
    let narrowed = scrape(s, &narrow).await;
    assert_eq!(one(&narrowed, "capsid_backup_age_seconds", &[]), 3600.0);
    assert_eq!(
        label_values(&narrowed, "capsid_queue_depth", "namespace"),
        ["alpha".to_owned()].into()
    );

    // OpenMetrics when the scraper asks for it.
    let (status, headers, body) = http_get(
        &format!("{}/metrics", s.url),
        Some(&scraper),
        Some("application/openmetrics-text; version=1.0.0"),
    )
    .await;
    assert_eq!(status, 200);
    assert!(
        headers
            .get("content-type")
            .is_some_and(|v| v.starts_with("application/openmetrics-text")),
        "{headers:?}"
    );
    assert!(body.ends_with("# EOF\n"), "{body}");
}
