//! The end-to-end harness: the real HTTP server (capsid-http's router over a real store) on an
//! ephemeral loopback port, credentials minted through the core as the CLI would, and real
//! rmcp clients over Streamable HTTP. Time is a `ManualClock` the test moves.

use std::sync::Arc;

use capsid_core::caller::Caller;
use capsid_core::ids::Entropy;
use capsid_core::ports::Store;
use capsid_core::service::{NoConfirmer, Service, ServiceConfig};
use capsid_core::time::{ManualClock, Timestamp};
use capsid_http::{AppState, BuildInfo, HttpConfig};
use rmcp::model::{
    CallToolRequestParams, CallToolResult, ClientCapabilities, Implementation,
    InitializeRequestParams, ProtocolVersion,
};
use rmcp::service::RunningService;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{ClientHandler, RoleClient, ServiceExt};
use serde_json::{Value, json};
use tokio::sync::oneshot;

/// The signing secret every test server uses.
pub const TEST_SECRET: &str = "capsid-test-secret";

/// Randomness from the OS, for minted keys.
#[derive(Debug, Default)]
pub struct TestEntropy;

impl Entropy for TestEntropy {
    fn fill(&self, buf: &mut [u8]) {
        rand::fill(buf);
    }
}

/// How to start a server.
#[derive(Clone, Default)]
pub struct ServerOptions {
    /// `CAPSID_OPERATOR_KEY_HASH`.
    pub operator_keys: Option<String>,
    /// MCP sessions on.
    pub sessions: bool,
    /// The repository host (a fake in tests); none means "GitHub App not configured".
    pub repo_host: Option<Arc<dyn capsid_core::ports::RepoHost>>,
    /// `CAPSID_WEBHOOK_URL`.
    pub webhook: Option<String>,
    /// `CAPSID_TRUSTED_PROXIES`.
    pub trusted_proxies: Vec<capsid_http::IpNet>,
    /// Header and body deadlines and the connection bound (`None`: the server's defaults).
    pub limits: Option<capsid_http::ServeLimits>,
    /// The bounds of session mode (`None`: the server's defaults).
    pub session_limits: Option<capsid_http::SessionLimits>,
    /// The signing secret, when not [`TEST_SECRET`].
    pub signing_secret: Option<String>,
    /// Start without a signing secret (the signed routes answer 503).
    pub no_signing_secret: bool,
    /// The default monthly budget of namespaces without their own
    /// (`CAPSID_MONTHLY_BUDGET_USD`).
    pub default_monthly_budget_usd: Option<f64>,
    /// The default cap of jobs without their own (`CAPSID_JOB_MAX_COST_USD`).
    pub default_job_max_cost_usd: Option<capsid_core::drive::ledger::Usd>,
    /// The model API (`CAPSID_ANTHROPIC_API_URL`, `CAPSID_ANTHROPIC_API_KEY`) the loop's `api`
    /// mode asks, for example a [`crate::fake_model::FakeModel`]; none means no model.
    pub anthropic: Option<(String, String)>,
}

/// A running server.
pub struct TestServer {
    /// `http://127.0.0.1:<port>`.
    pub url: String,
    /// The core it serves (for setup and direct checks).
    pub service: Service,
    /// The store under it.
    pub store: Arc<dyn Store>,
    /// The clock it reads.
    pub clock: Arc<ManualClock>,
    /// The process figures `/metrics` serves (a test records scheduler ticks into them).
    pub metrics: Arc<capsid_http::Metrics>,
    /// The MCP sessions' owners (session mode's bounds and idle eviction).
    pub sessions: capsid_http::SessionOwners,
    /// What clients watch: listen streams and sessions' subscriptions.
    pub subscriptions: Arc<capsid_http::Subscriptions>,
    /// Raw SQL on the same database (tests that corrupt a row on purpose).
    pub probe: Option<crate::harness::Probe>,
    stop: Option<oneshot::Sender<()>>,
    task: Option<tokio::task::JoinHandle<()>>,
}

