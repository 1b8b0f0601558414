//! `GET /health`: store probes (a trivial query and a full-text probe), the schema version,
//! build provenance and backup age. 200 when every probe is ok, else 503 `degraded` naming
//! the failing probe (with `Retry-After`).

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use capsid_core::improve::keys::BACKUP_LAST_OK_KEY;
use capsid_core::service::Service;
use capsid_core::time::{HOUR_MS, Timestamp};
use serde_json::{Value, json};

use crate::AppState;

/// Build provenance, stamped at build time.
#[derive(Clone, Debug, Default)]
pub struct BuildInfo {
    /// Git commit, or `unknown`.
    pub sha: String,
    /// Whether the tree had uncommitted changes.
    pub dirty: bool,
    /// When it was built (RFC 3339).
    pub built_at: String,
    /// The crate version.
    pub version: String,
}

/// A backup older than this carries a warning (never a degraded status).
const BACKUP_STALE_HOURS: f64 = 26.0;

fn probe_error(e: impl std::fmt::Display) -> String {
    let mut s = format!("error: {e}");
    s.truncate(120);
    s
}

/// The health report and whether every probe passed.
pub async fn health_report(service: &Service, build: &BuildInfo) -> (bool, Value) {
    let store = service.store();
    let db = match store.ping().await {
        Ok(()) => "ok".to_owned(),
        Err(e) => probe_error(e),
    };
    let fts = if db == "ok" {
        match store.fts_probe("conventions").await {
            Ok(_) => "ok".to_owned(),
            Err(e) => probe_error(e),
        }
    } else {
        "skipped".to_owned()
    };
    let schema_version = store.schema_version().await.ok().flatten();
    let now = service.now();
    let last_ok = store.setting(BACKUP_LAST_OK_KEY, now).await.ok().flatten();
    let age_hours = last_ok
        .as_deref()
        .and_then(Timestamp::parse)
        .map(|t| (now.millis_since(t) as f64 / HOUR_MS as f64 * 10.0).round() / 10.0);
    let mut backup = json!({ "last_ok": last_ok, "age_hours": age_hours });
    match age_hours {
        None => backup["warning"] = json!("no successful backup recorded"),
        Some(h) if h > BACKUP_STALE_HOURS => {
            backup["warning"] = json!(format!("the last successful backup is {h} hours old"));
        }
        _ => {}
    }
    let ok = db == "ok" && fts == "ok";
    let mut failing = Vec::new();
    if db != "ok" {
        failing.push("db");
    }
    if fts != "ok" {
        failing.push("fts");
    }
    let mut report = json!({
        "status": if ok { "ok" } else { "degraded" },
        "sha": build.sha,
        "dirty": build.dirty,
        "builtAt": build.built_at,
        "version": build.version,
        "schema_version": schema_version,
        "store": { "db": db, "fts": fts },
        "backup": backup,
    });
    if !ok {
        report["failing"] = json!(failing);
    }
    (ok, report)
}

/// The route.
pub async fn health(State(state): State<AppState>) -> Response {
    let (ok, report) = health_report(&state.service, &state.config.build).await;
    let status = if ok {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    let mut resp = (status, axum::Json(report)).into_response();
    if !ok {
        crate::unavailable::with_retry_after(&mut resp);
    }
    resp
}
