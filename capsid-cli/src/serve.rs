//! `capsid serve`: migrate, then serve HTTP until SIGINT/SIGTERM, with the periodic tasks
//! (one leader across replicas) running beside it.

use std::net::SocketAddr;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context, Result};
use capsid_core::service::{DEFAULT_ON_DEMAND_INTERVAL_MS, Scheduler};
use capsid_core::time::MINUTE_MS;
use capsid_http::{AppState, BuildInfo, HttpConfig, ServeLimits, SessionLimits};
use clap::Args;

use crate::config::{self, GlobalArgs};

/// `capsid serve`.
#[derive(Debug, Clone, Args)]
pub struct ServeArgs {
    /// Address to listen on.
    #[arg(long, env = "CAPSID_LISTEN", default_value = "127.0.0.1:8787")]
    pub listen: SocketAddr,
    /// Public base URL (OAuth metadata, the allowed Host and Origin). Default: http://<listen>.
    #[arg(long, env = "CAPSID_PUBLIC_URL")]
    pub public_url: Option<String>,
    /// Legacy operator keys: comma list of sha256 hex; an `ro:` prefix makes a key read-only.
    #[arg(long, env = "CAPSID_OPERATOR_KEY_HASH", hide_env_values = true)]
    pub operator_key_hash: Option<String>,
    /// Serve MCP with sessions (Mcp-Session-Id), so 2025-11-25 clients can be asked to confirm
    /// destructive writes. Default: stateless JSON responses.
    #[arg(long, env = "CAPSID_MCP_SESSIONS")]
    pub mcp_sessions: bool,
    /// With --mcp-sessions: the sessions one caller (one key) may hold at once; the one over
    /// is refused with a JSON-RPC error (HTTP 429).
    #[arg(long, env = "CAPSID_MCP_SESSIONS_PER_CALLER", default_value_t = SessionLimits::PER_CALLER as u32,
          value_parser = clap::value_parser!(u32).range(1..))]
    pub mcp_sessions_per_caller: u32,
    /// With --mcp-sessions: the sessions the server holds at once, all callers together.
    #[arg(long, env = "CAPSID_MCP_SESSIONS_MAX", default_value_t = SessionLimits::TOTAL as u32,
          value_parser = clap::value_parser!(u32).range(1..))]
    pub mcp_sessions_max: u32,
    /// With --mcp-sessions: seconds a session may stay unused before it is ended (its client
    /// opens a new one).
    #[arg(long, env = "CAPSID_MCP_SESSION_IDLE_SECS", default_value_t = SessionLimits::IDLE.as_secs(),
          value_parser = clap::value_parser!(u64).range(1..))]
    pub mcp_session_idle_secs: u64,
    /// Do not migrate the store on start.
    #[arg(long)]
    pub no_migrate: bool,
    /// POST a JSON notification here when a job blocks or fails.
    #[arg(long, env = "CAPSID_WEBHOOK_URL")]
    pub webhook_url: Option<String>,
    /// The owner's GitHub login (OAuth on /mcp, the console).
    #[command(flatten)]
    pub owner: crate::owner::OwnerArgs,
    /// Milliseconds between scheduler ticks (each periodic task still runs only when due).
    #[arg(
        long,
        env = "CAPSID_TICK_INTERVAL_MS",
        default_value_t = 30_000,
        hide = true
    )]
    pub tick_interval_ms: u64,
    /// Test hook: read "now" (milliseconds since the epoch) from this file instead of the
    /// system clock, so a test can drive several server processes through one clock.
    #[arg(long, env = "CAPSID_TEST_CLOCK_FILE", hide = true)]
    pub test_clock_file: Option<std::path::PathBuf>,
    /// The blob stores (media: backups and the mirror; holdout: counted only).
    #[command(flatten)]
    pub blobs: crate::blobs::BlobArgs,
    /// The self-improvement loop's time zone (an IANA name): its nightly opener opens runs at
    /// 03:00 there.
    #[arg(long, env = "CAPSID_IMPROVE_TZ", default_value = capsid_core::improve::night::DEFAULT_LOOP_ZONE)]
    pub improve_tz: String,
    /// The model API the improve loop's `api` mode calls.
    #[command(flatten)]
    pub model: crate::model::ModelArgs,
    /// Minutes each caller waits between two backups on demand (`POST /ops/backup`; a call
    /// within them answers 429 with Retry-After). The daily backup is not limited.
    #[arg(long, env = "CAPSID_BACKUP_INTERVAL_MINUTES", default_value_t = BACKUP_INTERVAL_MINUTES, value_parser = clap::value_parser!(u64).range(1..=10_080))]
    pub backup_interval_minutes: u64,
    /// Hours between two scheduled dumps (1 to 24): each UTC day's dumps fall at 09:00 UTC
    /// and every interval before and after it (6: 03:00, 09:00, 15:00, 21:00). The default,
    /// 24, is one dump a day at 09:00 UTC; a shorter interval narrows what a restore can lose.
    #[arg(long, env = "CAPSID_BACKUP_EVERY_HOURS", default_value = "24", value_name = "HOURS",
          value_parser = capsid_core::backup::BackupEvery::parse)]
    pub backup_every_hours: capsid_core::backup::BackupEvery,
    /// Days between two restore rehearsals (1 to 90): the leader restores the newest dump into
    /// a throwaway store (a temporary SQLite file, or a scratch database on the same Postgres
    /// server), compares the row counts with its manifest and checks its seal, and records the
    /// verdict (`capsid doctor`, the console, `/metrics`). The default, 7, is weekly.
    #[arg(long, env = "CAPSID_REHEARSE_EVERY_DAYS", default_value = "7", value_name = "DAYS",
          value_parser = capsid_core::backup::rehearsal::RehearseEvery::parse)]
    pub rehearse_every_days: capsid_core::backup::rehearsal::RehearseEvery,
    /// The store's timeouts and the wait for Postgres at start.
    #[command(flatten)]
    pub store: crate::store_wait::StoreWaitArgs,
}

