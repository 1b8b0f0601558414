//! The truth report (`lint report`, reference 2.2): six checks a program can run without
//! an opinion, one integrity ratio over them, and the dated document that stores it.
//!
//! Integrity is subjects in good standing over subjects judged, across every check that
//! had a subject, weighted by nothing. A check that could not run is excluded rather than
//! counted as clean, and a store with nothing to judge has no integrity (null), not 100%.

use std::collections::{BTreeSet, HashMap};
use std::sync::LazyLock;

use regex::Regex;
use serde::{Serialize, Serializer};

use super::counts::CountClaim;
use super::document::Document;
use super::kinds::{DocStatus, DocType};
use super::links::{DanglingEdge, Edge};
use super::{CAPSID_NAMESPACE, is_archived};
use crate::time::{DAY_MS, Timestamp};

/// A published decision untouched for longer than this is flagged for re-reading.
pub const STALE_DECISION_DAYS: i64 = 180;
/// Unconsolidated documents above this count are flagged (the lint cadence).
pub const LINT_CADENCE: usize = 5;
/// Where reports live inside a namespace.
pub const REPORTS_PREFIX: &str = "reports/";
/// The report's document type.
pub const REPORT_TYPE: DocType = DocType::Reference;
/// The report's status.
pub const REPORT_STATUS: DocStatus = DocStatus::Published;
/// The audit action of a stored report.
pub const REPORT_AUDIT_ACTION: &str = "lint_report";

/// What the service read for a report on `namespace`.
#[derive(Debug, Clone)]
pub struct TruthInput {
    /// The namespace.
    pub namespace: String,
    /// When the report is made.
    pub now: Timestamp,
    /// Every document of the namespace, archived ones included.
    pub docs: Vec<Document>,
    /// Every edge with either end in the namespace.
    pub edges: Vec<Edge>,
    /// Those edges with a missing endpoint.
    pub dangling_edges: Vec<DanglingEdge>,
    /// Count claims over the standing documents.
    pub count_claims: Vec<CountClaim>,
    /// Paths on the primary repo's default branch; `None` when the tree could not be read,
    /// which leaves the drift check unrun (never "clean").
    pub repo_paths: Option<BTreeSet<String>>,
    /// Registered namespace names: a cited path starting `<ns>/` is a document address,
    /// not a repo path.
    pub namespaces: Vec<String>,
}

/// One finding: what was checked, on what, and what did not pass.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct TruthFinding {
    /// The check's name.
    pub check: &'static str,
    /// What it is about.
    pub subject: String,
    /// What is wrong.
    pub detail: String,
}

/// One check: how many subjects it judged and how many passed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct TruthCheck {
    /// The check's name.
    pub check: &'static str,
    /// Subjects judged (0 = not run or nothing to judge).
    pub subjects: usize,
    /// Subjects in good standing.
    pub ok: usize,
    /// What did not pass.
    pub findings: Vec<TruthFinding>,
}

/// Document totals by type, in order of first appearance (the Worker's object order).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TypeCounts(pub Vec<(String, usize)>);

impl Serialize for TypeCounts {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_map(self.0.iter().map(|(k, v)| (k, v)))
    }
}

/// The document census of the report.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct DocumentCounts {
    /// All documents.
    pub total: usize,
    /// By type.
    #[schemars(schema_with = "crate::schema::counts_by_name")]
    pub by_type: TypeCounts,
    /// Standing `episodic`/`source` documents.
    pub unconsolidated: usize,
    /// Documents under `archive/`.
    pub archived: usize,
}

/// The report.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct TruthReport {
    /// The namespace.
    pub namespace: String,
    /// When it was made (RFC 3339, UTC).
    pub generated: String,
    /// Census.
    pub documents: DocumentCounts,
    /// The six checks, in order.
    pub checks: Vec<TruthCheck>,
    /// Percent with one decimal, or null when nothing was judged.
    #[serde(serialize_with = "js_number_opt")]
    pub integrity: Option<f64>,
    /// Every finding, check by check.
    pub findings: Vec<TruthFinding>,
}

// A repo path in prose: a slash, an extension, no spaces (`src/server.ts`).
static REPO_PATH: LazyLock<Option<Regex>> = LazyLock::new(|| {
    Regex::new(r"(?-u:\b)((?:[A-Za-z0-9_.-]+/)+[A-Za-z0-9_.-]+\.[A-Za-z0-9]{1,5})(?-u:\b)").ok()
});

