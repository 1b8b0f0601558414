//! The probe side of the evaluation cycle (reference 9): where a namespace's probe set lives
//! and what its version is, the keys the cycle keeps, the signed probe report's body, the
//! pending edit kept between a proposal and its measurement, and why a report is refused.
//!
//! A probe set's version is `sha256:` and the first 16 hex digits of the SHA-256 of its
//! body with CRLF read as LF: documents carry no version number, and a hash changes exactly
//! when the probes do, so evidence from an older probe set is never mixed with the new.

use serde_json::{Map, Value};

use crate::crypto::sha256_hex;
use crate::improve::report::{MAX_FIELD_CHARS, ReportRefusal};
use crate::skills::EditOp;

/// A namespace's probe set (human-written, like `improve/scores.md`).
pub const PROBES_PATH: &str = "improve/probes.md";
/// The workflow the cycle dispatches in a namespace's repository.
pub use crate::improve::workflows::PROBE_WORKFLOW;
/// The cadence setting, in days.
pub const CADENCE_KEY: &str = "skills:evaluate:cadence-days";
/// The stamp of the last cycle, claimed by compare-and-set.
pub const LAST_CYCLE_KEY: &str = "skills:evaluate:last";
/// The most probe dispatches one cycle makes; the rest wait for the next cycle.
pub const MAX_PROBES_PER_CYCLE: usize = 100;
/// The most runs a report may claim.
pub const MAX_RUNS: i64 = 10_000;

/// The setting holding `skill`'s pending edit.
pub fn edit_key(skill: &str) -> String {
    format!("skills:edit:{skill}")
}

/// The document (in the skill's source namespace) holding a skill's instruction body.
pub fn body_path(skill: &str) -> String {
    format!("improve/skills/{skill}.md")
}

/// The document (in the skill's source namespace) holding a pending edit's body, which the
/// probe workflow reads.
pub fn edit_body_path(skill: &str) -> String {
    format!("improve/skills/{skill}.edit.md")
}

/// The version of a probe set whose document body is `body`.
pub fn probe_set_version(body: &str) -> String {
    let normalized = body.replace("\r\n", "\n");
    let hex = sha256_hex(normalized.as_bytes());
    format!("sha256:{}", &hex[..16])
}

/// An in-bound edit waiting for its measurement (stored as JSON under [`edit_key`]).
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct PendingEdit {
    /// The version the edit starts from; it is stale once the skill moves past it.
    pub from_version: i64,
    /// The operations.
    pub ops: Vec<EditOp>,
    /// When it was proposed.
    pub proposed_at: String,
    /// Who proposed it (`improve-loop` in api mode, the driver in subscription mode).
    pub proposed_by: String,
}

impl PendingEdit {
    /// The pending edit a stored value means; unreadable reads as none.
    pub fn from_setting(raw: Option<&str>) -> Option<PendingEdit> {
        raw.and_then(|r| serde_json::from_str(r).ok())
    }
}

/// A signed probe report: one skill's probe set run with and without it.
#[derive(Clone, Debug, PartialEq)]
pub struct ProbeReport {
    /// The namespace whose probe set ran (the header's).
    pub namespace: String,
    /// The skill.
    pub skill: String,
    /// The skill version probed.
    pub version: i64,
    /// The probe set version probed.
    pub probe_set_version: String,
    /// The score with the skill (or with the pending edit's body, when `edit`).
    pub with: f64,
    /// The score without it.
    pub without: f64,
    /// Probe runs behind the scores.
    pub runs: i64,
    /// Single use.
    pub jti: String,
    /// Whether this measured the pending edit rather than the current body.
    pub edit: bool,
}

impl ProbeReport {
    /// With minus without.
    pub fn delta(&self) -> f64 {
        self.with - self.without
    }
}

const FIELDS: [&str; 9] = [
    "namespace",
    "skill",
    "version",
    "probe_set_version",
    "with",
    "without",
    "runs",
    "jti",
    "edit",
];