/// `--backup-interval-minutes` by default: the core's interval between two backups on demand.
const BACKUP_INTERVAL_MINUTES: u64 = (DEFAULT_ON_DEMAND_INTERVAL_MS / MINUTE_MS) as u64;

/// The build's provenance.
pub fn build_info() -> BuildInfo {
    BuildInfo {
        sha: env!("CAPSID_GIT_SHA").to_owned(),
        dirty: env!("CAPSID_GIT_DIRTY") == "true",
        built_at: env!("CAPSID_BUILT_AT").to_owned(),
        version: env!("CARGO_PKG_VERSION").to_owned(),
    }
}

/// How the running binary is invoked, for the commands the banner prints.
fn invocation(global: &GlobalArgs) -> String {
    let exe = std::env::args().next().unwrap_or_else(|| "capsid".into());
    let mut cmd = if exe.contains("/target/") {
        "cargo run --release -p capsid-cli --".to_owned()
    } else {
        "capsid".to_owned()
    };
    if std::env::var_os("CAPSID_DATA_DIR").is_none()
        && global.data_dir != std::path::Path::new("./capsid-data")
    {
        cmd.push_str(&format!(" --data-dir {}", global.data_dir.display()));
    }
    if std::env::var_os("CAPSID_DATABASE_URL").is_none()
        && let Some(url) = &global.database_url
    {
        cmd.push_str(&format!(" --database-url '{}'", config::redact_url(url)));
    }
    cmd
}

async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    tokio::select! {
        () = ctrl_c => {},
        () = term => {},
    }
    tracing::info!("shutting down: finishing requests in flight");
}

