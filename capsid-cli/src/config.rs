//! Configuration (SPEC section 4): flags with their environment variables and defaults,
//! credential references for secrets, logging, and opening the store the database URL names.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{Context, Result, bail};
use capsid_core::caller::parse_operator_keys;
use capsid_core::ports::{Store, StoreHealth};
use capsid_core::service::{Service, ServiceConfig};
use clap::Args;

use capsid_http::system::{OsEntropy, SystemClock};

/// Settings every command shares.
#[derive(Debug, Clone, Args)]
pub struct GlobalArgs {
    /// Data folder: the SQLite file, the generated signing key, local blobs.
    #[arg(
        long,
        env = "CAPSID_DATA_DIR",
        default_value = "./capsid-data",
        global = true
    )]
    pub data_dir: PathBuf,
    /// Database URL: sqlite://<path> (default <data-dir>/capsid.db) or postgres://...
    #[arg(long, env = "CAPSID_DATABASE_URL", global = true)]
    pub database_url: Option<String>,
    /// Root of every HMAC (job and policy signatures). A value, or a credential reference
    /// env:NAME, file:/path or cmd:command. Default: generated once into <data-dir>/signing.key.
    #[arg(
        long,
        env = "CAPSID_SIGNING_SECRET",
        global = true,
        hide_env_values = true
    )]
    pub signing_secret: Option<String>,
    /// Log filter (tracing syntax), e.g. info or capsid_http=debug.
    #[arg(long, env = "CAPSID_LOG", default_value = "info", global = true, value_parser = parse_log_filter)]
    pub log: String,
    /// Log format: text or json.
    #[arg(long, env = "CAPSID_LOG_FORMAT", default_value = "text", global = true,
          value_parser = clap::builder::PossibleValuesParser::new(["text", "json"]))]
    pub log_format: String,
    /// Where `data_dir` came from (set by [`GlobalArgs::note_origins`]).
    #[arg(skip)]
    pub data_dir_origin: Origin,
    /// Where `database_url` came from, when given.
    #[arg(skip)]
    pub database_url_origin: Origin,
}

/// Where a setting's value came from, for messages that must say why a path was used.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Origin {
    /// A command-line flag.
    Flag,
    /// An environment variable.
    Env,
    /// The built-in default.
    #[default]
    Default,
}

impl Origin {
    fn of(matches: &clap::ArgMatches, id: &str) -> Origin {
        match matches.value_source(id) {
            Some(clap::parser::ValueSource::CommandLine) => Origin::Flag,
            Some(clap::parser::ValueSource::EnvVariable) => Origin::Env,
            _ => Origin::Default,
        }
    }
}

/// No store where the command looked: a command that only opens one says so (exit 2) rather
/// than creating an empty store there. The message names the place, where it came from and
/// the command that creates a store.
#[derive(Debug)]
pub struct NoStore(pub String);

impl std::fmt::Display for NoStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for NoStore {}

/// A log filter that tracing can read (refused, naming the problem, rather than replaced by
/// `info` without a word).
fn parse_log_filter(value: &str) -> std::result::Result<String, String> {
    tracing_subscriber::EnvFilter::try_new(log_directives(value))
        .map(|_| value.to_owned())
        .map_err(|e| format!("not a log filter (e.g. info, or warn,capsid_http=debug): {e}"))
}

/// `--json` for commands a script reads.
#[derive(Debug, Clone, Copy, Args)]
pub struct JsonFlag {
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
}

impl GlobalArgs {
    /// The database URL, defaulting to the SQLite file in the data folder.
    pub fn database_url(&self) -> String {
        self.database_url
            .clone()
            .unwrap_or_else(|| format!("sqlite://{}", self.data_dir.join("capsid.db").display()))
    }

    /// Whether the database URL names Postgres.
    pub fn is_postgres(&self) -> bool {
        let url = self.database_url();
        url.starts_with("postgres://") || url.starts_with("postgresql://")
    }

    /// The database URL without a password, for logs and banners.
    pub fn database_display(&self) -> String {
        redact_url(&self.database_url())
    }