fn finding(check: &'static str, subject: String, detail: String) -> TruthFinding {
    TruthFinding {
        check,
        subject,
        detail,
    }
}

/// Builds the report (`buildTruthReport`).
pub fn build_truth_report(input: &TruthInput) -> TruthReport {
    let ns = input.namespace.as_str();
    let standing: Vec<&Document> = input
        .docs
        .iter()
        .filter(|d| !is_archived(&d.path))
        .collect();
    let mut by_type: Vec<(String, usize)> = Vec::new();
    for doc in &input.docs {
        match by_type.iter_mut().find(|(t, _)| *t == doc.doc_type) {
            Some((_, n)) => *n += 1,
            None => by_type.push((doc.doc_type.clone(), 1)),
        }
    }
    let unconsolidated = standing
        .iter()
        .filter(|d| DocType::parse(&d.doc_type).is_ok_and(DocType::is_consumable))
        .count();

    let checks = vec![
        contradictions(ns, &standing, &input.count_claims),
        stale_decisions(ns, &standing, input.now),
        unbound_specs(ns, &standing, &input.edges),
        broken_links(ns, &input.edges, &input.dangling_edges),
        drift(input, &standing),
        TruthCheck {
            check: "unconsolidated",
            subjects: standing.len(),
            ok: standing.len() - unconsolidated,
            findings: if unconsolidated > LINT_CADENCE {
                vec![finding(
                    "unconsolidated",
                    ns.to_owned(),
                    format!(
                        "{unconsolidated} unconsolidated documents, over the lint cadence of ~{LINT_CADENCE} in capsid/conventions.md"
                    ),
                )]
            } else {
                Vec::new()
            },
        },
    ];
    let judged = checks.iter().filter(|c| c.subjects > 0);
    let (subjects, good) = judged.fold((0, 0), |(s, g), c| (s + c.subjects, g + c.ok));
    #[allow(clippy::cast_precision_loss)] // document counts are far below 2^52
    let integrity =
        (subjects > 0).then(|| ((good as f64 / subjects as f64) * 1000.0).round() / 10.0);
    TruthReport {
        namespace: ns.to_owned(),
        generated: input.now.to_string(),
        documents: DocumentCounts {
            total: input.docs.len(),
            by_type: TypeCounts(by_type),
            unconsolidated,
            archived: input.docs.len() - standing.len(),
        },
        findings: checks
            .iter()
            .flat_map(|c| c.findings.iter().cloned())
            .collect(),
        checks,
        integrity,
    }
}

/// Every claim is a mismatch, so the population is the standing corpus: the share of
/// documents carrying a wrong number.
fn contradictions(ns: &str, standing: &[&Document], claims: &[CountClaim]) -> TruthCheck {
    let claimed: BTreeSet<&str> = claims.iter().map(|c| c.path.as_str()).collect();
    let bad = standing
        .iter()
        .filter(|d| claimed.contains(d.path.as_str()))
        .count();
    TruthCheck {
        check: "contradictions",
        subjects: standing.len(),
        ok: standing.len() - bad,
        findings: claims
            .iter()
            .map(|c| {
                finding(
                    "contradictions",
                    format!("{ns}/{}", c.path),
                    format!(
                        "states {} {}; the artifact says {}. In: {}",
                        c.states, c.noun, c.authoritative, c.quote
                    ),
                )
            })
            .collect(),
    }
}

fn stale_decisions(ns: &str, standing: &[&Document], now: Timestamp) -> TruthCheck {
    let decisions: Vec<&&Document> = standing
        .iter()
        .filter(|d| d.doc_type == "decision" && d.status == "published")
        .collect();
    let stale: Vec<&&Document> = decisions
        .iter()
        .copied()
        .filter(|d| now.millis_since(d.updated_at).abs() > STALE_DECISION_DAYS * DAY_MS)
        .collect();
    TruthCheck {
        check: "stale_decisions",
        subjects: decisions.len(),
        ok: decisions.len() - stale.len(),
        findings: stale
            .iter()
            .map(|d| {
                finding(
                    "stale_decisions",
                    format!("{ns}/{}", d.path),
                    format!(
                        "last written {}, over {STALE_DECISION_DAYS} days ago, and still published",
                        d.updated_at
                    ),
                )
            })
            .collect(),
    }
}