/// Runs the server.
/// Why `--public-url` (`CAPSID_PUBLIC_URL`) cannot be the server's public URL, if it cannot:
/// it must be `http://` or `https://`, name a host, and carry no path, query or fragment
/// (the allowed Host and Origin are read from it, and every route hangs off its root).
pub(crate) fn public_url_problem(url: &str) -> Option<String> {
    let url = url.trim();
    let fix = |what: &str| {
        Some(format!(
            "--public-url (CAPSID_PUBLIC_URL) {url:?} {what}: give the scheme and host clients use, such as https://capsid.example.org or http://127.0.0.1:8787"
        ))
    };
    let Some(rest) = url
        .strip_prefix("https://")
        .or_else(|| url.strip_prefix("http://"))
    else {
        return fix("has no http:// or https:// scheme, so every request's Host would be refused");
    };
    let rest = rest.strip_suffix('/').unwrap_or(rest);
    let host = rest.split(['/', '?', '#']).next().unwrap_or("");
    if host.is_empty()
        || host.starts_with(':')
        || host.contains(char::is_whitespace)
        || host.contains('@')
    {
        return fix("names no host");
    }
    if host.len() != rest.len() {
        return fix(
            "has a path, query or fragment; Capsid serves its routes at the root of its URL",
        );
    }
    None
}

