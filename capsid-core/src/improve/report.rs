//! The signed score report a roster repository's CI posts to `POST /improve/score`
//! (reference 8.3): the per-namespace key, the header envelope checked in the reference's
//! order, the body read without coercion, and the holdout manifest the pass rate is
//! computed from.
//!
//! Everything here is pure: the HTTP adapter hands in the headers, the body it read as a
//! bounded stream and the server's clock; it claims the returned `jti` in the replay table
//! and answers each [`ReportRefusal`] with [`ReportRefusal::status`].

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use super::verdict::MetricMap;
use crate::crypto::{ct_eq, hmac_sha256_hex};
use crate::time::{MINUTE_MS, Timestamp};

/// The HMAC context of a namespace's score key: `HMAC(root, "capsid-improve-score:v1:<ns>")`.
pub const SCORE_CONTEXT: &str = "capsid-improve-score:v1:";
/// The header naming the namespace the report is for.
pub const NAMESPACE_HEADER: &str = "x-improve-namespace";
/// The header carrying the ISO 8601 UTC instant the report was signed at.
pub const TIMESTAMP_HEADER: &str = "x-improve-timestamp";
/// The header carrying the hex signature of `<timestamp>.<body>`.
pub const SIGNATURE_HEADER: &str = "x-improve-signature";
/// How far a report's timestamp may stand from the server's clock, either side.
pub const SIGNATURE_WINDOW_MS: i64 = 30 * MINUTE_MS;
/// The largest body read; a longer one is refused without being read whole.
pub const MAX_BODY_BYTES: usize = 16_384;
/// The longest string field (`run_id`, `jti`, ...), in characters.
pub const MAX_FIELD_CHARS: usize = 256;
/// The most metrics one map may carry.
pub const MAX_METRICS: usize = 64;

/// Why a score report (or a holdout-credential request) is refused. Each maps to one status.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ReportRefusal {
    /// `IMPROVE_SCORE_SECRET` (the root the keys derive from) is not configured (503).
    #[error("the score secret is not configured: no score report can be checked")]
    NotConfigured,
    /// The namespace header is missing or not `^[a-z0-9_-]{1,64}$` (400).
    #[error("{NAMESPACE_HEADER} must match ^[a-z0-9_-]{{1,64}}$")]
    BadNamespace,
    /// The timestamp header is missing or not an ISO 8601 instant (400).
    #[error(
        "{TIMESTAMP_HEADER} is missing or is not an ISO 8601 instant such as 2026-12-01T03:00:00Z"
    )]
    BadTimestamp,
    /// The timestamp is more than 30 minutes from the server's clock (401).
    #[error("{TIMESTAMP_HEADER} is more than 30 minutes from the server's clock")]
    OutsideWindow,
    /// The signature does not verify under the namespace's key (401).
    #[error("{SIGNATURE_HEADER} does not verify for this namespace, timestamp and body")]
    BadSignature,
    /// The body is longer than [`MAX_BODY_BYTES`] (413).
    #[error("the body is longer than {MAX_BODY_BYTES} bytes")]
    TooLarge,
    /// The body is not a well-formed report; names the field and the rule (400).
    #[error("the score report is malformed: {0}")]
    BadBody(String),
    /// The `jti` was claimed before (409).
    #[error("jti '{0}' was already used: sign a fresh report")]
    Replayed(String),
    /// The replay table could not be asked; refused rather than risk a replay (503).
    #[error("the replay table could not be read, so the report is refused: {0}")]
    ReplayUnknown(String),
    /// No holdout manifest for the namespace (409).
    #[error("no holdout manifest for namespace '{0}': the pass rate cannot be computed")]
    NoManifest(String),
    /// The report ran fewer holdout cases than the manifest holds (409).
    #[error("the report ran {reported} holdout cases but the manifest holds {manifest}")]
    HoldoutShort {
        /// `holdout.total` of the report.
        reported: u64,
        /// `total` of the manifest.
        manifest: u64,
    },
}

impl ReportRefusal {
    /// The HTTP status the reference answers this refusal with.
    pub fn status(&self) -> u16 {
        match self {
            Self::NotConfigured | Self::ReplayUnknown(_) => 503,
            Self::BadNamespace | Self::BadTimestamp | Self::BadBody(_) => 400,
            Self::OutsideWindow | Self::BadSignature => 401,
            Self::TooLarge => 413,
            Self::Replayed(_) | Self::NoManifest(_) | Self::HoldoutShort { .. } => 409,
        }
    }
}

/// The holdout part of a report.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HoldoutCounts {
    /// How many holdout cases ran.
    pub total: u64,
    /// How many of them passed (never more than `total`).
    pub passed: u64,
}

