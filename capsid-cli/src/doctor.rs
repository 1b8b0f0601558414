//! `capsid doctor`: what is configured, whether the store answers, and what is missing.

use std::process::ExitCode;

use anyhow::Result;
use serde_json::json;

use crate::config::{self, GlobalArgs};
use capsid_http::system::SystemClock;

/// The GitHub App: whether its key parses, whether GitHub accepts its JWT (`GET /app`), and
/// which installations it reaches. A configured App that fails any of these is reported
/// with the reason; an App that is not configured is only noted (repo access is optional).
async fn github_check(names: &[&str], present: &dyn Fn(&str) -> bool) -> (serde_json::Value, bool) {
    let missing: Vec<&str> = names.iter().copied().filter(|k| !present(k)).collect();
    let app = match config::github_config() {
        Ok(None) => {
            return (
                json!({"check": "GitHub App (repo access)", "missing": missing,
                       "note": "repo tools answer 'GitHub App not configured' until it is set up"}),
                true,
            );
        }
        Ok(Some(c)) => capsid_github::GitHubApp::new(c, std::sync::Arc::new(SystemClock)),
        Err(e) => Err(format!("{e:#}")),
    };
    let app = match app {
        Ok(app) => app,
        Err(e) => {
            return (
                json!({"check": "GitHub App (repo access)", "key": format!("error: {e}")}),
                false,
            );
        }
    };
    let d = app.diagnose().await;
    let ok = d.jwt.is_ok() && d.installations.is_ok();
    let report = json!({"check": "GitHub App (repo access)",
           "api_url": std::env::var("CAPSID_GITHUB_API_URL").unwrap_or_else(|_| capsid_github::DEFAULT_API_URL.into()),
           "key": "parses",
           "jwt": match &d.jwt { Ok(name) => format!("accepted (App: {name})"), Err(e) => format!("refused: {e}") },
           "installations": match &d.installations { Ok(list) => json!(list), Err(e) => json!(format!("error: {e}")) }});
    (report, ok)
}

/// The last restore rehearsal the server's scheduler recorded (informational: a failed one is
/// shown with its reason, but the store itself is not unhealthy for it).
async fn rehearsal_check(store: &dyn capsid_core::ports::Store) -> serde_json::Value {
    use capsid_core::backup::rehearsal::{REHEARSAL_KEY, RehearsalRecord};
    let now = capsid_core::time::Clock::now(&capsid_http::system::SystemClock);
    match store.setting(REHEARSAL_KEY, now).await {
        Ok(Some(text)) => match RehearsalRecord::parse(&text) {
            Some(record) => json!({"check": "restore rehearsal", "ok": record.ok,
                                   "value": record.summary(), "last": record}),
            None => json!({"check": "restore rehearsal", "ok": false,
                           "value": format!("the record does not read: {text}")}),
        },
        Ok(None) => json!({"check": "restore rehearsal", "ok": null,
                           "value": "none recorded yet (capsid serve rehearses the newest dump weekly)"}),
        Err(e) => json!({"check": "restore rehearsal", "ok": null, "value": format!("error: {e}")}),
    }
}

/// Runs the checks. Exit 0 when the store is healthy, 1 otherwise.
pub async fn run(global: &GlobalArgs, json_out: bool) -> Result<ExitCode> {
    let mut checks = Vec::new();
    let mut healthy = true;
    checks.push(json!({"check": "database", "value": global.database_display()}));
    let missing = config::missing_sqlite_store(global)?;
    let opened = match &missing {
        Some(missing) => Err(anyhow::anyhow!("{missing}")),
        None => config::open_store(global, false).await,
    };
    match opened {
        Ok((store, _)) => {
            let ping = store
                .ping()
                .await
                .map(|_| "ok".to_owned())
                .unwrap_or_else(|e| format!("error: {e}"));
            let fts = store
                .fts_probe("conventions")
                .await
                .map(|_| "ok".to_owned())
                .unwrap_or_else(|e| format!("error: {e}"));
            let schema = store.schema_version().await.ok().flatten();
            // What the store runs without slows it but does not make it unhealthy.
            let limitations = store
                .limitations()
                .await
                .unwrap_or_else(|e| vec![format!("could not be read: {e}")]);
            healthy &= ping == "ok" && fts == "ok" && schema.is_some();
            checks.push(json!({"check": "store", "ping": ping, "fts": fts, "schema_version": schema,
                               "limitations": limitations,
                               "hint": if schema.is_none() { Some("run capsid migrate") } else { None }}));
            checks.push(rehearsal_check(store.as_ref()).await);
        }
        Err(e) => {
            healthy = false;
            checks.push(json!({"check": "store", "error": format!("{e:#}")}));
        }
    }
    let signing = match &global.signing_secret {
        Some(v) => config::resolve_credential(v)
            .map(|_| "configured".to_owned())
            .unwrap_or_else(|e| format!("error: {e:#}")),
        None if global.data_dir.join("signing.key").exists() => "generated (data folder)".into(),
        None => "not yet generated (capsid serve generates it)".into(),
    };
    checks.push(json!({"check": "signing secret", "value": signing}));
    let present = |k: &str| std::env::var_os(k).is_some();
    let app = [
        "CAPSID_GITHUB_APP_CLIENT_ID",
        "CAPSID_GITHUB_APP_PRIVATE_KEY",
    ];
    let (github, github_ok) = github_check(&app, &present).await;
    healthy &= github_ok;
    checks.push(github);
    let (model, model_ok) = crate::model::doctor_check().await;
    healthy &= model_ok;
    checks.push(model);
    // Whether `capsid drive` can box an agent here, as it does by default (not a health matter
    // of the server); without it `drive` runs only with an explicit --unboxed.
    checks.push(match capsid_box::sandbox::probe().await {
        Ok(b) => json!({"check": "agent box (capsid drive)", "value": "available",
                        "bwrap": b.path().display().to_string(), "version": b.version(),
                        "started_ms": b.started_in().as_millis()}),
        Err(e) => json!({"check": "agent box (capsid drive)", "value": "unavailable",
                         "error": e.to_string(),
                         "meaning": "capsid drive refuses to run an agent here unless --unboxed is passed"}),
    });
    let oauth = [
        "CAPSID_GITHUB_CLIENT_ID",
        "CAPSID_GITHUB_CLIENT_SECRET",
        "CAPSID_ADMIN_GITHUB_LOGIN",
        "CAPSID_COOKIE_KEY",
    ];
    checks.push(json!({"check": "owner login (OAuth on /mcp, console)",
                       "missing": oauth.iter().filter(|k| !present(k)).collect::<Vec<_>>()}));
    let (proxies, proxies_ok) =
        crate::proxies::doctor_check(std::env::var("CAPSID_PUBLIC_URL").ok().as_deref());
    healthy &= proxies_ok;
    checks.push(proxies);
    checks.push(json!({"check": "operator keys", "value": if present("CAPSID_OPERATOR_KEY_HASH") { "configured" } else { "none (mint agents instead)" }}));
    if json_out {
        println!(
            "{}",
            serde_json::to_string_pretty(&json!({"healthy": healthy, "checks": checks}))?
        );
    } else {
        for c in &checks {
            println!("{c}");
        }
        println!("{}", if healthy { "healthy" } else { "NOT healthy" });
    }
    if missing.is_some() {
        // No store here: a doctor in the wrong folder says so like every other command.
        return Ok(ExitCode::from(2));
    }
    Ok(if healthy {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}