pub async fn run(global: &GlobalArgs, args: ServeArgs) -> Result<ExitCode> {
    // A public URL every request would then be refused under stops the start, naming the fix.
    if let Some(why) = args.public_url.as_deref().and_then(public_url_problem) {
        anyhow::bail!("{why}");
    }
    let (store, version) = crate::store_wait::open(global, !args.no_migrate, &args.store).await?;
    let secret = config::signing_secret(global)?;
    // A default budget that is not dollars stops the start, naming the variable.
    match config::check_monthly_budget()? {
        Some(usd) => tracing::info!(
            usd,
            "default monthly budget per namespace (CAPSID_MONTHLY_BUDGET_USD)"
        ),
        None => tracing::info!(
            "no default monthly budget (CAPSID_MONTHLY_BUDGET_USD): only namespaces with their own budget stop at one"
        ),
    }
    match config::check_job_cap()? {
        Some(cap) => tracing::info!(
            usd = cap.dollars(),
            "default cap per job run (CAPSID_JOB_MAX_COST_USD): a claim reserves it against a budgeted namespace's month"
        ),
        None => tracing::info!(
            "no default cap per job run (CAPSID_JOB_MAX_COST_USD): only jobs posted with max_cost_usd reserve one"
        ),
    }
    let clock: std::sync::Arc<dyn capsid_core::time::Clock> = match &args.test_clock_file {
        Some(path) => {
            tracing::warn!(path = %path.display(), "TEST CLOCK: time is read from a file; never run a real server like this");
            std::sync::Arc::new(crate::test_clock::FileClock::new(path.clone()))
        }
        None => std::sync::Arc::new(capsid_http::system::SystemClock),
    };
    let mut service = config::service_on(
        store.clone(),
        clock,
        Some(secret),
        args.operator_key_hash.as_deref(),
    );
    // Repo access: the GitHub App, when configured (a configured App whose key does not
    // parse stops the start, naming the setting; none means the repo tools say so).
    let github = config::github_app()?;
    match &github {
        Some(app) => tracing::info!(app = ?app, "GitHub App configured: repo tools on"),
        None => tracing::info!(
            "GitHub App not configured (CAPSID_GITHUB_APP_CLIENT_ID, CAPSID_GITHUB_APP_PRIVATE_KEY): repo tools answer 'GitHub App not configured'"
        ),
    }
    if let Some(app) = github {
        service = service.with_repo_host(std::sync::Arc::new(app));
    }
    // The loop's nightly opener runs at 03:00 in this zone (a bad name stops the start).
    let zone = capsid_core::improve::night::LoopZone::parse(&args.improve_tz)
        .map_err(|e| anyhow::anyhow!(e))?;
    tracing::info!(zone = zone.name(), "improve loop time zone");
    service = service
        .with_loop_zone(zone)
        .with_backup_interval(std::time::Duration::from_secs(
            args.backup_interval_minutes * 60,
        ))
        .with_backup_every(args.backup_every_hours)
        .with_rehearse_every(args.rehearse_every_days)
        .with_scratch_stores(std::sync::Arc::new(crate::scratch::ScratchTargets::new(
            global,
        )));
    // The model API, when a key is configured (a reference that does not resolve stops the
    // start, naming the setting).
    match args.model.client()? {
        Some(model) => {
            tracing::info!(
                api_url = model.base_url(),
                "model API configured: the improve loop's api mode can run"
            );
            service = service.with_model(std::sync::Arc::new(model));
        }
        None => tracing::info!(
            "model API not configured (CAPSID_ANTHROPIC_API_KEY): the improve loop's api mode opens no run"
        ),
    }
    // Each periodic task runs bounded in time.
    service = service.with_deadline(std::sync::Arc::new(capsid_http::system::TokioDeadline));
    // The media store takes the backups; the holdout store is handed on as its counts (the
    // backup sidecar) and to the scorer path (`/improve/score`, `/improve/holdout-credential`),
    // which reads one namespace's `improve/holdout/<ns>/` at a time.
    let media = args.blobs.media(global)?;
    let holdout = args.blobs.holdout(global)?;
    tracing::info!(
        media = media.describe(),
        holdout = holdout.describe(),
        "blob stores"
    );
    service = service
        .with_media(media)
        .with_holdout(holdout.clone())
        .with_holdout_counts(capsid_core::backup::holdout::HoldoutCounts::new(holdout));
    let listener = tokio::net::TcpListener::bind(args.listen)
        .await
        .with_context(|| format!("binding {}", args.listen))?;
    // The address actually bound (a `:0` listen picks a free port).
    let bound = listener.local_addr().context("reading the bound address")?;
    let public_url = args
        .public_url
        .clone()
        .unwrap_or_else(|| format!("http://{bound}"))
        .trim_end_matches('/')
        .to_owned();
    if let Some(url) = &args.webhook_url {
        let notifier = capsid_http::WebhookNotifier::new(url)
            .map_err(anyhow::Error::msg)?
            .with_public_url(&public_url);
        service = service.with_notifier(std::sync::Arc::new(notifier));
    }
    let (owner, oauth_missing) = crate::owner::owner_config(&args.owner)?;
    // A bad CAPSID_TRUSTED_PROXIES stops the start, naming the entry.
    let trusted_proxies = crate::proxies::from_env()?;
    if !trusted_proxies.is_empty() {
        tracing::info!(proxies = ?trusted_proxies, "client addresses come from X-Forwarded-For of these peers");
    } else if public_url.starts_with("https://") {
        tracing::warn!(
            "CAPSID_PUBLIC_URL is https:// but CAPSID_TRUSTED_PROXIES is not set: behind a reverse proxy every client shares its address and its rate limits"
        );
    }
    // Where this server answers, for `capsid console login` run beside the store (its link
    // then points here, whatever port or public URL this start was given).
    if let Err(e) = store
        .put_setting(crate::console::SERVED_AT, &public_url, None)
        .await
    {
        tracing::warn!(error = %e, "could not record where the server answers (console login links fall back to CAPSID_LISTEN)");
    }
    let http_has_no_github = owner.is_none();
    let http = HttpConfig {
        public_url: public_url.clone(),
        mcp_sessions: args.mcp_sessions,
        build: build_info(),
        oauth_missing,
        owner,
        trusted_proxies,
    };
    tracing::info!(
        url = %public_url,
        database = %global.database_display(),
        schema = version.as_deref().unwrap_or("(not migrated by this start)"),
        sessions = args.mcp_sessions,
        sessions_per_caller = args.mcp_sessions_per_caller,
        sessions_max = args.mcp_sessions_max,
        session_idle_secs = args.mcp_session_idle_secs,
        "capsid listening"
    );
    if store.agents().await.map(|a| a.is_empty()).unwrap_or(false)
        && args.operator_key_hash.is_none()
    {
        let inv = invocation(global);
        // Formatted whole, then written once: stderr is unbuffered, and a reader watching for
        // the first line must not see the banner cut between its pieces.
        let banner = format!(
            "\ncapsid is serving MCP at {public_url}/ops/mcp\n  database: {}\n\nNo agents yet. Mint a first one (its key is printed once):\n\n  {inv} agents mint --name me --kind session --namespaces '*' --grants read,write\n\nthen register a namespace:\n\n  {inv} namespaces register my-project --repo owner/name\n",
            global.database_display()
        );
        eprintln!("{banner}");
    }
    if http_has_no_github {
        let inv = invocation(global);
        let url = if std::env::var_os("CAPSID_PUBLIC_URL").is_none()
            && public_url != "http://127.0.0.1:8787"
        {
            format!(" --url {public_url}")
        } else {
            String::new()
        };
        eprintln!(
            "\nThe console is at {public_url}/console. GitHub sign-in is not configured; sign in with a one-time link:\n\n  {inv} console login{url}\n"
        );
    }
    let scheduler = Scheduler::new(
        service.clone(),
        format!("{}:{}", hostname(), std::process::id()),
    );
    let limits = SessionLimits {
        per_caller: args.mcp_sessions_per_caller as usize,
        total: args.mcp_sessions_max as usize,
        idle: Duration::from_secs(args.mcp_session_idle_secs),
    };
    let clock = service.clone();
    let state = AppState::new(service, http)
        .with_session_limits(limits)
        .with_store_probe_timeout(args.store.probe_timeout());
    let metrics = state.metrics.clone();
    // Idle sessions are ended by a sweep (and at every session opening), a few times per
    // idle period.
    let sessions = state.sessions.clone();
    let sweeper = args.mcp_sessions.then(|| {
        tokio::spawn(async move {
            let every = (limits.idle / 4).clamp(Duration::from_secs(1), Duration::from_secs(60));
            let mut every = tokio::time::interval(every);
            every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                every.tick().await;
                sessions.evict_idle(clock.now()).await;
            }
        })
    });
    let tick_every = Duration::from_millis(args.tick_interval_ms.max(10));
    let ticker = tokio::spawn(async move {
        let mut every = tokio::time::interval(tick_every);
        every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            every.tick().await;
            let result = scheduler.tick().await;
            metrics.record_tick("lease_sweep", &result);
            match result {
                Ok(report) => {
                    metrics.record_task_runs(&report);
                    crate::tick::log_report(&report);
                }
                Err(e) => tracing::warn!(error = %e, "scheduled tick failed"),
            }
        }
    });
    let subscriptions = state.subscriptions.clone();
    let app = capsid_http::router(state);
    // Header and body deadlines and a connection bound; the peer address feeds the
    // per-address limits (registrations, CSP reports). On the signal, listen streams end
    // gracefully first: a connection holding one would otherwise never finish.
    let shutdown = async move {
        shutdown_signal().await;
        subscriptions.close();
    };
    capsid_http::serve(listener, app, ServeLimits::default(), shutdown).await;
    ticker.abort();
    if let Some(sweeper) = sweeper {
        sweeper.abort();
    }
    tracing::info!("stopped");
    Ok(ExitCode::SUCCESS)
}

