//! `capsid console login`: the console in the first minute, without GitHub. The command line
//! holds the database, so it is the admin: it stores the hash of a fresh one-time token and
//! prints the link that spends it, which opens a normal console session for the local owner
//! (`cli:<user>`) on the server at `--url`. The link works once, within five minutes.

use std::net::SocketAddr;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{Result, anyhow};
use capsid_core::owner::OwnerService;
use capsid_core::time::Clock;
use clap::{Args, Subcommand};
use serde_json::json;

use crate::config::{self, GlobalArgs};

/// `capsid console`.
#[derive(Debug, Subcommand)]
pub enum ConsoleCommand {
    /// Print a one-time link that signs a browser in to the console as the local owner
    /// (valid five minutes, usable once).
    Login(LoginArgs),
}

/// `capsid console login`.
#[derive(Debug, Clone, Args)]
pub struct LoginArgs {
    /// The server's base URL, as a browser reaches it. Default: CAPSID_PUBLIC_URL, else
    /// http://<CAPSID_LISTEN> (http://127.0.0.1:8787), as `capsid serve` uses them.
    #[arg(long)]
    pub url: Option<String>,
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
    /// Test hook: read "now" from this file, as `capsid serve --test-clock-file` does.
    #[arg(long, env = "CAPSID_TEST_CLOCK_FILE", hide = true)]
    pub test_clock_file: Option<std::path::PathBuf>,
}

/// The base URL `capsid serve` would answer on: `CAPSID_PUBLIC_URL`, else its listen address
/// (an unspecified address such as 0.0.0.0 is reached on loopback).
fn default_url() -> Result<String> {
    if let Ok(url) = std::env::var("CAPSID_PUBLIC_URL")
        && !url.trim().is_empty()
    {
        return Ok(url);
    }
    let listen = std::env::var("CAPSID_LISTEN").unwrap_or_else(|_| "127.0.0.1:8787".into());
    let mut addr: SocketAddr = listen.parse().map_err(|_| {
        anyhow!("CAPSID_LISTEN {listen:?} is not an address such as 127.0.0.1:8787; pass --url")
    })?;
    if addr.ip().is_unspecified() {
        addr.set_ip(std::net::Ipv4Addr::LOCALHOST.into());
    }
    Ok(format!("http://{addr}"))
}

/// The setting `capsid serve` records its public URL under at each start.
pub(crate) const SERVED_AT: &str = "server.public_url";

/// A base URL a browser can open: `http://` or `https://`, no query or fragment. A pasted
/// console or MCP address (`.../console`, `.../ops/mcp`) is read as its server's base.
fn base_url(url: &str) -> Result<String> {
    let url = url.trim().trim_end_matches('/');
    let url = url
        .strip_suffix("/console")
        .or_else(|| url.strip_suffix("/ops/mcp"))
        .unwrap_or(url);
    let ok = (url.starts_with("http://") || url.starts_with("https://"))
        && url.len() > "https://".len()
        && !url.contains(['?', '#', ' '])
        && url.chars().all(|c| c.is_ascii_graphic());
    if !ok {
        return Err(anyhow!(
            "--url {url:?} is not a base URL such as http://127.0.0.1:8787 or https://capsid.example.com"
        ));
    }
    Ok(url.to_owned())
}

/// Runs `capsid console`.
pub async fn run(global: &GlobalArgs, cmd: ConsoleCommand) -> Result<ExitCode> {
    let ConsoleCommand::Login(args) = cmd;
    // The link is for the server that keeps its data here: a folder with no store is the
    // wrong one (a new store's link would be refused by the real server).
    if global.database_url.is_none() {
        let db = global.data_dir.join("capsid.db");
        if !db.is_file() {
            return Err(anyhow!(
                "no Capsid store at {}: run `capsid console login` where `capsid serve` keeps its data (the folder it was started in, its --data-dir or CAPSID_DATA_DIR), or pass that folder with --data-dir",
                db.display()
            ));
        }
    }
    let (store, _) = config::open_store(global, true).await?;
    let clock: Arc<dyn Clock> = match &args.test_clock_file {
        Some(path) => Arc::new(crate::test_clock::FileClock::new(path.clone())),
        None => Arc::new(capsid_http::system::SystemClock),
    };
    let recorded = if args.url.is_none()
        && std::env::var("CAPSID_PUBLIC_URL").map_or(true, |u| u.trim().is_empty())
    {
        store.setting(SERVED_AT, clock.now()).await.ok().flatten()
    } else {
        None
    };
    // --url, else CAPSID_PUBLIC_URL, else where the server last said it answers, else its
    // listen address.
    let base = base_url(&match (&args.url, recorded) {
        (Some(u), _) => u.clone(),
        (None, Some(r)) => r,
        (None, None) => default_url()?,
    })?;
    let service = config::service_on(store, clock, config::signing_secret(global).ok(), None);
    let owner = OwnerService::new(service);
    let user = std::env::var("USER")
        .ok()
        .filter(|u| capsid_core::owner::local_user_ok(u))
        .unwrap_or_else(|| "owner".into());
    let link = owner
        .start_local_console_login(&user)
        .await
        .map_err(|e| anyhow!("{}", e.description))?;
    let url = format!("{base}/console/login?token={}", link.token);
    if args.json {
        println!(
            "{}",
            json!({"url": url, "expires_at": link.expires_at.to_string(), "actor": format!("cli:{user}")})
        );
    } else {
        println!(
            "Open this link to sign in to the console as cli:{user} (once, until {}):\n\n  {url}\n",
            link.expires_at
        );
    }
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base_urls_are_checked() {
        assert_eq!(
            base_url("http://127.0.0.1:8787/").unwrap(),
            "http://127.0.0.1:8787"
        );
        assert_eq!(
            base_url("https://capsid.example.com").unwrap(),
            "https://capsid.example.com"
        );
        assert_eq!(
            base_url("http://127.0.0.1:9000/console/").unwrap(),
            "http://127.0.0.1:9000"
        );
        assert_eq!(
            base_url("https://capsid.example.com/ops/mcp").unwrap(),
            "https://capsid.example.com"
        );
        for bad in [
            "127.0.0.1:8787",
            "ftp://x",
            "http://a b",
            "http://x/?q",
            "https://",
        ] {
            assert!(base_url(bad).is_err(), "{bad}");
        }
    }
}