    /// Records where the data folder and the database URL came from.
    pub fn note_origins(&mut self, matches: &clap::ArgMatches) {
        self.data_dir_origin = Origin::of(matches, "data_dir");
        self.database_url_origin = Origin::of(matches, "database_url");
    }

    /// Where the store's place came from, in a reader's words.
    fn place_origin(&self) -> String {
        if self.database_url.is_some() {
            return match self.database_url_origin {
                Origin::Env => "from CAPSID_DATABASE_URL".to_owned(),
                _ => "from --database-url".to_owned(),
            };
        }
        let dir = self.data_dir.display();
        match self.data_dir_origin {
            Origin::Flag => format!("in the data folder {dir} given by --data-dir"),
            Origin::Env => format!("in the data folder {dir} from CAPSID_DATA_DIR"),
            Origin::Default => format!(
                "in the default data folder {dir} (relative to this folder; set --data-dir or CAPSID_DATA_DIR)"
            ),
        }
    }
}

/// `scheme://user:secret@host` → `scheme://user:***@host`.
pub fn redact_url(url: &str) -> String {
    if let Some((scheme, rest)) = url.split_once("://")
        && let Some((userinfo, host)) = rest.split_once('@')
        && let Some((user, _)) = userinfo.split_once(':')
    {
        return format!("{scheme}://{user}:***@{host}");
    }
    url.to_owned()
}

/// Starts logging: `CAPSID_LOG` filter, text or JSON lines on stderr (colours only on a
/// terminal).
pub fn init_logging(global: &GlobalArgs) {
    use std::io::IsTerminal;
    use tracing_subscriber::EnvFilter;
    let directives = log_directives(&global.log);
    let filter = EnvFilter::try_new(&directives).unwrap_or_else(|_| EnvFilter::new("info"));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(std::io::stderr().is_terminal())
        .with_writer(std::io::stderr);
    if global.log_format == "json" {
        builder.json().init();
    } else {
        builder.init();
    }
}

/// The filter `CAPSID_LOG` asks for, with rmcp's own lines kept to errors unless it names
/// `rmcp`: rmcp logs each stateless request's lifecycle at INFO (among them the `peer_info`
/// of an `initialize` it makes up for the request) and every JSON-RPC error it returns at
/// WARN, while capsid's request line already says what happened, once.
pub fn log_directives(log: &str) -> String {
    if log.contains("rmcp") {
        log.to_owned()
    } else if log.trim().is_empty() {
        "info,rmcp=error".to_owned()
    } else {
        format!("{log},rmcp=error")
    }
}

/// Resolves a secret given as a credential reference: `env:NAME`, `file:/path`,
/// `cmd:command` (stdout), or the literal value.
pub fn resolve_credential(value: &str) -> Result<String> {
    let secret = if let Some(name) = value.strip_prefix("env:") {
        std::env::var(name)
            .with_context(|| format!("credential reference env:{name}: the variable is not set"))?
    } else if let Some(path) = value.strip_prefix("file:") {
        std::fs::read_to_string(path)
            .with_context(|| format!("credential reference file:{path}: cannot read it"))?
    } else if let Some(cmd) = value.strip_prefix("cmd:") {
        let out = std::process::Command::new("sh")
            .arg("-c")
            .arg(cmd)
            .output()
            .context("credential reference cmd: could not run it")?;
        if !out.status.success() {
            bail!(
                "credential reference cmd: the command exited with {}",
                out.status
            );
        }
        String::from_utf8(out.stdout).context("credential reference cmd: output is not UTF-8")?
    } else {
        value.to_owned()
    };
    let secret = secret.trim().to_owned();
    if secret.is_empty() {
        bail!("a secret resolved to an empty value");
    }
    Ok(secret)
}

/// The signing secret: configured, or generated once into `<data-dir>/signing.key` (mode
/// 0600) and read from there afterwards.
pub fn signing_secret(global: &GlobalArgs) -> Result<String> {
    if let Some(v) = &global.signing_secret {
        return resolve_credential(v).context("CAPSID_SIGNING_SECRET");
    }
    let path = global.data_dir.join("signing.key");
    if path.exists() {
        return resolve_credential(&format!("file:{}", path.display()));
    }
    std::fs::create_dir_all(&global.data_dir)
        .with_context(|| format!("creating {}", global.data_dir.display()))?;
    let mut bytes = [0u8; 32];
    rand::fill(&mut bytes[..]);
    let secret = bytes.iter().map(|b| format!("{b:02x}")).collect::<String>();
    write_private(&path, &secret)?;
    tracing::info!(path = %path.display(), "generated a signing secret (mode 0600)");
    Ok(secret)
}