impl TestServer {
    /// Starts the router over `store` on a free loopback port.
    pub async fn start(store: Arc<dyn Store>, options: ServerOptions) -> TestServer {
        Self::start_with_owner(store, options, |_| None).await
    }

    /// As [`TestServer::start`], with the owner's GitHub login built from the server's own URL
    /// (`None` leaves it off).
    pub async fn start_with_owner(
        store: Arc<dyn Store>,
        options: ServerOptions,
        owner: impl FnOnce(&str) -> Option<capsid_http::OwnerConfig>,
    ) -> TestServer {
        Self::start_customized(store, options, owner, |service| service).await
    }

    /// As [`TestServer::start`], with the media store (backups) wired into the service.
    pub async fn start_with_media(
        store: Arc<dyn Store>,
        options: ServerOptions,
        media: Arc<dyn capsid_core::ports::BlobStore>,
    ) -> TestServer {
        Self::start_customized(store, options, |_| None, move |s| s.with_media(media)).await
    }

    /// As [`TestServer::start_with_owner`], with `customize` applied to the service first.
    pub async fn start_customized(
        store: Arc<dyn Store>,
        options: ServerOptions,
        owner: impl FnOnce(&str) -> Option<capsid_http::OwnerConfig>,
        customize: impl FnOnce(Service) -> Service,
    ) -> TestServer {
        // HTTP clients in this process (rmcp's, the webhook's) need the TLS provider installed.
        capsid_http::install_tls_provider();
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis());
        let clock = Arc::new(ManualClock::new(Timestamp::from_millis(
            i64::try_from(now).unwrap_or(0),
        )));
        let config = ServiceConfig {
            signing_secret: (!options.no_signing_secret).then(|| {
                options
                    .signing_secret
                    .clone()
                    .unwrap_or_else(|| TEST_SECRET.into())
            }),
            operator_keys: options
                .operator_keys
                .as_deref()
                .map(capsid_core::caller::parse_operator_keys)
                .unwrap_or_default(),
            default_monthly_budget_usd: options.default_monthly_budget_usd,
            default_job_max_cost_usd: options.default_job_max_cost_usd,
        };
        let mut service = Service::new(store.clone(), clock.clone(), Arc::new(TestEntropy), config);
        if let Some(host) = options.repo_host.clone() {
            service = service.with_repo_host(host);
        }
        if let Some((url, key)) = &options.anthropic {
            let model = capsid_model::AnthropicClient::new(url, key).expect("the model API URL");
            service = service.with_model(Arc::new(model));
        }
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind an ephemeral port");
        let port = listener.local_addr().expect("local address").port();
        let url = format!("http://127.0.0.1:{port}");
        if let Some(hook) = &options.webhook {
            service = service.with_notifier(Arc::new(
                capsid_http::WebhookNotifier::new(hook)
                    .expect("webhook URL")
                    .with_public_url(&url),
            ));
        }
        let service = customize(service);
        let owner = owner(&url);
        let http = HttpConfig {
            public_url: url.clone(),
            mcp_sessions: options.sessions,
            build: BuildInfo {
                sha: "test".into(),
                dirty: false,
                built_at: "test".into(),
                version: "test".into(),
            },
            oauth_missing: if owner.is_some() {
                Vec::new()
            } else {
                vec!["CAPSID_GITHUB_CLIENT_ID".into()]
            },
            owner,
            trusted_proxies: options.trusted_proxies.clone(),
        };
        let mut state = AppState::new(service.clone(), http);
        if let Some(limits) = options.session_limits {
            state = state.with_session_limits(limits);
        }
        let metrics = state.metrics.clone();
        let sessions = state.sessions.clone();
        let subscriptions = state.subscriptions.clone();
        let app = capsid_http::router(state);
        let limits = options.limits.unwrap_or_default();
        let (stop, stopped) = oneshot::channel::<()>();
        // The server as `capsid serve` runs it: the same accept loop and bounds, and listen
        // streams ended gracefully on the way out.
        let closing = subscriptions.clone();
        let task = tokio::spawn(capsid_http::serve(listener, app, limits, async move {
            let _ = stopped.await;
            closing.close();
        }));
        TestServer {
            url,
            service,
            store,
            clock,
            metrics,
            sessions,
            subscriptions,
            probe: None,
            stop: Some(stop),
            task: Some(task),
        }
    }

    /// The bearer route.
    pub fn ops_url(&self) -> String {
        format!("{}/ops/mcp", self.url)
    }

    /// Calls a tool as the CLI (an admin holding the database): for setup.
    pub async fn admin(&self, tool: &str, args: Value) -> Value {
        self.service
            .call_tool(&Caller::cli("test"), tool, args, &NoConfirmer)
            .await
            .unwrap_or_else(|e| panic!("admin {tool} failed: {e}"))
    }

    /// Mints an agent with `axes` (JSON: namespaces, repos, tools, grants, flags) and returns
    /// its key.
    pub async fn mint(&self, name: &str, kind: &str, axes: Value) -> String {
        let mut args = axes;
        args["action"] = json!("mint");
        args["name"] = json!(name);
        args["kind"] = json!(kind);
        let out = self.admin("agents", args).await;
        assert_eq!(out["ok"], true, "mint {name}: {out}");
        out["key"].as_str().expect("a key").to_owned()
    }

    /// Registers `namespace` mapped to `owner/<namespace>`.
    pub async fn namespace(&self, namespace: &str) {
        let out = self
            .admin(
                "register_namespace",
                json!({"namespace": namespace, "repo": format!("octo/{namespace}")}),
            )
            .await;
        assert_eq!(out["action"], "registered", "{out}");
    }

    /// A real MCP client with `key` as its bearer token.
    pub async fn client(&self, key: &str) -> Client {
        Client::connect(&self.ops_url(), key, ()).await
    }

    /// Stops the server.
    pub async fn stop(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(task) = self.task.take() {
            let _ = task.await;
        }
    }
}