fn bad(why: impl Into<String>) -> ReportRefusal {
    ReportRefusal::BadBody(why.into())
}

fn text(obj: &Map<String, Value>, field: &str) -> Result<String, ReportRefusal> {
    match obj.get(field) {
        Some(Value::String(s))
            if (1..=MAX_FIELD_CHARS).contains(&s.chars().count())
                && !s.chars().any(char::is_control) =>
        {
            Ok(s.clone())
        }
        _ => Err(bad(format!(
            "{field} must be a string of 1-{MAX_FIELD_CHARS} characters and no control character"
        ))),
    }
}

fn score(obj: &Map<String, Value>, field: &str) -> Result<f64, ReportRefusal> {
    obj.get(field)
        .and_then(Value::as_f64)
        .filter(|v| v.is_finite())
        .ok_or_else(|| bad(format!("{field} must be a finite number")))
}

fn integer(obj: &Map<String, Value>, field: &str, max: i64) -> Result<i64, ReportRefusal> {
    obj.get(field)
        .and_then(Value::as_i64)
        .filter(|v| (1..=max).contains(v))
        .ok_or_else(|| bad(format!("{field} must be an integer from 1 to {max}")))
}

/// Parses a probe report whose envelope verified for `namespace`: the reference's fields,
/// typed without coercion, nothing else; the body's namespace the header's.
pub fn parse_probe_report(namespace: &str, body: &[u8]) -> Result<ProbeReport, ReportRefusal> {
    let value: Value = serde_json::from_slice(body).map_err(|e| bad(format!("not JSON: {e}")))?;
    let Some(obj) = value.as_object() else {
        return Err(bad("the body must be a JSON object"));
    };
    if let Some(extra) = obj.keys().find(|k| !FIELDS.contains(&k.as_str())) {
        return Err(bad(format!(
            "unknown field '{}'; a probe report has {}",
            extra.chars().take(64).collect::<String>(),
            FIELDS.join(", ")
        )));
    }
    let body_ns = text(obj, "namespace")?;
    if body_ns != namespace {
        return Err(bad(format!(
            "namespace '{body_ns}' is not the signed header's '{namespace}'"
        )));
    }
    let edit = match obj.get("edit") {
        None | Some(Value::Null) => false,
        Some(Value::Bool(b)) => *b,
        Some(_) => return Err(bad("edit must be true or false")),
    };
    Ok(ProbeReport {
        namespace: body_ns,
        skill: text(obj, "skill")?,
        version: integer(obj, "version", i64::MAX)?,
        probe_set_version: text(obj, "probe_set_version")?,
        with: score(obj, "with")?,
        without: score(obj, "without")?,
        runs: integer(obj, "runs", MAX_RUNS)?,
        jti: text(obj, "jti")?,
        edit,
    })
}