/// The signing secret if one is configured or kept in `<data-dir>/signing.key`, without
/// generating one (a restore verifies a dump with the secret that is here, and must not make
/// up a new one).
pub fn existing_signing_secret(global: &GlobalArgs) -> Result<Option<String>> {
    if let Some(v) = &global.signing_secret {
        return resolve_credential(v)
            .context("CAPSID_SIGNING_SECRET")
            .map(Some);
    }
    let path = global.data_dir.join("signing.key");
    if path.exists() {
        return resolve_credential(&format!("file:{}", path.display())).map(Some);
    }
    Ok(None)
}

/// Creates `path` with `content`, mode 0600, refusing to replace an existing file.
pub fn write_private(path: &Path, content: &str) -> Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .with_context(|| format!("creating {}", path.display()))?;
    file.write_all(content.as_bytes())?;
    file.sync_all()?;
    Ok(())
}

/// Opens the store the database URL names, which must exist: with none there, a [`NoStore`]
/// error naming the place and where it came from, and nothing is created. An existing store
/// is migrated to this build's schema.
pub async fn open_existing_store(global: &GlobalArgs) -> Result<Arc<dyn Store>> {
    let url = global.database_url();
    let create = "`capsid serve` (or `capsid migrate`) creates one there";
    if global.is_postgres() {
        let store = capsid_store_postgres::PgStore::connect(&url)
            .await
            .with_context(|| format!("connecting to {}", redact_url(&url)))?;
        if store.schema_version().await?.is_none() {
            return Err(NoStore(format!(
                "no Capsid store in the Postgres database {} ({}): it has no Capsid tables; {create}",
                redact_url(&url),
                global.place_origin()
            ))
            .into());
        }
        store
            .migrate()
            .await
            .context("migrating the Postgres store")?;
        return Ok(Arc::new(store));
    }
    if !url.starts_with("sqlite:") && url.contains("://") {
        bail!(
            "unsupported database URL {}: use sqlite://<path> or postgres://...",
            redact_url(&url)
        );
    }
    if let Some(missing) = missing_sqlite_store(global)? {
        return Err(missing.into());
    }
    let (store, _) = open_store(global, true).await?;
    Ok(store)
}

/// For a SQLite URL whose file does not exist, the [`NoStore`] to report.
pub fn missing_sqlite_store(global: &GlobalArgs) -> Result<Option<NoStore>> {
    if global.is_postgres() {
        return Ok(None);
    }
    let url = global.database_url();
    let path = capsid_store_sqlite::database_path(&url).map_err(|e| anyhow::anyhow!("{e}"))?;
    Ok((!path.is_file()).then(|| {
        NoStore(format!(
            "no Capsid store at {} ({}); `capsid serve` (or `capsid migrate`) creates one there, or run this command where the store is",
            path.display(),
            global.place_origin()
        ))
    }))
}

/// The signing secret configured or kept in `<data-dir>/signing.key`, for a command that
/// signs or seals with it and must not make up a new one (a dump sealed, or a job signed,
/// under a secret the server does not hold would be refused later).
pub fn required_signing_secret(global: &GlobalArgs) -> Result<String> {
    existing_signing_secret(global)?.ok_or_else(|| {
        anyhow::Error::new(NoStore(format!(
            "no signing secret: CAPSID_SIGNING_SECRET is not set and {} does not exist; give this command the server's secret (the file or the variable)",
            global.data_dir.join("signing.key").display()
        )))
    })
}