/// Every answer a test reads through [`Client::call`] is also checked as a typed answer: a
/// tool with an output schema answers `structuredContent` (unless the call failed with a
/// plain error) that validates against the schema and says exactly what the text item says
/// (`{"result": text}` for a wrapped answer); a tool without one sends none.
fn check_structured(tool: &str, result: &CallToolResult, answer: &Value) {
    let Some(output) = capsid_core::service::output_schema(tool) else {
        assert!(
            result.structured_content.is_none(),
            "{tool} has no output schema but sent structuredContent"
        );
        return;
    };
    let Some(structured) = &result.structured_content else {
        assert_eq!(
            result.is_error,
            Some(true),
            "{tool} answered {answer} without structuredContent"
        );
        return;
    };
    assert_eq!(
        structured,
        &output.structured(answer),
        "{tool}: structuredContent differs from the text item"
    );
    static VALIDATORS: std::sync::OnceLock<
        std::sync::Mutex<std::collections::HashMap<String, Arc<jsonschema::Validator>>>,
    > = std::sync::OnceLock::new();
    let validator = VALIDATORS
        .get_or_init(Default::default)
        .lock()
        .expect("validators")
        .entry(tool.to_owned())
        .or_insert_with(|| {
            let schema = Value::Object((*output.schema).clone());
            Arc::new(
                jsonschema::draft202012::new(&schema)
                    .unwrap_or_else(|e| panic!("{tool}'s output schema does not compile: {e}")),
            )
        })
        .clone();
    let errors: Vec<String> = validator
        .iter_errors(structured)
        .map(|e| format!("{e} at {}", e.instance_path()))
        .collect();
    assert!(
        errors.is_empty(),
        "{tool}'s structuredContent does not validate: {errors:?}\n{structured:#}"
    );
}

/// A connected MCP client.
pub struct Client<H: ClientHandler = ()> {
    /// The running rmcp client.
    pub inner: RunningService<RoleClient, H>,
}