/// Why a well-formed, signed probe report is not taken (409; nothing is written).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ProbeRefusal {
    /// No such skill.
    #[error("no skill '{0}'")]
    UnknownSkill(String),
    /// The skill is retired; its record is closed.
    #[error("skill '{0}' is retired: a retired skill is not evaluated")]
    Retired(String),
    /// The skill is not offered in the namespace.
    #[error("skill '{skill}' does not apply to namespace '{namespace}'")]
    NotApplying {
        /// The skill.
        skill: String,
        /// The namespace.
        namespace: String,
    },
    /// The report probed another version than the current one.
    #[error("skill '{skill}' is at version {current}; the report probed version {reported}")]
    StaleVersion {
        /// The skill.
        skill: String,
        /// The version reported.
        reported: i64,
        /// The current version.
        current: i64,
    },
    /// The namespace has no probe set.
    #[error("namespace '{0}' has no probe set ({PROBES_PATH})")]
    NoProbeSet(String),
    /// The report ran another probe set than the current document.
    #[error("the probe set of '{namespace}' is {current}; the report ran {reported}")]
    StaleProbeSet {
        /// The namespace.
        namespace: String,
        /// The version reported.
        reported: String,
        /// The current document's version.
        current: String,
    },
    /// An edit report with no pending edit (or one proposed against another version).
    #[error("skill '{0}' has no pending edit from its current version")]
    NoPendingEdit(String),
    /// An edit report before the current version has a delta on this probe set.
    #[error(
        "skill '{skill}' version {version} has no evaluation on probe set {probe_set} yet: the edit has nothing to beat; report the version's own probe first"
    )]
    NoBaseline {
        /// The skill.
        skill: String,
        /// The current version.
        version: i64,
        /// The probe set.
        probe_set: String,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    const OK: &str = r#"{"namespace":"proj","skill":"s1","version":2,"probe_set_version":"sha256:0011","with":0.75,"without":0.5,"runs":3,"jti":"j1"}"#;

    #[test]
    fn a_well_formed_report_parses_and_its_delta_is_with_minus_without() {
        let r = parse_probe_report("proj", OK.as_bytes()).expect("parses");
        assert_eq!(
            (r.skill.as_str(), r.version, r.runs, r.edit),
            ("s1", 2, 3, false)
        );
        assert_eq!(r.delta(), 0.25);
        let edit = OK.replace(r#""jti":"j1""#, r#""jti":"j1","edit":true"#);
        assert!(
            parse_probe_report("proj", edit.as_bytes())
                .expect("parses")
                .edit
        );
    }

    #[test]
    fn malformed_reports_name_the_field() {
        let table = [
            (
                OK.replace("0.75", "\"NaN\""),
                "with must be a finite number",
            ),
            (
                OK.replace("0.5,", "null,"),
                "without must be a finite number",
            ),
            (
                OK.replace(r#""runs":3"#, r#""runs":0"#),
                "runs must be an integer",
            ),
            (
                OK.replace(r#""runs":3"#, r#""runs":1.5"#),
                "runs must be an integer",
            ),
            (
                OK.replace(r#""version":2"#, r#""version":"2""#),
                "version must be",
            ),
            (
                OK.replace(r#""jti":"j1""#, r#""jti":"j1","x":1"#),
                "unknown field 'x'",
            ),
            (
                OK.replace(r#""namespace":"proj""#, r#""namespace":"other""#),
                "not the signed header's",
            ),
            (
                OK.replace(r#""jti":"j1""#, r#""jti":"j1","edit":"yes""#),
                "edit must be true or false",
            ),
            ("[]".to_owned(), "must be a JSON object"),
        ];
        for (body, want) in table {
            let err = parse_probe_report("proj", body.as_bytes()).expect_err(&body);
            assert!(err.to_string().contains(want), "{body}: {err}");
            assert_eq!(err.status(), 400);
        }
    }

    #[test]
    fn probe_set_version_follows_the_text_not_its_line_endings() {
        let a = probe_set_version("probe one\nprobe two\n");
        assert_eq!(a, probe_set_version("probe one\r\nprobe two\r\n"));
        assert_ne!(a, probe_set_version("probe one\nprobe three\n"));
        assert!(a.starts_with("sha256:") && a.len() == 7 + 16, "{a}");
    }

    #[test]
    fn a_pending_edit_round_trips_and_garbage_reads_as_none() {
        let p = PendingEdit {
            from_version: 3,
            ops: vec![EditOp::Delete { line: 2 }],
            proposed_at: "2026-12-01T00:00:00Z".into(),
            proposed_by: "improve-loop".into(),
        };
        let raw = serde_json::to_string(&p).expect("json");
        assert_eq!(PendingEdit::from_setting(Some(&raw)), Some(p));
        assert_eq!(PendingEdit::from_setting(Some("{")), None);
        assert_eq!(PendingEdit::from_setting(None), None);
    }
}