/// A score report that parsed; its envelope was checked before.
#[derive(Clone, Debug, PartialEq)]
pub struct ScoreReport {
    /// The namespace (equal to the header's).
    pub namespace: String,
    /// The run the attempt belongs to.
    pub run_id: String,
    /// The attempt scored.
    pub attempt_id: String,
    /// The commit scored.
    pub head_sha: String,
    /// The one-time id claimed in the replay table.
    pub jti: String,
    /// Anchor metrics (a `null` is a failing anchor, never coerced).
    pub anchors: MetricMap,
    /// Secondary metrics.
    pub secondary: MetricMap,
    /// Holdout cases run and passed.
    pub holdout: HoldoutCounts,
    /// CI minutes the scoring spent.
    pub ci_minutes: f64,
}

/// The key `namespace`'s reports are signed with, as the hex string the signature uses.
pub fn namespace_key(root: &str, namespace: &str) -> String {
    hmac_sha256_hex(root, format!("{SCORE_CONTEXT}{namespace}"))
}

/// The signature a score job computes: hex `HMAC(namespace_key, "<timestamp>.<body>")`.
pub fn sign_report(root: &str, namespace: &str, timestamp: &str, body: &[u8]) -> String {
    let mut msg = Vec::with_capacity(timestamp.len() + 1 + body.len());
    msg.extend_from_slice(timestamp.as_bytes());
    msg.push(b'.');
    msg.extend_from_slice(body);
    hmac_sha256_hex(namespace_key(root, namespace), msg)
}

/// Whether `name` is a namespace the header may carry (`^[a-z0-9_-]{1,64}$`).
pub fn namespace_header_ok(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_' || b == b'-')
}

/// Whether `name` is a metric name (`^[a-z0-9_]{1,64}$`).
pub fn metric_name_ok(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
}

/// Checks the envelope in the reference's order (secret, namespace, timestamp, window,
/// signature) and answers the namespace it authenticates. `body` is what was read; the
/// adapter refuses a longer one with [`ReportRefusal::TooLarge`] before reading it whole.
pub fn verify_envelope<'a>(
    root: Option<&str>,
    namespace: Option<&'a str>,
    timestamp: Option<&str>,
    signature: Option<&str>,
    body: &[u8],
    now: Timestamp,
) -> Result<&'a str, ReportRefusal> {
    let root = root
        .filter(|r| !r.is_empty())
        .ok_or(ReportRefusal::NotConfigured)?;
    let namespace = namespace
        .filter(|n| namespace_header_ok(n))
        .ok_or(ReportRefusal::BadNamespace)?;
    let raw_ts = timestamp.ok_or(ReportRefusal::BadTimestamp)?;
    let at = Timestamp::parse(raw_ts).ok_or(ReportRefusal::BadTimestamp)?;
    if now.millis_since(at).abs() > SIGNATURE_WINDOW_MS {
        return Err(ReportRefusal::OutsideWindow);
    }
    if body.len() > MAX_BODY_BYTES {
        return Err(ReportRefusal::TooLarge);
    }
    let expected = sign_report(root, namespace, raw_ts, body);
    let given = signature.unwrap_or("").trim().to_ascii_lowercase();
    if !ct_eq(expected.as_bytes(), given.as_bytes()) {
        return Err(ReportRefusal::BadSignature);
    }
    Ok(namespace)
}

const FIELDS: [&str; 9] = [
    "namespace",
    "run_id",
    "attempt_id",
    "head_sha",
    "jti",
    "anchors",
    "secondary",
    "holdout",
    "ci_minutes",
];

fn bad(why: impl Into<String>) -> ReportRefusal {
    ReportRefusal::BadBody(why.into())
}

fn string_field(obj: &Map<String, Value>, field: &str) -> Result<String, ReportRefusal> {
    let Some(Value::String(s)) = obj.get(field) else {
        return Err(bad(format!("{field} must be a string")));
    };
    let n = s.chars().count();
    if !(1..=MAX_FIELD_CHARS).contains(&n) || s.chars().any(char::is_control) {
        return Err(bad(format!(
            "{field} must have 1-{MAX_FIELD_CHARS} characters and no control character"
        )));
    }
    Ok(s.clone())
}

