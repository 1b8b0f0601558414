//! Configuration (SPEC section 4): flags with their environment variables and defaults,
//! credential references for secrets, logging, and opening the store the database URL names.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{Context, Result, bail};
use capsid_core::caller::parse_operator_keys;
use capsid_core::ports::Store;
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
    #[arg(long, env = "CAPSID_LOG", default_value = "info", global = true)]
    pub log: String,
    /// Log format: text or json.
    #[arg(long, env = "CAPSID_LOG_FORMAT", default_value = "text", global = true)]
    pub log_format: String,
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

fn write_private(path: &Path, content: &str) -> Result<()> {
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

/// Opens (and by default migrates) the store the database URL names.
pub async fn open_store(
    global: &GlobalArgs,
    migrate: bool,
) -> Result<(Arc<dyn Store>, Option<String>)> {
    let url = global.database_url();
    if global.is_postgres() {
        let store = capsid_store_postgres::PgStore::connect(&url)
            .await
            .with_context(|| format!("connecting to {}", redact_url(&url)))?;
        let version = if migrate {
            store
                .migrate()
                .await
                .context("migrating the Postgres store")?
        } else {
            None
        };
        Ok((Arc::new(store), version))
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
    };
    Service::new(store, clock, Arc::new(OsEntropy), config)
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
