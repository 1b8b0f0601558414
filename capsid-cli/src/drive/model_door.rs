//! The run's model door: the metered proxy (`capsid_box::model_proxy`) between the agent and
//! the model API. The agent is pointed at the door with a token of its own; the upstream and
//! its key stay with the driver. What the job cost is the door's count, never what the agent
//! printed (`capsid_core::drive::ledger`).

use std::path::PathBuf;

use anyhow::{Context, Result};
use capsid_box::model_proxy::{
    CallEnd, CallRecord, CapHit, LedgerSink, ModelProxy, ProxyConfig, UpstreamAuth,
};
use capsid_core::drive::credential::CredentialRef;
use capsid_core::drive::ledger::{PriceTable, Usd, reported_differs};
use capsid_core::jobs::spend::METER_CALLS_MAX;
use capsid_core::time::Timestamp;
use serde_json::{Map, Value, json};

use super::mcp::{Answer, Mcp};
use super::runtime::UpstreamKey;

/// Where the door forwards to, with what credential, at what prices, under what cap.
#[derive(Clone, Debug)]
pub(crate) struct ModelSettings {
    pub upstream: String,
    pub auth: UpstreamAuth,
    /// Where the credential came from, for the log (never the secret).
    pub auth_from: String,
    pub prices: PriceTable,
    pub cap: Option<Usd>,
    /// The driver's variables the agent must not see (the upstream key among them).
    pub withheld: Vec<String>,
    /// What the job's ledger held when the run began (earlier sessions): it counts against
    /// the cap.
    pub spent_before: Usd,
    /// Where each call is written as it settles: the job's ledger on the server.
    pub ledger: Option<ServerLedger>,
}

/// The job's ledger on the server, written with the driver's own key (`jobs meter`): never
/// with the run credential, which the agent holds and which cannot write it.
#[derive(Clone, Debug)]
pub(crate) struct ServerLedger {
    pub mcp: Mcp,
    pub namespace: String,
    pub job: String,
}

impl ServerLedger {
    /// Writes `calls` to the job's ledger, a hundred at a time; a call already there is kept
    /// once, so sending again is safe.
    pub async fn send(&self, calls: &[CallRecord]) -> std::result::Result<(), String> {
        for chunk in calls.chunks(METER_CALLS_MAX) {
            let args = json!({
                "action": "meter", "id": self.job, "namespace": self.namespace,
                "calls": chunk.iter().map(wire_call).collect::<Vec<_>>(),
            });
            match self.mcp.call("jobs", args).await {
                Ok(Answer::Ok(_)) => {}
                Ok(Answer::Refused(why)) => return Err(why),
                Err(e) => return Err(format!("{e:#}")),
            }
        }
        Ok(())
    }
}

impl LedgerSink for ServerLedger {
    fn record(
        &self,
        call: &CallRecord,
    ) -> std::pin::Pin<
        Box<dyn std::future::Future<Output = std::result::Result<(), String>> + Send + '_>,
    > {
        let call = call.clone();
        Box::pin(async move { self.send(std::slice::from_ref(&call)).await })
    }
}

/// A settled call as `jobs meter` takes it.
pub(crate) fn wire_call(c: &CallRecord) -> Value {
    let at = |t: std::time::SystemTime| {
        let ms = t
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX));
        Timestamp::from_millis(ms).to_string()
    };
    json!({
        "call_id": c.call_id,
        "model": c.model,
        "session": c.session,
        "input_tokens": c.usage.input_tokens,
        "output_tokens": c.usage.output_tokens,
        "cache_write_tokens": c.usage.cache_write_tokens,
        "cache_read_tokens": c.usage.cache_read_tokens,
        "cost_usd": c.cost.dollars(),
        "priced": if c.known_price { "table" } else { "highest" },
        "ended": match c.end {
            CallEnd::Completed => "completed",
            CallEnd::UpstreamError(_) => "upstream_error",
            CallEnd::Broken(_) => "broken",
        },
        "started_at": at(c.started),
        // Never before the start, whatever the wall clock did meanwhile.
        "ended_at": at(c.ended.max(c.started)),
    })
}