impl<H: ClientHandler> Client<H> {
    /// Connects to `url` with `key` as bearer token, speaking 2025-11-25 (initialize).
    pub async fn connect(url: &str, key: &str, handler: H) -> Client<H> {
        Self::try_connect(url, key, handler)
            .await
            .unwrap_or_else(|e| panic!("connect to {url}: {e}"))
    }

    /// As [`Client::connect`], returning the error.
    pub async fn try_connect(url: &str, key: &str, handler: H) -> Result<Client<H>, String> {
        capsid_http::install_tls_provider();
        let transport = StreamableHttpClientTransport::from_config(
            StreamableHttpClientTransportConfig::with_uri(url).auth_header(key),
        );
        let inner = handler.serve(transport).await.map_err(|e| e.to_string())?;
        Ok(Client { inner })
    }

    /// Calls `tool`: `Ok(json)` on success, `Err(text)` for a tool error (`isError`). The
    /// answer is also checked as a typed answer (`check_structured`).
    pub async fn call(&self, tool: &str, args: Value) -> Result<Value, String> {
        self.call_checked(tool, args, true).await
    }

    /// As [`Client::call`] without the typed-answer check: for load generators, whose
    /// clients share the machine with the server they measure (validating every answer
    /// against its JSON Schema would take CPU from the server under test).
    pub async fn call_unchecked(&self, tool: &str, args: Value) -> Result<Value, String> {
        self.call_checked(tool, args, false).await
    }

    async fn call_checked(&self, tool: &str, args: Value, check: bool) -> Result<Value, String> {
        let result = self
            .raw(tool, args)
            .await
            .map_err(|e| format!("protocol error: {e}"))?;
        let text = result
            .content
            .iter()
            .filter_map(|c| c.as_text())
            .map(|t| t.text.clone())
            .collect::<Vec<_>>()
            .join("");
        let answer = serde_json::from_str(&text).unwrap_or(Value::String(text.clone()));
        if check {
            check_structured(tool, &result, &answer);
        }
        if result.is_error == Some(true) {
            return Err(text);
        }
        Ok(answer)
    }

    /// Calls `tool` and expects success.
    pub async fn ok(&self, tool: &str, args: Value) -> Value {
        self.call(tool, args.clone())
            .await
            .unwrap_or_else(|e| panic!("{tool} {args} failed: {e}"))
    }

    /// Calls `tool` and expects a tool error; returns its text.
    pub async fn err(&self, tool: &str, args: Value) -> String {
        match self.call(tool, args.clone()).await {
            Err(e) => e,
            Ok(v) => panic!("{tool} {args} should have failed, got {v}"),
        }
    }

    /// The raw `tools/call`.
    pub async fn raw(&self, tool: &str, args: Value) -> Result<CallToolResult, rmcp::ServiceError> {
        let mut params = CallToolRequestParams::new(tool.to_owned());
        if let Value::Object(map) = args {
            params = params.with_arguments(map);
        }
        self.inner.peer().call_tool(params).await
    }

    /// Names of the tools `tools/list` shows.
    pub async fn tool_names(&self) -> Vec<String> {
        let tools = self
            .inner
            .peer()
            .list_all_tools()
            .await
            .expect("tools/list");
        tools.into_iter().map(|t| t.name.to_string()).collect()
    }
}

/// A client handler that declares elicitation and answers every confirmation with `accept`
/// (or declines). With `meddle`, it first makes another change through the service, as if a
/// second writer acted while the human was deciding.
#[derive(Clone)]
pub struct Confirming {
    /// Accept (`true`) or decline.
    pub accept: bool,
    /// A tool call `(service, tool, args)` made while the question is open.
    pub meddle: Option<(Service, String, Value)>,
}