fn metrics_field(obj: &Map<String, Value>, field: &str) -> Result<MetricMap, ReportRefusal> {
    let Some(Value::Object(map)) = obj.get(field) else {
        return Err(bad(format!(
            "{field} must be an object of metric: number|null"
        )));
    };
    if map.len() > MAX_METRICS {
        return Err(bad(format!("{field} has more than {MAX_METRICS} metrics")));
    }
    let mut out = BTreeMap::new();
    for (name, value) in map {
        if !metric_name_ok(name) {
            return Err(bad(format!(
                "{field}: metric name '{}' must match ^[a-z0-9_]{{1,64}}$",
                name.chars().take(80).collect::<String>()
            )));
        }
        let value = match value {
            Value::Null => None,
            Value::Number(n) => match n.as_f64() {
                Some(v) if v.is_finite() => Some(v),
                _ => return Err(bad(format!("{field}.{name} must be a finite number"))),
            },
            _ => {
                return Err(bad(format!(
                    "{field}.{name} must be a number or null (no strings, no booleans)"
                )));
            }
        };
        out.insert(name.clone(), value);
    }
    Ok(out)
}

fn count(holdout: &Map<String, Value>, field: &str) -> Result<u64, ReportRefusal> {
    holdout
        .get(field)
        .and_then(Value::as_u64)
        .ok_or_else(|| bad(format!("holdout.{field} must be a non-negative integer")))
}

/// Parses a report body whose envelope verified for `namespace`: every field of the
/// reference present and typed (no coercion), no other field, the body's namespace the
/// header's, `holdout.passed ≤ holdout.total`, `ci_minutes` a finite number ≥ 0.
pub fn parse_report(namespace: &str, body: &[u8]) -> Result<ScoreReport, ReportRefusal> {
    if body.len() > MAX_BODY_BYTES {
        return Err(ReportRefusal::TooLarge);
    }
    let value: Value = serde_json::from_slice(body).map_err(|e| bad(format!("not JSON: {e}")))?;
    let Value::Object(obj) = value else {
        return Err(bad("the body must be a JSON object"));
    };
    if let Some(extra) = obj.keys().find(|k| !FIELDS.contains(&k.as_str())) {
        return Err(bad(format!(
            "unknown field '{}' (a report has {})",
            extra.chars().take(80).collect::<String>(),
            FIELDS.join(", ")
        )));
    }
    let body_ns = string_field(&obj, "namespace")?;
    if body_ns != namespace {
        return Err(bad(format!(
            "namespace '{body_ns}' differs from the {NAMESPACE_HEADER} header '{namespace}'"
        )));
    }
    let Some(Value::Object(holdout)) = obj.get("holdout") else {
        return Err(bad("holdout must be an object {total, passed}"));
    };
    let holdout = HoldoutCounts {
        total: count(holdout, "total")?,
        passed: count(holdout, "passed")?,
    };
    if holdout.passed > holdout.total {
        return Err(bad("holdout.passed is greater than holdout.total"));
    }
    let ci_minutes = match obj.get("ci_minutes").and_then(Value::as_f64) {
        Some(m) if m.is_finite() && m >= 0.0 => m,
        _ => return Err(bad("ci_minutes must be a finite number, zero or more")),
    };
    Ok(ScoreReport {
        namespace: body_ns,
        run_id: string_field(&obj, "run_id")?,
        attempt_id: string_field(&obj, "attempt_id")?,
        head_sha: string_field(&obj, "head_sha")?,
        jti: string_field(&obj, "jti")?,
        anchors: metrics_field(&obj, "anchors")?,
        secondary: metrics_field(&obj, "secondary")?,
        holdout,
        ci_minutes,
    })
}

/// The holdout manifest `improve/holdout/<ns>/manifest.json` in the holdout store.
#[derive(Clone, Debug, PartialEq, Eq, serde::Deserialize, serde::Serialize)]
pub struct HoldoutManifest {
    /// The namespace the suite belongs to.
    pub namespace: String,
    /// How many cases the hidden suite holds.
    pub total: u64,
    /// When the suite last changed.
    pub updated_at: String,
}

/// The holdout store key of `namespace`'s manifest.
pub fn manifest_key(namespace: &str) -> String {
    format!("improve/holdout/{namespace}/manifest.json")
}

/// The holdout pass rate of `report` against the manifest (`None`: no manifest): refused when
/// the report ran fewer cases than the manifest holds; computed from the manifest's total,
/// never the report's.
pub fn holdout_pass_rate(
    report: &ScoreReport,
    manifest: Option<&HoldoutManifest>,
) -> Result<f64, ReportRefusal> {
    let manifest = manifest
        .filter(|m| m.namespace == report.namespace)
        .ok_or_else(|| ReportRefusal::NoManifest(report.namespace.clone()))?;
    if report.holdout.total < manifest.total {
        return Err(ReportRefusal::HoldoutShort {
            reported: report.holdout.total,
            manifest: manifest.total,
        });
    }
    if manifest.total == 0 {
        return Ok(0.0);
    }
    // A report may run more cases than the manifest names; credit at most the manifest.
    let passed = report.holdout.passed.min(manifest.total);
    Ok(passed as f64 / manifest.total as f64)
}

#[cfg(test)]
mod tests;