impl ModelSettings {
    /// These settings for one job: under its cap too (the lesser of the two caps holds),
    /// with what its ledger held already counted against it, and each call written to
    /// `ledger`.
    pub fn for_job(
        &self,
        job: Option<Usd>,
        spent_before: Usd,
        ledger: Option<ServerLedger>,
    ) -> ModelSettings {
        let cap = match (self.cap, job) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        ModelSettings {
            cap,
            spent_before,
            ledger,
            ..self.clone()
        }
    }

    /// The door's settings for `runtime` from the flags and the driver's environment: the
    /// upstream is `--model-upstream`, else the runtime's variable (`ANTHROPIC_BASE_URL`,
    /// `OPENAI_BASE_URL`), else its public API; its credential is `--model-key` (a reference:
    /// `env:NAME`, `file:/path`, `cmd:command`), else the runtime's key variables in order
    /// (`ANTHROPIC_API_KEY`, `ANTHROPIC_AUTH_TOKEN`; `OPENAI_API_KEY`, `CODEX_API_KEY`), else
    /// the agent's own login passed through (still metered) where the runtime can use one.
    /// `Err` names the flag and the rule.
    pub fn resolve(
        runtime: &dyn super::runtime::Runtime,
        upstream: Option<&str>,
        key_ref: Option<&str>,
        prices: Option<&PathBuf>,
        max_cost_usd: Option<f64>,
    ) -> std::result::Result<ModelSettings, String> {
        let defaults = runtime.model_defaults();
        let env = |k: &str| std::env::var(k).ok().filter(|v| !v.trim().is_empty());
        let upstream = upstream
            .map(str::to_owned)
            .or_else(|| env(defaults.base_url_var))
            .unwrap_or_else(|| defaults.upstream.to_owned());
        // The door adds the API's own path (`/v1/messages`, `/v1/responses`).
        let upstream = upstream
            .trim_end_matches('/')
            .trim_end_matches("/v1")
            .to_owned();
        if !(upstream.starts_with("https://") || upstream.starts_with("http://")) {
            return Err(format!(
                "--model-upstream (or {}) must be an http(s) URL, got {upstream:?}",
                defaults.base_url_var
            ));
        }
        // The upstream's address is the driver's too: the agent knows only the door.
        let mut withheld: Vec<String> = defaults
            .withheld
            .iter()
            .chain([&defaults.base_url_var])
            .map(|v| (*v).to_owned())
            .collect();
        let found = defaults
            .keys
            .iter()
            .find_map(|(var, how)| env(var).map(|k| (*var, *how, k)));
        let (auth, auth_from) = match key_ref.filter(|r| !r.trim().is_empty()) {
            Some(r) => {
                let parsed = CredentialRef::parse(r).map_err(|e| format!("--model-key: {e}"))?;
                let secret = crate::config::resolve_credential(r)
                    .map_err(|e| format!("--model-key {parsed}: {e:#}"))?;
                if let Some(name) = r.strip_prefix("env:") {
                    withheld.push(name.to_owned());
                }
                let auth = match defaults.keys.first().map(|(_, how)| *how) {
                    Some(UpstreamKey::Bearer) => UpstreamAuth::Bearer(secret),
                    _ => UpstreamAuth::ApiKey(secret),
                };
                (auth, format!("--model-key {parsed}"))
            }
            None => match found {
                Some((var, UpstreamKey::ApiKey, k)) => (UpstreamAuth::ApiKey(k), var.to_owned()),
                Some((var, UpstreamKey::Bearer, k)) => (UpstreamAuth::Bearer(k), var.to_owned()),
                None if defaults.own_login => {
                    // The agent keeps its own login; nothing of it is withheld.
                    withheld.retain(|v| v == defaults.base_url_var);
                    (
                        UpstreamAuth::Agent,
                        "the agent's own login (no upstream key configured: calls are metered, but the agent holds its credential)".to_owned(),
                    )
                }
                None => {
                    return Err(format!(
                        "the {} runtime needs its model API's key for Capsid's model door, and none is configured: give --model-key (env:NAME, file:/path or cmd:command) or set {} (the agent never sees it; its own login is not carried into a run)",
                        runtime.name(),
                        defaults
                            .keys
                            .iter()
                            .map(|(v, _)| *v)
                            .collect::<Vec<_>>()
                            .join(" or ")
                    ));
                }
            },
        };
        let prices = match prices {
            None => PriceTable::default(),
            Some(path) => {
                let text = std::fs::read_to_string(path)
                    .map_err(|e| format!("--prices {}: cannot read it: {e}", path.display()))?;
                PriceTable::with_overrides(&text)
                    .map_err(|e| format!("--prices {}: {e}", path.display()))?
            }
        };
        let cap = match max_cost_usd {
            None => None,
            Some(d) => Some(Usd::from_dollars(d).ok_or_else(|| {
                format!("--max-cost-usd must be a number of US dollars of 0 or more, got {d}")
            })?),
        };
        Ok(ModelSettings {
            upstream,
            auth,
            auth_from,
            prices,
            cap,
            withheld,
            spent_before: Usd::ZERO,
            ledger: None,
        })
    }
}

