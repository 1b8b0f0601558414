//! `GET /health`: runs the store probes (a trivial query and a full-text probe), reads the
//! schema version and the backup record, and hands the outcomes to the core
//! ([`capsid_core::health`]), which decides the report: `ok` or `degraded`, what is failing,
//! the backup's warning. This module maps that to 200 or 503 (with `Retry-After`). Every probe
//! is bounded in time, so an outage answers fast.

use std::time::Duration;

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
pub use capsid_core::health::BuildInfo;
use capsid_core::health::{HealthReport, StoreProbes, health_report as decide};
use capsid_core::improve::keys::BACKUP_LAST_OK_KEY;
use capsid_core::ports::StoreError;
use capsid_core::service::Service;

use crate::AppState;

/// How long each store probe of `/health` may take by default, so the answer comes before a
/// load balancer's probe gives up even while the database cannot be reached.
pub const STORE_PROBE_TIMEOUT: Duration = Duration::from_millis(1500);

/// The health report, each probe bounded by [`STORE_PROBE_TIMEOUT`].
pub async fn health_report(service: &Service, build: &BuildInfo) -> HealthReport {
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
) -> HealthReport {
    let store = service.store();
    let now = service.now();
    let probes = match probe(service, within, store.ping()).await {
        Err(why) => StoreProbes::Unreadable(why),
        Ok(()) => {
            let (fts, schema_version, last_ok) = tokio::join!(
                probe(service, within, store.fts_probe("conventions")),
                probe(service, within, store.schema_version()),
                probe(service, within, store.setting(BACKUP_LAST_OK_KEY, now)),
            );
            StoreProbes::Readable {
                fts: fts.map(|_| ()),
                schema_version: schema_version.ok().flatten(),
                backup_last_ok: last_ok.ok().flatten(),
            }
        }
    };
    decide(build, probes, now)
}

/// The route.
pub async fn health(State(state): State<AppState>) -> Response {
    let report = health_report_within(
        &state.service,
        &state.config.build,
        state.store_probe_timeout,
    )
    .await;
    let ok = report.ok();
    let status = if ok {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    let mut resp = (status, axum::Json(&report)).into_response();
    if !ok {
        crate::unavailable::with_retry_after(&mut resp);
    }
    resp
}
