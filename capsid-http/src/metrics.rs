//! `GET /metrics`: Prometheus text (or OpenMetrics, when the scraper asks for it) with
//! `prometheus-client`, behind a bearer key with the read grant.
//!
//! Process figures live in [`Metrics`] (requests by route and status, tool calls by tool and
//! outcome with a latency histogram of fixed buckets, checkpoints recorded per namespace,
//! scheduler ticks and their errors, build info); the store's figures (jobs, queues, runs in
//! progress and their spend, agents by status, questions waiting for a person, leases, backup
//! age, pools) are asked of the core at each scrape and registered for that scrape only, so a
//! series never outlives its value and every replica reports the same.
//! Labels are closed sets (route templates, tool names from the table, outcome names,
//! registered namespaces): never an agent name, a path or an id.

use std::sync::atomic::AtomicU64;

use axum::extract::{MatchedPath, Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use capsid_core::error::Error;
use capsid_core::service::metrics::Gauges;
use capsid_core::service::{Resolved, TaskOutcome, TickReport};
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::{Registry, Unit};
use serde_json::json;

use crate::AppState;
use crate::health::BuildInfo;
use crate::unavailable::{unavailable, unavailable_because};

/// Upper bounds (seconds) of the tool-call latency histogram: fixed, from 0.5 ms to 30 s.
pub const TOOL_LATENCY_BUCKETS: [f64; 15] = [
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0,
];

/// The OpenMetrics content type (when the scraper's `Accept` asks for it).
const OPENMETRICS: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RequestLabels {
    route: String,
    status: u16,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ToolLabels {
    tool: &'static str,
    outcome: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ToolName {
    tool: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct TickLabels {
    task: &'static str,
    outcome: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct TaskLabel {
    task: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct BuildLabels {
    version: String,
    sha: String,
    dirty: bool,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct StatusLabel {
    status: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct NamespaceLabel {
    namespace: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct AgentLabels {
    namespace: String,
    status: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct LeaseLabel {
    state: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct PoolLabels {
    pool: &'static str,
    state: &'static str,
}

type SecondsGauge = Gauge<f64, AtomicU64>;
type LatencyFamily = Family<ToolName, Histogram, fn() -> Histogram>;

fn latency_histogram() -> Histogram {
    Histogram::new(TOOL_LATENCY_BUCKETS)
}

/// The process's own figures, shared by the router, the MCP handler and the scheduler.
#[derive(Debug)]
pub struct Metrics {
    requests: Family<RequestLabels, Counter>,
    tool_calls: Family<ToolLabels, Counter>,
    tool_latency: LatencyFamily,
    checkpoints: Family<NamespaceLabel, Counter>,
    ticks: Family<TickLabels, Counter>,
    tick_errors: Family<TaskLabel, Counter>,
    build: Family<BuildLabels, Gauge>,
}

impl Metrics {
    /// Empty figures for a process built as `build`.
    pub fn new(build: &BuildInfo) -> Metrics {
        let metrics = Metrics {
            requests: Family::default(),
            tool_calls: Family::default(),
            tool_latency: Family::new_with_constructor(latency_histogram),
            checkpoints: Family::default(),
            ticks: Family::default(),
            tick_errors: Family::default(),
            build: Family::default(),
        };
        metrics
            .build
            .get_or_create(&BuildLabels {
                version: build.version.clone(),
                sha: build.sha.clone(),
                dirty: build.dirty,
            })
            .set(1);
        metrics
    }

    /// Counts one answered request.
    fn record_request(&self, route: String, status: u16) {
        self.requests
            .get_or_create(&RequestLabels { route, status })
            .inc();
    }

    /// Counts one tool call (labels from the core's closed sets) and its latency.
    pub fn record_tool_call(&self, tool: &'static str, outcome: &'static str, seconds: f64) {
        self.tool_calls
            .get_or_create(&ToolLabels { tool, outcome })
            .inc();
        self.tool_latency
            .get_or_create(&ToolName { tool })
            .observe(seconds);
    }

    /// Counts one checkpoint recorded in `namespace` (a registered one: the core accepted it).
    pub fn record_checkpoint(&self, namespace: &str) {
        self.checkpoints
            .get_or_create(&NamespaceLabel {
                namespace: namespace.to_owned(),
            })
            .inc();
    }

    /// The calls of `tool` that ended with `outcome` so far (what `/metrics` reports).
    pub fn tool_call_count(&self, tool: &'static str, outcome: &'static str) -> u64 {
        self.tool_calls
            .get_or_create(&ToolLabels { tool, outcome })
            .get()
    }

    /// Counts one scheduler tick of `task`: not due, led by this replica, left to another
    /// replica, or failed.
    pub fn record_tick(&self, task: &'static str, result: &Result<TickReport, Error>) {
        let outcome = match result {
            Ok(r) if !r.due => "not_due",
            Ok(r) if r.led => "led",
            Ok(_) => "followed",
            Err(_) => {
                self.tick_errors.get_or_create(&TaskLabel { task }).inc();
                "error"
            }
        };
        self.ticks
            .get_or_create(&TickLabels { task, outcome })
            .inc();
    }

    /// Counts each periodic task's turn in a tick, by task name (`sweep`, `ci-poll`,
    /// `backup`, `auto-merge`, `watcher`) and outcome (`ran`, `failed`, `timed_out`,
    /// `ran_elsewhere`); failed and timed-out turns also count as that task's errors.
    pub fn record_task_runs(&self, report: &TickReport) {
        for run in &report.ran {
            if matches!(run.outcome, TaskOutcome::Failed | TaskOutcome::TimedOut) {
                self.tick_errors
                    .get_or_create(&TaskLabel { task: run.task })
                    .inc();
            }
            self.ticks
                .get_or_create(&TickLabels {
                    task: run.task,
                    outcome: run.outcome.name(),
                })
                .inc();
        }
    }

    /// A registry for one scrape: the process figures and, when the store answered, its own.
    fn registry(&self, gauges: Option<&Gauges>) -> Registry {
        let mut r = Registry::with_prefix("capsid");
        r.register(
            "http_requests",
            "HTTP requests answered, by route template and status",
            self.requests.clone(),
        );
        r.register(
            "tool_calls",
            "MCP tool calls, by tool and outcome",
            self.tool_calls.clone(),
        );
        r.register_with_unit(
            "tool_call_duration",
            "Time from a tool call's arrival in the core to its answer",
            Unit::Seconds,
            self.tool_latency.clone(),
        );
        r.register(
            "scheduler_ticks",
            "Scheduler ticks, by periodic task and outcome (led, followed, not_due, error)",
            self.ticks.clone(),
        );
        r.register(
            "scheduler_tick_errors",
            "Scheduler ticks that failed, by periodic task",
            self.tick_errors.clone(),
        );
        r.register(
            "build_info",
            "The running build (always 1)",
            self.build.clone(),
        );
        let up: Gauge = Gauge::default();
        up.set(i64::from(gauges.is_some()));
        r.register(
            "store_up",
            "Whether the store answered this scrape's queries",
            up,
        );
        if let Some(g) = gauges {
            register_store_gauges(&mut r, g);
            register_agent_gauges(&mut r, g);
            r.register(
                "checkpoints",
                "Checkpoints this replica recorded, per namespace (rate() * 60 gives checkpoints per minute; sum over replicas)",
                self.checkpoints_of(g),
            );
        }
        r
    }

    /// This process's checkpoint counts of the namespaces the scrape shows (the store's
    /// figures name them: registered, readable by the scraper, within the series bound).
    fn checkpoints_of(&self, g: &Gauges) -> Family<NamespaceLabel, Counter> {
        let shown: Family<NamespaceLabel, Counter> = Family::default();
        for a in &g.agents {
            let label = NamespaceLabel {
                namespace: a.namespace.clone(),
            };
            let n = self.checkpoints.get(&label).map_or(0, |c| c.get());
            shown.get_or_create(&label).inc_by(n);
        }
        shown
    }
}

fn gauge(value: u64) -> Gauge {
    let g = Gauge::default();
    g.set(i64::try_from(value).unwrap_or(i64::MAX));
    g
}

fn count(value: u64) -> i64 {
    i64::try_from(value).unwrap_or(i64::MAX)
}

/// The agents' figures: by status, questions waiting for a person and the oldest one's age, and
/// runs in progress with what the ledger holds for them.
fn register_agent_gauges(r: &mut Registry, g: &Gauges) {
    let agents: Family<AgentLabels, Gauge> = Family::default();
    let waiting: Family<NamespaceLabel, Gauge> = Family::default();
    let oldest: Family<NamespaceLabel, SecondsGauge> = Family::default();
    for a in &g.agents {
        for (status, n) in &a.by_status {
            agents
                .get_or_create(&AgentLabels {
                    namespace: a.namespace.clone(),
                    status: status.as_str(),
                })
                .set(count(*n));
        }
        let label = NamespaceLabel {
            namespace: a.namespace.clone(),
        };
        waiting
            .get_or_create(&label)
            .set(count(a.questions_waiting));
        oldest
            .get_or_create(&label)
            .set(a.oldest_question_seconds.unwrap_or(0.0));
    }
    r.register(
        "agents",
        "Agents by namespace and the status of their checkmark",
        agents,
    );
    r.register(
        "questions_waiting",
        "Agents' questions waiting for a person's answer, per namespace",
        waiting,
    );
    r.register_with_unit(
        "question_oldest_age",
        "Age of the oldest question waiting for a person per namespace (0 when none waits)",
        Unit::Seconds,
        oldest,
    );
    let runs: Family<NamespaceLabel, Gauge> = Family::default();
    let spend: Family<NamespaceLabel, SecondsGauge> = Family::default();
    for q in &g.queues {
        let label = NamespaceLabel {
            namespace: q.namespace.clone(),
        };
        runs.get_or_create(&label).set(count(q.runs_in_progress));
        spend.get_or_create(&label).set(q.run_spend_usd);
    }
    r.register(
        "runs_in_progress",
        "Runs in progress (claimed jobs) per namespace",
        runs,
    );
    r.register(
        "run_spend_usd",
        "US dollars the job ledger holds for the runs in progress so far (their metered model calls), per namespace",
        spend,
    );
}

fn register_store_gauges(r: &mut Registry, g: &Gauges) {
    let jobs: Family<StatusLabel, Gauge> = Family::default();
    for (status, n) in &g.jobs_by_status {
        jobs.get_or_create(&StatusLabel {
            status: status.as_str(),
        })
        .set(i64::try_from(*n).unwrap_or(i64::MAX));
    }
    r.register("jobs", "Jobs by status", jobs);
    let depth: Family<NamespaceLabel, Gauge> = Family::default();
    let oldest: Family<NamespaceLabel, SecondsGauge> = Family::default();
    for q in &g.queues {
        let label = NamespaceLabel {
            namespace: q.namespace.clone(),
        };
        depth
            .get_or_create(&label)
            .set(i64::try_from(q.depth).unwrap_or(i64::MAX));
        oldest
            .get_or_create(&label)
            .set(q.oldest_queued_seconds.unwrap_or(0.0));
    }
    r.register("queue_depth", "Queued jobs per namespace", depth);
    let spent: Family<NamespaceLabel, SecondsGauge> = Family::default();
    let budget: Family<NamespaceLabel, SecondsGauge> = Family::default();
    for q in &g.queues {
        let label = NamespaceLabel {
            namespace: q.namespace.clone(),
        };
        spent.get_or_create(&label).set(q.spent_usd);
        if let Some(b) = q.budget_usd {
            budget.get_or_create(&label).set(b);
        }
    }
    r.register(
        "namespace_spend_usd",
        "US dollars a namespace's jobs spent this month (UTC), summed from the job ledger (each model call the door metered, or a finished job's reported cost when no door metered it)",
        spent,
    );
    r.register(
        "namespace_budget_usd",
        "A namespace's monthly budget in US dollars (only namespaces that have one)",
        budget,
    );
    r.register_with_unit(
        "queue_oldest_age",
        "Age of the oldest queued job per namespace (0 when none is queued)",
        Unit::Seconds,
        oldest,
    );
    r.register(
        "queue_namespaces_left_out",
        "Namespaces without their own queue series (beyond the series bound)",
        gauge(g.namespaces_left_out as u64),
    );
    let leases: Family<LeaseLabel, Gauge> = Family::default();
    leases
        .get_or_create(&LeaseLabel { state: "live" })
        .set(i64::try_from(g.leases_live).unwrap_or(i64::MAX));
    leases
        .get_or_create(&LeaseLabel { state: "lapsed" })
        .set(i64::try_from(g.leases_lapsed).unwrap_or(i64::MAX));
    r.register(
        "job_leases",
        "Claimed jobs' leases: live, or lapsed and waiting for the sweep",
        leases,
    );
    let backup = SecondsGauge::default();
    backup.set(g.backup_age_seconds);
    r.register_with_unit(
        "backup_age",
        "Time since the last successful backup (+Inf when none is recorded or the record is unreadable)",
        Unit::Seconds,
        backup,
    );
    // Absent until the first rehearsal is recorded, so a fresh install raises no alert.
    if let Some((at, ok)) = g.rehearsal {
        let when = SecondsGauge::default();
        when.set(at);
        r.register_with_unit(
            "backup_rehearsal_timestamp",
            "When the last restore rehearsal ran (Unix time)",
            Unit::Seconds,
            when,
        );
        r.register(
            "backup_rehearsal_ok",
            "Whether the last restore rehearsal restored and verified the newest dump (1) or not (0)",
            gauge(u64::from(ok)),
        );
    }
    let pools: Family<PoolLabels, Gauge> = Family::default();
    let max: Family<PoolLabels, Gauge> = Family::default();
    for p in &g.pools {
        pools
            .get_or_create(&PoolLabels {
                pool: p.pool,
                state: "in_use",
            })
            .set(i64::from(p.in_use));
        pools
            .get_or_create(&PoolLabels {
                pool: p.pool,
                state: "idle",
            })
            .set(i64::from(p.idle));
        max.get_or_create(&PoolLabels {
            pool: p.pool,
            state: "max",
        })
        .set(i64::from(p.max));
    }
    r.register(
        "store_connections",
        "Store connections by pool and state",
        pools,
    );
    r.register("store_connections_max", "Each store pool's maximum", max);
}

/// The route label of a request: the matched route template (a nested service's tail left
/// off), or `unmatched` for the fallback.
fn route_label(req: &Request) -> String {
    match req.extensions().get::<MatchedPath>() {
        Some(path) => {
            let p = path.as_str();
            let cut = p.find("/{").map_or(p, |i| &p[..i]);
            if cut.is_empty() {
                "/".to_owned()
            } else {
                cut.to_owned()
            }
        }
        None => "unmatched".to_owned(),
    }
}

/// Counts every answered request by route template and status.
pub async fn count_request(State(state): State<AppState>, req: Request, next: Next) -> Response {
    let route = route_label(&req);
    let resp = next.run(req).await;
    state.metrics.record_request(route, resp.status().as_u16());
    resp
}

fn wants_openmetrics(headers: &HeaderMap) -> bool {
    headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.contains("application/openmetrics-text"))
}

fn unauthorized() -> Response {
    let mut resp = (
        StatusCode::UNAUTHORIZED,
        axum::Json(json!({
            "error": "unauthorized",
            "error_description": "send Authorization: Bearer <key> with the read grant (a minted agent key or an operator key)",
        })),
    )
        .into_response();
    resp.headers_mut().insert(
        header::WWW_AUTHENTICATE,
        HeaderValue::from_static("Bearer realm=\"capsid-operator\""),
    );
    resp
}

/// The route: the scraper's key, then the figures.
pub async fn metrics(State(state): State<AppState>, headers: HeaderMap) -> Response {
    let authorization = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok());
    let caller = match state.service.resolve_bearer(authorization).await {
        Ok(Resolved::Agent(c) | Resolved::OperatorKey(c)) => c,
        Ok(Resolved::Unauthenticated) => return unauthorized(),
        Err(e) => {
            tracing::error!(error = %e, "metrics: caller resolution failed");
            return unavailable_because(&state.service, "the store could not check the key", &e)
                .await;
        }
    };
    if let Err(e) = state.service.check_metrics_scrape(&caller) {
        return (
            StatusCode::FORBIDDEN,
            axum::Json(json!({"error": "forbidden", "error_description": e.to_string()})),
        )
            .into_response();
    }
    // The process figures are served even when the store is down (store_up 0): that is
    // when an operator needs them most.
    let gauges = match state.service.gauges(&caller).await {
        Ok(g) => Some(g),
        Err(e) => {
            tracing::warn!(error = %e, "metrics: the store's figures are missing from this scrape");
            None
        }
    };
    let registry = state.metrics.registry(gauges.as_ref());
    let mut body = String::new();
    let (encoded, content_type) = if wants_openmetrics(&headers) {
        (
            prometheus_client::encoding::text::encode(&mut body, &registry),
            OPENMETRICS,
        )
    } else {
        (
            prometheus_client::encoding::prometheus_text::encode(&mut body, &registry),
            prometheus_client::encoding::prometheus_text::CONTENT_TYPE,
        )
    };
    if encoded.is_err() {
        return unavailable("the figures could not be encoded");
    }
    ([(header::CONTENT_TYPE, content_type)], body).into_response()
}