/// One run's open door.
pub(crate) struct Door {
    proxy: ModelProxy,
    ledger: Option<ServerLedger>,
    spent_before: Usd,
    url: String,
    token: Option<String>,
    serving: Serving,
}

/// Where the door is served: a loopback port of the driver's, or a Unix socket bound into the
/// box.
enum Serving {
    Loopback(tokio::task::JoinHandle<()>),
    Boxed(capsid_box::bridge::Door),
}

/// What the door counted for one run.
#[derive(Clone, Debug, Default)]
pub(crate) struct Metered {
    pub spent: Usd,
    pub calls: Vec<CallRecord>,
    pub cap_hits: Vec<CapHit>,
}

/// Opens the door for one run on a loopback port of its own.
pub(crate) async fn open(settings: &ModelSettings) -> Result<Door> {
    let (proxy, token) = proxy(settings)?;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .context("opening the model door on a loopback port")?;
    let url = format!("http://{}", listener.local_addr()?);
    let serving = tokio::spawn({
        let proxy = proxy.clone();
        async move {
            if let Err(e) = proxy.serve_tcp(listener).await {
                eprintln!("capsid drive: the model door stopped: {e}");
            }
        }
    });
    Ok(Door {
        proxy,
        ledger: settings.ledger.clone(),
        spent_before: settings.spent_before,
        url,
        token,
        serving: Serving::Loopback(serving),
    })
}

/// Opens the door for one boxed run on the Unix socket `socket` (bound into the box, where
/// the agent reaches it at `inside_url`); each connection is recorded in `log`.
pub(crate) async fn open_boxed(
    settings: &ModelSettings,
    socket: &std::path::Path,
    inside_url: String,
    log: capsid_box::bridge::RecordLog<capsid_box::bridge::ConnectionRecord>,
) -> Result<Door> {
    let (proxy, token) = proxy(settings)?;
    let door = capsid_box::bridge::Door::open(
        "model",
        socket,
        capsid_box::bridge::DoorTarget::Http(proxy.router()),
        log,
    )
    .await
    .context("opening the box's model door")?;
    Ok(Door {
        proxy,
        ledger: settings.ledger.clone(),
        spent_before: settings.spent_before,
        url: inside_url,
        token,
        serving: Serving::Boxed(door),
    })
}

fn proxy(settings: &ModelSettings) -> Result<(ModelProxy, Option<String>)> {
    let token = match settings.auth {
        UpstreamAuth::Agent => None,
        _ => {
            let mut bytes = [0u8; 24];
            rand::fill(&mut bytes[..]);
            Some(format!("capsid-model-{}", hex_token(&bytes)))
        }
    };
    let proxy = ModelProxy::new(
        ProxyConfig {
            upstream: settings.upstream.clone(),
            auth: settings.auth.clone(),
            token: token.clone().unwrap_or_default(),
            prices: settings.prices.clone(),
            cap: settings.cap,
            spent_before: settings.spent_before,
        },
        settings
            .ledger
            .clone()
            .map(|l| std::sync::Arc::new(l) as std::sync::Arc<dyn LedgerSink>),
    )
    .context("opening the model door")?;
    Ok((proxy, token))
}

