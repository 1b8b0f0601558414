//! `lint` (reference 2.2): the consolidation loop's gather packet, bounded by trimming
//! whole bodies to stubs, and the validation of `finalize` before anything is archived.
//! The truth report (`report` mode) lives in [`super::truth_report`].

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use thiserror::Error;

use super::counts::{AuthoritativeCounts, CountClaim};
use super::document::Document;
use super::kinds::DocType;
use super::links::DanglingEdge;
use super::{ARCHIVE_PREFIX, is_archived, newest_first};
use crate::guards::improve_write_refusal;
use crate::paths::{doc_path_problem, js_len};
use crate::time::Timestamp;

/// Body characters (UTF-16 units) a gather packet is held to, by trimming.
pub const GATHER_BUDGET: usize = 150_000;
/// Most paths one `finalize` may archive (one atomic batch).
pub const LINT_FINALIZE_MAX: usize = 20;
/// The rule documents gather carries, in namespace [`super::CAPSID_NAMESPACE`], path order.
pub const RULES_PATHS: [&str; 2] = ["conventions.md", "schema.md"];

/// What a `lint` call does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum LintMode {
    /// Read-only: the packet a driving model compiles the wiki from.
    #[default]
    Gather,
    /// Archive the consumed raw material.
    Finalize,
    /// Measure the store and store a truth report.
    Report,
}

impl LintMode {
    /// The wire name (also the scope action).
    pub fn as_str(self) -> &'static str {
        match self {
            LintMode::Gather => "gather",
            LintMode::Finalize => "finalize",
            LintMode::Report => "report",
        }
    }

    /// Whether the mode needs the write grant (`gather` is read-only).
    pub fn needs_write(self) -> bool {
        self != LintMode::Gather
    }
}

/// A document in the gather packet: the columns its section selects (`None` = not
/// selected, so not serialized), with the body possibly replaced by a stub.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct PacketDoc {
    /// Namespace name.
    pub namespace: String,
    /// Path.
    pub path: String,
    /// Title.
    pub title: Option<String>,
    /// Type (not selected for rules).
    #[serde(rename = "type", skip_serializing_if = "Option::is_none")]
    pub doc_type: Option<String>,
    /// Status (not selected for rules).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    /// Tags (selected for wiki and unconsolidated docs).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tags: Option<Option<String>>,
    /// Body, or `(trimmed for size: read <ns>/<path>)`.
    pub body: Option<String>,
    /// Creation time (selected for unconsolidated docs).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub created_at: Option<Timestamp>,
    /// Last write time (not selected for rules).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub updated_at: Option<Timestamp>,
}

#[derive(Clone, Copy)]
enum Section {
    Core,
    Wiki,
    Unconsolidated,
    Rules,
}

impl PacketDoc {
    fn project(doc: Document, section: Section) -> Self {
        let listed = !matches!(section, Section::Rules);
        let tagged = matches!(section, Section::Wiki | Section::Unconsolidated);
        PacketDoc {
            namespace: doc.namespace,
            path: doc.path,
            title: doc.title,
            doc_type: listed.then_some(doc.doc_type),
            status: listed.then_some(doc.status),
            tags: tagged.then_some(doc.tags),
            body: doc.body,
            created_at: matches!(section, Section::Unconsolidated).then_some(doc.created_at),
            updated_at: listed.then_some(doc.updated_at),
        }
    }

    fn chars(&self) -> usize {
        self.body.as_deref().map_or(0, js_len)
    }

    fn stubbed(mut self) -> Self {
        self.body = Some(format!(
            "(trimmed for size: read {}/{})",
            self.namespace, self.path
        ));
        self
    }
}

/// What the service read for a gather of `namespace`.
#[derive(Debug, Clone, Default)]
pub struct GatherInput {
    /// The namespace.
    pub namespace: String,
    /// `<ns>/core.md`.
    pub core: Option<Document>,
    /// The namespace's `concept` and `decision` documents, by path.
    pub wiki: Vec<Document>,
    /// Its `episodic` and `source` documents outside `archive/` (any status).
    pub unconsolidated: Vec<Document>,
    /// `capsid/conventions.md` and `capsid/schema.md` as found.
    pub rules: Vec<Document>,
    /// Edges touching the namespace with a missing endpoint.
    pub dangling_edges: Vec<DanglingEdge>,
    /// The namespace's authoritative counts (see [`super::counts::authoritative_for`]).
    pub authoritative_counts: Option<AuthoritativeCounts>,
    /// Claims from [`super::counts::scan_count_claims`] over its standing documents.
    pub count_claims: Vec<CountClaim>,
}