impl ClientHandler for Confirming {
    fn get_info(&self) -> InitializeRequestParams {
        let mut caps = ClientCapabilities::default();
        caps.elicitation = Some(Default::default());
        InitializeRequestParams::new(caps, Implementation::new("capsid-tests", "0"))
            .with_protocol_version(ProtocolVersion::V_2025_11_25)
    }

    async fn create_elicitation(
        &self,
        _request: rmcp::model::ElicitRequestParams,
        _ctx: rmcp::service::RequestContext<RoleClient>,
    ) -> Result<rmcp::model::ElicitResult, rmcp::ErrorData> {
        if let Some((service, tool, args)) = &self.meddle {
            service
                .call_tool(&Caller::cli("meddler"), tool, args.clone(), &NoConfirmer)
                .await
                .map_err(|e| rmcp::ErrorData::internal_error(e.to_string(), None))?;
        }
        Ok(if self.accept {
            rmcp::model::ElicitResult::new(rmcp::model::ElicitationAction::Accept)
                .with_content(json!({"confirm": true}))
        } else {
            rmcp::model::ElicitResult::new(rmcp::model::ElicitationAction::Decline)
        })
    }
}

/// What a crowd of claimers did.
#[derive(Clone, Debug)]
pub struct CrowdRun {
    /// Claims that succeeded (each followed by a complete).
    pub claimed: usize,
    /// Distinct jobs among them.
    pub distinct: usize,
    /// Claims refused because another claimer won the race, retried.
    pub retries: usize,
    /// Wall time of the claiming phase.
    pub elapsed: std::time::Duration,
}

/// Posts `jobs` jobs in namespace `queue`, then `clients` MCP clients (each its own driver
/// agent) claim and complete until nothing is queued.
pub async fn claim_crowd(server: &TestServer, clients: usize, jobs: usize) -> CrowdRun {
    server.namespace("queue").await;
    for j in 0..jobs {
        let out = server
            .admin("jobs", json!({"action": "post", "namespace": "queue", "title": format!("job {j}"), "body": format!("Do job {j}.\n"), "priority": j % 5}))
            .await;
        assert_eq!(out["ok"], true, "post: {out}");
    }
    let mut keys = Vec::new();
    for c in 0..clients {
        keys.push(
            server
                .mint(
                    &format!("claimer-{c}"),
                    "driver",
                    json!({"namespaces": ["queue"], "grants": ["read", "write"]}),
                )
                .await,
        );
    }
    let started = std::time::Instant::now();
    let mut tasks = Vec::new();
    for key in keys {
        let url = server.ops_url();
        tasks.push(tokio::spawn(async move {
            let client = Client::connect(&url, &key, ()).await;
            let (mut mine, mut retries) = (Vec::new(), 0usize);
            loop {
                // Unchecked: this is the load the benchmarks time (the typed answers of jobs
                // are checked by the jobs suites).
                let out = client
                    .call_unchecked("jobs", json!({"action": "claim", "namespace": "queue"}))
                    .await
                    .expect("claim");
                if out["ok"] != true {
                    let why = out["refusal"].as_str().unwrap_or_default();
                    assert!(!why.contains("already holds"), "a claimer held two jobs: {why}");
                    if why.contains("no queued jobs") {
                        break;
                    }
                    retries += 1;
                    continue;
                }
                let id = out["job"]["id"].as_str().unwrap_or_default().to_owned();
                let done = client
                    .call_unchecked("jobs", json!({"action": "complete", "id": id, "namespace": "queue", "result_summary": "done"}))
                    .await
                    .expect("complete");
                assert_eq!(done["ok"], true, "{done}");
                mine.push(id);
            }
            (mine, retries)
        }));
    }
    let mut ids = Vec::new();
    let mut retries = 0;
    for t in tasks {
        let (mine, r) = t.await.expect("a claimer task");
        ids.extend(mine);
        retries += r;
    }
    let elapsed = started.elapsed();
    let claimed = ids.len();
    ids.sort();
    ids.dedup();
    CrowdRun {
        claimed,
        distinct: ids.len(),
        retries,
        elapsed,
    }
}