/// Opens (and by default migrates) the store the database URL names, creating it when
/// missing: `serve`, `migrate` and a restore's target only.
pub async fn open_store(
    global: &GlobalArgs,
    migrate: bool,
) -> Result<(Arc<dyn Store>, Option<String>)> {
    let url = global.database_url();
    if global.is_postgres() {
        let store = capsid_store_postgres::PgStore::connect(&url)
            .await
            .with_context(|| format!("connecting to {}", redact_url(&url)))?;
        postgres_migrated(store, migrate).await
    } else {
        if url.starts_with("sqlite:") || !url.contains("://") {
            std::fs::create_dir_all(&global.data_dir)
                .with_context(|| format!("creating {}", global.data_dir.display()))?;
        } else {
            bail!(
                "unsupported database URL {}: use sqlite://<path> or postgres://...",
                redact_url(&url)
            );
        }
        let store = capsid_store_sqlite::SqliteStore::open(&url)
            .await
            .with_context(|| format!("opening {url}"))?;
        let version = if migrate {
            store
                .migrate()
                .await
                .context("migrating the SQLite store")?
        } else {
            None
        };
        Ok((Arc::new(store), version))
    }
}

/// A connected Postgres store, migrated first when `migrate` (the schema version it reached).
pub async fn postgres_migrated(
    store: capsid_store_postgres::PgStore,
    migrate: bool,
) -> Result<(Arc<dyn Store>, Option<String>)> {
    let version = if migrate {
        store
            .migrate()
            .await
            .context("migrating the Postgres store")?
    } else {
        None
    };
    Ok((Arc::new(store), version))
}

/// The core service over `store`.
pub fn service(
    store: Arc<dyn Store>,
    signing_secret: Option<String>,
    operator_keys: Option<&str>,
) -> Service {
    service_on(store, Arc::new(SystemClock), signing_secret, operator_keys)
}

/// The core service over `store`, reading time from `clock`.
pub fn service_on(
    store: Arc<dyn Store>,
    clock: Arc<dyn capsid_core::time::Clock>,
    signing_secret: Option<String>,
    operator_keys: Option<&str>,
) -> Service {
    let config = ServiceConfig {
        signing_secret,
        operator_keys: operator_keys.map(parse_operator_keys).unwrap_or_default(),
        default_monthly_budget_usd: default_monthly_budget(),
        default_job_max_cost_usd: default_job_cap(),
    };
    Service::new(store, clock, Arc::new(OsEntropy), config)
}

/// `CAPSID_MONTHLY_BUDGET_USD`, the monthly budget of every namespace without its own.
/// A value that is not dollars of zero or more fails closed: a budget of 0, which stops
/// every claim, with an error in the log naming the variable (`serve` refuses to start on
/// it first, through [`check_monthly_budget`]).
fn default_monthly_budget() -> Option<f64> {
    match check_monthly_budget() {
        Ok(budget) => budget,
        Err(e) => {
            tracing::error!("{e:#}; every namespace without its own budget is held at 0");
            Some(0.0)
        }
    }
}

/// Reads `CAPSID_MONTHLY_BUDGET_USD`: unset or blank is no default budget.
pub fn check_monthly_budget() -> Result<Option<f64>> {
    env_dollars(
        "CAPSID_MONTHLY_BUDGET_USD",
        capsid_core::jobs::budget::parse_budget,
    )
}

/// Dollars from the variable `var` under the core's rule `parse`: unset or blank is `None`;
/// text that is not a number, or a number the rule refuses, is an error naming `var`.
fn env_dollars<T>(
    var: &str,
    parse: fn(f64) -> std::result::Result<T, String>,
) -> Result<Option<T>> {
    let Some(text) = std::env::var(var).ok().filter(|v| !v.trim().is_empty()) else {
        return Ok(None);
    };
    let parsed: f64 = text
        .trim()
        .parse()
        .map_err(|_| anyhow::anyhow!("{var}={text:?} is not a number of US dollars"))?;
    parse(parsed)
        .map(Some)
        .map_err(|e| anyhow::anyhow!("{var}: {e}"))
}