fn hex_token(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

impl Door {
    /// The agent's variables, as its runtime spells them: the door as its API, and its token
    /// as its key.
    pub fn env(&self, runtime: &dyn super::runtime::Runtime) -> Vec<(String, String)> {
        runtime.model_env(&self.url, self.token.as_deref())
    }

    /// Closes the door (the run ended: every later call is refused) and says what it counted.
    pub async fn close(self) -> Metered {
        self.proxy.close();
        match self.serving {
            Serving::Loopback(task) => task.abort(),
            Serving::Boxed(door) => door.close().await,
        }
        let account = self.proxy.account();
        let calls = self.proxy.calls();
        // Each call was written as it settled; a write that failed then (and a call the agent
        // hung up on, which settles without the server) goes now. A call already there is
        // kept once.
        if let Some(ledger) = &self.ledger
            && !calls.is_empty()
            && let Err(why) = ledger.send(&calls).await
        {
            eprintln!(
                "capsid drive: the job ledger on the server may miss some of this run's {} model call(s): {why}",
                calls.len()
            );
        }
        Metered {
            // This run's own spend (the account also holds what earlier sessions spent).
            spent: account.spent.minus(self.spent_before),
            calls,
            cap_hits: self.proxy.cap_hits(),
        }
    }
}

impl Metered {
    /// The run's cost as outcome evidence (what the namespace's budget sums): the door's
    /// count. (The server keeps the outcome's known fields only; what the agent reported and
    /// the split by model stay in the outcome's line, [`Metered::line`].)
    pub fn evidence(&self) -> Map<String, Value> {
        let mut m = Map::new();
        m.insert("cost_usd".into(), json!(self.spent.dollars()));
        m
    }

    /// The cost line of the job's outcome: `Cost: $0.0123 over 4 model call(s) (counted at
    /// Capsid's model door)`, with the agent's own figure when it differs by more than 5%, and
    /// the models the table does not know.
    pub fn line(&self, reported: Option<f64>) -> String {
        let mut s = format!(
            "Cost: {} over {} model call(s) (counted at Capsid's model door)",
            self.spent,
            self.calls.len()
        );
        if let Some(r) = reported.and_then(Usd::from_dollars)
            && reported_differs(self.spent, r)
        {
            s.push_str(&format!(
                "; the agent reported {r}, which differs by more than 5%"
            ));
        }
        let mut by_model: std::collections::BTreeMap<&str, Usd> = Default::default();
        for c in &self.calls {
            let e = by_model.entry(c.model.as_str()).or_default();
            *e = e.plus(c.cost);
        }
        if by_model.len() > 1 {
            let parts: Vec<String> = by_model.iter().map(|(m, c)| format!("{m} {c}")).collect();
            s.push_str(&format!(" ({})", parts.join(", ")));
        }
        let unpriced: std::collections::BTreeSet<&str> = self
            .calls
            .iter()
            .filter(|c| !c.known_price)
            .map(|c| c.model.as_str())
            .collect();
        if !unpriced.is_empty() {
            s.push_str(&format!(
                "; priced at the table's highest rates (not in the price table): {}",
                unpriced.into_iter().collect::<Vec<_>>().join(", ")
            ));
        }
        s.push('.');
        s
    }

    /// The budget gate, when the cap refused a call: what was spent of what.
    pub fn budget_gate(&self, job: &str) -> Option<String> {
        let hit = self.cap_hits.first()?;
        Some(format!(
            "The job's model budget is spent: {} of its {} cap used, and the next call needed up to {}. Raise the job's cap to resume the same session: capsid jobs raise {job} --usd <dollars> (a key with can_raise_budget: POST /api/projects/<namespace>/jobs/{job}/raise). A driver run with --max-cost-usd holds every job to that too.",
            hit.spent, hit.cap, hit.needs
        ))
    }
}