fn hostname() -> String {
    std::fs::read_to_string("/etc/hostname")
        .map(|h| h.trim().to_owned())
        .unwrap_or_else(|_| "capsid".into())
}

#[cfg(test)]
mod tests {
    use super::public_url_problem;

    #[test]
    fn a_public_url_needs_a_scheme_and_a_host_and_nothing_after_it() {
        for good in [
            "https://capsid.example.org",
            "https://capsid.example.org/",
            "http://127.0.0.1:8787",
            "http://[::1]:8787",
        ] {
            assert_eq!(public_url_problem(good), None, "{good}");
        }
        for (bad, says) in [
            ("capsid.example.org", "no http:// or https:// scheme"),
            ("ftp://capsid.example.org", "no http:// or https:// scheme"),
            ("https://", "names no host"),
            ("https://:8787", "names no host"),
            ("https://user@capsid.example.org", "names no host"),
            (
                "https://capsid.example.org/console",
                "path, query or fragment",
            ),
            ("https://capsid.example.org?x=1", "path, query or fragment"),
        ] {
            let why = public_url_problem(bad).unwrap_or_else(|| panic!("{bad} accepted"));
            assert!(
                why.contains(says) && why.contains("--public-url"),
                "{bad}: {why}"
            );
        }
    }
}