/// `CAPSID_JOB_MAX_COST_USD`, the cap of every job posted without its own `max_cost_usd`.
/// A value that is not dollars above zero fails closed: a cap of one micro-dollar, which no
/// model call fits, with an error in the log naming the variable (`serve` refuses to start on
/// it first, through [`check_job_cap`]).
fn default_job_cap() -> Option<capsid_core::drive::ledger::Usd> {
    match check_job_cap() {
        Ok(cap) => cap,
        Err(e) => {
            tracing::error!("{e:#}; every job without its own cap is held at $0.000001");
            Some(capsid_core::drive::ledger::Usd::from_micros(1))
        }
    }
}

/// Reads `CAPSID_JOB_MAX_COST_USD`: unset or blank is no default cap.
pub fn check_job_cap() -> Result<Option<capsid_core::drive::ledger::Usd>> {
    env_dollars(
        "CAPSID_JOB_MAX_COST_USD",
        capsid_core::jobs::budget::parse_job_cap,
    )
}

/// The GitHub App's settings (`CAPSID_GITHUB_APP_CLIENT_ID`, `CAPSID_GITHUB_APP_PRIVATE_KEY`,
/// `CAPSID_GITHUB_API_URL`): `Ok(None)` when the App is not configured, an error naming the
/// setting when it is configured badly. The key may be given inline (PEM, with real or `\n`
/// line breaks) or as a credential reference (`env:`, `file:`, `cmd:`).
pub fn github_config() -> Result<Option<capsid_github::GitHubConfig>> {
    let var = |k: &str| std::env::var(k).ok().filter(|v| !v.trim().is_empty());
    let (client_id, key) = match (
        var("CAPSID_GITHUB_APP_CLIENT_ID"),
        var("CAPSID_GITHUB_APP_PRIVATE_KEY"),
    ) {
        (None, None) => return Ok(None),
        (Some(_), None) => {
            bail!("CAPSID_GITHUB_APP_PRIVATE_KEY is not set (CAPSID_GITHUB_APP_CLIENT_ID is)")
        }
        (None, Some(_)) => {
            bail!("CAPSID_GITHUB_APP_CLIENT_ID is not set (CAPSID_GITHUB_APP_PRIVATE_KEY is)")
        }
        (Some(id), Some(key)) => (id, key),
    };
    let pem = if key.contains("-----BEGIN") {
        key
    } else {
        resolve_credential(&key).context("CAPSID_GITHUB_APP_PRIVATE_KEY")?
    };
    let api_url = var("CAPSID_GITHUB_API_URL");
    Ok(Some(capsid_github::GitHubConfig::new(
        &client_id,
        &pem,
        api_url.as_deref(),
    )))
}

/// The GitHub App for the service's `RepoHost` port, when configured.
pub fn github_app() -> Result<Option<capsid_github::GitHubApp>> {
    match github_config()? {
        None => Ok(None),
        Some(config) => capsid_github::GitHubApp::new(config, Arc::new(SystemClock))
            .map(Some)
            .map_err(anyhow::Error::msg),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rmcp_is_kept_to_errors_unless_the_filter_names_it() {
        assert_eq!(log_directives("info"), "info,rmcp=error");
        assert_eq!(log_directives(""), "info,rmcp=error");
        assert_eq!(
            log_directives("debug,sqlx=warn"),
            "debug,sqlx=warn,rmcp=error"
        );
        assert_eq!(log_directives("info,rmcp=debug"), "info,rmcp=debug");
    }

    #[test]
    fn urls_are_redacted() {
        assert_eq!(
            redact_url("postgres://u:secret@h:5432/db"),
            "postgres://u:***@h:5432/db"
        );
        assert_eq!(redact_url("sqlite://./x.db"), "sqlite://./x.db");
    }

    #[test]
    fn credential_references() {
        assert_eq!(resolve_credential("plain").unwrap(), "plain");
        // SAFETY of the test: HOME is set in any test environment.
        assert!(resolve_credential("env:HOME").is_ok());
        assert!(resolve_credential("env:CAPSID_SURELY_UNSET_VARIABLE").is_err());
        assert_eq!(
            resolve_credential("cmd:printf ' s3cret\\n'").unwrap(),
            "s3cret"
        );
        assert!(resolve_credential("cmd:exit 3").is_err());
        assert!(resolve_credential("file:/nonexistent/capsid").is_err());
        assert!(resolve_credential("  ").is_err());
    }
}