fn unbound_specs(ns: &str, standing: &[&Document], edges: &[Edge]) -> TruthCheck {
    let specs: Vec<&&Document> = standing
        .iter()
        .filter(|d| matches!(d.doc_type.as_str(), "spec" | "protocol" | "procedural"))
        .collect();
    let mut bound: BTreeSet<&str> = BTreeSet::new();
    for e in edges {
        if e.from_ns == ns {
            bound.insert(&e.from_path);
        }
        if e.to_ns == ns {
            bound.insert(&e.to_path);
        }
    }
    let unbound: Vec<&&&Document> = specs
        .iter()
        .filter(|d| !bound.contains(d.path.as_str()))
        .collect();
    TruthCheck {
        check: "unbound_specs",
        subjects: specs.len(),
        ok: specs.len() - unbound.len(),
        findings: unbound
            .iter()
            .map(|d| {
                finding(
                    "unbound_specs",
                    format!("{ns}/{}", d.path),
                    format!(
                        "type '{}' with no typed edge in either direction; nothing in the store points at it and it points at nothing",
                        d.doc_type
                    ),
                )
            })
            .collect(),
    }
}

fn broken_links(ns: &str, edges: &[Edge], dangling: &[DanglingEdge]) -> TruthCheck {
    let population = edges
        .iter()
        .filter(|e| e.from_ns == ns || e.to_ns == ns)
        .count();
    TruthCheck {
        check: "broken_links",
        subjects: population,
        ok: population.saturating_sub(dangling.len()),
        findings: dangling
            .iter()
            .map(|d| {
                let e = &d.edge;
                let detail = if d.source_missing {
                    "the source document no longer exists"
                } else {
                    "the target document no longer exists"
                };
                finding(
                    "broken_links",
                    format!(
                        "{}/{} -[{}]-> {}/{}",
                        e.from_ns, e.from_path, e.link_type, e.to_ns, e.to_path
                    ),
                    detail.to_owned(),
                )
            })
            .collect(),
    }
}

/// Doc-vs-code drift: a repo path named in standing prose that the repo no longer has.
fn drift(input: &TruthInput, standing: &[&Document]) -> TruthCheck {
    let (Some(repo_paths), Some(pattern)) = (&input.repo_paths, REPO_PATH.as_ref()) else {
        return TruthCheck {
            check: "doc_vs_code_drift",
            subjects: 0,
            ok: 0,
            findings: vec![finding(
                "doc_vs_code_drift",
                input.namespace.clone(),
                "NOT RUN, not checked: the repo tree could not be read, so this check is excluded from integrity \
                 rather than counted as clean"
                    .to_owned(),
            )],
        };
    };
    let store_prefixes: Vec<String> = input
        .namespaces
        .iter()
        .map(String::as_str)
        .chain([CAPSID_NAMESPACE])
        .map(|n| format!("{n}/"))
        .collect();
    let mut cited: Vec<(String, BTreeSet<String>)> = Vec::new();
    let mut index: HashMap<String, usize> = HashMap::new();
    for doc in standing {
        for caps in pattern.captures_iter(doc.body_text()) {
            let path = &caps[1];
            if store_prefixes.iter().any(|p| path.starts_with(p.as_str())) {
                continue;
            }
            let at = *index.entry(path.to_owned()).or_insert_with(|| {
                cited.push((path.to_owned(), BTreeSet::new()));
                cited.len() - 1
            });
            cited[at].1.insert(doc.path.clone());
        }
    }
    let missing: Vec<&(String, BTreeSet<String>)> = cited
        .iter()
        .filter(|(p, _)| !repo_paths.contains(p))
        .collect();
    TruthCheck {
        check: "doc_vs_code_drift",
        subjects: cited.len(),
        ok: cited.len() - missing.len(),
        findings: missing
            .iter()
            .map(|(path, docs)| {
                let docs: Vec<&str> = docs.iter().map(String::as_str).collect();
                finding(
                    "doc_vs_code_drift",
                    path.clone(),
                    format!("named in {} and absent from the repo", docs.join(", ")),
                )
            })
            .collect(),
    }
}

/// Formats a number as JavaScript prints it (`100`, `87.5`).
fn js_number(value: f64) -> String {
    format!("{value}")
}

fn js_number_opt<S: Serializer>(value: &Option<f64>, serializer: S) -> Result<S::Ok, S::Error> {
    match value {
        #[allow(clippy::cast_possible_truncation)] // integral and at most 100
        Some(v) if v.fract() == 0.0 => serializer.serialize_i64(*v as i64),
        Some(v) => serializer.serialize_f64(*v),
        None => serializer.serialize_none(),
    }
}

mod render;

pub use render::{ReportOutcome, integrity_of, render_truth_report, report_path, report_title};

#[cfg(test)]
mod tests;