/// The `lint gather` answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct GatherPacket {
    /// Always `gather`.
    pub mode: LintMode,
    /// The namespace.
    pub namespace: String,
    /// `core.md`, never trimmed.
    pub core: Option<PacketDoc>,
    /// Concept and decision docs; all stubbed first when over budget.
    pub wiki: Vec<PacketDoc>,
    /// Raw material, oldest first; whole while it fits, stubbed after.
    pub unconsolidated: Vec<PacketDoc>,
    /// The shared rules, never trimmed.
    pub rules: Vec<PacketDoc>,
    /// Edges with a missing endpoint (reported, never repaired).
    pub dangling_edges: Vec<DanglingEdge>,
    /// The counts prose is checked against, or null.
    pub authoritative_counts: Option<AuthoritativeCounts>,
    /// Prose numbers that disagree with them.
    pub count_claims: Vec<CountClaim>,
    /// Body characters carried, stubs included.
    pub packet_chars: usize,
    /// [`GATHER_BUDGET`].
    pub budget: usize,
    /// Whether anything was stubbed.
    pub truncated: bool,
    /// What was stubbed and how to get the rest.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trimmed: Option<Vec<String>>,
}

/// Builds the gather packet and holds it to [`GATHER_BUDGET`].
///
/// Core and rules are never trimmed. Over budget, every wiki body becomes a stub (the
/// wiki is the largest and most re-readable section); then each unconsolidated document,
/// oldest first (the compile order), is kept whole if it still fits and stubbed otherwise.
/// A body is never cut mid-document: a fragment read as a whole is worse than a stub.
pub fn gather_packet(input: GatherInput) -> GatherPacket {
    let GatherInput {
        namespace,
        core,
        wiki,
        mut unconsolidated,
        rules,
        dangling_edges,
        authoritative_counts,
        count_claims,
    } = input;
    unconsolidated.sort_by(|a, b| newest_first(&b.created_at, &a.created_at));
    let core = core.map(|d| PacketDoc::project(d, Section::Core));
    let rules: Vec<PacketDoc> = rules
        .into_iter()
        .map(|d| PacketDoc::project(d, Section::Rules))
        .collect();
    let mut wiki: Vec<PacketDoc> = wiki
        .into_iter()
        .map(|d| PacketDoc::project(d, Section::Wiki))
        .collect();
    let raw: Vec<PacketDoc> = unconsolidated
        .into_iter()
        .map(|d| PacketDoc::project(d, Section::Unconsolidated))
        .collect();

    let sum = |docs: &[PacketDoc]| docs.iter().map(PacketDoc::chars).sum::<usize>();
    let fixed = core.as_ref().map_or(0, PacketDoc::chars) + sum(&rules);
    let mut trimmed = Vec::new();
    if fixed + sum(&wiki) + sum(&raw) > GATHER_BUDGET {
        wiki = wiki.into_iter().map(PacketDoc::stubbed).collect();
        trimmed.push(format!(
            "{} wiki bodies (concept and decision docs; read them individually by path)",
            wiki.len()
        ));
    }

    let mut running = fixed + sum(&wiki);
    let raw_count = raw.len();
    let mut held_back = 0;
    let unconsolidated: Vec<PacketDoc> = raw
        .into_iter()
        .map(|doc| {
            if running + doc.chars() <= GATHER_BUDGET {
                running += doc.chars();
                doc
            } else {
                held_back += 1;
                doc.stubbed()
            }
        })
        .collect();
    if held_back > 0 {
        trimmed.push(format!(
            "{held_back} of {raw_count} unconsolidated bodies (the oldest were kept, which is the compile order; \
             finalize this batch and call gather again for the rest)"
        ));
    }
    let packet_chars = fixed + sum(&wiki) + sum(&unconsolidated);

    GatherPacket {
        mode: LintMode::Gather,
        namespace,
        core,
        wiki,
        unconsolidated,
        rules,
        dangling_edges,
        authoritative_counts,
        count_claims,
        packet_chars,
        budget: GATHER_BUDGET,
        truncated: !trimmed.is_empty(),
        trimmed: (!trimmed.is_empty()).then_some(trimmed),
    }
}

