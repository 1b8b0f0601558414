//! `GET /health`: store probes (a trivial query and a full-text probe), the schema version,
//! build provenance and backup age. 200 when every probe is ok, else 503 `degraded` naming
//! the failing probe and why (with `Retry-After`). Every probe is bounded in time, so an
//! outage answers fast.

use std::time::Duration;

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use capsid_core::improve::keys::BACKUP_LAST_OK_KEY;
use capsid_core::ports::StoreError;
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

/// `error: <why>`, at most 120 bytes (cut on a character boundary: a server's message may
/// be in any language).
fn probe_error(e: impl std::fmt::Display) -> String {
    let mut s = format!("error: {e}");
    let mut end = s.len().min(120);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    s.truncate(end);
    s
}

/// How long each store probe of `/health` may take by default, so the answer comes before a
/// load balancer's probe gives up even while the database cannot be reached.
pub const STORE_PROBE_TIMEOUT: Duration = Duration::from_millis(1500);

/// The health report and whether every probe passed, each probe bounded by
/// [`STORE_PROBE_TIMEOUT`].
pub async fn health_report(service: &Service, build: &BuildInfo) -> (bool, Value) {
    health_report_within(service, build, STORE_PROBE_TIMEOUT).await
}

/// One probe bounded by `within`: its answer, or the error text naming what failed. A store
/// that is unavailable is asked for the real cause (a refused connection rather than a pool
/// that gave no connection in time), within the same bound.
async fn probe<T>(
    service: &Service,
    within: Duration,
    run: impl std::future::Future<Output = Result<T, StoreError>>,
) -> Result<T, String> {
    let answer = tokio::time::timeout(within, async {
        match run.await {
            Ok(value) => Ok(value),
            Err(StoreError::Unavailable(reason)) => {
                Err(service.store().outage_cause().await.unwrap_or(reason))
            }
            Err(e) => Err(e.to_string()),
        }
    })
    .await;
    match answer {
        Ok(answer) => answer,
        Err(_) => Err(format!("no answer within {} ms", within.as_millis())),
    }
}

/// As [`health_report`], each store probe bounded by `within`. When the trivial query fails,
/// the probes that need the database are skipped, so the whole report takes about `within`
/// at most.
pub async fn health_report_within(
    service: &Service,
    build: &BuildInfo,
    within: Duration,
) -> (bool, Value) {
    let store = service.store();
    let now = service.now();
    let db = match probe(service, within, store.ping()).await {
        Ok(()) => "ok".to_owned(),
        Err(e) => probe_error(e),
    };
    let (fts, schema_version, last_ok) = if db == "ok" {
        let (fts, schema_version, last_ok) = tokio::join!(
            probe(service, within, store.fts_probe("conventions")),
            probe(service, within, store.schema_version()),
            probe(service, within, store.setting(BACKUP_LAST_OK_KEY, now)),
        );
        let fts = match fts {
            Ok(_) => "ok".to_owned(),
            Err(e) => probe_error(e),
        };
        (fts, schema_version.ok().flatten(), last_ok.ok().flatten())
    } else {
        ("skipped".to_owned(), None, None)
    };
    let age_hours = last_ok
        .as_deref()
        .and_then(Timestamp::parse)
        .map(|t| (now.millis_since(t) as f64 / HOUR_MS as f64 * 10.0).round() / 10.0);
    let mut backup = json!({ "last_ok": last_ok, "age_hours": age_hours });
    match age_hours {
        None if db != "ok" => backup["warning"] = json!("unknown: the store cannot be read"),
        None => backup["warning"] = json!("no successful backup recorded"),
        Some(h) if h > BACKUP_STALE_HOURS => {
            backup["warning"] = json!(format!("the last successful backup is {h} hours old"));
        }
        _ => {}
    }
    let ok = db == "ok" && fts == "ok";
    // A probe skipped because the database is unreachable is not a failure of its own.
    let mut failing = Vec::new();
    if db != "ok" {
        failing.push("db");
    } else if fts != "ok" {
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
    let (ok, report) = health_report_within(
        &state.service,
        &state.config.build,
        state.store_probe_timeout,
    )
    .await;
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn probe_errors_are_cut_on_a_character_boundary() {
        let long = "é".repeat(100);
        let cut = probe_error(&long);
        assert!(cut.len() <= 120 && cut.starts_with("error: é"), "{cut}");
        assert_eq!(
            probe_error("connection refused at 127.0.0.1:5432"),
            "error: connection refused at 127.0.0.1:5432"
        );
    }
}