/// Why `lint finalize` refused. Nothing is archived on any of these.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum LintError {
    /// `consumed` holds more paths than one batch may archive.
    #[error("consumed lists {count} paths; finalize archives at most {LINT_FINALIZE_MAX} per call")]
    TooManyConsumed {
        /// Paths given.
        count: usize,
    },
    /// `consumed` was empty or missing.
    #[error(
        "finalize requires consumed: the episodic/source paths that were compiled into the wiki"
    )]
    NothingConsumed,
    /// Some paths cannot be archived; every one is listed with why.
    #[error("finalize aborted, nothing archived:\n{}", .0.join("\n"))]
    Aborted(Vec<String>),
}

/// One archive move: `from` becomes `archive/<from>`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct ArchiveMove {
    /// The consumed path.
    pub from: String,
    /// Where it goes.
    pub to: String,
}

/// Validates a `finalize` request and plans its moves, in the Worker's order: the bound,
/// each path's grammar, dedupe (first occurrence kept), non-empty, then per path: it exists,
/// is not archived already, and is `episodic` or `source`; last, the improve control-surface
/// guard, which finalize never lets a caller lift. `stored_type` answers the stored type of
/// a path in the namespace, or `None` when no such document exists.
pub fn finalize_plan(
    namespace: &str,
    consumed: &[String],
    stored_type: impl Fn(&str) -> Option<String>,
) -> Result<Vec<ArchiveMove>, LintError> {
    if consumed.len() > LINT_FINALIZE_MAX {
        return Err(LintError::TooManyConsumed {
            count: consumed.len(),
        });
    }
    let grammar: Vec<String> = consumed
        .iter()
        .enumerate()
        .filter_map(|(i, path)| {
            doc_path_problem(path).map(|why| format!("consumed[{i}] ({path:?}): {why}"))
        })
        .collect();
    if !grammar.is_empty() {
        return Err(LintError::Aborted(grammar));
    }
    let mut paths: Vec<&str> = Vec::with_capacity(consumed.len());
    for path in consumed {
        if !paths.contains(&path.as_str()) {
            paths.push(path);
        }
    }
    if paths.is_empty() {
        return Err(LintError::NothingConsumed);
    }
    let problems: Vec<String> = paths
        .iter()
        .filter_map(|path| match stored_type(path) {
            None => Some(format!("not found: {namespace}/{path}")),
            Some(_) if is_archived(path) => Some(format!("already archived: {namespace}/{path}")),
            Some(t) if DocType::parse(&t).is_ok_and(DocType::is_consumable) => None,
            Some(t) => Some(format!(
                "not consumable: {namespace}/{path} has type '{t}' (only episodic and source docs are archived)"
            )),
        })
        .collect();
    if !problems.is_empty() {
        return Err(LintError::Aborted(problems));
    }
    let refusals: Vec<String> = paths
        .iter()
        .filter_map(|path| improve_write_refusal(namespace, path, None, "", false))
        .collect();
    if !refusals.is_empty() {
        return Err(LintError::Aborted(refusals));
    }
    Ok(paths
        .into_iter()
        .map(|p| ArchiveMove {
            from: p.to_owned(),
            to: format!("{ARCHIVE_PREFIX}{p}"),
        })
        .collect())
}

/// The `lint finalize` answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct FinalizeOutcome {
    /// Always `finalize`.
    pub mode: LintMode,
    /// The namespace.
    pub namespace: String,
    /// How many documents were archived.
    pub consolidated: usize,
    /// The moves made.
    pub archived: Vec<ArchiveMove>,
}

impl FinalizeOutcome {
    /// The answer for a committed plan.
    pub fn new(namespace: &str, archived: Vec<ArchiveMove>) -> Self {
        Self {
            mode: LintMode::Finalize,
            namespace: namespace.to_owned(),
            consolidated: archived.len(),
            archived,
        }
    }

    /// The audit params of the finalize row (action `lint`, path NULL):
    /// `{consolidated, consumed}`.
    pub fn audit_params(&self) -> serde_json::Value {
        let consumed: Vec<&str> = self.archived.iter().map(|m| m.from.as_str()).collect();
        serde_json::json!({ "consolidated": self.consolidated, "consumed": consumed })
    }
}

/// The audit action of the finalize row.
pub const FINALIZE_AUDIT_ACTION: &str = "lint";

#[cfg(test)]
mod tests;
